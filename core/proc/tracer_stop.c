/* core/proc/tracer_stop.c - what the tracer does with each stop waitpid() reports: breakpoint and
 * perf traps, trampoline returns, ptrace events, signals; holding every thread while settling
 * (attach, detach); resuming a thread with the signals it is owed. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tracer_priv.h"

/* Resume a stopped thread, delivering @sig (or the first stashed signal; more stashed
 * signals are re-sent with tgkill). */
void ps__tr_resume(struct ps_tracer *t, struct thread *th, int sig)
{
	if (t->pause && !t->settling) {
		/* a callback asked to pause: keep this thread stopped until the next run */
		if (sig)
			stash(th, sig);
		th->state = TH_HELD;
		return;
	}
	if (th->nsig) {
		int i = 0;
		if (!sig)
			sig = th->sig[i++];
		for (; i < th->nsig; i++)
			syscall(SYS_tgkill, th->proc ? th->proc->pid : th->tid, th->tid, th->sig[i]);
		th->nsig = 0;
	}
	if (th->group && !sig)
		ptrace(PTRACE_LISTEN, th->tid, 0, 0);
	else
		ptrace(PTRACE_CONT, th->tid, 0, (long)sig);
	th->group = 0;
	th->state = TH_RUN;
}

/* Where the kernel puts si_perf_data, the sig_data of the perf event that sent a TRAP_PERF
 * SIGTRAP: right after si_addr in the fault union (<asm-generic/siginfo.h>, _sigfault._perf);
 * glibc's siginfo_t does not name it. */
#define SI_PERF_DATA_OFFSET (offsetof(siginfo_t, si_addr) + sizeof(void *))
_Static_assert(SI_PERF_DATA_OFFSET + sizeof(uint64_t) <= sizeof(siginfo_t), "si_perf_data inside siginfo_t");

enum { TRAP_OTHER, TRAP_OF_PERF, TRAP_STRAY };

/* What kind of SIGTRAP @tid stopped with, not being one of our int3s: a perf event's (its
 * sig_data in @data), a stray debug exception of ours, or another (the program's). */
static int perf_trap(pid_t tid, uint64_t *data)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si))
		return TRAP_OTHER;
	if (si.si_code == TRAP_PERF) {
		memcpy(data, (const char *)&si + SI_PERF_DATA_OFFSET, sizeof *data);
		return TRAP_OF_PERF;
	}
	/* A debug exception the kernel did not match to a perf event: it happens when a
	   hardware breakpoint's period is changed (its debug register reloaded) while the
	   thread is about to run the address. No ptrace debug registers are ours, so with
	   hardware breakpoints in use it is a stray of ours, not the program's. */
	if (si.si_code == TRAP_BRKPT || si.si_code == TRAP_HWBKPT)
		return TRAP_STRAY;
	return TRAP_OTHER;
}

/*
 * A perf event with sigtrap=1 overflowed: a hardware execute breakpoint at a function
 * entry (PS_BP_HW_BASE + its sig_data). The debug exception is fault-like, so the thread is
 * at the entry, its first instruction not yet run, and the kernel set RF so resuming runs it
 * without a second trap. Nothing is displaced: only the return may be caught.
 */
static int on_perf_trap(struct ps_tracer *t, struct thread *th, struct user_regs_struct *r, uint64_t data)
{
	uint64_t cookie = 0;
	int id = PS_BP_HW_BASE + (int)(data & HW_ID_MASK), rc;

	ps__tr_unwind_below(t, th, r->rsp);
	if (!quiet(t, th) && t->ops.hit) {
		struct user_regs_struct at = *r;
		t->ret_slot = 0;
		rc = t->ops.hit(t->ud, th->tid, id, r, &cookie);
		cbres(t, rc, "hit");
		if (t->ret_slot)
			at.rsp = t->ret_slot;
		if (rc > 0 && (rc & PS_TRACER_CATCH_RETURN))
			ps__tr_catch_return(t, th, &at, id, cookie);
	}
	ps__tr_resume(t, th, 0);
	return 0;
}

