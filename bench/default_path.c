/* bench/default_path.c - what a hit costs on perfsh's default path, against its catcher's floor.
 *
 *   default_path [N]
 *
 * The default path is perfsh as a user types it, with no --backend (and $PERFSH_BACKEND unset):
 *   ./perfsh stat -r FUNC -e task-clock PROG N MODE
 * run as a separate process, so whatever catcher `auto` takes is what is measured, against the
 * floor of that catcher: for the in-process catcher the marker floor (two raw read(2)s of a
 * task-clock group, which every recorded hit makes, as bench/inproc.c takes it), for the others
 * bench/uprobe_floor.h: a minimal raw perf_event_open uprobe tracer (a task-clock leader, a
 * uprobe at the entry and one for the exit, as perfsh's catcher takes it: a uretprobe for a leaf,
 * else a uprobe at the ret, sampling the group into one ring) on the same function. Where auto
 * takes another catcher than uprobe, `perfsh stat --backend uprobe` is measured beside it against
 * the uprobe floor, so the uprobe catcher's rows stay. Six functions,
 * an ordinary entry and a 5-byte-NOP entry (0f 1f 44 00 00, checked in the file) in each of
 *   C     bench/hit_target  hit_movslq, hit_nop5                 (cc, assembly entries)
 *   C++   bench/hit_cxx     hits::plain(int), hits::nop5(int)    (g++, mangled, in a namespace)
 *   Rust  bench/hit_rs      hit_rs::hits::plain, hit_rs::hits::nop5 (rustc, mangled paths)
 * The Rust rows are skipped, saying why, where no rustc built bench/hit_rs.
 *
 * The cost of a hit is (time of a run of N calls - time of a run of N/10) / (9N/10): start-up,
 * probe registration, ring set-up and tear-down cancel. It is taken three ways: on the wall
 * clock; on the CPU, the tracer's and the target's (wait4(), getrusage()); and on the target's
 * CPU alone (what a hit costs the program: the kernel's handling of its probes is in it), which
 * the targets write at their end into the file $BENCH_TARGET_CPU names. A loaded machine
 * disturbs the CPU times far less than the wall clock. The floor makes N = 5,000 calls on an
 * ordinary entry (or the argument), NOP_TIMES more on a NOP entry (a hit costs far less there);
 * the default path as many, PTRACE_DIV fewer where it took ptrace, INPROC_TIMES more where it
 * took inproc (its first run, of N/10 calls, says which), the marker floor as many as it. The
 * runs are interleaved (the order rotates) REPS times; a cost is the median over them, a ratio
 * the median of the ratios of runs side by side (which saw the same load). Prints, per
 * function, the catcher the default path took ("caught by", and auto's note where it took
 * another than it would first), the costs, and default / its floor (and --backend uprobe /
 * uprobe floor) by each measure against its goal (<= 1.3) with "goal met", "goal missed" or
 * "too noisy to judge", then a summary; a missed goal is reported, never a failure. Without the
 * uprobe PMU (not root) the uprobe floor is skipped, saying why.
 * Exits 1 only when a run of perfsh fails (its output is shown).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "events.h"
#include "group.h"
#include "symbols.h"
#include "uprobe_floor.h"

#define REPS 3
#define NOP_TIMES 8	/* a NOP entry makes this many times more calls */
#define PTRACE_DIV 4	/* a row caught by ptrace makes this many times fewer */
#define INPROC_TIMES 40 /* a row caught by inproc makes this many times more (a hit costs ~1 us) */
#define GOAL 1.3

struct row {
	const char *lang, *prog, *func, *mode;
	int nop5;
};

static const struct row rows[] = {
    {"C", "bench/hit_target", "hit_movslq", "movslq", 0},
    {"C", "bench/hit_target", "hit_nop5", "nop5", 1},
    {"C++", "bench/hit_cxx", "hits::plain(int)", "plain", 0},
    {"C++", "bench/hit_cxx", "hits::nop5(int)", "nop5", 1},
    {"Rust", "bench/hit_rs", "hit_rs::hits::plain", "plain", 0},
    {"Rust", "bench/hit_rs", "hit_rs::hits::nop5", "nop5", 1},
};

