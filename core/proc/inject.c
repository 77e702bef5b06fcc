/* core/proc/inject.c - ps_inject_library(): attach (every thread held, the tracer's own way),
 * call the process's dlopen in one of its threads, put everything back, detach.
 * ps_inject_library_call(): the same, with functions of the library called after the dlopen
 * (found by the process's dlsym), in the same thread and the same stop.
 *
 * The call: the library's path is written on the caller's stack below its red zone, and under it
 * a return address of 0; rip = dlopen, rdi = the path, rsi = RTLD_NOW, rsp 16-byte aligned at the
 * call as the ABI wants, orig_rax = -1 so that the kernel restarts no system call when the thread
 * goes. The thread alone runs (the others stay held) until dlopen returns to 0: the SIGSEGV is
 * caught at its signal-delivery stop and never delivered. Signals that come meanwhile are kept
 * for the detach; threads the library starts are held as they are born, then detached with the
 * rest. Each further call (dlsym, then the function) is made the same way, its string in the
 * same place on the stack (the bytes there saved once, before the first). Then the saved registers (orig_rax and an
 * -ERESTART* rax included: the interrupted system call restarts as it would have) and the saved stack bytes go back.
 *
 * A dlopen that waits for a lock a held thread owns (the loader's, malloc's) would never return:
 * after LOCK_WAIT_NS the other threads are let run, and held again once the call returned. There is
 * no limit after that: the thread cannot be taken out of dlopen unharmed, and the process would
 * die of the return to 0 were it let go meanwhile.
 */
#include "inject.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "inject_priv.h"
#include "tracer_priv.h"

#ifndef RTLD_NOW
#define RTLD_NOW 2
#endif

enum {
	RED_ZONE = 128,
	XSTATE_MAX = 16384,
};

#define LOCK_WAIT_NS 2000000000ull /* alone this long, then with the other threads running */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What is saved of the calling thread. */
struct saved {
	struct user_regs_struct r;
	uint8_t xstate[XSTATE_MAX];
	struct iovec xiov; /* iov_len: the size the kernel gave (0: FPREGS used instead) */
	struct user_fpregs_struct fp;
	uint64_t area;	   /* where the calls' strings go, 16-byte aligned, below the red zone */
	size_t room;	   /* bytes there: the longest string of the calls */
	uint64_t stack_lo; /* the stack bytes the calls overwrite, saved before the first */
	uint8_t stack[4096 + 32];
	size_t stack_n;
};

static int save_thread(struct ps_tr_thread *th, struct saved *s, struct ps_error *err)
{
	if (ptrace(PTRACE_GETREGS, th->tid, 0, &s->r))
		return ps_error_set(err, errno, "ptrace(GETREGS, %d): %s", (int)th->tid, strerror(errno));
	s->xiov.iov_base = s->xstate;
	s->xiov.iov_len = sizeof s->xstate;
	if (ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_X86_XSTATE, &s->xiov)) {
		s->xiov.iov_len = 0;
		if (ptrace(PTRACE_GETFPREGS, th->tid, 0, &s->fp))
			return ps_error_set(err, errno, "ptrace(GETFPREGS, %d): %s", (int)th->tid, strerror(errno));
	}
	return 0;
}

/* Put back the registers and the stack bytes of @s. */
static int restore_thread(struct ps_tr_thread *th, struct saved *s, struct ps_error *err)
{
	int bad = 0;

	if (s->stack_n && mem_wr(th->proc, s->stack_lo, s->stack, s->stack_n))
		bad = ps_error_set(err, errno, "cannot restore the stack of thread %d: %s", (int)th->tid,
				   strerror(errno));
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &s->r))
		bad = ps_error_set(err, errno, "ptrace(SETREGS, %d): %s", (int)th->tid, strerror(errno));
	if (s->xiov.iov_len ? ptrace(PTRACE_SETREGSET, th->tid, (void *)NT_X86_XSTATE, &s->xiov)
			    : ptrace(PTRACE_SETFPREGS, th->tid, 0, &s->fp))
		bad = ps_error_set(err, errno, "cannot restore the FPU state of thread %d: %s", (int)th->tid,
				   strerror(errno));
	return bad;
}

