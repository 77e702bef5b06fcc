/* tests/c/test_uprobe.c - core/catch/uprobe/uprobe.c: uprobe + uretprobe pairs sampling a counter group
 * into one ring per thread, against a spawned target (tests/fixtures/tracer_fx.c, held on a
 * pipe before its exec), this process's own threads, and a ring too small to hold them.
 * Skipped with the reason where the uprobe PMU cannot be opened (not root).
 */
#include "ctest.h"
#include "fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "machine.h"
#include "procmaps.h"
#include "symbols.h"
#include "uprobe.h"

#define NCALLS 1000
#define MAXHITS (4 * NCALLS)
#define REG_DI 3 /* PS_UPROBE_REGS_ARGS in bit order: CX, DX, SI, DI, R8, R9 */

/* Every hit of a drain, in order. */
struct seen {
	int n;
	struct ps_uprobe_hit h[MAXHITS];
};

static int collect(const struct ps_uprobe_hit *h, void *ud)
{
	struct seen *s = ud;

	if (s->n < MAXHITS)
		s->h[s->n] = *h;
	s->n++;
	return 0;
}

/* task-clock and page-faults, the events every machine has. */
static int counters(struct ps_event ev[2])
{
	struct ps_error err;

	return ps_event_resolve("task-clock", &ev[0], &err) || ps_event_resolve("page-faults", &ev[1], &err) ? -1 : 0;
}

/* @n calls seen as entry, return, entry, return... on thread @tid at site 0, times and
   counters never going back; the entry's first argument is the call's index when @args. */
static void check_pairs(struct ctest *ctest_self, const struct seen *s, int n, pid_t tid, int args)
{
	CHECK_EQ_INT(s->n, 2 * n);
	for (int i = 0; i < s->n && i < MAXHITS; i++) {
		const struct ps_uprobe_hit *h = &s->h[i], *p = i ? &s->h[i - 1] : NULL;

		if (h->kind != (uint32_t)(i % 2) || h->tid != tid || h->site != 0 || h->nval != 2 ||
		    h->seq != (uint64_t)(i / 2 + 1)) {
			CHECK_EQ_INT(h->kind, i % 2);
			CHECK_EQ_INT(h->seq, i / 2 + 1);
			CHECK_EQ_INT(h->tid, tid);
			CHECK_EQ_INT(h->site, 0);
			CHECK_EQ_INT(h->nval, 2);
			return;
		}
		if (p &&
		    (h->time < p->time || h->val[0] < p->val[0] || h->val[1] < p->val[1] || h->enabled < p->enabled)) {
			CHECK(!"time, counters or enabled time went back");
			return;
		}
		if (args && h->kind == PS_UPROBE_ENTRY && (h->nregs != 6 || h->regs[REG_DI] != (uint64_t)(i / 2))) {
			CHECK_EQ_INT(h->nregs, 6);
			CHECK_EQ_INT(h->regs[REG_DI], i / 2);
			return;
		}
	}
}

/* The no-pie tracer fixture, built once; NULL if cc fails. */
static const char *fx_nopie(void)
{
	return fixtures_cc("tracer_fx.c", "ufx-nopie", "-O2 -g -no-pie -pthread");
}