/* What one run of the default path printed. */
struct out {
	uint64_t hits;
	char caught[256], note[512], lost[256];
};

static const char *perfsh_path(void)
{
	const char *p = getenv("PERFSH");
	return p && *p ? p : "./perfsh";
}

/* Copy @s up to @stop (or the line's end) into @d. */
static void copy_until(char *d, size_t n, const char *s, const char *stop)
{
	size_t k = strcspn(s, stop);
	if (k >= n)
		k = n - 1;
	memcpy(d, s, k);
	d[k] = 0;
}

/* Read back the lines of a run's output that say how its hits were caught and how many. */
static void parse_out(FILE *f, struct out *o)
{
	char line[4096];
	const char *p;

	memset(o, 0, sizeof *o);
	rewind(f);
	while (fgets(line, sizeof line, f)) {
		if ((p = strstr(line, "; caught by ")))
			copy_until(o->caught, sizeof o->caught, p + 12, ";\n");
		if ((p = strstr(line, "backend auto:")))
			copy_until(o->note, sizeof o->note, p, "\n");
		if ((p = strstr(line, "(func, ")))
			for (p += 7, o->hits = 0; (*p >= '0' && *p <= '9') || *p == ','; p++) /* 1,000 or 1000 */
				if (*p != ',')
					o->hits = o->hits * 10 + (uint64_t)(*p - '0');
		if (strstr(line, " lost") && !o->lost[0])
			copy_until(o->lost, sizeof o->lost, line, "\n");
	}
}

/* Show a failed run's output and end the benchmark. */
static void fail_run(FILE *f, const char *what, int st)
{
	char line[4096];

	fprintf(stderr, "default_path: %s failed (status %d); it printed:\n", what, st);
	rewind(f);
	while (fgets(line, sizeof line, f))
		fputs(line, stderr);
	exit(1);
}

/* One run of the default path (@backend NULL; else with --backend @backend) on @rw with @n
   calls; returns its wall time, fills @o and *@cpu (perfsh's CPU time and its target's, which it
   reaped). */
static uint64_t run_default(const struct row *rw, uint64_t n, const char *backend, struct out *o, uint64_t *cpu)
{
	char cnt[32], *argv[] = {(char *)perfsh_path(),
				 "stat",
				 "-r",
				 (char *)rw->func,
				 "-e",
				 "task-clock",
				 (char *)rw->prog,
				 cnt,
				 (char *)rw->mode,
				 NULL,
				 NULL,
				 NULL};
	FILE *f = tmpfile();
	struct rusage ru;
	int st = 0;

	if (!f)
		die("tmpfile");
	snprintf(cnt, sizeof cnt, "%llu", (unsigned long long)n);
	if (backend) { /* perfsh stat --backend B -r ... */
		memmove(argv + 4, argv + 2, 8 * sizeof argv[0]);
		argv[2] = "--backend";
		argv[3] = (char *)backend;
	}
	uint64_t t0 = ps_now_ns();
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(fileno(f), 1);
		dup2(fileno(f), 2);
		execv(argv[0], argv);
		_exit(127);
	}
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	uint64_t t = ps_now_ns() - t0;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail_run(f, rw->func, st);
	*cpu = bench_cpu_ns(&ru);
	parse_out(f, o);
	fclose(f);
	if (o->hits != n || o->lost[0]) /* said, not fatal */
		fprintf(stderr, "default_path: %s: perfsh recorded %llu hits of %llu%s%s\n", rw->func,
			(unsigned long long)o->hits, (unsigned long long)n, o->lost[0] ? ": " : "", o->lost);
	return t;
}

