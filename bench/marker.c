/* bench/marker.c - the marker library's cost: a recorded begin/end pair with 1 and 4 events
 * against the floor (two read(2)s of a group of the same events, bare system calls, no library), and an unsampled
 * hit. Each configuration runs in a child (the library reads its environment once), medians of
 * 9 rounds. Goals: a pair <= 1.2x the floor; an unsampled hit <= 20 ns. Reports, never fails on
 * a goal. Beside each pair: PAPI's (two PAPI_reads of an event set of the same events) against
 * the same floor, or one line saying why PAPI cannot count them here. */
#include <ctype.h>
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "events.h"
#include "group.h"
#include "perfsh/marker.h"
#include "psnap.h"
#include "run.h"

#define ROUNDS 9

/* @n begin/end pairs of a marked region; ns taken. */
static uint64_t pairs(uint64_t n)
{
	uint64_t t0 = ps_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		PS_MARK_BEGIN(bench);
		__asm__ volatile("");
		PS_MARK_END(bench);
	}
	return ps_now_ns() - t0;
}

/* read(2) as a bare system call, as the library makes it (no libc cancellation wrapper). */
static inline long sys_read(int fd, void *buf, unsigned long n)
{
	long rc;

	__asm__ __volatile__("syscall" : "=a"(rc) : "0"(0L), "D"((long)fd), "S"(buf), "d"(n) : "rcx", "r11", "memory");
	return rc;
}

/* @n pairs of raw reads of group @g; ns taken. */
static uint64_t floor_reads(const struct ps_group *g, uint64_t n)
{
	uint64_t buf[3 + 2 * PS_MAX_EVENTS], t0 = ps_now_ns();

	for (uint64_t i = 0; i < n; i++)
		if (sys_read(g->fds[0], buf, sizeof buf) < 0 || sys_read(g->fds[0], buf, sizeof buf) < 0)
			return 0;
	return ps_now_ns() - t0;
}

/* The group of @events (comma-separated) on this thread, enabled; -1 if it fails. */
static int open_floor(const char *events, struct ps_group *g)
{
	struct ps_event ev[PS_MAX_EVENTS];
	struct ps_error err;
	char list[512], *save = NULL;
	int nev = 0;

	snprintf(list, sizeof list, "%s", events);
	for (char *e = strtok_r(list, ",", &save); e && nev < PS_MAX_EVENTS; e = strtok_r(NULL, ",", &save))
		if (ps_event_resolve(e, &ev[nev++], &err))
			return -1;
	return ps_group_open(g, ev, nev, 0, -1, PS_GROUP_ENABLED, &err);
}

/* The pair's and the floor's ns, rounds interleaved (the machine's load drifts alike for both). */
static int pair_vs_floor(const char *events)
{
	enum { N = 20000 };
	uint64_t p[ROUNDS], f[ROUNDS];
	struct ps_group g;

	if (!ps_marker_enabled() || open_floor(events, &g))
		return 1;
	for (int r = 0; r < ROUNDS; r++) {
		p[r] = pairs(N);
		f[r] = floor_reads(&g, N);
	}
	ps_group_close(&g);
	printf("%.1f %.1f\n", (double)median(p, ROUNDS) / N, (double)median(f, ROUNDS) / N);
	return 0;
}

/* @n pairs of PAPI_reads of the started event set @es; ns taken, 0 if a read fails. */
static uint64_t papi_pairs(int es, uint64_t n)
{
	long long v[PS_MAX_EVENTS];
	uint64_t t0 = ps_now_ns();

	for (uint64_t i = 0; i < n; i++)
		if (PAPI_read(es, v) != PAPI_OK || PAPI_read(es, v) != PAPI_OK)
			return 0;
	return ps_now_ns() - t0;
}

static const char *papi_err(int rc)
{
	const char *s = PAPI_strerror(rc);

	return s ? s : "unknown PAPI error";
}

/* PAPI started on an event set of @events (libpfm4's perf:: names, the PMU's or the kernel's
   software events) in @es; else -1 with why in @why, PAPI shut down. */
