/* bench/uprobe_sample.c - what a call costs under the uprobe catcher when sampling leaves it out.
 *
 *   uprobe_sample [N]
 *
 * bench/hit_target calls hit_movslq() (an ordinary entry) or hit_nop5() (a 5-byte NOP at the
 * entry) N times (default 100,000), under:
 *   uprobe floor        the bare probes' traps: raw perf_event_open + mmap, a uprobe and a
 *                       uretprobe writing a record each into a ring (bench/uprobe_floor.h)
 *   perfsh --sample     a perfsh session caught by uprobes, the region sampled with p = 0.01
 *                       (core/catch/uprobe/uprobe_catcher.c): the kernel writes the same
 *                       records, perfsh keeps those of 1% of the calls, so 99% of the calls
 *                       are unsampled ones; the floor's ring size
 * The cost of a call is (a run of N calls - a run of N/10) / (9N/10): start-up, probe
 * registration and ring set-up cancel. It is measured twice: by the target's own CPU time
 * (getrusage of the reaped child: its instructions and the kernel's handling of its traps, what
 * a call costs the program) and by wall time (which on a loaded machine also holds the waits for
 * a CPU shared with perfsh's reader and everything else). The runs are interleaved (the order
 * alternates) REPS times; a cost is the median over them, a ratio the median of the ratios of
 * runs side by side (which saw the same load). Goal: the CPU-time ratio at most 1.1, printed
 * with "goal met" or "goal missed" (reported, never a failure). Each session is checked: every
 * call counted, about 1% recorded, nothing lost. Without the uprobe PMU (not root) it says why
 * and exits 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "session.h"
#include "symbols.h"
#include "uprobe_floor.h"

#define REPS 7
#define GOAL 1.1
#define P 0.01

/* A session on the target by uprobes, its one function region sampled with probability P. */
static uint64_t run_sampled(const struct fn *f, const struct ps_event *ev, uint64_t n)
{
	char *argv[] = {UF_TARGET, nbuf, (char *)f->mode, NULL};
	struct ps_sample how = {.p = P};
	struct ps_session *s;
	struct ps_error err;
	uint64_t t0 = ps_now_ns(), t, rec;
	int id = -1;

	if (ps_session_spawn_by(&s, argv, ev, 1, PS_CATCH_UPROBE, &err) || ps_session_uprobe_ring(s, PAGES, &err) ||
	    (id = ps_session_region_func(s, f->sym, 0, &err)) < 0 || ps_session_region_sample(s, id, &how, &err) ||
	    ps_session_run(s, 0, 0, &err) != 1) {
		fprintf(stderr, "uprobe_sample: %s\n", err.msg);
		exit(1);
	}
	t = ps_now_ns() - t0;
	rec = ps_session_nrecords(s);
	/* 10 sigma either side of n p: a gross error, never chance */
	if (ps_session_entries(s, id) != n || ps_session_lost(s) || (double)rec < n * P - 10 * sqrt(n * P) - 1 ||
	    (double)rec > n * P + 10 * sqrt(n * P) + 1) {
		fprintf(stderr, "uprobe_sample: %llu calls counted, %llu recorded, %llu lost; expected %llu calls\n",
			(unsigned long long)ps_session_entries(s, id), (unsigned long long)rec,
			(unsigned long long)ps_session_lost(s), (unsigned long long)n);
		exit(1);
	}
	ps_session_free(s);
	return t;
}

/* The CPU time of the children reaped so far, ns. */
static uint64_t children_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return bench_cpu_ns(&ru);
}

/* One run of @n calls, the floor's or the sampled session's: its wall time, and the target's CPU
   time into *@cpu. */
static uint64_t run_one(int sampled, const struct fn *f, const struct ps_event *ev, uint64_t n, uint64_t *cpu)
{
	uint64_t c0 = children_cpu_ns(), t;

	snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
	t = sampled ? run_sampled(f, ev, n) : run_floor(f, n);
	*cpu = children_cpu_ns() - c0;
	return t;
}