/* The floor's view of @rw: the function's file offset; 0, or -1 after saying why. */
static int resolve(const struct row *rw, struct fn *f)
{
	struct ps_symtab *st;
	const struct ps_sym *sym;
	struct ps_error err;

	memset(f, 0, sizeof *f);
	f->prog = rw->prog;
	f->mode = rw->mode;
	f->sym = rw->func;
	f->nop5 = rw->nop5;
	if (!realpath(rw->prog, f->path) || ps_sym_open(&st, rw->prog, &err))
		return printf("  %s: cannot read %s: %s\n", rw->func, rw->prog, strerror(errno)), -1;
	int rc = ps_sym_lookup(st, rw->func, &sym, &err) || ps_uprobe_file_offset(f->path, sym->addr, &f->off, &err);
	ps_sym_close(st);
	if (rc)
		printf("  %s: %s\n", rw->func, err.msg);
	return rc ? -1 : 0;
}

/* Whether the function's first bytes in the file are the 5-byte NOP; says so when not. */
static int nop5_checked(const struct fn *f)
{
	static const unsigned char nop[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	unsigned char b[5] = {0};
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);
	ssize_t k = fd < 0 ? -1 : pread(fd, b, sizeof b, (off_t)f->off);

	if (fd >= 0)
		close(fd);
	if (k == (ssize_t)sizeof b && !memcmp(b, nop, sizeof nop))
		return 1;
	printf("  note: %s does not start with 0f 1f 44 00 00 (it starts %02x %02x %02x %02x %02x): "
	       "this row measures an ordinary entry\n",
	       f->sym, b[0], b[1], b[2], b[3], b[4]);
	return 0;
}

/* A cost per hit in microseconds, of each run: [kind][measure][rep]. The kinds: the uprobe floor,
   the default path, perfsh --backend uprobe, the marker floor. The measures: the wall clock; the
   CPU time of the tracer and the target; the target's alone. */
enum { FLOOR, DFLT, UPRB, MARK, NKIND };
enum { WALL, CPU, PROG, NMEASURE };
static const char *const measure_name[NMEASURE] = {"wall", "on CPU", "program"};
typedef double costs[NKIND][NMEASURE][REPS];

/* A run: its wall time, its CPU time, the target's (0: it said none). */
struct sample {
	uint64_t ns[NMEASURE];
};

static char cpu_file[64]; /* $BENCH_TARGET_CPU: the targets write their CPU time there */

/* The marker floor: @n pairs of read(2)s of a task-clock group of this thread, as the agent makes
   them at a hit's entry and exit; every measure is this thread's time (it is the program). */
static void run_marker_floor(uint64_t n, struct sample *s)
{
	uint64_t buf[3 + 2 * PS_MAX_EVENTS];
	struct ps_event ev;
	struct ps_group g;
	struct ps_error err;
	struct timespec c0, c1;

	memset(s, 0, sizeof *s);
	if (ps_event_resolve("task-clock", &ev, &err) || ps_group_open(&g, &ev, 1, 0, -1, PS_GROUP_ENABLED, &err)) {
		fprintf(stderr, "default_path: marker floor: %s\n", err.msg);
		return;
	}
	uint64_t t0 = ps_now_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (uint64_t i = 0; i < n; i++)
		if (read(g.fds[0], buf, sizeof buf) < 0 || read(g.fds[0], buf, sizeof buf) < 0)
			break;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	s->ns[WALL] = ps_now_ns() - t0;
	s->ns[CPU] = s->ns[PROG] = (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec));
	ps_group_close(&g);
}

/* One run of @kind on @rw with @n calls; @o (perfsh's runs) gets what perfsh printed. */
static void run_one(const struct row *rw, const struct fn *f, int kind, uint64_t n, struct out *o, struct sample *s)
{
	unlink(cpu_file);
	if (kind == MARK)
		return run_marker_floor(n, s);
	if (kind == FLOOR) {
		snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
		s->ns[WALL] = run_floor(f, n);
		s->ns[CPU] = floor_cpu_ns;
	} else
		s->ns[WALL] = run_default(rw, n, kind == UPRB ? "uprobe" : NULL, o, &s->ns[CPU]);
	s->ns[PROG] = bench_target_cpu(cpu_file);
}

