/* core/proc/tracer_stop.c - what the tracer does with each stop waitpid() reports: ptrace events,
 * signals (a SIGTRAP goes to the trap hooks, tracer_traps.h); holding every thread while settling
 * (attach, detach) or for a hold. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tracer_priv.h"

/* A stop while settling (attach, detach): hold every thread where it stopped, with
 * breakpoint traps rewound and signals kept for later delivery. */
static int settle_stop(struct ps_tracer *t, struct ps_tr_thread *th, int st)
{
	int sig = WSTOPSIG(st), ev = st >> 16;
	struct user_regs_struct r;

	if (ev == PTRACE_EVENT_CLONE || ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK)
		return ps__tr_on_newchild(t, th, ev);
	if (ev == PTRACE_EVENT_EXEC)
		return ps__tr_on_exec(t, th);
	th->state = TH_HELD;
	if (ev) {
		th->group = ev == PTRACE_EVENT_STOP && is_stopsig(sig);
		return 0;
	}
	/* a trap of the trap layer's (a breakpoint, the trampoline, a perf trap): rewound, not stashed */
	if (sig == SIGTRAP && t->traps && !ptrace(PTRACE_GETREGS, th->tid, 0, &r) && t->traps->settle(t, th, &r))
		return 0;
	stash(th, sig);
	return 0;
}

/* Dispatch one waitpid() result. */
int ps__tr_handle(struct ps_tracer *t, pid_t pid, int st)
{
	struct ps_tr_thread *th = ps__tr_th_find(t, pid);

	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		if (th)
			ps__tr_thread_gone(t, th, st);
		return 0;
	}
	if (!WIFSTOPPED(st))
		return 0;
	if (!th) {
		/* a new tracee whose parent's event has not been seen yet: hold it */
		return ps__tr_th_new(t, pid, NULL, TH_EARLY) ? 0 : ps_error_set(t->err, ENOMEM, "out of memory");
	}
	int sig = WSTOPSIG(st), ev = st >> 16;
	if (th->state == TH_AWAIT)
		return ps__tr_born(t, th, sig, ev);
	if (t->settling)
		return settle_stop(t, th, st);
	switch (ev) {
	case 0:
		break;
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		return ps__tr_on_newchild(t, th, ev);
	case PTRACE_EVENT_EXEC:
		return ps__tr_on_exec(t, th);
	case PTRACE_EVENT_STOP:
		if (is_stopsig(sig))
			th->group = 1;
		ps__tr_resume(t, th, 0);
		return 0;
	default:
		ps__tr_resume(t, th, 0);
		return 0;
	}
	if (sig == SIGTRAP && t->traps)
		return t->traps->trap(t, th);
	ps__tr_resume(t, th, ps__tr_tty_signal(t, th->tid, sig) ? 0 : sig);
	return 0;
}

static int busy(const struct ps_tracer *t)
{
	for (unsigned i = 0; i < t->thcap; i++)
		if (t->th[i] && (t->th[i]->state == TH_RUN || t->th[i]->state == TH_AWAIT))
			return 1;
	return 0;
}

/*
 * PTRACE_INTERRUPT every running thread and handle the stops until no thread runs (each stop's
 * handler holds its thread: settling, or a pause). With @go_on, a stop whose handling failed
 * does not end the wait. 0, or -1 with t->err set.
 */
static int stop_all(struct ps_tracer *t, int go_on)
{
	int st, rc = 0;

	for (unsigned i = 0; i < t->thcap; i++)
		if (t->th[i] && t->th[i]->state == TH_RUN)
			ptrace(PTRACE_INTERRUPT, t->th[i]->tid, 0, 0);
	while (busy(t)) {
		pid_t w = waitpid(-1, &st, __WALL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD) {
				/* nothing left to wait for */
				for (unsigned i = 0; i < t->thcap; i++)
					if (t->th[i] && t->th[i]->state != TH_HELD)
						ps__tr_th_free(t, t->th[i]), i = (unsigned)-1;
				break;
			}
			return ps_error_set(t->err, errno, "waitpid: %s", strerror(errno));
		}
		t->stops++;
		if (ps__tr_handle(t, w, st)) {
			rc = -1;
			if (!go_on)
				break;
		}
	}
	return rc;
}

/*
 * Hold the program: every thread is interrupted, and each stop that comes meanwhile is
 * handled as in a run (hits, thread births and ends, exec, signals: callbacks called) except
 * that the thread is then kept stopped, as after a callback's PS_TRACER_PAUSE. A signal the
 * program gets while it is held waits in the kernel, or is stashed, until the next run.
 */
int ps_tracer_hold(struct ps_tracer *t, struct ps_error *err)
{
	int rc;

	if (!t->attached)
		return 0;
	t->err = err ? err : &t->errbuf;
	t->pause = 1; /* ps__tr_resume() keeps each thread stopped */
	rc = stop_all(t, 1);
	t->err = &t->errbuf;
	return rc;
}

/* Stop every running thread and handle stops until all are held. */
int ps__tr_settle(struct ps_tracer *t)
{
	int rc;

	t->settling = 1;
	rc = stop_all(t, 0);
	t->settling = 0;
	return rc;
}
