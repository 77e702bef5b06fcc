/* bench/thread_cost.c - what the uprobe catcher costs per thread at start, attach, detach and
 * fork, against the ptrace catcher's in the same run (perfsh as a user runs it, wall time).
 *
 *   start:  perfsh stat --backend B -r work examples/threads 1 100 16 (16 threads, one call
 *           each: the time is the threads' probes opened and closed)
 *   attach: perfsh stat --backend B -p PID --seconds 0.2 -r work, PID a 4-thread
 *           examples/threads that runs on (the target is checked alive after the detach)
 *   fork:   perfsh stat --backend B --follow-fork -r step examples/forks 20 (20 children one
 *           after the other): what each fork costs more under uprobe than under ptrace
 * Goal (issue 18): uprobe wall time <= 2 x ptrace's + 100 ms for start and attach. Medians of
 * REPS runs, ptrace and uprobe alternating.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "machine.h"
#include "run.h"

#define REPS 5
#define FORKS 20
#define FORKS_S "20"

static const char *const backends[2] = {"ptrace", "uprobe"};

/* Run @argv with its output thrown away; its wall time in ns, or 0 if it failed. */
static uint64_t timed(char *const argv[])
{
	uint64_t t0 = ps_now_ns();
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 0;
	return ps_now_ns() - t0;
}

static uint64_t start_once(const char *b)
{
	char *argv[] = {"./perfsh",	    "stat", "--backend", (char *)b, "-r", "work",
			"examples/threads", "1",    "100",	 "16",	    NULL};
	return timed(argv);
}

static uint64_t fork_once(const char *b)
{
	char *argv[] = {"./perfsh", "stat", "--backend",      (char *)b, "--follow-fork",
			"-r",	    "step", "examples/forks", FORKS_S,	 NULL};
	return timed(argv);
}

/* Attach to a fresh 4-thread target for 0.2 s; 0 if perfsh failed or the target did not live on. */
static uint64_t attach_once(const char *b)
{
	char *target[] = {"examples/threads", "1000000", "3000000", "4", NULL};
	char pid_s[32];
	char *argv[] = {"./perfsh",  "stat", "--backend", (char *)b, "-p", pid_s,
			"--seconds", "0.2",  "-r",	  "work",    NULL};
	pid_t pid = fork();
	uint64_t t;
	int st;

	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execv(target[0], target);
		_exit(127);
	}
	if (pid < 0)
		return 0;
	usleep(200000); /* its threads are running */
	snprintf(pid_s, sizeof pid_s, "%d", (int)pid);
	t = timed(argv);
	usleep(50000);
	if (waitpid(pid, &st, WNOHANG) != 0) /* it must live on after the detach */
		t = 0;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return t;
}

/* Median wall times of @once under each backend, in ms; 0 if a run failed. */
static int measure(uint64_t (*once)(const char *), double ms[2])
{
	uint64_t v[2][REPS];

	for (int r = 0; r < REPS; r++)
		for (int k = 0; k < 2; k++)
			if (!(v[k][r] = once(backends[k])))
				return -1;
	for (int k = 0; k < 2; k++)
		ms[k] = (double)median(v[k], REPS) / 1e6;
	return 0;
}

static void report(const char *what, const double ms[2])
{
	double limit = 2 * ms[0] + 100;

	printf("%-36s ptrace %7.1f ms  uprobe %7.1f ms  ratio %5.2f  goal <= %6.1f ms (2x + 100): %s\n", what, ms[0],
	       ms[1], ms[1] / ms[0], limit, ms[1] <= limit ? "met" : "NOT met");
}

int main(void)
{
	double ms[2];
	char why[256];

	setvbuf(stdout, NULL, _IOLBF, 0); /* nothing buffered is copied into the forked runs */
	if (!ps_machine_uprobes_fire(why, sizeof why)) {
		printf("thread_cost: skipped: uprobes do not work here (%s)\n", why);
		return 0;
	}
	if (measure(start_once, ms) == 0)
		report("start, 16 threads", ms);
	else
		printf("start, 16 threads: a run failed\n");
	if (measure(attach_once, ms) == 0)
		report("attach --seconds 0.2, 4 threads", ms);
	else
		printf("attach --seconds 0.2, 4 threads: a run failed (or the target died)\n");
	if (measure(fork_once, ms) == 0)
		printf("%-36s ptrace %7.1f ms  uprobe %7.1f ms  uprobe costs %+.1f ms more per fork\n",
		       "--follow-fork, 20 forks", ms[0], ms[1], (ms[1] - ms[0]) / FORKS);
	else
		printf("--follow-fork: a run failed\n");
	return 0;
}
