/* core/tracer_wait.c - waiting for the tracees' stops: interruptible, with a deadline, and
 * the terminal's signals kept away from a spawned program.
 *
 * ps_tracer_run() must return on time even when no stop arrives (a thread blocked in read()
 * or sleep(), or inside one long call): it waits in ppoll() on a signalfd for SIGCHLD, with
 * the deadline as the timeout. SIGCHLD, SIGINT, SIGTERM, SIGHUP and SIGALRM are blocked
 * between the check of the interrupt flag and ppoll(), which unblocks them atomically, so a
 * signal whose handler calls ps_tracer_interrupt() is never missed.
 */
#include "tracer.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>

#include "tracer_priv.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ps_tracer_set_deadline(struct ps_tracer *t, uint64_t deadline_ns)
{
	t->deadline = deadline_ns;
}

void ps_tracer_interrupt(struct ps_tracer *t)
{
	t->intr = 1;
}

/* Block until a tracee changes state, the deadline passes or a signal interrupts. */
static void block(struct ps_tracer *t, const sigset_t *during)
{
	struct pollfd pfd = {.fd = t->sfd, .events = POLLIN};
	struct timespec ts, *tsp = NULL;
	struct signalfd_siginfo si;

	if (t->deadline) {
		uint64_t now = mono_ns(), left = t->deadline > now ? t->deadline - now : 0;
		ts.tv_sec = (time_t)(left / 1000000000u);
		ts.tv_nsec = (long)(left % 1000000000u);
		tsp = &ts;
	}
	if (ppoll(&pfd, 1, tsp, during) > 0)
		while (read(t->sfd, &si, sizeof si) == (ssize_t)sizeof si)
			;
}

pid_t ps__tr_wait(struct ps_tracer *t, int *st)
{
	sigset_t blk, old, during;
	pid_t w;
	int e;

	if (t->sfd < 0) {
		sigset_t chld;
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		t->sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
		if (t->sfd < 0)
			return waitpid(-1, st, __WALL); /* no signalfd: wait as before */
	}
	sigemptyset(&blk);
	sigaddset(&blk, SIGCHLD);
	sigaddset(&blk, SIGINT);
	sigaddset(&blk, SIGTERM);
	sigaddset(&blk, SIGHUP);
	sigaddset(&blk, SIGALRM);
	sigprocmask(SIG_BLOCK, &blk, &old);
	during = old;
	sigaddset(&during, SIGCHLD); /* SIGCHLD only ever reaches the signalfd */
	for (;;) {
		if (t->intr) {
			w = 0;
			break;
		}
		if (t->deadline && mono_ns() >= t->deadline) {
			t->intr = 1; /* ps_tracer_run() returns 0: paused */
			w = 0;
			break;
		}
		w = waitpid(-1, st, __WALL | WNOHANG);
		if (w != 0)
			break;
		block(t, &during);
	}
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return w;
}

/* The keys of a terminal (Ctrl-C, Ctrl-\) signal its whole foreground process group; a
   program perfsh spawned shares perfsh's, but those keys are meant for perfsh. */
int ps__tr_tty_signal(const struct ps_tracer *t, pid_t tid, int sig)
{
	siginfo_t si;

	if (!t->spawned || (sig != SIGINT && sig != SIGQUIT))
		return 0;
	memset(&si, 0, sizeof si);
	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si))
		return 0;
	return si.si_code == SI_KERNEL;
}