TEST(uprobe_options_and_helpers)
{
	struct ps_uprobe_site site = {.path = "/bin/true", .offset = 0, .ret = 1};
	struct ps_uprobe_opts o = {.nsites = 1, .sites = &site, .ring_pages = 3};
	struct ps_event ev[2];
	struct ps_uprobe *u;
	struct ps_error err;
	uint64_t off;
	char path[600];

	CHECK(ps_uprobe_open(&u, getpid(), &o, &err) == -1 && u == NULL);
	CHECK_STR(err.msg, "uprobe: 0 counters; give 1 to 14");
	CHECK(counters(ev) == 0);
	o.ev = ev;
	o.nev = 2;
	CHECK(ps_uprobe_open(&u, getpid(), &o, &err) == -1);
	CHECK_STR(err.msg, "uprobe: ring of 3 pages; give a power of two");
	o.per_group = 65;
	CHECK(ps_uprobe_open(&u, getpid(), &o, &err) == -1);
	CHECK_STR(err.msg, "uprobe: 65 sites per group; give 1 to 64");
	o.per_group = 0;
	site.path = "bin/true";
	o.ring_pages = 0;
	CHECK(ps_uprobe_open(&u, getpid(), &o, &err) == -1);
	CHECK_STR(err.msg, "uprobe: site 0 has no absolute file path");

	snprintf(path, sizeof path, "%s/nops", fixtures_tmpdir());
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	fwrite("\x0f\x1f\x44\x00\x00\x0f\x1f\x44\x00\x08", 1, 10, f);
	fclose(f);
	CHECK_EQ_INT(ps_uprobe_site_is_nop5(path, 0, &err), 1);
	CHECK_EQ_INT(ps_uprobe_site_is_nop5(path, 5, &err), 0);
	CHECK_EQ_INT(ps_uprobe_site_is_nop5(path, 6, &err), -1);
	CHECK(strstr(err.msg, "cannot read 5 bytes at offset 0x6") != NULL);
	CHECK_EQ_INT(ps_uprobe_file_offset(path, 0, &off, &err), -1);
	CHECK(strstr(err.msg, "is not an ELF file") != NULL);

	const char *fx = fx_nopie();
	if (!fx)
		SKIP("cannot build the fixture with cc");
	CHECK_EQ_INT(ps_uprobe_file_offset(fx, 0x10, &off, &err), -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
}

TEST(uprobe_spawned_target_pairs)
{
	struct ps_event ev[2];
	struct ps_error err;
	struct ps_symtab *st;
	const struct ps_sym *sym;
	struct ps_uprobe *u;
	static struct seen s;
	char why[256], nbuf[16];
	uint64_t off;
	int go[2], status = -1;
	const char *fx = fx_nopie();

	if (!ps_uprobe_available(why, sizeof why))
		SKIP("%s", why);
	if (!fx)
		SKIP("cannot build the fixture with cc");
	CHECK(counters(ev) == 0);
	if (ps_sym_open(&st, fx, &err) || ps_sym_lookup(st, "fx_work", &sym, &err)) {
		CHECK(!"fx_work not found");
		return;
	}
	uint64_t addr = sym->addr;
	ps_sym_close(st);
	CHECK(ps_uprobe_file_offset(fx, addr, &off, &err) == 0);
	if (pipe(go)) {
		CHECK(!"pipe");
		return;
	}
	snprintf(nbuf, sizeof nbuf, "%d", NCALLS);
	pid_t pid = fork();
	if (pid == 0) {
		char b, *argv[] = {(char *)fx, "calls", nbuf, NULL};
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(126);
		int null = open("/dev/null", O_WRONLY);
		if (null < 0 || dup2(null, 1) < 0)
			_exit(125);
		execv(fx, argv);
		_exit(127);
	}
	close(go[0]);
	struct ps_uprobe_site site = {.path = fx, .offset = off, .ret = 1};
	struct ps_uprobe_opts o = {.ev = ev,
				   .nev = 2,
				   .sites = &site,
				   .nsites = 1,
				   .ring_pages = 128,
				   .regs_mask = PS_UPROBE_REGS_ARGS,
				   .enabled = 1};
	int rc = ps_uprobe_open(&u, pid, &o, &err);
	if (rc)
		fprintf(stderr, "  %s\n", err.msg);
	CHECK(rc == 0);
	if (rc) {
		kill(pid, SIGKILL);
		close(go[1]);
		waitpid(pid, NULL, 0);
		return;
	}
	CHECK(write(go[1], "g", 1) == 1);
	close(go[1]);
	s.n = 0;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		struct pollfd p = {ps_uprobe_fd(u), POLLIN, 0};
		poll(&p, 1, 100);
		ps_uprobe_drain(u, collect, &s);
	}
	ps_uprobe_drain(u, collect, &s);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	CHECK_EQ_INT(ps_uprobe_lost(u), 0);
	CHECK_EQ_INT(ps_uprobe_missing(u, &err), 0);
	CHECK_EQ_INT(ps_uprobe_hits(u), 2 * NCALLS);
	check_pairs(ctest_self, &s, NCALLS, pid, 1);
	ps_uprobe_close(u);
}