static int papi_open(const char *events, int *es, char *why, size_t n)
{
	char list[512], name[80], *save = NULL;
	const PAPI_component_info_t *ci;
	int rc = PAPI_library_init(PAPI_VER_CURRENT), cid, nev = 0;

	*es = PAPI_NULL;
	if (rc != PAPI_VER_CURRENT) {
		snprintf(why, n, "PAPI_library_init: %s", rc < 0 ? papi_err(rc) : "library version mismatch");
		return -1;
	}
	cid = PAPI_get_component_index("perf_event");
	if (!(ci = cid < 0 ? NULL : PAPI_get_component_info(cid))) {
		snprintf(why, n, "PAPI has no perf_event component");
		goto fail;
	}
	if (ci->disabled) {
		snprintf(why, n, "PAPI's perf_event component is disabled: %.400s", ci->disabled_reason);
		goto fail;
	}
	if ((rc = PAPI_create_eventset(es)) != PAPI_OK) {
		snprintf(why, n, "PAPI_create_eventset: %s", papi_err(rc));
		goto fail;
	}
	snprintf(list, sizeof list, "%s", events);
	for (char *e = strtok_r(list, ",", &save); e && nev++ < PS_MAX_EVENTS; e = strtok_r(NULL, ",", &save)) {
		size_t k = (size_t)snprintf(name, sizeof name, "perf::%s", e);

		for (size_t i = 6; i < k && i < sizeof name; i++)
			name[i] = (char)toupper((unsigned char)name[i]);
		if ((rc = PAPI_add_named_event(*es, name)) != PAPI_OK) {
			snprintf(why, n, "PAPI_add_named_event(%s): %s", name, papi_err(rc));
			goto fail;
		}
	}
	if ((rc = PAPI_start(*es)) == PAPI_OK)
		return 0;
	snprintf(why, n, "PAPI_start: %s", papi_err(rc));
fail:
	if (*es != PAPI_NULL) {
		PAPI_cleanup_eventset(*es);
		PAPI_destroy_eventset(es);
	}
	PAPI_shutdown();
	return -1;
}

/* PAPI's pair and the floor's ns, rounds interleaved as pair_vs_floor does, and PAPI's version;
   "skip WHY" where PAPI cannot count @events. */
static int papi_vs_floor(const char *events)
{
	enum { N = 20000 };
	uint64_t q[ROUNDS], f[ROUNDS];
	long long v[PS_MAX_EVENTS];
	struct ps_group g;
	char why[512];
	int es, ver, ok = 1;

	if (papi_open(events, &es, why, sizeof why)) {
		printf("skip %s\n", why);
		return 0;
	}
	if (open_floor(events, &g) == 0) {
		for (int r = 0; r < ROUNDS && ok; r++) {
			ok = (q[r] = papi_pairs(es, N)) > 0;
			f[r] = floor_reads(&g, N);
		}
		ps_group_close(&g);
	} else
		ok = -1;
	ver = PAPI_get_opt(PAPI_LIB_VERSION, NULL);
	PAPI_stop(es, v);
	PAPI_cleanup_eventset(es);
	PAPI_destroy_eventset(&es);
	PAPI_shutdown();
	if (ok < 0)
		return 1;
	if (!ok)
		printf("skip PAPI_read failed\n");
	else
		printf("%.1f %.1f %d.%d.%d\n", (double)median(q, ROUNDS) / N, (double)median(f, ROUNDS) / N,
		       PAPI_VERSION_MAJOR(ver), PAPI_VERSION_MINOR(ver), PAPI_VERSION_REVISION(ver));
	return 0;
}

/* ns per unrecorded pair. */
static double unsampled(void)
{
	enum { N = 10000000 };
	uint64_t v[ROUNDS];

	for (int r = 0; r < ROUNDS; r++)
		v[r] = pairs(N);
	return (double)median(v, ROUNDS) / N;
}

/* A child: "pair EVENTS" prints the pair's and the floor's ns, "papi EVENTS" PAPI's and the
   floor's; "hit" an unmarked pair's ns. */
static int child(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "pair"))
		return pair_vs_floor(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "papi"))
		return papi_vs_floor(argv[2]);
	printf("%.2f\n", unsampled());
	return 0;
}

/* Run this program as a child with @env (NAME=VALUE pairs, NULL-terminated) and arguments; its
   first line of output into @line. */
