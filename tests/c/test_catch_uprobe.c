/* tests/c/test_catch_uprobe.c - core/catch/uprobe/catch_uprobe.c: the examples (built by make) spawned
 * under the uprobe catcher with a function site: exact entry and return counts, per-thread
 * tids, a few stops per thread and none per hit; a running target (tests/fixtures/napper.c)
 * attached for a while and detached, its output intact. Skipped with the reason where the
 * uprobe PMU cannot be opened (not root).
 */
#include "ctest.h"
#include "fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "catch_uprobe.h"
#include "symbols.h"

#define MAXHITS 8192
#define MAXTH 8

/* What the callbacks saw. */
struct seen {
	int n, born, ended, losses;
	pid_t tids[MAXTH];
	int ntids;
	struct ps_uprobe_hit h[MAXHITS];
};

static void on_hit(void *ctx, const struct ps_uprobe_hit *h)
{
	struct seen *s = ctx;

	if (s->n < MAXHITS)
		s->h[s->n] = *h;
	s->n++;
}

static void on_thread(void *ctx, pid_t tid, int born)
{
	struct seen *s = ctx;

	if (born && s->ntids < MAXTH)
		s->tids[s->ntids++] = tid;
	*(born ? &s->born : &s->ended) += 1;
}

static void on_loss(void *ctx, pid_t tid)
{
	struct seen *s = ctx;

	(void)tid;
	s->losses++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The absolute path of @prog and the file offset of its function @fn in @site (ret = 1). */
static int site_of(const char *prog, const char *fn, char *path, struct ps_uprobe_site *site)
{
	struct ps_symtab *st;
	const struct ps_sym *sym;
	struct ps_error err;
	int rc;

	*site = (struct ps_uprobe_site){.path = path, .ret = 1};
	if (!realpath(prog, path) || ps_sym_open(&st, path, &err))
		return -1;
	rc = ps_sym_lookup(st, fn, &sym, &err) ? -1 : ps_uprobe_file_offset(path, sym->addr, &site->offset, &err);
	ps_sym_close(st);
	return rc;
}

/* task-clock and page-faults, the events every machine has, into @o with @s as context. */
static int opts_for(struct ps_catch_uprobe_opts *o, struct ps_event ev[2], const struct ps_uprobe_site *site,
		    struct seen *s)
{
	struct ps_error err;

	memset(s, 0, sizeof *s);
	*o = (struct ps_catch_uprobe_opts){
	    .probe = {.ev = ev, .nev = 2, .sites = site, .nsites = 1, .ring_pages = 128, .enabled = 1},
	    .on_hit = on_hit,
	    .on_thread = on_thread,
	    .on_loss = on_loss,
	    .ctx = s};
	return ps_event_resolve("task-clock", &ev[0], &err) || ps_event_resolve("page-faults", &ev[1], &err) ? -1 : 0;
}

/* What a test opens: the catcher's options, a site and its path, the counters, the stats. */
struct fx {
	struct ps_catch_uprobe_opts o;
	struct ps_catch_uprobe_stats st;
	struct ps_uprobe_site site;
	struct ps_event ev[2];
	char path[PATH_MAX];
};

/* @f for function @fn of @prog, hits into @s. */
static int prepare(struct fx *f, const char *prog, const char *fn, struct seen *s)
{
	return site_of(prog, fn, f->path, &f->site) || opts_for(&f->o, f->ev, &f->site, s) ? -1 : 0;
}

/* Spawn @argv under the catcher with its stdout to /dev/null and run it to its end. */
static int run_spawned(char *const argv[], const struct ps_catch_uprobe_opts *o, struct ps_catch_uprobe_stats *stats,
		       int *code)
{
	struct ps_catch_uprobe *c;
	struct ps_error err;
	int null = open("/dev/null", O_WRONLY), saved, rc;

	fflush(stdout);
	saved = dup(1);
	dup2(null, 1);
	close(null);
	rc = ps_catch_uprobe_spawn(&c, argv, o, &err);
	dup2(saved, 1);
	close(saved);
	if (rc) {
		fprintf(stderr, "  %s\n", err.msg);
		return -1;
	}
	while ((rc = ps_catch_uprobe_run(c, &err)) == 0)
		;
	if (rc < 0)
		fprintf(stderr, "  %s\n", err.msg);
	ps_catch_uprobe_stats(c, stats);
	ps_catch_uprobe_status(c, NULL, code, NULL);
	ps_catch_uprobe_free(c);
	return rc == 1 ? 0 : -1;
}

/* Hits of thread @tid of kind @kind in @s. */
static int count(const struct seen *s, pid_t tid, uint32_t kind)
{
	int n = 0;

	for (int i = 0; i < s->n && i < MAXHITS; i++)
		n += s->h[i].tid == tid && s->h[i].kind == kind;
	return n;
}

TEST(catch_uprobe_bad_input)
{
	struct ps_catch_uprobe *c = (void *)1;
	struct ps_catch_uprobe_opts o = {0};
	struct ps_error err;
	char *argv[] = {"/nonexistent/prog", NULL};
	struct ps_uprobe_site site = {.path = "/bin/true", .offset = 0, .ret = 1};

	CHECK(ps_catch_uprobe_spawn(&c, argv, NULL, &err) == -1 && c == NULL);
	CHECK_STR(err.msg, "uprobe catcher: no options or no sites given");
	o.probe.sites = &site;
	o.probe.nsites = 1;
	CHECK(ps_catch_uprobe_spawn(&c, argv, &o, &err) == -1 && c == NULL);
	CHECK(strstr(err.msg, "cannot run '/nonexistent/prog'") != NULL);
	CHECK(ps_catch_uprobe_attach(&c, INT_MAX - 1, &o, &err) == -1 && c == NULL);
	CHECK(strstr(err.msg, "no such process") != NULL);
}

TEST(catch_uprobe_sum_one_call)
{
	static struct seen s;
	struct fx f;
	char *argv[] = {"examples/sum-nopie", NULL};
	int code = -1;

	NEEDS_UPROBES(argv[0]);
	CHECK(prepare(&f, argv[0], "sum", &s) == 0);
	CHECK(run_spawned(argv, &f.o, &f.st, &code) == 0);
	CHECK_EQ_INT(code, 0);
	CHECK_EQ_INT(s.n, 2);
	CHECK_EQ_INT(f.st.hits, 2);
	CHECK_EQ_INT(f.st.lost, 0);
	CHECK_EQ_INT(f.st.threads, 1);
	CHECK_EQ_INT(f.st.live, 0);
	CHECK_EQ_INT(s.born, 1);
	CHECK_EQ_INT(s.ended, 1);
	if (s.n == 2) {
		CHECK_EQ_INT(s.h[0].kind, PS_UPROBE_ENTRY);
		CHECK_EQ_INT(s.h[1].kind, PS_UPROBE_RETURN);
		CHECK_EQ_INT(s.h[0].tid, s.tids[0]);
		CHECK_EQ_INT(s.h[1].tid, s.tids[0]);
		/* sum() runs 10,000,000 iterations: task-clock moves between entry and return */
		CHECK(s.h[1].val[0] > s.h[0].val[0]);
		CHECK(s.h[1].time > s.h[0].time);
	}
	/* the main thread's exit is the one notice: no stop at the hits */
	CHECK(f.st.stops <= 2);
}

TEST(catch_uprobe_threads_own_tids)
{
	static struct seen s;
	struct fx f;
	char *argv[] = {"examples/threads", "1000", "10", NULL};
	int code = -1;

	NEEDS_UPROBES(argv[0]);
	CHECK(prepare(&f, argv[0], "work", &s) == 0);
	CHECK(run_spawned(argv, &f.o, &f.st, &code) == 0);
	CHECK_EQ_INT(code, 0);
	CHECK_EQ_INT(f.st.lost, 0);
	CHECK_EQ_INT(f.st.hits, 4000);
	CHECK_EQ_INT(s.n, 4000);
	CHECK_EQ_INT(f.st.threads, 3);
	CHECK_EQ_INT(s.born, 3);
	CHECK_EQ_INT(s.ended, 3);
	if (s.ntids != 3)
		return;
	/* the main thread never calls work(); each worker calls it 1000 times */
	CHECK_EQ_INT(count(&s, s.tids[0], PS_UPROBE_ENTRY), 0);
	for (int t = 1; t < 3; t++) {
		CHECK_EQ_INT(count(&s, s.tids[t], PS_UPROBE_ENTRY), 1000);
		CHECK_EQ_INT(count(&s, s.tids[t], PS_UPROBE_RETURN), 1000);
	}
	/* per thread, entry and return alternate and each probe's count goes up by one */
	for (int t = 1; t < 3; t++) {
		int k = 0;
		for (int i = 0; i < s.n; i++) {
			const struct ps_uprobe_hit *h = &s.h[i];
			if (h->tid != s.tids[t])
				continue;
			if (h->kind != (uint32_t)(k % 2) || h->seq != (uint64_t)(k / 2 + 1)) {
				CHECK_EQ_INT(h->kind, k % 2);
				CHECK_EQ_INT(h->seq, k / 2 + 1);
				break;
			}
			k++;
		}
	}
	/* per new thread: its parent's clone event, its first stop, its exit; the main
	   thread's exit: 7, and none of the 4000 hits */
	CHECK(f.st.stops <= 7);
}

TEST(catch_uprobe_recursion_nests)
{
	static struct seen s;
	struct fx f;
	char *argv[] = {"examples/recursive", "5", "10", NULL};
	int code = -1;

	NEEDS_UPROBES(argv[0]);
	CHECK(prepare(&f, argv[0], "walk", &s) == 0);
	CHECK(run_spawned(argv, &f.o, &f.st, &code) == 0);
	CHECK_EQ_INT(code, 0);
	CHECK_EQ_INT(f.st.lost, 0);
	CHECK_EQ_INT(s.n, 110);
	/* each of the 5 outer calls: 11 entries down to walk(0), then 11 returns */
	for (int i = 0; i < s.n && i < 110; i++)
		if (s.h[i].kind != (uint32_t)(i % 22 < 11 ? PS_UPROBE_ENTRY : PS_UPROBE_RETURN)) {
			CHECK_EQ_INT(s.h[i].kind, i % 22 < 11 ? PS_UPROBE_ENTRY : PS_UPROBE_RETURN);
			break;
		}
	CHECK(f.st.stops <= 2);
}

/* Wait up to 20 s for @path to exist. */
static int await_file(const char *path)
{
	for (uint64_t end = now_ns() + 20000000000u; now_ns() < end; usleep(2000))
		if (access(path, F_OK) == 0)
			return 0;
	return -1;
}

TEST(catch_uprobe_attach_detach_unharmed)
{
	static struct seen s;
	struct fx f;
	struct ps_catch_uprobe *c;
	struct ps_error err;
	char mark[700], out[700], line[256] = "";
	const char *nap = fixtures_cc("napper.c", "cu-napper", "-O2 -g");
	int status = -1, rc = -1;

	NEEDS_UPROBES("/bin/true");
	if (!nap)
		SKIP("cannot build the fixture with cc");
	snprintf(mark, sizeof mark, "%s/cu-mark", fixtures_tmpdir());
	snprintf(out, sizeof out, "%s/cu-out", fixtures_tmpdir());
	unlink(mark);
	CHECK(prepare(&f, nap, "nap", &s) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(125);
		execl(nap, nap, "1", "-1", mark, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0 && await_file(mark) == 0);
	if (pid > 0 && access(mark, F_OK) == 0 && (rc = ps_catch_uprobe_attach(&c, pid, &f.o, &err)))
		fprintf(stderr, "  %s\n", err.msg);
	if (rc == 0) {
		/* run until 20 naps are caught (20 s at most), in steps of 50 ms */
		for (uint64_t end = now_ns() + 20000000000u; count(&s, pid, PS_UPROBE_RETURN) < 20 && now_ns() < end;) {
			ps_catch_uprobe_set_deadline(c, now_ns() + 50000000u);
			if (ps_catch_uprobe_run(c, &err)) {
				fprintf(stderr, "  %s\n", err.msg);
				break;
			}
		}
		CHECK(ps_catch_uprobe_detach(c, &err) == 0);
		ps_catch_uprobe_stats(c, &f.st);
		ps_catch_uprobe_free(c);
		int entries = count(&s, pid, PS_UPROBE_ENTRY), returns = count(&s, pid, PS_UPROBE_RETURN);
		CHECK(returns >= 20);
		/* a call in progress at detach has its entry only */
		CHECK(entries == returns || entries == returns + 1);
		CHECK_EQ_INT(f.st.lost, 0);
		CHECK_EQ_INT(f.st.live, 0);
		CHECK_EQ_INT(s.born, 1);
		/* the attach stop, and none per hit */
		CHECK(f.st.stops <= 2);
	}
	unlink(mark);
	if (pid > 0)
		waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	FILE *of = fopen(out, "r");
	if (of) {
		if (!fgets(line, sizeof line, of))
			line[0] = '\0';
		fclose(of);
	}
	int k = -1;
	unsigned long sum = 0, want = 0;
	CHECK(sscanf(line, "naps = %d sum = %lu code intact", &k, &sum) == 2 && strstr(line, "code intact"));
	for (int i = 0; i < k; i++)
		want = want * 31 + (unsigned long)i;
	CHECK(k > 20);
	CHECK(sum == want);
}

TEST(catch_uprobe_disabled_threads_stay_disabled)
{
	static struct seen s;
	struct fx f;
	char *argv[] = {"examples/threads", "100", "10", NULL};
	int code = -1;

	NEEDS_UPROBES(argv[0]);
	CHECK(prepare(&f, argv[0], "work", &s) == 0);
	f.o.probe.enabled = 0; /* until ps_catch_uprobe_enable(), also on the threads born later */
	CHECK(run_spawned(argv, &f.o, &f.st, &code) == 0);
	CHECK_EQ_INT(code, 0);
	CHECK_EQ_INT(f.st.threads, 3);
	CHECK_EQ_INT(f.st.hits, 0);
	CHECK_EQ_INT(f.st.lost, 0);
}

TEST(catch_uprobe_small_ring_counts_every_loss)
{
	static struct seen s;
	struct fx f;
	char *argv[] = {"examples/threads", "1000", "10", NULL};
	int code = -1;

	NEEDS_UPROBES(argv[0]);
	CHECK(prepare(&f, argv[0], "work", &s) == 0);
	f.o.probe.ring_pages = 1; /* about 30 records: the two threads outrun a drain every 2 ms */
	CHECK(run_spawned(argv, &f.o, &f.st, &code) == 0);
	CHECK_EQ_INT(code, 0);
	/* every hit is delivered or counted lost, exactly */
	CHECK_EQ_INT(f.st.hits + f.st.lost, 4000);
	CHECK_EQ_INT(f.st.hits, s.n);
	CHECK(f.st.lost >= f.st.lost_reported);
	/* each loss the kernel reported before a later hit was announced in order */
	CHECK(f.st.lost_reported == 0 || s.losses > 0);
	CHECK(s.losses == 0 || f.st.lost_reported > 0);
}

/* What the test below sees of thread ends: how many so far. */
static void on_end(void *ctx, pid_t tid, int born)
{
	int *ended = ctx;

	(void)tid;
	*ended += !born;
}

/* How long closing one thread's probes (an entry and a return) takes here, in ns. */
static uint64_t close_cost(const struct ps_uprobe_opts *p)
{
	struct ps_uprobe *u;
	struct ps_error err;
	uint64_t t0;

	if (ps_uprobe_open(&u, getpid(), p, &err))
		return 0;
	t0 = now_ns();
	ps_uprobe_close(u);
	return now_ns() - t0;
}

/*
 * Closing a uprobe event waits for the kernel (RCU grace periods), draining nothing: a thread
 * that ends while others run must not make perfsh wait there, or their rings fill. Each run
 * below ends after one drain period (a deadline); one in which a worker thread ended (the main
 * thread lives on until it joins them) takes far less than a close.
 */
TEST(catch_uprobe_thread_end_does_not_hold_up_the_drain)
{
	static struct seen s;
	struct fx f;
	char *argv[] = {"examples/threads", "20000", "100", "4", NULL};
	struct ps_catch_uprobe *c;
	struct ps_error err;
	uint64_t cost, longest = 0;
	int ended = 0, rc, null, saved;

	NEEDS_UPROBES(argv[0]);
	CHECK(prepare(&f, argv[0], "work", &s) == 0);
	f.o.on_hit = NULL;
	f.o.on_thread = on_end;
	f.o.ctx = &ended;
	if ((cost = close_cost(&f.o.probe)) < 20000000u)
		SKIP("closing a probe takes %.1f ms here: too little to tell", cost / 1e6);
	fflush(stdout);
	null = open("/dev/null", O_WRONLY);
	saved = dup(1);
	dup2(null, 1);
	close(null);
	rc = ps_catch_uprobe_spawn(&c, argv, &f.o, &err);
	dup2(saved, 1);
	close(saved);
	CHECK(rc == 0);
	do {
		int before = ended;
		uint64_t t0 = now_ns();

		ps_catch_uprobe_set_deadline(c, t0 + 1000000u);
		rc = ps_catch_uprobe_run(c, &err);
		if (rc == 0 && ended > before && now_ns() - t0 > longest)
			longest = now_ns() - t0;
	} while (rc == 0);
	ps_catch_uprobe_stats(c, &f.st);
	ps_catch_uprobe_free(c);
	CHECK_EQ_INT(rc, 1);
	CHECK_EQ_INT(ended, 5);
	CHECK_EQ_INT(f.st.hits + f.st.lost, 160000);
	printf("  a close: %.1f ms; the longest run in which a thread ended: %.1f ms\n", cost / 1e6, longest / 1e6);
	CHECK(longest < cost / 2);
}