/* In this process: threads that wait for their probes before calling ut_work(). */
static volatile long ut_sink;

__attribute__((noinline, noclone)) long ut_work(long x);
__attribute__((noinline, noclone)) long ut_work(long x)
{
	ut_sink += x;
	return x * 3 + 1;
}

struct worker {
	pthread_t th;
	int tidpipe[2], gopipe[2];
	pid_t tid;
	int n;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	pid_t tid = gettid();
	char b;

	if (write(w->tidpipe[1], &tid, sizeof tid) != sizeof tid || read(w->gopipe[0], &b, 1) != 1 || b != 'g')
		return NULL;
	for (int i = 0; i < w->n; i++)
		ut_work(i);
	return NULL;
}

/* Probes on ut_work() in this executable, per @tid. */
static int open_self(struct ps_uprobe **u, pid_t tid, unsigned pages, struct ps_error *err)
{
	static char path[4096];
	static struct ps_uprobe_site site;
	static struct ps_event ev[2];
	uint64_t off;

	if (counters(ev) || ps_maps_file_offset(0, (uint64_t)(uintptr_t)ut_work, path, sizeof path, &off, err))
		return -1;
	site = (struct ps_uprobe_site){.path = path, .offset = off, .ret = 1};
	struct ps_uprobe_opts o = {.ev = ev, .nev = 2, .sites = &site, .nsites = 1, .ring_pages = pages, .enabled = 1};
	return ps_uprobe_open(u, tid, &o, err);
}

TEST(uprobe_two_threads_own_rings)
{
	struct worker w[2];
	struct ps_uprobe *u[2] = {NULL, NULL};
	struct ps_error err;
	static struct seen s[2];
	char why[256];

	if (!ps_uprobe_available(why, sizeof why))
		SKIP("%s", why);
	for (int i = 0; i < 2; i++) {
		w[i].n = NCALLS / (i + 1);
		if (pipe(w[i].tidpipe) || pipe(w[i].gopipe)) {
			CHECK(!"pipe");
			return;
		}
		pthread_create(&w[i].th, NULL, worker, &w[i]);
	}
	for (int i = 0; i < 2; i++) {
		CHECK(read(w[i].tidpipe[0], &w[i].tid, sizeof w[i].tid) == sizeof w[i].tid);
		if (open_self(&u[i], w[i].tid, 128, &err))
			fprintf(stderr, "  %s\n", err.msg);
	}
	for (int i = 0; i < 2; i++) {
		CHECK(write(w[i].gopipe[1], "g", 1) == 1);
		close(w[i].gopipe[1]);
		pthread_join(w[i].th, NULL);
		close(w[i].gopipe[0]);
		close(w[i].tidpipe[0]);
		close(w[i].tidpipe[1]);
	}
	for (int i = 0; i < 2; i++) {
		CHECK(u[i] != NULL);
		if (!u[i])
			continue;
		s[i].n = 0;
		ps_uprobe_drain(u[i], collect, &s[i]);
		CHECK_EQ_INT(ps_uprobe_lost(u[i]), 0);
		CHECK_EQ_INT(ps_uprobe_missing(u[i], &err), 0);
		check_pairs(ctest_self, &s[i], w[i].n, w[i].tid, 0);
		ps_uprobe_close(u[i]);
	}
}

