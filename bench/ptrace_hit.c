/* bench/ptrace_hit.c - what a function region costs per hit under ptrace.
 *
 * Runs bench/hit_target (hit() called N times) plain, under perfsh's session (core/session/session.c:
 * entry breakpoint, return caught by the trampoline, group read at both stops, a record per
 * hit), and under a minimal tracer written here that does only an entry int3, an int3 at the
 * return address and one group read at each stop: the floor. Prints the overhead per hit in
 * microseconds for 0, 1 and 4 events and the ratio of perfsh to the floor (goal: <= 1.15): the
 * time of a run of N calls less that of N/10 calls, over the difference, medians of REPS runs.
 * Hardware events where the machine has a PMU, software events elsewhere (said so).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "group.h"
#include "ptrace_floor.h"
#include "run.h"
#include "session.h"
#include "symbols.h"

#define TARGET "bench/hit_target"
#define REPS 7

static char nbuf[32];
static char *target_argv[] = {TARGET, nbuf, NULL};

static uint64_t run_plain(void)
{
	uint64_t t0 = ps_now_ns();
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execv(TARGET, target_argv);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	return ps_now_ns() - t0;
}

/* @p > 0: the region is sampled with probability p (hardware breakpoint at the entry). */
static uint64_t run_perfsh(const struct ps_event *ev, int nev, uint64_t n, double p, uint64_t *stops)
{
	struct ps_session *s;
	struct ps_error err;
	struct ps_sample how = {.p = p};
	uint64_t t0 = ps_now_ns();
	int id;

	if (ps_session_spawn(&s, target_argv, ev, nev, &err) || (id = ps_session_region_func(s, "hit", 0, &err)) < 0 ||
	    (p > 0 && ps_session_region_sample(s, id, &how, &err)) || ps_session_run(s, 0, 0, &err) != 1) {
		fprintf(stderr, "ptrace_hit: perfsh: %s\n", err.msg);
		exit(1);
	}
	uint64_t t = ps_now_ns() - t0;
	if (stops)
		*stops = ps_session_stops(s);
	if (p > 0) {
		if (ps_session_entries(s, id) != n) {
			fprintf(stderr, "ptrace_hit: sampling counted %llu entries, expected %llu\n",
				(unsigned long long)ps_session_entries(s, id), (unsigned long long)n);
			exit(1);
		}
	} else if (ps_session_nrecords(s) != n) {
		fprintf(stderr, "ptrace_hit: perfsh recorded %llu hits, expected %llu\n",
			(unsigned long long)ps_session_nrecords(s), (unsigned long long)n);
		exit(1);
	}
	ps_session_free(s);
	return t;
}

static uint64_t run_floor(const struct ps_event *ev, int nev, uint64_t entry_link, uint64_t n)
{
	return ptrace_floor_run(target_argv, ev, nev, entry_link, FLOOR_ENDBR64, n);
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000, plain[REPS], a[REPS], b[REPS], base;
	const char *hw[] = {"instructions", "cycles", "branches", "branch-misses"};
	const char *sw[] = {"task-clock", "page-faults", "context-switches", "cpu-migrations"};
	const char **names = ps_pmu_present() ? hw : sw;
	struct ps_event ev[4];
	struct ps_error err;
	struct ps_symtab *st;
	const struct ps_sym *sym;
	int counts[] = {0, 1, 4};

	snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
	if (ps_sym_open(&st, TARGET, &err) || ps_sym_lookup(st, "hit", &sym, &err)) {
		fprintf(stderr, "ptrace_hit: %s (run make bench)\n", err.msg);
		return 1;
	}
	uint64_t entry_link = sym->addr;
	ps_sym_close(st);
	for (int i = 0; i < 4; i++)
		if (ps_event_resolve(names[i], &ev[i], &err))
			return fprintf(stderr, "ptrace_hit: %s\n", err.msg), 1;
	for (int i = 0; i < REPS; i++)
		plain[i] = run_plain();
	base = median(plain, REPS);
	printf("ptrace_hit: %llu calls of hit(); plain run %.3f ms; %s events\n", (unsigned long long)n, base / 1e6,
	       names == hw ? "hardware" : "software (no hardware PMU here)");
	printf("%-8s %14s %14s %8s\n", "events", "perfsh us/hit", "floor us/hit", "ratio");
	/* per hit: (a run of n calls - a run of n0) / (n - n0): start-up and set-up cancel */
	uint64_t n0 = n / 10, a0[REPS], b0[REPS];
	for (int c = 0; c < 3; c++) {
		for (int i = 0; i < REPS; i++) { /* interleaved, the order alternating */
			snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
			if (i & 1)
				b[i] = run_floor(ev, counts[c], entry_link, n);
			a[i] = run_perfsh(ev, counts[c], n, 0, NULL);
			if (!(i & 1))
				b[i] = run_floor(ev, counts[c], entry_link, n);
			snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n0);
			a0[i] = run_perfsh(ev, counts[c], n0, 0, NULL);
			b0[i] = run_floor(ev, counts[c], entry_link, n0);
		}
		double pa = ((double)median(a, REPS) - (double)median(a0, REPS)) / (double)(n - n0) / 1000.0;
		double pb = ((double)median(b, REPS) - (double)median(b0, REPS)) / (double)(n - n0) / 1000.0;
		printf("%-8d %14.2f %14.2f %8.2f\n", counts[c], pa, pb, pa / pb);
	}
	snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
	/* sampling: every entry counted by a hardware breakpoint, only sampled ones stop */
	{
		const double ps[] = {1, 0.1, 0.01};
		double at1 = 0;
		printf("\nsampled (1 event): overhead per call, all calls counted\n");
		printf("%-8s %14s %10s %14s\n", "p", "us/call", "stops", "vs p=1");
		for (int c = 0; c < 3; c++) {
			uint64_t stops = 0;
			for (int i = 0; i < REPS; i++)
				a[i] = run_perfsh(ev, 1, n, ps[c], &stops);
			double pa = (double)(median(a, REPS) - base) / (double)n / 1000.0;
			if (c == 0)
				at1 = pa;
			printf("%-8g %14.3f %10llu %13.1fx\n", ps[c], pa, (unsigned long long)stops, at1 / pa);
		}
	}
	return 0;
}
