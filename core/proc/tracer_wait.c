/* core/proc/tracer_wait.c - waiting for the tracees' stops: interruptible, with a deadline, and
 * the terminal's signals kept away from a spawned program.
 *
 * ps_tracer_run() must return on time even when no stop arrives (a thread blocked in read()
 * or sleep(), or inside one long call). SIGCHLD, SIGINT, SIGTERM, SIGHUP and SIGALRM stay
 * blocked while ps_tracer_run() runs (two sigprocmask calls a run, not two a stop). It sleeps
 * in sigtimedwait() for SIGCHLD, which takes the signal in the same call, until the deadline
 * or at most SIGNAL_POLL_NS; every SIGNAL_POLL_NS a zero-timeout ppoll() unblocks the others
 * for a moment, so the handlers of pending ones run (one calls ps_tracer_interrupt(): the run
 * returns within that time, whether stops come fast or not at all).
 */
#include "tracer.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
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

/* How often pending signals are let in (and, with no stop, how long one sleep lasts). */
#define SIGNAL_POLL_NS 10000000u

/* Sleep until a SIGCHLD (taken), the deadline or the next time signals are let in. */
static void sleep_chld(struct ps_tracer *t, uint64_t now)
{
	uint64_t left = t->sig_polled + SIGNAL_POLL_NS > now ? t->sig_polled + SIGNAL_POLL_NS - now : 0;
	struct timespec ts;
	sigset_t chld;

	if (t->deadline && t->deadline - now < left)
		left = t->deadline - now; /* the deadline is not past: checked before */
	ts.tv_sec = (time_t)(left / 1000000000u);
	ts.tv_nsec = (long)(left % 1000000000u);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigtimedwait(&chld, NULL, &ts);
}

void ps__tr_wait_begin(struct ps_tracer *t)
{
	sigset_t blk;

	sigemptyset(&blk);
	sigaddset(&blk, SIGCHLD);
	sigaddset(&blk, SIGINT);
	sigaddset(&blk, SIGTERM);
	sigaddset(&blk, SIGHUP);
	sigaddset(&blk, SIGALRM);
	sigprocmask(SIG_BLOCK, &blk, &t->sig_old);
	t->sig_during = t->sig_old;
	sigaddset(&t->sig_during, SIGCHLD); /* SIGCHLD is only ever taken by sigtimedwait() */
	t->sig_polled = mono_ns();
	t->sig_fresh = 0; /* SIGCHLDs that came between runs are gone */
}

void ps__tr_wait_end(struct ps_tracer *t)
{
	int e = errno;
	sigprocmask(SIG_SETMASK, &t->sig_old, NULL);
	errno = e;
}

pid_t ps__tr_wait(struct ps_tracer *t, int *st)
{
	static const struct timespec zero;
	pid_t w;

	/* SIGCHLD is not queued: the one that woke the last wait may stand for several changes,
	   so look before sleeping, unless the one thread there is has just been handled (its next
	   change raises a SIGCHLD of its own) */
	int look = !t->sig_fresh || t->nth != 1;
	for (;;) {
		uint64_t now = mono_ns();
		if (now - t->sig_polled >= SIGNAL_POLL_NS) {
			ppoll(NULL, 0, &zero, &t->sig_during); /* handlers of pending signals run */
			t->sig_polled = now;
		}
		if (t->intr)
			return 0;
		if (t->deadline && now >= t->deadline) {
			t->intr = 1; /* ps_tracer_run() returns 0: paused */
			return 0;
		}
		if (look) {
			w = waitpid(-1, st, __WALL | WNOHANG);
			if (w != 0) {
				t->sig_fresh = w > 0;
				if (w < 0 || !WIFSTOPPED(*st) || WSTOPSIG(*st) != SIGTRAP) {
					/* a signal or an exit: perfsh's own signal (the same kill) goes first */
					ppoll(NULL, 0, &zero, &t->sig_during);
					t->sig_polled = now;
				}
				return w;
			}
		}
		look = 1;
		sleep_chld(t, now);
	}
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