/* One pair of runs of @kind, with @n and @n0 calls (the run with @n0 calls is @done where that
   was made already): the cost per hit of the calls between. */
static void pair(const struct row *rw, const struct fn *f, int kind, uint64_t n, uint64_t n0, const struct sample *done,
		 costs c, int r)
{
	struct sample s[2];
	struct out o;

	run_one(rw, f, kind, n, &o, &s[0]);
	if (done)
		s[1] = *done;
	else
		run_one(rw, f, kind, n0, &o, &s[1]);
	for (int m = 0; m < NMEASURE; m++)
		c[kind][m][r] = s[0].ns[m] && s[1].ns[m]
				    ? ((double)s[0].ns[m] - (double)s[1].ns[m]) / (double)(n - n0) / 1000.0
				    : -1;
}

/* The median of @a (microseconds), or of @a[r] / @b[r]. */
static double median_of(const double *a, const double *b)
{
	uint64_t q[REPS];
	for (int r = 0; r < REPS; r++) {
		double v = b ? a[r] / (b[r] > 0 ? b[r] : 1e-9) : a[r];
		q[r] = (uint64_t)(v > 0 ? v * 1e6 : 0);
	}
	return (double)median(q, REPS) / 1e6;
}

/* What a row found: the catcher, and by each measure the ratio default path / its catcher's
   floor (< 0: none) and --backend uprobe / uprobe floor where measured beside it, and whether
   their runs were too noisy to judge them by. */
struct result {
	char caught[256];
	double ratio[NMEASURE], uratio[NMEASURE];
	int noisy[NMEASURE], unoisy[NMEASURE], nop;
};

/* Whether the runs side by side are too noisy to judge the goal by: a cost at or below zero (the
   noise exceeded what the calls cost), or ratios on both sides of the goal, over 1.5x apart.
   Sets *@lo, *@hi to the least and greatest ratio. */
static int too_noisy(const double *a, const double *b, double *lo, double *hi)
{
	int bad = 0;

	*lo = 1e300, *hi = 0;
	for (int r = 0; r < REPS; r++) {
		double q = b[r] > 0 ? a[r] / b[r] : 0;
		bad |= a[r] <= 0 || b[r] <= 0;
		*lo = q < *lo ? q : *lo;
		*hi = q > *hi ? q : *hi;
	}
	return bad || (*lo <= GOAL && *hi > GOAL && *hi > 1.5 * *lo);
}

static const char *verdict(double r, int noisy)
{
	return noisy ? "too noisy to judge" : r <= GOAL ? "goal met" : "goal missed";
}

/* Kind @a against kind @b (@label), by each measure: the ratios, their spread, the verdicts. */
static void compare(const costs c, int a, int b, const char *label, double *ratio, int *noisy)
{
	double lo[NMEASURE], hi[NMEASURE];

	for (int m = 0; m < NMEASURE; m++) {
		ratio[m] = median_of(c[a][m], c[b][m]);
		noisy[m] = too_noisy(c[a][m], c[b][m], &lo[m], &hi[m]);
	}
	printf("    %-28s %8.2f %8.2f %8.2f   goal <= %g\n", label, ratio[WALL], ratio[CPU], ratio[PROG], GOAL);
	printf("    %-28s", "  runs side by side");
	for (int m = 0; m < NMEASURE; m++)
		printf(" %4.2f-%-4.2f", lo[m], hi[m]);
	printf("\n    %-28s", "  verdict");
	for (int m = 0; m < NMEASURE; m++)
		printf(" %s: %s%s", measure_name[m], verdict(ratio[m], noisy[m]), m + 1 < NMEASURE ? "," : "\n");
}

/* The row's costs of the kinds it ran (@ran), the ratios and verdicts: the default path against
   @dfloor, its catcher's floor; --backend uprobe against the uprobe floor. */