/* Let every held thread but @me run (@go) or hold them again (!@go). */
static int others(struct ps_tracer *t, struct ps_tr_thread *me, int go)
{
	for (unsigned i = 0; i < t->thcap; i++) {
		struct ps_tr_thread *th = t->th[i];
		if (!th || th == me || th->state != (go ? TH_HELD : TH_RUN))
			continue;
		if (go && !th->group && !ptrace(PTRACE_CONT, th->tid, 0, 0))
			th->state = TH_RUN;
	}
	return go ? 0 : ps__tr_settle(t);
}

/* A SIGSEGV of calling thread @th: 1 the call returned to 0 (*r read), -1 it faulted (@err), 0 it
 * was sent (by kill or the like: to be delivered at the detach). */
static int segv(struct ps_tr_thread *th, struct user_regs_struct *r, struct ps_error *err)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETREGS, th->tid, 0, r) || ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si))
		return ps_error_set(err, errno, "ptrace(GETREGS, %d): %s", (int)th->tid, strerror(errno));
	if (r->rip == 0 && si.si_addr == NULL && si.si_code > 0)
		return 1;
	if (si.si_code <= 0)
		return 0;
	return ps_error_set(err, EFAULT, "the dlopen call faulted in thread %d at 0x%llx (SIGSEGV, address %p)",
			    (int)th->tid, (unsigned long long)r->rip, si.si_addr);
}

/* One stop of the calling thread @th, wait status @st. Return: 1 the call returned (*r read),
 * 0 go on (resumed), -1 error (@err: the thread faulted, died, or cannot be resumed). */
static int call_stop(struct ps_tracer *t, struct ps_tr_thread *th, int st, struct user_regs_struct *r,
		     struct ps_error *err)
{
	int sig = WSTOPSIG(st), ev = st >> 16, rc;

	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		ps__tr_thread_gone(t, th, st);
		return ps_error_set(err, ESRCH, "thread %d ended during the dlopen call", (int)th->tid);
	}
	if (ev == PTRACE_EVENT_CLONE || ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK) {
		t->settling = 1; /* the child is held at its birth, the caller left stopped */
		rc = ps__tr_on_newchild(t, th, ev);
		t->settling = 0;
		if (rc)
			return -1;
	} else if (ev == PTRACE_EVENT_EXEC) {
		return ps_error_set(err, EINVAL, "process %d ran exec during the dlopen call", (int)th->proc->pid);
	} else if (ev == 0 && sig == SIGSEGV && (rc = segv(th, r, err)) != 0) {
		return rc;
	} else if (ev == 0) {
		stash(th, sig); /* delivered at the detach */
	} else if (ev == PTRACE_EVENT_STOP && is_stopsig(sig)) {
		stash(th, sig); /* a group-stop: sent again at the detach */
	}
	if (ptrace(PTRACE_CONT, th->tid, 0, 0))
		return ps_error_set(err, errno, "ptrace(CONT, %d): %s", (int)th->tid, strerror(errno));
	return 0;
}

/* Threads the call started (a library's constructor's) whose birth stop has not been seen yet:
   waited for, and held as the others are, so that every thread of the process is held (and
   told to a later call's @held) when the call has returned. A thread that ended meanwhile is
   forgotten. 0, or -1 with @err set. */
