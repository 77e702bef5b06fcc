/* bench/inproc.c - what a function region costs per hit under the in-process catcher
 * (--backend inproc: libperfsh-agent.so patches the entry, no trap), against the marker floor
 * (two raw read(2)s of a group of the same events, which every recorded hit makes) and against
 * the uprobe catcher on the same function, and the cost of a hit that sampling leaves out.
 *
 * bench/hit_target's hit_movslq (an ordinary entry, `movslq %edi,%rax`, moved to the
 * trampoline) is called N times under each catcher through perfsh's session; a catcher's cost
 * per hit in a round is (its time for N calls - its time for none) / N, the program's start, the
 * agent's patching and perfsh's set-up and draining all in it. Each run is timed twice: by the
 * wall clock, and by the program's own time on the CPU (hit_target writes it into
 * $BENCH_TARGET_CPU at its end), which is what a hit costs the program and which a loaded machine
 * disturbs far less; the goals are read on the latter. The floor is measured in every round too,
 * on this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), and each ratio is the median over ROUNDS
 * interleaved rounds of that round's ratio, so a load that comes and goes shifts both sides. The
 * sampled runs (10x the calls) keep each call with probability 0.01 (the live policy,
 * t:markers{sample = 0.01}): the cost per call, all in; and with probability 0: a call the draw
 * leaves out, alone. Goals (issue 19): a hit <= 1.3x the floor, >= 5x cheaper than the uprobe
 * catcher's, an unsampled call <= 20 ns.
 * Reports, never fails on a goal; a catcher that cannot work here is said so in one line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "events.h"
#include "group.h"
#include "run.h"
#include "session.h"

#define ROUNDS 7
#define N 200000
#define NS (10 * N) /* calls of the sampled runs */

enum { WALL, PROG, NMEASURE }; /* the wall clock; the program's CPU time */
static char cpu_file[64];      /* $BENCH_TARGET_CPU */

/* This thread's CPU time, ns. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Run hit_target @n movslq under catcher @how, hit_movslq a region; @p < 1: sampled with that
   probability (inproc). Fills @ns (wall ns from the start to the end, the program's CPU ns);
   returns 0, or -1 with a line on stderr. */
static int run(enum ps_catcher how, uint64_t n, double p, const struct ps_event *ev, uint64_t ns[NMEASURE])
{
	char count[32];
	char *argv[] = {"bench/hit_target", count, "movslq", NULL};
	const char *const stdio[3] = {NULL, "/dev/null", NULL};
	uint64_t t0 = ps_now_ns();
	struct ps_session *s;
	struct ps_error err;
	int rc = 0;

	snprintf(count, sizeof count, "%llu", (unsigned long long)n);
	unlink(cpu_file);
	if (ps_session_spawn_io(&s, argv, ev, 1, how, stdio, &err)) {
		fprintf(stderr, "inproc: %s\n", err.msg);
		return -1;
	}
	if (ps_session_region_func(s, "hit_movslq", 0, &err) < 0)
		rc = -1;
	if (!rc && p < 1) { /* p = 0: the draw leaves every call out */
		struct ps_mshm_policy pol = {
		    .on = 1, .sampled = 1, .threshold = (uint64_t)(p * 18446744073709551615.0)};

		rc = ps_session_marker_policy(s, &pol, &err);
	}
	while (!rc && (rc = ps_session_run(s, 0, 0, &err)) == 0)
		;
	if (rc < 0)
		fprintf(stderr, "inproc: %s\n", err.msg);
	ps_session_free(s);
	ns[WALL] = ps_now_ns() - t0;
	ns[PROG] = bench_target_cpu(cpu_file);
	if (!rc && !ns[PROG])
		fprintf(stderr, "inproc: the program wrote no CPU time into %s\n", cpu_file);
	return rc < 0 || !ns[PROG] ? -1 : 0;
}

/* One round of N pairs of raw reads of the group of @ev on this thread, per pair, in ns: @fl[WALL]
   by the wall clock, @fl[PROG] by this thread's CPU time. */