static void print_row(const costs c, const int *ran, int dfloor, int nop, struct result *res)
{
	const char *name[NKIND] = {nop ? "uprobe floor, NOP entry" : "uprobe floor", "perfsh, no --backend",
				   "perfsh --backend uprobe", "marker floor (2 read(2)s)"};
	static const int order[NKIND] = {MARK, FLOOR, DFLT, UPRB};

	printf("    %-28s %8s %8s %8s\n", "us per hit", measure_name[WALL], measure_name[CPU], measure_name[PROG]);
	for (int i = 0; i < NKIND; i++)
		if (ran[order[i]])
			printf("    %-28s %8.2f %8.2f %8.2f\n", name[order[i]], median_of(c[order[i]][WALL], NULL),
			       median_of(c[order[i]][CPU], NULL), median_of(c[order[i]][PROG], NULL));
	if (ran[dfloor])
		compare(c, DFLT, dfloor, "default path / its floor", res->ratio, res->noisy);
	if (ran[UPRB] && ran[FLOOR])
		compare(c, UPRB, FLOOR, "--backend uprobe / floor", res->uratio, res->unoisy);
}

/* One row: which catcher the default path takes, its cost per hit, its catcher's floor's, and
   where it is not uprobe, --backend uprobe's and the uprobe floor's; the ratios. The uprobe
   floor makes @n calls (NOP_TIMES more on a NOP entry), the default path as many, PTRACE_DIV
   fewer where it took ptrace, INPROC_TIMES more where it took inproc (the marker floor too). */
static void bench_row(const struct row *rw, uint64_t n, int up, struct result *res)
{
	struct fn f;
	struct out o;
	costs c;
	uint64_t calls[NKIND];
	int ran[NKIND] = {0};

	if (resolve(rw, &f))
		return;
	res->nop = rw->nop5 && nop5_checked(&f);
	uint64_t fn_n = res->nop ? n * NOP_TIMES : n;
	struct sample first; /* the first run says which catcher auto takes */
	run_one(rw, &f, DFLT, fn_n / 10, &o, &first);
	int ptrace = !strncmp(o.caught, "ptrace", 6), inproc = !strncmp(o.caught, "inproc", 6);
	calls[FLOOR] = calls[UPRB] = fn_n;
	calls[DFLT] = ptrace ? n / PTRACE_DIV : inproc ? fn_n * INPROC_TIMES : fn_n;
	calls[MARK] = calls[DFLT];
	ran[DFLT] = 1, ran[FLOOR] = up, ran[MARK] = inproc, ran[UPRB] = up && strncmp(o.caught, "uprobe", 6);
	snprintf(res->caught, sizeof res->caught, "%s", o.caught[0] ? o.caught : "? (no \"caught by\" line)");
	printf("  %s, %s entry: caught by %s\n", rw->func, res->nop ? "5-byte-NOP" : "ordinary", res->caught);
	if (o.note[0])
		printf("    auto's note: %s\n", o.note);
	else if (ptrace)
		printf("    auto took ptrace and printed no note (no \"backend auto:\" line) saying why\n");
	for (int r = 0; r < REPS; r++) /* interleaved, the order rotating */
		for (int i = 0; i < NKIND; i++) {
			int k = (i + r) % NKIND;
			if (ran[k])
				pair(rw, &f, k, calls[k], calls[k] / 10,
				     k == DFLT && r == 0 && calls[k] == fn_n ? &first : NULL, c, r);
		}
	printf("    (calls, each against a tenth of them:");
	for (int k = 0; k < NKIND; k++)
		if (ran[k])
			printf(" %s %llu",
			       k == FLOOR  ? "uprobe floor"
			       : k == MARK ? "marker floor"
			       : k == DFLT ? "perfsh"
					   : "--backend uprobe",
			       (unsigned long long)calls[k]);
	printf(")\n");
	print_row(c, ran, inproc ? MARK : FLOOR, res->nop, res);
}

