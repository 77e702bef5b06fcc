/* core/events/run.c - perf-stat-like counting of a child command.
 *
 * The child waits on a pipe until its group is open, then execs; enable_on_exec keeps the
 * fork and our own code out of the counts. A second, close-on-exec pipe carries errno back
 * when exec fails.
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t ps_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

static volatile sig_atomic_t forward_sig; /* set by ps_run_forward(), sent by reap() */
static volatile sig_atomic_t forward_had; /* the command had it already (the terminal's) */

void ps_run_forward(int sig, int delivered)
{
	forward_had = delivered;
	forward_sig = sig;
}

/* Whether @pid ignores or blocks @sig (/proc/PID/status): passed on, it would do nothing. */
static int deaf_to(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask, any = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof line, f))
		if ((sscanf(line, "SigIgn: %llx", &mask) == 1 || sscanf(line, "SigBlk: %llx", &mask) == 1))
			any |= mask;
	fclose(f);
	return (int)(any >> (sig - 1) & 1);
}

/* Pass signal @sig on to @pid (unless it @had it already), or end it (SIGKILL) where that
   would do nothing: a second signal, or one @pid ignores or blocks. Sets *@deadline for a
   command that outlives it. */
static void pass_on(pid_t pid, int sig, int had, struct ps_run_result *res, struct timespec *deadline)
{
	if (res->passed || deaf_to(pid, sig)) {
		kill(pid, SIGKILL);
		res->killed = 1;
	} else if (!had) {
		kill(pid, sig);
	}
	res->passed = sig;
	clock_gettime(CLOCK_MONOTONIC, deadline);
	deadline->tv_sec += PS_RUN_GRACE_S;
}

/* Wait for the command; a signal given to ps_run_forward() meanwhile is passed on to it
   (pass_on), and a command still running PS_RUN_GRACE_S seconds after it is killed.
   SIGINT, SIGTERM and SIGHUP are unblocked only inside ppoll() on a pidfd of the command, so
   one that arrives just before the wait is not missed. */
static pid_t reap(pid_t pid, int *status, struct ps_run_result *res)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), e;
	struct timespec deadline = {0, 0};
	sigset_t blk, old;
	pid_t r;

	sigemptyset(&blk);
	sigaddset(&blk, SIGINT);
	sigaddset(&blk, SIGTERM);
	sigaddset(&blk, SIGHUP);
	/* without a pidfd, a blocking waitpid() that a signal interrupts (EINTR) */
	sigprocmask(SIG_BLOCK, pfd >= 0 ? &blk : NULL, &old);
	for (;;) {
		int sig = forward_sig;
		if (sig) {
			forward_sig = 0;
			pass_on(pid, sig, forward_had, res, &deadline);
		}
		r = waitpid(pid, status, pfd >= 0 ? WNOHANG : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 0)
			break;
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		struct timespec now, left;
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = deadline.tv_sec - now.tv_sec;
		left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (res->passed && !res->killed && left.tv_sec < 0) {
			kill(pid, SIGKILL); /* it outlived the signal passed on */
			res->killed = 1;
		}
		ppoll(&p, 1, res->passed && !res->killed ? &left : NULL, &old);
	}
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pfd >= 0)
		close(pfd);
	errno = e;
	return r;
}

/* Fork @argv's child: it waits for a byte on @gate[0], then execs, writing its errno to
   @report[1] if exec fails. Returns its pid with @gate[1] and @report[0] open in the parent
   (the child's ends closed), or -1 with @err and every pipe closed. */
static pid_t start_child(char *const argv[], int gate[2], int report[2], struct ps_error *err)
{
	pid_t pid;
	int e;

	gate[0] = gate[1] = report[0] = report[1] = -1;
	if (pipe2(gate, O_CLOEXEC) || pipe2(report, O_CLOEXEC)) {
		e = errno;
		close_pair(gate);
		close_pair(report);
		return ps_error_set(err, e, "pipe: %s", strerror(e));
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		close_pair(gate);
		close_pair(report);
		return ps_error_set(err, e, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		char c;
		close(gate[1]);
		close(report[0]);
		if (read(gate[0], &c, 1) != 1)
			_exit(127); /* the parent gave up */
		execvp(argv[0], argv);
		e = errno;
		if (write(report[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(127);
	}
	close(gate[0]);
	close(report[1]);
	gate[0] = report[1] = -1;
	return pid;
}

int ps_run(char *const argv[], const struct ps_event *ev, int n, struct ps_run_result *res, struct ps_error *err)
{
	int gate[2], report[2], status, child_errno = 0;
	struct ps_group g = {0};
	pid_t pid;
	uint64_t t0;
	ssize_t got;

	memset(res, 0, sizeof *res);
	forward_sig = 0;
	if (!argv || !argv[0])
		return ps_error_set(err, PS_EUSAGE, "no command to run");
	if ((pid = start_child(argv, gate, report, err)) < 0)
		return -1;
	if (n > 0 && ps_group_open(&g, ev, n, pid, -1, PS_GROUP_INHERIT | PS_GROUP_ENABLE_ON_EXEC, err)) {
		close_pair(gate);
		close_pair(report);
		kill(pid, SIGKILL);
		reap(pid, &status, res);
		return -1;
	}
	memcpy(res->ev, g.ev, sizeof res->ev);
	t0 = ps_now_ns();
	if (write(gate[1], "g", 1) != 1) {
		int e = errno;
		ps_group_close(&g);
		close_pair(gate);
		close_pair(report);
		kill(pid, SIGKILL);
		reap(pid, &status, res);
		return ps_error_set(err, e, "starting '%s': %s", argv[0], strerror(e));
	}
	close(gate[1]);
	do
		got = read(report[0], &child_errno, sizeof child_errno);
	while (got < 0 && errno == EINTR);
	close(report[0]);
	if (reap(pid, &status, res) < 0) {
		int e = errno;
		ps_group_close(&g);
		return ps_error_set(err, e, "waitpid: %s", strerror(e));
	}
	res->wall_ns = ps_now_ns() - t0;
	if (got == (ssize_t)sizeof child_errno) {
		ps_group_close(&g);
		return ps_error_set(err, child_errno, "cannot run '%s': %s", argv[0], strerror(child_errno));
	}
	if (n > 0 && ps_group_read(&g, &res->reading, err)) {
		ps_group_close(&g);
		return -1;
	}
	ps_group_close(&g);
	res->exited = WIFEXITED(status);
	res->code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
	res->signo = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	return 0;
}