static int hold_births(struct ps_tracer *t, struct ps_error *err)
{
	for (unsigned i = 0; i < t->thcap; i++) {
		struct ps_tr_thread *th = t->th[i];
		pid_t w;
		int st;

		if (!th || th->state != TH_AWAIT)
			continue;
		while ((w = waitpid(th->tid, &st, __WALL)) < 0 && errno == EINTR)
			;
		if (w < 0)
			return ps_error_set(err, errno, "waitpid(%d): %s", (int)th->tid, strerror(errno));
		t->stops++;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			ps__tr_thread_gone(t, th, st);
			continue;
		}
		t->settling = 1;
		ps__tr_born(t, th, WSTOPSIG(st), st >> 16);
		t->settling = 0;
	}
	return 0;
}

/* Run @th with registers @r until its call returns to 0; *r gets the registers then. */
static int run_call(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r, struct ps_error *err)
{
	uint64_t t0 = now_ns(), nap = 10000;
	int st, rc = 0, freed = 0;

	if (ptrace(PTRACE_SETREGS, th->tid, 0, r) || ptrace(PTRACE_CONT, th->tid, 0, 0))
		return ps_error_set(err, errno, "cannot start the call in thread %d: %s", (int)th->tid,
				    strerror(errno));
	while (!rc) {
		pid_t w = waitpid(th->tid, &st, __WALL | WNOHANG);
		if (w < 0 && errno != EINTR) {
			rc = ps_error_set(err, errno, "waitpid(%d): %s", (int)th->tid, strerror(errno));
		} else if (w > 0) {
			t->stops++;
			nap = 10000;
			rc = call_stop(t, th, st, r, err);
		} else {
			if (!freed && now_ns() - t0 > LOCK_WAIT_NS)
				freed = !others(t, th, 1);
			struct timespec ts = {0, (long)nap};
			nanosleep(&ts, NULL);
			nap = nap < 1000000 ? nap * 2 : nap;
		}
	}
	if (freed && others(t, th, 0) && rc > 0)
		rc = -1;
	if (rc > 0 && hold_births(t, err))
		rc = -1;
	return rc > 0 ? 0 : -1;
}

/* The thread to make the call (inject.h says which), its registers read. */
static struct ps_tr_thread *pick(struct ps_tracer *t, pid_t pid, int *in_sys, struct ps_error *err)
{
	struct ps_tr_thread *best = NULL;
	struct user_regs_struct r;
	int rank = 0, stopped = 0;

	for (unsigned i = 0; i < t->thcap; i++) {
		struct ps_tr_thread *th = t->th[i];
		stopped |= th && th->group;
		if (!th || th->group || th->state != TH_HELD || !th->proc || th->proc->pid != pid ||
		    ptrace(PTRACE_GETREGS, th->tid, 0, &r))
			continue;
		int sys = (long long)r.orig_rax >= 0;
		int k = 1 + 2 * sys + (th->tid == pid);
		if (k > rank) {
			rank = k;
			best = th;
			*in_sys = sys;
		}
	}
	if (!best && !stopped)
		ps_error_set(err, ESRCH, "cannot load a library into process %d: none of its threads could be held",
			     (int)pid);
	else if (!best)
		ps_error_set(err, EAGAIN,
			     "cannot load a library into process %d: it is stopped (by a stop signal); let it continue "
			     "first (kill -CONT %d)",
			     (int)pid, (int)pid);
	return best;
}

/* Call @fn(@a0, @a1) in @th, saved as @s, with @str (NULL: none) copied on its stack and its
 * address passed instead of argument @str_at (0: @a0, 1: @a1); *@ret gets rax. The stack bytes
 * the calls write are saved in @s before the first. */