TEST(uprobe_small_ring_counts_loss)
{
	struct ps_uprobe *u;
	struct ps_error err;
	char why[256];
	long hits;

	if (!ps_uprobe_available(why, sizeof why))
		SKIP("%s", why);
	if (open_self(&u, gettid(), 1, &err)) {
		fprintf(stderr, "  %s\n", err.msg);
		CHECK(!"open");
		return;
	}
	for (int i = 0; i < NCALLS; i++)
		ut_work(i);
	hits = ps_uprobe_drain(u, NULL, NULL);
	CHECK(hits > 0 && hits < 2 * NCALLS);
	/* the loss is not reported yet, but the probes' counts show it */
	CHECK_EQ_INT(ps_uprobe_missing(u, &err), 2 * NCALLS - hits);
	/* the kernel writes the count of what it dropped before the next record that fits */
	ut_work(0);
	hits += ps_uprobe_drain(u, NULL, NULL);
	CHECK(ps_uprobe_lost(u) > 0);
	CHECK_EQ_INT(hits + (long)ps_uprobe_lost(u), 2 * NCALLS + 2);
	CHECK_EQ_INT(ps_uprobe_missing(u, &err), (long)ps_uprobe_lost(u));
	CHECK_EQ_INT(ps_uprobe_hits(u), hits);
	ps_uprobe_close(u);
}

__attribute__((noinline, noclone)) long ut_other(long x);
__attribute__((noinline, noclone)) long ut_other(long x)
{
	ut_sink -= x;
	return x + 1;
}

/* Two sites in two groups (per_group = 1), one without a return probe; disabled, nothing. */
TEST(uprobe_sites_in_batches)
{
	static char path[2][4096];
	static struct seen s;
	struct ps_uprobe_site site[2];
	struct ps_event ev[2];
	struct ps_uprobe *u;
	struct ps_error err;
	uint64_t off[2];
	char why[256];
	int bad = 0;

	if (!ps_uprobe_available(why, sizeof why))
		SKIP("%s", why);
	CHECK(counters(ev) == 0);
	if (ps_maps_file_offset(0, (uint64_t)(uintptr_t)ut_work, path[0], sizeof path[0], &off[0], &err) ||
	    ps_maps_file_offset(0, (uint64_t)(uintptr_t)ut_other, path[1], sizeof path[1], &off[1], &err)) {
		CHECK(!"file offsets");
		return;
	}
	site[0] = (struct ps_uprobe_site){.path = path[0], .offset = off[0], .ret = 1};
	site[1] = (struct ps_uprobe_site){.path = path[1], .offset = off[1], .ret = 0};
	struct ps_uprobe_opts o = {.ev = ev, .nev = 2, .sites = site, .nsites = 2, .per_group = 1, .ring_pages = 64};
	if (ps_uprobe_open(&u, gettid(), &o, &err)) {
		fprintf(stderr, "  %s\n", err.msg);
		CHECK(!"open");
		return;
	}
	ut_work(1); /* opened disabled: not seen */
	CHECK(ps_uprobe_enable(u, 1, &err) == 0);
	for (int i = 0; i < 100; i++) {
		ut_work(i);
		ut_other(i);
	}
	CHECK(ps_uprobe_enable(u, 0, &err) == 0);
	ut_other(1);
	s.n = 0;
	ps_uprobe_drain(u, collect, &s);
	CHECK_EQ_INT(s.n, 300);
	for (int i = 0; i < s.n && i < MAXHITS && !bad; i++) {
		/* entry 0, return 0, entry 1, ... */
		uint32_t want_site = i % 3 == 2, want_kind = i % 3 == 1;
		bad = s.h[i].site != want_site || s.h[i].kind != want_kind || s.h[i].nregs != 0;
		/* each group has its own task-clock: monotonic per site */
		if (i >= 3 && s.h[i].val[0] < s.h[i - 3].val[0])
			bad = 1;
	}
	CHECK(!bad);
	CHECK_EQ_INT(ps_uprobe_lost(u), 0);
	ps_uprobe_close(u);
}

__attribute__((noinline, noclone)) long ut_deep(int n);
__attribute__((noinline, noclone)) long ut_deep(int n)
{
	long r = n > 1 ? ut_deep(n - 1) : 0;

	ut_sink += r; /* not a tail call */
	return r + n;
}

static int count_kinds(const struct ps_uprobe_hit *h, void *ud)
{
	((int *)ud)[h->kind]++;
	return 0;
}