static int run_child(const char *self, char *const env[], const char *a1, const char *a2, char *line, size_t n)
{
	int fd[2], st;
	pid_t pid;
	FILE *f;

	if (pipe(fd))
		return -1;
	if ((pid = fork()) == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		unsetenv("PERFSH_OUT");
		for (int i = 0; env[i]; i++)
			putenv(env[i]);
		execl(self, self, a1, a2, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	line[0] = '\0';
	if (f) {
		if (!fgets(line, (int)n, f))
			line[0] = '\0';
		fclose(f);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 && line[0] ? 0 : -1;
}

/* PAPI's row for @nev @events beside the marker library's, or once per reason, why it is skipped. */
static void papi_row(const char *self, int pmu, int nev, const char *events)
{
	static char skipped[512];
	char *env[] = {NULL}, line[512], ver[32];
	double q, fl;

	if (run_child(self, env, "papi", events, line, sizeof line)) {
		printf("marker: PAPI skipped for %s (the PAPI child failed)\n", events);
		return;
	}
	line[strcspn(line, "\n")] = '\0';
	if (!strncmp(line, "skip ", 5)) {
		if (strcmp(line + 5, skipped))
			printf("marker: PAPI skipped (%s%s)\n",
			       !pmu && strstr(line, "component is disabled") ? "no hardware PMU: " : "", line + 5);
		snprintf(skipped, sizeof skipped, "%s", line + 5);
		return;
	}
	if (sscanf(line, "%lf %lf %31s", &q, &fl, ver) != 3 || fl <= 0) {
		printf("marker: PAPI skipped for %s (the PAPI child printed '%s')\n", events, line);
		return;
	}
	printf("marker: %d event%s (%s): PAPI_read pair %.2f us, floor (2 group reads) %.2f us: %.2fx (PAPI %s)\n", nev,
	       nev > 1 ? "s" : "", events, q / 1e3, fl / 1e3, q / fl, ver);
}

int main(int argc, char **argv)
{
	static char out[64], sample[] = "PERFSH_EVERY=4611686018427387904";
	int pmu = ps_pmu_present();
	const char *sets[2] = {pmu ? "instructions" : "task-clock",
			       pmu ? "cycles,instructions,branches,branch-misses"
				   : "task-clock,page-faults,context-switches,cpu-migrations"};
	char evs[600], line[128], path[] = "/tmp/perfsh-bench-marker-XXXXXX";
	double on, off;
	int fd;

	if (argc > 1)
		return child(argc, argv);
	if ((fd = mkstemp(path)) < 0)
		return perror("marker: mkstemp"), 1;
	close(fd);
	snprintf(out, sizeof out, "PERFSH_OUT=%s", path);
	for (int s = 0; s < 2; s++) {
		char *env[] = {out, evs, NULL};
		double pair, fl;
		struct ps_psnap_reader *r;
		struct ps_error err;

		snprintf(evs, sizeof evs, "PERFSH_EVENTS=%s", sets[s]);
		if (run_child(argv[0], env, "pair", sets[s], line, sizeof line) ||
		    sscanf(line, "%lf %lf", &pair, &fl) != 2 || fl <= 0) {
			fprintf(stderr, "marker: the %s child failed\n", sets[s]);
			unlink(path);
			return 1;
		}
		printf("marker: %d event%s (%s): begin/end pair %.2f us, floor (2 group reads) %.2f us: %.2fx "
		       "(goal <= 1.2x)\n",
		       s ? 4 : 1, s ? "s" : "", sets[s], pair / 1e3, fl / 1e3, pair / fl);
		papi_row(argv[0], pmu, s ? 4 : 1, sets[s]);
		if (s == 1 && ps_psnap_open(path, &r, &err) == 0) {
			printf("marker: counters read by %s (read(2) %s ns; rdpmc %s)\n",
			       ps_psnap_meta_get(r, "marker.read"), ps_psnap_meta_get(r, "marker.read_ns"),
			       ps_psnap_meta_get(r, "marker.rdpmc_ns"));
			ps_psnap_reader_close(r);
		}
	}
	{
		char *env_on[] = {out, sample, NULL}, *env_off[] = {NULL};

		if (run_child(argv[0], env_on, "hit", NULL, line, sizeof line) || sscanf(line, "%lf", &on) != 1 ||
		    run_child(argv[0], env_off, "hit", NULL, line, sizeof line) || sscanf(line, "%lf", &off) != 1) {
			fprintf(stderr, "marker: the unsampled child failed\n");
			unlink(path);
			return 1;
		}
	}
	printf("marker: unsampled hit (begin + end, not recorded) %.1f ns (goal <= 20 ns); markers off %.1f ns\n", on,
	       off);
	unlink(path);
	return 0;
}