/* The load on the machine, which the wall-clock figures suffer from and the CPU times much less. */
static void say_load(void)
{
	double l1 = 0;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f && fscanf(f, "%lf", &l1) == 1)
		printf("default_path: load average %.1f on %ld CPUs%s\n", l1, sysconf(_SC_NPROCESSORS_ONLN),
		       l1 > (double)sysconf(_SC_NPROCESSORS_ONLN) ? ": the wall-clock figures are noisy" : "");
	if (f)
		fclose(f);
}

static void summary(const struct result *res, size_t nrow, uint64_t t0)
{
	printf("\ndefault path / its catcher's floor (--backend uprobe / uprobe floor below it where auto took "
	       "another), goal <= %g:\n%-25s",
	       GOAL, "");
	for (int m = 0; m < NMEASURE; m++)
		printf(" %-25s", measure_name[m]);
	printf("\n");
	for (size_t i = 0; i < nrow; i++) {
		printf("  %-5s %-11s", rows[i].lang, rows[i].nop5 ? "5-byte NOP" : "ordinary");
		if (res[i].ratio[WALL] < 0) {
			printf("       skipped\n");
			continue;
		}
		printf("      ");
		for (int m = 0; m < NMEASURE; m++)
			printf(" %5.2f %-19s", res[i].ratio[m], verdict(res[i].ratio[m], res[i].noisy[m]));
		printf(" caught by %.*s\n", (int)strcspn(res[i].caught, " "), res[i].caught);
		if (res[i].uratio[WALL] < 0)
			continue;
		printf("  %-17s      ", "");
		for (int m = 0; m < NMEASURE; m++)
			printf(" %5.2f %-19s", res[i].uratio[m], verdict(res[i].uratio[m], res[i].unoisy[m]));
		printf(" --backend uprobe\n");
	}
	printf("default_path: %.0f s\n", (double)(ps_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
	enum { NROW = sizeof rows / sizeof rows[0] };
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 5000, t0 = ps_now_ns();
	struct result res[NROW];
	char why[256];
	int up = ps_uprobe_available(why, sizeof why);
	const char *env = getenv("PERFSH_BACKEND");

	if (n < 100)
		return fprintf(stderr, "default_path: N must be at least 100\n"), 1;
	if (env && *env)
		printf("default_path: PERFSH_BACKEND=%s unset: the default path is measured\n", env);
	unsetenv("PERFSH_BACKEND");
	snprintf(cpu_file, sizeof cpu_file, "/tmp/default_path.%d.cpu", (int)getpid());
	setenv("BENCH_TARGET_CPU", cpu_file, 1);
	printf("default_path: us per hit of `%s stat -r FUNC -e task-clock PROG N` (no --backend) and of the\n"
	       "floor of the catcher auto takes: the marker floor for inproc (two read(2)s of the group), else the\n"
	       "uprobe floor (raw perf_event_open uprobes at the entry and the exit, bench/uprobe_floor.h); where\n"
	       "auto takes another than uprobe, also of --backend uprobe against the uprobe floor: (N calls - N/10) /\n"
	       "(9N/10), on the wall clock, on the CPU (the tracer's and the program's) and on the program's CPU\n"
	       "alone; medians of %d interleaved runs\n",
	       perfsh_path(), REPS);
	say_load();
	if (!up)
		printf("default_path: uprobe floor skipped: %s\n", why);
	for (size_t i = 0; i < NROW; i++) {
		const struct row *rw = &rows[i];
		res[i] = (struct result){.ratio = {-1, -1, -1}, .uratio = {-1, -1, -1}};
		if (i == 0 || strcmp(rw->lang, rows[i - 1].lang))
			printf("\n%s (%s)\n", rw->lang, rw->prog);
		if (access(rw->prog, X_OK)) {
			if (i > 0 && !strcmp(rw->prog, rows[i - 1].prog))
				continue;
			printf("  skipped: %s is not built (%s)\n", rw->prog,
			       strcmp(rw->lang, "Rust") ? "run make bench"
							: "no rustc: make bench takes RUSTC, else the rustc on PATH");
			continue;
		}
		bench_row(rw, n, up, &res[i]);
	}
	summary(res, NROW, t0);
	unlink(cpu_file);
	return 0;
}