/* The kernel keeps PS_UPROBE_MAX_DEPTH pending uretprobes per task: deeper calls give their
   entry and no return (what uprobe.h says a consumer must expect). */
TEST(uprobe_return_depth_limit)
{
	static char path[4096];
	struct ps_uprobe_site site;
	struct ps_event ev[2];
	struct ps_uprobe *u;
	struct ps_error err;
	uint64_t off;
	char why[256];
	int kinds[2] = {0, 0}, depth = PS_UPROBE_MAX_DEPTH + 6;

	if (!ps_uprobe_available(why, sizeof why))
		SKIP("%s", why);
	if (counters(ev) || ps_maps_file_offset(0, (uint64_t)(uintptr_t)ut_deep, path, sizeof path, &off, &err)) {
		CHECK(!"file offset");
		return;
	}
	site = (struct ps_uprobe_site){.path = path, .offset = off, .ret = 1};
	struct ps_uprobe_opts o = {.ev = ev, .nev = 2, .sites = &site, .nsites = 1, .ring_pages = 64, .enabled = 1};
	if (ps_uprobe_open(&u, gettid(), &o, &err)) {
		fprintf(stderr, "  %s\n", err.msg);
		CHECK(!"open");
		return;
	}
	ut_deep(10);
	ut_deep(depth);
	ps_uprobe_drain(u, count_kinds, kinds);
	CHECK_EQ_INT(kinds[PS_UPROBE_ENTRY], 10 + depth);
	CHECK_EQ_INT(kinds[PS_UPROBE_RETURN], 10 + PS_UPROBE_MAX_DEPTH);
	CHECK_EQ_INT(ps_uprobe_missing(u, &err), 0);
	ps_uprobe_close(u);
}

/* Whether @s holds a PS_UPROBE_MAP record of file @path (its inode @ino) mapped by @tid. */
static int saw_map(const struct seen *s, const char *path, uint64_t ino, pid_t tid)
{
	for (int i = 0; i < s->n && i < MAXHITS; i++)
		if (s->h[i].kind == PS_UPROBE_MAP && s->h[i].tid == tid && s->h[i].map.ino == ino &&
		    s->h[i].map.len == 4096 && !strcmp(s->h[i].map.path, path))
			return 1;
	return 0;
}

/* With opts.maps, code a thread maps is reported (a library loaded later), not counted as a hit. */
TEST(uprobe_maps_reports_mapped_code)
{
	static struct seen s;
	char path[4096], why[256];
	struct ps_uprobe_site site;
	struct ps_event ev[2];
	struct ps_error err;
	struct stat st;
	uint64_t off;

	if (!ps_uprobe_available(why, sizeof why))
		SKIP("%s", why);
	CHECK(realpath("/proc/self/exe", path) != NULL && stat(path, &st) == 0);
	CHECK(counters(ev) == 0);
	CHECK(ps_maps_file_offset(0, (uint64_t)(uintptr_t)ut_work, path, sizeof path, &off, &err) == 0);
	site = (struct ps_uprobe_site){.path = path, .offset = off, .ret = 1};
	for (int maps = 0; maps < 2; maps++) {
		struct ps_uprobe_opts o = {.ev = ev, .nev = 2, .sites = &site, .nsites = 1, .enabled = 1, .maps = maps};
		struct ps_uprobe *u;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		void *code;

		if (ps_uprobe_open(&u, gettid(), &o, &err)) {
			fprintf(stderr, "  %s\n", err.msg);
			CHECK(!"open");
			close(fd);
			return;
		}
		code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		CHECK(code != MAP_FAILED);
		ut_work(1);
		s.n = 0;
		CHECK_EQ_INT(ps_uprobe_drain(u, collect, &s), 2); /* the hit's entry and return only */
		CHECK_EQ_INT(saw_map(&s, path, st.st_ino, gettid()), maps);
		CHECK_EQ_INT(s.n, 2 + maps);
		munmap(code, 4096);
		close(fd);
		ps_uprobe_close(u);
	}
}