/* A SIGTRAP signal-delivery stop of @th. */
int ps__tr_on_trap(struct ps_tracer *t, struct thread *th)
{
	struct user_regs_struct r;
	struct proc *p = th->proc;
	uint64_t cookie = 0;
	int id, rc, fsig = 0, caught = 0;

	if (ptrace(PTRACE_GETREGS, th->tid, 0, &r))
		return errno == ESRCH ? 0 : ps_error_set(t->err, errno, "ptrace(GETREGS): %s", strerror(errno));
	uint64_t a = r.rip - 1;
	if (p->tramp_on && a == p->entry)
		return ps__tr_on_tramp(t, th, &r);
	id = p->sees_bps ? ps__tr_bp_find(t, a) : -1;
	if (id < 0) {
		uint64_t data;
		int kind = t->hw_traps ? perf_trap(th->tid, &data) : TRAP_OTHER;
		if (kind == TRAP_OF_PERF)
			return on_perf_trap(t, th, &r, data);
		if (kind == TRAP_STRAY) {
			if (!quiet(t, th) && t->ops.hit)
				cbres(t, t->ops.hit(t->ud, th->tid, PS_BP_HW_STRAY, &r, &cookie), "hit");
			r.eflags |= EFLAGS_RF; /* run the instruction without trapping again */
			ptrace(PTRACE_SETREGS, th->tid, 0, &r);
			ps__tr_resume(t, th, 0);
			return 0;
		}
		ps__tr_resume(t, th, SIGTRAP); /* not ours */
		return 0;
	}
	r.rip = a;
	ps__tr_unwind_below(t, th, r.rsp);
	if (t->bp[id].kind == PS_BP_FUNC && th->nfr && th->fr[th->nfr - 1].sp == r.rsp) {
		/* a frame at this very slot: alive only if the slot still holds the trampoline
		 * (tail call); a fresh return address means it was unwound (longjmp) */
		uint64_t v;
		if (!mem_rd(p, r.rsp, &v, 8) && v != p->entry)
			ps__tr_unwind_below(t, th, r.rsp + 1);
	}
	if (t->bp[id].enabled && !quiet(t, th) && t->ops.hit) {
		if (t->bp[id].kind == PS_BP_FUNC)
			ps__tr_prefetch(t, th, r.rsp); /* the CPU and the return address: one read */
		rc = t->ops.hit(t->ud, th->tid, id, &r, &cookie);
		cbres(t, rc, "hit");
		if (rc > 0 && (rc & PS_TRACER_CATCH_RETURN) && t->bp[id].kind == PS_BP_FUNC &&
		    !ps__tr_catch_return(t, th, &r, id, cookie))
			caught = 1;
	}
	const struct bp *b = &t->bp[id];
	if (!b->enabled) {
		rc = 0; /* disarmed while this thread was trapping: run the original byte */
	} else {
		rc = ps__tr_displaced(t, th, b, id < SLOT_USER ? id : SLOT_SPARE, id < SLOT_USER ? id + 1 : 0, &r,
				      &fsig);
	}
	if (rc == 1 && !fsig)
		return 0; /* gone */
	if (rc < 0) {
		/* cannot run the displaced instruction: disarm, let the thread run it in place */
		char msg[sizeof t->err->msg];
		snprintf(msg, sizeof msg, "%s", t->err->msg);
		if (caught) {
			struct frame f = th->fr[--th->nfr];
			mem_wr(p, f.sp, &f.ret, 8);
		}
		t->bp[id].enabled = 0;
		ps__tr_bp_write(t, &t->bp[id], 0);
		r.rip = a;
		ptrace(PTRACE_SETREGS, th->tid, 0, &r);
		ps__tr_resume(t, th, 0);
		return ps_error_set(t->err, t->err->code, "breakpoint %d disarmed: %s", id, msg);
	}
	if (fsig && caught && th->nfr && th->fr[th->nfr - 1].sp == r.rsp) {
		/* the instruction faulted before the function ran: undo the catch */
		struct frame f = th->fr[--th->nfr];
		mem_wr(p, f.sp, &f.ret, 8);
		if (!quiet(t, th) && t->ops.ret)
			cbres(t, t->ops.ret(t->ud, th->tid, f.bp, f.cookie, 1), "ret");
	}
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &r) && errno != ESRCH)
		return ps_error_set(t->err, errno, "ptrace(SETREGS, %d): %s", (int)th->tid, strerror(errno));
	ps__tr_resume(t, th, fsig);
	return 0;
}

/* A stop while settling (attach, detach): hold every thread where it stopped, with
 * breakpoint traps rewound and signals kept for later delivery. */
static int settle_stop(struct ps_tracer *t, struct thread *th, int st)
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
	if (sig == SIGTRAP && !ptrace(PTRACE_GETREGS, th->tid, 0, &r)) {
		struct proc *p = th->proc;
		uint64_t a = r.rip - 1;
		if (p->tramp_on && a == p->entry) {
			uint64_t sp = r.rsp - 8;
			ps__tr_unwind_below(t, th, sp);
			if (th->nfr && th->fr[th->nfr - 1].sp == sp) {
				while (th->nfr && th->fr[th->nfr - 1].sp == sp)
					r.rip = th->fr[--th->nfr].ret;
			} else {
				r.rip = a;
			}
			ptrace(PTRACE_SETREGS, th->tid, 0, &r);
			return 0;
		}
		if (p->sees_bps && ps__tr_bp_find(t, a) >= 0) {
			r.rip = a;
			ptrace(PTRACE_SETREGS, th->tid, 0, &r);
			return 0;
		}
		uint64_t data;
		if (t->hw_traps && perf_trap(th->tid, &data) != TRAP_OTHER) {
			/* a sampled entry while settling: not a hit, not the program's */
			r.eflags |= EFLAGS_RF;
			ptrace(PTRACE_SETREGS, th->tid, 0, &r);
			return 0;
		}
	}
	stash(th, sig);
	return 0;
}

/* Dispatch one waitpid() result. */
int ps__tr_handle(struct ps_tracer *t, pid_t pid, int st)
{
	struct thread *th = ps__tr_th_find(t, pid);

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
	if (sig == SIGTRAP)
		return ps__tr_on_trap(t, th);
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
