/* bench/uprobe_floor.c - what a function region costs per hit when the kernel catches it.
 *
 * Runs bench/hit_target (a function called N times, default 20,000) plain, under a minimal
 * uprobe tracer written here with raw perf_event_open + mmap (the floor: a task-clock leader,
 * a uprobe at the entry and one for the exit as members with sample_period 1 sampling the
 * group into one ring, the exit's output redirected there, the ring drained while the target
 * runs; the exit caught as perfsh's uprobe catcher catches it: a leaf's by a uretprobe, any
 * other function's by a plain uprobe at its ret, bench/uprobe_floor.h), and under perfsh's
 * core/catch/uprobe/uprobe.c layer doing the same. Three functions: hit_movslq (entry
 * `movslq %edi,%rax`: an int3 and a single-step per probe), hit_nop5 (entry 0f 1f 44 00 00:
 * the kernel turns the probe into a call), both leaves, and hit_call (hit_movslq's entry, then
 * a call: its ret is probed, which the kernel single-steps). Medians of 5 interleaved runs;
 * prints the cost per hit in microseconds and the ratio layer / floor. With GROUPS (uprobe_floor
 * N GROUPS, at most 4), the layer counts that many groups of task-clock, each with probes of its
 * own at both sites, whose records of a hit it merges into one (several counter groups, -g).
 * Needs root or CAP_PERFMON: without the uprobe PMU it says why and exits 0.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "machine.h"
#include "run.h"
#include "symbols.h"
#include "uprobe.h"
#include "uprobe_floor.h"

#define REPS 5

static uint64_t run_plain(const char *mode)
{
	uint64_t t0 = ps_now_ns();
	int go, st;
	pid_t pid = spawn_held(NULL, mode, &go);

	release(go);
	waitpid(pid, &st, 0);
	return ps_now_ns() - t0;
}

static int count_hit(const struct ps_uprobe_hit *h, void *ud)
{
	(void)h;
	(*(uint64_t *)ud)++;
	return 0;
}

static uint64_t run_layer(const struct fn *f, const struct ps_event *ev, int ngroups, uint64_t n)
{
	static const int gsize[PS_UPROBE_MAX_GROUPS] = {1, 1, 1, 1};
	uint64_t t0 = ps_now_ns(), hits = 0;
	struct ps_uprobe_site site[2] = {{.path = f->path, .offset = f->off, .group = 1},
					 {.path = f->path, .group = 1}};
	int uret = floor_exit(f, &site[1].offset);
	struct ps_uprobe_opts o = {.ev = ev,
				   .nev = ngroups,
				   .ngroups = ngroups,
				   .gsize = gsize,
				   .sites = site,
				   .nsites = 2 - uret,
				   .ring_pages = PAGES,
				   .enabled = 1};
	struct ps_uprobe *u;
	struct ps_error err;
	int go, st = 0;
	pid_t pid = spawn_held(f->prog, f->mode, &go);

	site[0].ret = uret;
	if (ps_uprobe_open(&u, pid, &o, &err)) {
		fprintf(stderr, "uprobe_floor: %s\n", err.msg);
		kill(pid, SIGKILL);
		exit(1);
	}
	release(go);
	while (waitpid(pid, &st, WNOHANG) == 0) {
		struct pollfd p = {ps_uprobe_fd(u), POLLIN, 0};
		poll(&p, 1, 50);
		ps_uprobe_drain(u, count_hit, &hits);
	}
	ps_uprobe_drain(u, count_hit, &hits);
	long lost = ps_uprobe_missing(u, &err);
	ps_uprobe_close(u);
	if (hits != 2 * n || lost) {
		fprintf(stderr, "uprobe_floor: the layer saw %llu records (%ld lost), expected %llu\n",
			(unsigned long long)hits, lost, (unsigned long long)(2 * n));
		exit(1);
	}
	return ps_now_ns() - t0;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 20000;
	int ngroups = argc > 2 ? atoi(argv[2]) : 1;
	struct fn fns[] = {{.mode = "movslq", .sym = "hit_movslq"},
			   {.mode = "nop5", .sym = "hit_nop5"},
			   {.mode = "call", .sym = "hit_call"}};
	const int nfns = (int)(sizeof fns / sizeof fns[0]);
	struct ps_event ev[PS_UPROBE_MAX_GROUPS];
	struct ps_error err;
	struct ps_symtab *st;
	char why[256], path[4096];

	snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
	if (!ps_uprobe_available(why, sizeof why)) {
		printf("uprobe_floor: skipped: %s\n", why);
		return 0;
	}
	if (!realpath(UF_TARGET, path) || ps_sym_open(&st, UF_TARGET, &err)) {
		fprintf(stderr, "uprobe_floor: cannot read %s (run make bench)\n", UF_TARGET);
		return 1;
	}
	for (int i = 0; i < nfns; i++) {
		const struct ps_sym *sym;
		snprintf(fns[i].path, sizeof fns[i].path, "%s", path);
		if (ps_sym_lookup(st, fns[i].sym, &sym, &err) ||
		    ps_uprobe_file_offset(fns[i].path, sym->addr, &fns[i].off, &err) ||
		    (fns[i].nop5 = ps_uprobe_site_is_nop5(fns[i].path, fns[i].off, &err)) < 0) {
			fprintf(stderr, "uprobe_floor: %s\n", err.msg);
			ps_sym_close(st);
			return 1;
		}
	}
	ps_sym_close(st);
	if (ngroups < 1 || ngroups > PS_UPROBE_MAX_GROUPS) {
		fprintf(stderr, "uprobe_floor: %d groups; give 1 to %d\n", ngroups, PS_UPROBE_MAX_GROUPS);
		return 1;
	}
	for (int g = 0; g < ngroups; g++)
		if (ps_event_resolve("task-clock", &ev[g], &err)) {
			fprintf(stderr, "uprobe_floor: %s\n", err.msg);
			return 1;
		}
	printf("uprobe_floor: %llu calls; uprobes at the entry and the exit (a leaf's by a uretprobe) in a task-clock "
	       "group, sampled into a %d-page ring; perfsh's layer with %d group%s\n",
	       (unsigned long long)n, PAGES, ngroups, ngroups > 1 ? "s, one record each per hit, merged" : "");
	printf("%-12s %6s %12s %14s %14s %8s\n", "function", "nop5", "plain ms", "floor us/hit", "perfsh us/hit",
	       "ratio");
	for (int i = 0; i < nfns; i++) {
		uint64_t plain[REPS], fl[REPS], ly[REPS];
		for (int r = 0; r < REPS; r++) {
			plain[r] = run_plain(fns[i].mode);
			fl[r] = run_floor(&fns[i], n);
			ly[r] = run_layer(&fns[i], ev, ngroups, n);
		}
		uint64_t base = median(plain, REPS);
		double pf = (double)(median(fl, REPS) - base) / (double)n / 1000.0;
		double pl = (double)(median(ly, REPS) - base) / (double)n / 1000.0;
		printf("%-12s %6s %12.3f %14.2f %14.2f %8.2f\n", fns[i].sym, fns[i].nop5 ? "yes" : "no", base / 1e6, pf,
		       pl, pl / pf);
	}
	return 0;
}