static int call_fn(struct ps_tracer *t, struct ps_tr_thread *th, struct saved *s, uint64_t fn, const char *str,
		   int str_at, uint64_t a0, uint64_t a1, uint64_t *ret, struct ps_error *err)
{
	struct user_regs_struct r = s->r;
	size_t n = str ? strlen(str) + 1 : 0;
	uint64_t sp = s->area - 8; /* the return address: rsp % 16 == 8 at entry */
	uint64_t zero = 0;

	if (n > s->room)
		return ps_error_set(err, ENAMETOOLONG, "a string of the call is too long");
	if (!s->stack_n) {
		s->stack_lo = sp;
		if (mem_rd(th->proc, sp, s->stack, 8 + s->room))
			return ps_error_set(err, errno, "cannot read the stack of thread %d: %s", (int)th->tid,
					    strerror(errno));
		s->stack_n = 8 + s->room;
	}
	if (mem_wr(th->proc, sp, &zero, 8) || (n && mem_wr(th->proc, s->area, str, n)))
		return ps_error_set(err, errno, "cannot write the stack of thread %d: %s", (int)th->tid,
				    strerror(errno));
	r.rip = fn;
	r.rsp = sp;
	r.rdi = str && str_at == 0 ? s->area : a0;
	r.rsi = str && str_at == 1 ? s->area : a1;
	r.rax = 0;
	r.orig_rax = (unsigned long long)-1; /* no system call to restart when it goes */
	if (run_call(t, th, &r, err))
		return -1;
	*ret = r.rax;
	return 0;
}

/* What dlerror() says in @th (after a failed dlopen), in @msg. */
static void fetch_dlerror(struct ps_tracer *t, struct ps_tr_thread *th, struct saved *s, uint64_t dlerror, char *msg,
			  size_t n)
{
	struct ps_error e;
	uint64_t p = 0;

	snprintf(msg, n, "dlopen returned NULL");
	if (call_fn(t, th, s, dlerror, NULL, 0, 0, 0, &p, &e) || !p)
		return;
	for (size_t i = 0; i + 1 < n; i++) {
		if (mem_rd(th->proc, p + i, msg + i, 1) || !msg[i])
			return;
		msg[i + 1] = '\0';
	}
}

/* Where the calls' strings go on @s's stack: room for the longest of them. */
static int string_room(struct saved *s, const struct ps_inject_target *tg, const struct ps_inject_call *calls,
		       int ncalls, struct ps_error *err)
{
	size_t room = strlen(tg->abspath) + 1;

	for (int i = 0; i < ncalls; i++) {
		size_t a = strlen(calls[i].sym) + 1, b = calls[i].arg ? strlen(calls[i].arg) + 1 : 0;
		room = a > room ? a : room;
		room = b > room ? b : room;
	}
	if (room > sizeof s->stack - 8)
		return ps_error_set(err, ENAMETOOLONG, "the library's path or a call's string is too long");
	s->room = room;
	s->area = (s->r.rsp - RED_ZONE - room) & ~15ull;
	s->stack_n = 0;
	return 0;
}

/* The instruction pointers of @pid's held threads (@caller's where it was stopped, @s) to @c->held. */
static int tell_held(struct ps_tracer *t, pid_t pid, struct ps_tr_thread *caller, struct saved *s,
		     struct ps_inject_call *c, struct ps_error *err)
{
	uint64_t *ip = calloc(t->thcap + 1, sizeof *ip);
	struct user_regs_struct r;
	int n = 0, rc;

	if (!ip)
		return ps_error_set(err, ENOMEM, "out of memory");
	for (unsigned i = 0; i < t->thcap; i++) {
		struct ps_tr_thread *th = t->th[i];
		if (!th || !th->proc || th->proc->pid != pid)
			continue;
		if (th == caller)
			ip[n++] = s->r.rip;
		else if (!ptrace(PTRACE_GETREGS, th->tid, 0, &r))
			ip[n++] = r.rip;
	}
	rc = c->held(c->ud, ip, n, err);
	free(ip);
	return rc;
}

/* Each of @calls in @th (saved as @s), after the dlopen returned handle @h. */
static int call_each(struct ps_tracer *t, pid_t pid, struct ps_tr_thread *th, struct saved *s,
		     const struct ps_inject_target *tg, uint64_t h, struct ps_inject_call *calls, int ncalls,
		     struct ps_error *err)
{
	char msg[512];