/* The median of @n values in us (to the ns). */
static double median_us(const double *v, int n)
{
	uint64_t m[REPS];

	for (int r = 0; r < n; r++)
		m[r] = (uint64_t)(v[r] > 0 ? v[r] * 1000.0 + 0.5 : 0);
	return (double)median(m, n) / 1000.0;
}

/* The cost per call of the floor (@us[0]) and of the sampled runs (@us[1]) by @what, and their
   ratio: the median of the ratios of runs side by side; with its goal if @goal. */
static void report(const char *what, double us[2][REPS], int goal)
{
	double q[REPS], ratio;

	for (int r = 0; r < REPS; r++)
		q[r] = us[1][r] / (us[0][r] > 0 ? us[0][r] : 1e-9);
	ratio = median_us(q, REPS);
	printf("  by %s:\n", what);
	printf("    %-36s %6.2f us/call\n", "uprobe floor (bare probes)", median_us(us[0], REPS));
	printf("    %-36s %6.2f us/call\n", "perfsh uprobe --sample 0.01", median_us(us[1], REPS));
	if (goal)
		printf("    %-36s %6.2f   goal <= %g %s\n", "perfsh --sample 0.01 / uprobe floor", ratio, GOAL,
		       ratio <= GOAL ? "goal met" : "goal missed");
	else
		printf("    %-36s %6.2f\n", "perfsh --sample 0.01 / uprobe floor", ratio);
}

/* The two functions' file offsets; 0, or -1 with the reason printed. */
static int find_fns(struct fn fns[2])
{
	struct ps_symtab *st;
	struct ps_error err;
	char path[4096];

	if (!realpath(UF_TARGET, path) || ps_sym_open(&st, UF_TARGET, &err))
		return fprintf(stderr, "uprobe_sample: cannot read %s (run make bench)\n", UF_TARGET), -1;
	for (int i = 0; i < 2; i++) {
		const struct ps_sym *sym;
		snprintf(fns[i].path, sizeof fns[i].path, "%s", path);
		if (ps_sym_lookup(st, fns[i].sym, &sym, &err) ||
		    ps_uprobe_file_offset(fns[i].path, sym->addr, &fns[i].off, &err)) {
			fprintf(stderr, "uprobe_sample: %s\n", err.msg);
			ps_sym_close(st);
			return -1;
		}
		fns[i].nop5 = i == 1;
	}
	ps_sym_close(st);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000, n0 = n / 10;
	struct fn fns[2] = {{.mode = "movslq", .sym = "hit_movslq"}, {.mode = "nop5", .sym = "hit_nop5"}};
	struct ps_event ev;
	struct ps_error err;
	char why[256];

	if (n < 10)
		return fprintf(stderr, "uprobe_sample: N must be at least 10\n"), 1;
	if (!ps_uprobe_available(why, sizeof why)) {
		printf("uprobe_sample: skipped: %s\n", why);
		return 0;
	}
	if (find_fns(fns))
		return 1;
	if (ps_event_resolve("task-clock", &ev, &err))
		return fprintf(stderr, "uprobe_sample: %s\n", err.msg), 1;
	printf("uprobe_sample: us per call, perfsh --sample %g under the uprobe catcher (99%% of calls unsampled) "
	       "against the bare probes' traps; %llu vs %llu calls, medians of %d interleaved runs\n",
	       P, (unsigned long long)n, (unsigned long long)n0, REPS);
	for (int i = 0; i < 2; i++) {
		double us[2][2][REPS]; /* [the target's CPU, wall][floor, sampled][run] */
		for (int r = 0; r < REPS; r++)
			for (int k = 0; k < 2; k++) {
				int row = (k + r) % 2; /* the order alternates */
				uint64_t c, c0, t = run_one(row, &fns[i], &ev, n, &c);
				uint64_t t0 = run_one(row, &fns[i], &ev, n0, &c0);
				us[0][row][r] = ((double)c - (double)c0) / (double)(n - n0) / 1000.0;
				us[1][row][r] = ((double)t - (double)t0) / (double)(n - n0) / 1000.0;
			}
		printf("\n%s (%s entry)\n", fns[i].sym, i ? "5-byte NOP" : "ordinary");
		report("the target's CPU time", us[0], 1);
		report("wall time", us[1], 0);
	}
	return 0;
}