static void floor_round(const struct ps_event *ev, double fl[NMEASURE])
{
	uint64_t buf[3 + 2 * PS_MAX_EVENTS], t0, c0;
	struct ps_group g;
	struct ps_error err;

	fl[WALL] = fl[PROG] = 0;
	if (ps_group_open(&g, ev, 1, 0, -1, PS_GROUP_ENABLED, &err))
		return;
	t0 = ps_now_ns();
	c0 = thread_cpu_ns();
	for (int i = 0; i < N; i++)
		if (read(g.fds[0], buf, sizeof buf) < 0 || read(g.fds[0], buf, sizeof buf) < 0)
			break;
	fl[PROG] = (double)(thread_cpu_ns() - c0) / N;
	fl[WALL] = (double)(ps_now_ns() - t0) / N;
	ps_group_close(&g);
}

enum { INPROC, SAMPLED, UNSAMPLED, UPROBE, K };

/* The median over the rounds of @v[round][k][m] (k < K: a catcher's cost per call; k = K: the
   floor's), or of the ratio @v[round][k][m] / @v[round][d][m] when @d >= 0. */
static double over_rounds(double v[ROUNDS][K + 1][NMEASURE], int k, int d, int m)
{
	double x[ROUNDS];

	for (int r = 0; r < ROUNDS; r++)
		x[r] = d < 0 ? v[r][k][m] : v[r][d][m] > 0 ? v[r][k][m] / v[r][d][m] : 0;
	return median_d(x, ROUNDS);
}

int main(void)
{
	static const char *const name[K] = {"inproc", "inproc --sample 0.01", "inproc, a call left out", "uprobe"};
	static const enum ps_catcher how[K] = {PS_CATCH_INPROC, PS_CATCH_INPROC, PS_CATCH_INPROC, PS_CATCH_UPROBE};
	static const double prob[K] = {1, 0.01, 0, 1};
	static const uint64_t calls[K] = {N, NS, NS, N};
	static const char *const measure[NMEASURE] = {"wall", "program CPU"};
	static double per[ROUNDS][K + 1][NMEASURE]; /* [K]: the floor */
	uint64_t a[NMEASURE], b[NMEASURE];
	struct ps_event ev;
	struct ps_error err;
	int ok[K] = {1, 1, 1, 1};

	if (ps_event_resolve("task-clock", &ev, &err)) {
		printf("inproc: %s\n", err.msg);
		return 0;
	}
	snprintf(cpu_file, sizeof cpu_file, "/tmp/perfsh-bench-cpu.%d", (int)getpid());
	setenv("BENCH_TARGET_CPU", cpu_file, 1);
	for (int r = 0; r < ROUNDS; r++) { /* the floor in each round too: a ratio of one round's figures */
		for (int k = 0; k < K; k++)
			if (ok[k]) {
				ok[k] = !run(how[k], calls[k], prob[k], &ev, a) && !run(how[k], 0, prob[k], &ev, b);
				for (int m = 0; m < NMEASURE; m++)
					per[r][k][m] = ((double)a[m] - (double)b[m]) / (double)calls[k];
			}
		floor_round(&ev, per[r][K]);
	}
	printf("per call of hit_movslq (task-clock), %d calls (sampled: %d), medians of %d rounds,\n"
	       "by the wall clock and by the program's time on the CPU (what a hit costs it):\n",
	       N, NS, ROUNDS);
	printf("  %-24s %10s %12s\n", "", measure[WALL], measure[PROG]);
	printf("  %-24s %7.1f ns %9.1f ns (two read(2)s of the group)\n", "marker floor", over_rounds(per, K, -1, WALL),
	       over_rounds(per, K, -1, PROG));
	for (int k = 0; k < K; k++)
		if (ok[k])
			printf("  %-24s %7.1f ns %9.1f ns\n", name[k], over_rounds(per, k, -1, WALL),
			       over_rounds(per, k, -1, PROG));
		else
			printf("  %-24s cannot run here (above)\n", name[k]);
	if (ok[INPROC])
		printf("inproc / floor: %.2f (goal <= 1.3; wall clock %.2f)\n", over_rounds(per, INPROC, K, PROG),
		       over_rounds(per, INPROC, K, WALL));
	if (ok[INPROC] && ok[UPROBE])
		printf("uprobe / inproc: %.1f (goal >= 5; wall clock %.1f)\n", over_rounds(per, UPROBE, INPROC, PROG),
		       over_rounds(per, UPROBE, INPROC, WALL));
	if (ok[UNSAMPLED])
		printf("a call left out: %.1f ns (goal <= 20; wall clock %.1f ns)\n", over_rounds(per, UNSAMPLED, -1, PROG),
		       over_rounds(per, UNSAMPLED, -1, WALL));
	return 0;
}