	for (int i = 0; i < ncalls; i++) {
		struct ps_inject_call *c = &calls[i];
		uint64_t fn = 0, ret = 0;

		if (call_fn(t, th, s, tg->dlsym, c->sym, 1, h, 0, &fn, err))
			return -1;
		if (!fn) {
			fetch_dlerror(t, th, s, tg->dlerror, msg, sizeof msg);
			return ps_error_set(err, PS_ENOTFOUND, "%s has no function %s: %s", tg->abspath, c->sym, msg);
		}
		if ((c->held && tell_held(t, pid, th, s, c, err)) ||
		    call_fn(t, th, s, fn, c->arg ? c->arg : "", 0, 0, 0, &ret, err))
			return -1;
		c->ret = (int)ret;
	}
	return 0;
}

/* The call and what it leaves: 0, or -1 with @err (registers and stack put back either way,
 * unless the thread ended). */
static int inject_held(struct ps_tracer *t, pid_t pid, const struct ps_inject_target *tg, struct ps_inject_call *calls,
		       int ncalls, struct ps_inject_info *in, struct ps_error *err)
{
	struct ps_tr_thread *th = pick(t, pid, &in->in_syscall, err);
	struct saved *s = th ? malloc(sizeof *s) : NULL;
	uint64_t h = 0, t0;
	char msg[512];
	int rc;

	if (th && !s)
		return ps_error_set(err, ENOMEM, "out of memory");
	if (!th || save_thread(th, s, err) || string_room(s, tg, calls, ncalls, err)) {
		free(s);
		return -1;
	}
	in->tid = th->tid;
	in->threads = (int)t->nth;
	t0 = now_ns();
	rc = call_fn(t, th, s, tg->dlopen, tg->abspath, 0, 0, RTLD_NOW, &h, err);
	in->call_ns = now_ns() - t0;
	if (!rc && !h) {
		fetch_dlerror(t, th, s, tg->dlerror, msg, sizeof msg);
		rc = ps_error_set(err, PS_EUSAGE, "cannot load '%s' into process %d: %s", tg->abspath, (int)pid, msg);
	}
	in->handle = h;
	if (!rc)
		rc = call_each(t, pid, th, s, tg, h, calls, ncalls, err);
	if (ps__tr_th_find(t, in->tid) && restore_thread(th, s, rc ? NULL : err))
		rc = -1;
	free(s);
	return rc;
}

int ps_inject_library_call(pid_t pid, const char *path, struct ps_inject_call *calls, int ncalls,
			   struct ps_inject_info *info, struct ps_error *err)
{
	static const struct ps_tracer_ops none;
	struct ps_inject_target tg;
	struct ps_inject_info in = {0};
	struct ps_tracer *t;
	uint64_t t0 = now_ns(), t1;
	int rc;

	if ((rc = ps__inject_check(pid, path, &tg, err)) < 0)
		return -1;
	t1 = now_ns();
	if (ps_tracer_attach(&t, pid, &none, NULL, err))
		return -1;
	if (rc > 0)
		rc = ps__inject_check(pid, path, &tg, err) ? -1 : 0;
	if (!rc)
		rc = inject_held(t, pid, &tg, calls, ncalls, &in, err);
	if (ps_tracer_detach(t, rc ? NULL : err))
		rc = -1;
	ps_tracer_free(t);
	in.held_ns = now_ns() - t1;
	in.total_ns = now_ns() - t0;
	if (!rc && info)
		*info = in;
	return rc;
}

int ps_inject_check(pid_t pid, const char *path, struct ps_error *err)
{
	struct ps_inject_target tg;

	return ps__inject_check(pid, path, &tg, err);
}

int ps_inject_library(pid_t pid, const char *path, struct ps_inject_info *info, struct ps_error *err)
{
	return ps_inject_library_call(pid, path, NULL, 0, info, err);
}
