/* bench/hit_table.c - the cost of one hit, every way perfsh can catch a function, in one table.
 *
 *   hit_table [N]
 *
 * bench/hit_target calls hit_movslq() (an ordinary entry: movslq %edi,%rax) or hit_nop5() (a
 * 5-byte NOP at the entry) N times (default 20,000); task-clock is the one event of every row:
 *   ptrace floor    a minimal ptrace tracer written here: int3 at the entry (the displaced
 *                   instruction emulated), int3 at the return address, a group read per stop
 *   uprobe floor    raw perf_event_open + mmap, no perfsh code (bench/uprobe_floor.h)
 *   perfsh ptrace   a session caught by ptrace (core/catch/ptrace/catch_ptrace.c)
 *   perfsh uprobe   a session caught by uprobes (core/catch/uprobe/uprobe_catcher.c), the floor's ring size
 * The cost of a hit is (time of a run of N calls - time of a run of N/10) / (9N/10): start-up,
 * probe registration and ring set-up cancel (the uprobe rows, far cheaper per hit, make 5x
 * more calls). The runs of each kind are interleaved (the order
 * rotates) REPS times; a cost is the median over them, a ratio the median of the ratios of
 * runs side by side (which saw the same load on the machine). Prints
 * the ratios with their goals and "goal met" / "goal missed"; a missed goal is reported, never
 * a failure. Without the uprobe PMU (not root) the uprobe rows are skipped, saying why.
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
#include "session.h"
#include "symbols.h"
#include "uprobe_floor.h"

#define REPS 9

enum { PT_FLOOR, UP_FLOOR, PS_PTRACE, PS_UPROBE, NROW };
static const char *const row_name[NROW] = {"ptrace floor", "uprobe floor", "perfsh ptrace", "perfsh uprobe"};

struct target {
	struct fn fn;	     /* mode, symbol, path and file offset (uprobe_floor.h) */
	uint64_t entry_link; /* link-time address of the function */
};

static void set_n(uint64_t n)
{
	snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
}

static uint64_t run_ptrace_floor(const struct target *tg, const struct ps_event *ev, uint64_t n)
{
	char *argv[] = {UF_TARGET, nbuf, (char *)tg->fn.mode, NULL};
	return ptrace_floor_run(argv, ev, 1, tg->entry_link, tg->fn.nop5 ? FLOOR_NOP5 : FLOOR_MOVSLQ, n);
}

/* A perfsh session on the target, caught by @how; checks every hit was recorded. */
static uint64_t run_session(const struct target *tg, const struct ps_event *ev, uint64_t n, enum ps_catcher how)
{
	char *argv[] = {UF_TARGET, nbuf, (char *)tg->fn.mode, NULL};
	struct ps_session *s;
	struct ps_error err;
	uint64_t t0 = ps_now_ns();

	if (ps_session_spawn_by(&s, argv, ev, 1, how, &err) ||
	    (how == PS_CATCH_UPROBE && ps_session_uprobe_ring(s, PAGES, &err)) ||
	    ps_session_region_func(s, tg->fn.sym, 0, &err) < 0 || ps_session_run(s, 0, 0, &err) != 1) {
		fprintf(stderr, "hit_table: perfsh %s: %s\n", how == PS_CATCH_UPROBE ? "uprobe" : "ptrace", err.msg);
		exit(1);
	}
	uint64_t t = ps_now_ns() - t0;
	if (ps_session_nrecords(s) != n || ps_session_lost(s)) /* a full ring: said, not fatal */
		fprintf(stderr, "hit_table: perfsh %s recorded %llu hits (%llu lost), expected %llu\n",
			how == PS_CATCH_UPROBE ? "uprobe" : "ptrace", (unsigned long long)ps_session_nrecords(s),
			(unsigned long long)ps_session_lost(s), (unsigned long long)n);
	ps_session_free(s);
	return t;
}

/* The uprobe rows run UP_TIMES more calls: a hit costs them so little that N calls would not
   stand out of the noise of their set-up. */
#define UP_TIMES 5

static uint64_t run_row(int row, const struct target *tg, const struct ps_event *ev, uint64_t n)
{
	if (row == UP_FLOOR || row == PS_UPROBE)
		n *= UP_TIMES;
	set_n(n);
	switch (row) {
	case PT_FLOOR:
		return run_ptrace_floor(tg, ev, n);
	case UP_FLOOR:
		return run_floor(&tg->fn, n);
	case PS_PTRACE:
		return run_session(tg, ev, n, PS_CATCH_PTRACE);
	default:
		return run_session(tg, ev, n, PS_CATCH_UPROBE);
	}
}

