/* bench/marker.c - the marker library's cost: a recorded begin/end pair with 1 and 4 events
 * against the floor (two read(2)s of a group of the same events, bare system calls, no library), and an unsampled
 * hit. Each configuration runs in a child (the library reads its environment once), medians of
 * 9 rounds. Goals: a pair <= 1.2x the floor; an unsampled hit <= 20 ns. Reports, never fails on
 * a goal. */
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

/* ns per unrecorded pair. */
static double unsampled(void)
{
	enum { N = 10000000 };
	uint64_t v[ROUNDS];

	for (int r = 0; r < ROUNDS; r++)
		v[r] = pairs(N);
	return (double)median(v, ROUNDS) / N;
}

/* A child: "pair EVENTS" prints the pair's and the floor's ns; "hit" an unmarked pair's ns. */
static int child(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "pair"))
		return pair_vs_floor(argv[2]);
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