/* The median over the runs of @a's cost / @b's: runs side by side saw the same load. */
static void ratio(const char *what, const double *a, const double *b, int le, double goal)
{
	uint64_t q[REPS];
	for (int r = 0; r < REPS; r++)
		q[r] = (uint64_t)(1e6 * a[r] / (b[r] > 0 ? b[r] : 1e-9));
	double v = (double)median(q, REPS) / 1e6;
	int met = le ? v <= goal : v >= goal;
	printf("  %-32s %6.2f   goal %s %-5g %s\n", what, v, le ? "<=" : ">=", goal, met ? "goal met" : "goal missed");
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 20000, n0 = n / 10;
	struct target tg[2] = {{.fn = {.mode = "movslq", .sym = "hit_movslq"}},
			       {.fn = {.mode = "nop5", .sym = "hit_nop5"}}};
	struct ps_event ev;
	struct ps_error err;
	struct ps_symtab *st;
	char why[256], path[4096];
	int up = ps_uprobe_available(why, sizeof why);

	if (n < 10)
		return fprintf(stderr, "hit_table: N must be at least 10\n"), 1;
	if (!realpath(UF_TARGET, path) || ps_sym_open(&st, UF_TARGET, &err))
		return fprintf(stderr, "hit_table: cannot read %s (run make bench)\n", UF_TARGET), 1;
	for (int i = 0; i < 2; i++) {
		const struct ps_sym *sym;
		snprintf(tg[i].fn.path, sizeof tg[i].fn.path, "%s", path);
		if (ps_sym_lookup(st, tg[i].fn.sym, &sym, &err) ||
		    ps_uprobe_file_offset(path, sym->addr, &tg[i].fn.off, &err)) {
			fprintf(stderr, "hit_table: %s\n", err.msg);
			ps_sym_close(st);
			return 1;
		}
		tg[i].entry_link = sym->addr;
		tg[i].fn.nop5 = i == 1;
	}
	ps_sym_close(st);
	if (ps_event_resolve("task-clock", &ev, &err))
		return fprintf(stderr, "hit_table: %s\n", err.msg), 1;
	printf("hit_table: us per hit (entry + return caught, task-clock read at both), %llu vs %llu calls "
	       "(uprobes: %dx more), medians of %d interleaved runs\n",
	       (unsigned long long)n, (unsigned long long)n0, UP_TIMES, REPS);
	if (!up)
		printf("hit_table: uprobe rows skipped: %s\n", why);
	for (int i = 0; i < 2; i++) {
		uint64_t t[NROW][2][REPS], m[REPS];
		double us[NROW][REPS];
		for (int r = 0; r < REPS; r++)
			for (int k = 0; k < NROW; k++) {
				int row = (k + r) % NROW; /* the order rotates */
				if (!up && (row == UP_FLOOR || row == PS_UPROBE))
					continue;
				t[row][0][r] = run_row(row, &tg[i], &ev, n);
				t[row][1][r] = run_row(row, &tg[i], &ev, n0);
			}
		printf("\n%s (%s entry)\n", tg[i].fn.sym, i ? "5-byte NOP" : "ordinary");
		for (int row = 0; row < NROW; row++) {
			if (!up && (row == UP_FLOOR || row == PS_UPROBE))
				continue;
			for (int r = 0; r < REPS; r++) {
				uint64_t k = row == UP_FLOOR || row == PS_UPROBE ? UP_TIMES : 1;
				us[row][r] =
				    ((double)t[row][0][r] - (double)t[row][1][r]) / (double)(k * (n - n0)) / 1000.0;
				m[r] = (uint64_t)(us[row][r] > 0 ? us[row][r] * 1000.0 : 0);
			}
			printf("  %-32s %6.2f us/hit\n", row_name[row], (double)median(m, REPS) / 1000.0);
		}
		ratio("perfsh ptrace / ptrace floor", us[PS_PTRACE], us[PT_FLOOR], 1, 1.15);
		if (up) {
			ratio("perfsh uprobe / uprobe floor", us[PS_UPROBE], us[UP_FLOOR], 1, 1.3);
			ratio("perfsh ptrace / perfsh uprobe", us[PS_PTRACE], us[PS_UPROBE], 0, i ? 10 : 3);
		}
	}
	return 0;
}
