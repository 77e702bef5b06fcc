/* core/tracer.c - ptrace mechanics: spawn/attach, breakpoints, catching returns, detach.
 *
 * Choices (see /work/shared/NOTES-tracing.md for the measurements behind them):
 *
 * - Breakpoints are int3 bytes written with pwrite() on /proc/PID/mem; they stay in
 *   place while armed (no re-insertion dance). The displaced instruction is, in order of
 *   preference: emulated by the tracer (endbr64, nops, push reg, pushf, mov %rsp,%rbp,
 *   sub $imm,%rsp, call/jmp/jcc/loop rel, ret: no extra stop), or executed OUT OF LINE
 *   in a scratch page mapped in the tracee (one mmap syscall injected at first need):
 *   the instruction is copied into a slot followed by an int3 and the thread is resumed
 *   there (one extra stop); rip-relative operands are rewritten to [reg+disp32] with a
 *   free register (rsi/rdi/rbx) loaded with the original rip, as kernel uprobes do;
 *   indirect jumps/calls are single-stepped instead and a pushed return address is
 *   fixed. Out-of-line execution never removes a breakpoint, so other threads keep
 *   running and cannot miss it: no stop-the-world. The out-of-line run is waited for
 *   synchronously (waitpid on that tid); syscall/int instructions are refused so it
 *   never blocks.
 * - Returns are caught by swapping the return address at [rsp] (at function entry) for
 *   a trampoline: the ELF entry point (AT_ENTRY), which holds an int3 once the first
 *   return is caught. A per-thread shadow stack keeps (real return, entry rsp, bp,
 *   cookie). A trap at the trampoline whose rsp is entry_rsp+8 of the top frame is a
 *   return; otherwise it is the program really running _start (a return was caught in a
 *   constructor before _start ran), and _start's first instruction is run out of line.
 *   Tail calls (a caught function jumping to another caught one: [rsp] already holds
 *   the trampoline) share one slot; both frames are popped at the one return.
 *   Frames whose entry rsp is below the thread's rsp at a later stop were unwound
 *   (longjmp, exception) and are reported with unwound=1. Limits: C++ exceptions and
 *   _Unwind_Backtrace cannot unwind through a swapped frame; a handler on a sigaltstack
 *   above the thread's stack makes its open frames look unwound.
 * - Threads live in an open-addressing hash keyed by tid; the per-stop path allocates
 *   nothing (shadow stacks grow by doubling) and uses GETREGS/SETREGS/CONT plus a pread
 *   and a pwrite when a return is caught.
 */
#include "tracer.h"

#include "x86insn.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer_priv.h"

/* ---------------------------------------------------------------- small helpers */

static int is_stopsig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static void cbres(struct ps_tracer *t, int rc, const char *what)
{
	if (rc < 0)
		t->abort = what;
	else if (rc & PS_TRACER_PAUSE)
		t->pause = 1;
}

static int quiet(const struct ps_tracer *t, const struct thread *th)
{
	return t->settling || !th->proc || th->proc->silent;
}

/* ---------------------------------------------------------------- thread table */

static unsigned th_home(const struct ps_tracer *t, pid_t tid)
{
	return ((unsigned)tid * 2654435761u) & (t->thcap - 1);
}

static struct thread *th_find(const struct ps_tracer *t, pid_t tid)
{
	if (!t->thcap)
		return NULL;
	for (unsigned i = th_home(t, tid);; i = (i + 1) & (t->thcap - 1)) {
		if (!t->th[i])
			return NULL;
		if (t->th[i]->tid == tid)
			return t->th[i];
	}
}

static int th_put(struct ps_tracer *t, struct thread *th)
{
	if ((t->nth + 1) * 2 > t->thcap) {
		unsigned ncap = t->thcap ? t->thcap * 2 : 16, ocap = t->thcap;
		struct thread **n = calloc(ncap, sizeof *n), **o = t->th;
		if (!n)
			return -1;
		t->th = n;
		t->thcap = ncap;
		t->nth = 0;
		for (unsigned i = 0; i < ocap; i++)
			if (o[i])
				th_put(t, o[i]);
		free(o);
	}
	unsigned i = th_home(t, th->tid);
	while (t->th[i])
		i = (i + 1) & (t->thcap - 1);
	t->th[i] = th;
	t->nth++;
	return 0;
}

static void th_del(struct ps_tracer *t, struct thread *th)
{
	unsigned m = t->thcap - 1, i = th_home(t, th->tid);
	while (t->th[i] != th)
		i = (i + 1) & m;
	t->th[i] = NULL;
	t->nth--;
	for (unsigned j = (i + 1) & m; t->th[j]; j = (j + 1) & m) {
		unsigned k = th_home(t, t->th[j]->tid);
		/* move back entries whose home is not cyclically in (i, j] */
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			t->th[i] = t->th[j];
			t->th[j] = NULL;
			i = j;
		}
	}
}

static struct thread *th_new(struct ps_tracer *t, pid_t tid, struct proc *p, int state)
{
	struct thread *th = calloc(1, sizeof *th);

	if (!th)
		return NULL;
	th->tid = tid;
	th->state = state;
	th->statfd = -1;
	th->proc = p;
	if (th_put(t, th)) {
		free(th);
		return NULL;
	}
	if (p)
		p->nthreads++;
	return th;
}

static void proc_unref(struct ps_tracer *t, struct proc *p);

static void th_free(struct ps_tracer *t, struct thread *th)
{
	th_del(t, th);
	if (th->statfd >= 0)
		close(th->statfd);
	free(th->fr);
	if (th->proc)
		proc_unref(t, th->proc);
	free(th);
}

static int fr_push(struct thread *th, const struct frame *f)
{
	if (th->nfr == th->capfr) {
		int ncap = th->capfr ? th->capfr * 2 : 16;
		struct frame *n = realloc(th->fr, (size_t)ncap * sizeof *n);
		if (!n)
			return -1;
		th->fr = n;
		th->capfr = ncap;
	}
	th->fr[th->nfr++] = *f;
	return 0;
}

/* ---------------------------------------------------------------- processes */

static struct proc *proc_new(struct ps_tracer *t, pid_t pid)
{
	char path[64];
	struct proc *p = calloc(1, sizeof *p);

	if (!p)
		return NULL;
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	p->memfd = open(path, O_RDWR | O_CLOEXEC);
	if (p->memfd < 0) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->next = t->procs;
	t->procs = p;
	return p;
}

static void proc_unref(struct ps_tracer *t, struct proc *p)
{
	if (--p->nthreads > 0)
		return;
	for (struct proc **pp = &t->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	close(p->memfd);
	free(p->slot);
	free(p);
}

uint64_t ps__tr_read_auxv(pid_t pid, unsigned long type)
{
	char path[64];
	uint64_t av[2], v = 0;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, av, sizeof av) == (ssize_t)sizeof av && av[0] != AT_NULL)
		if (av[0] == type) {
			v = av[1];
			break;
		}
	close(fd);
	return v;
}

static pid_t read_tgid(pid_t tid)
{
	char path[64], line[256];
	pid_t tgid = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* ---------------------------------------------------------------- breakpoint table */

static unsigned bp_home(const struct ps_tracer *t, uint64_t a)
{
	return (unsigned)((a * 0x9e3779b97f4a7c15ull) >> 32) & (t->bphcap - 1);
}

static int bp_find(const struct ps_tracer *t, uint64_t a)
{
	if (!t->bphcap)
		return -1;
	for (unsigned i = bp_home(t, a);; i = (i + 1) & (t->bphcap - 1)) {
		int k = t->bph[i];
		if (k < 0 || t->bp[k].addr == a)
			return k;
	}
}

static int bph_rebuild(struct ps_tracer *t, unsigned cap)
{
	int *n = malloc(cap * sizeof *n);

	if (!n)
		return -1;
	for (unsigned i = 0; i < cap; i++)
		n[i] = -1;
	free(t->bph);
	t->bph = n;
	t->bphcap = cap;
	for (int k = 0; k < t->nbp; k++) {
		unsigned i = bp_home(t, t->bp[k].addr);
		while (t->bph[i] >= 0)
			i = (i + 1) & (cap - 1);
		t->bph[i] = k;
	}
	return 0;
}

/* Write the armed/unarmed byte of @b into every process that carries breakpoints. */
static void bp_write(struct ps_tracer *t, const struct bp *b, int armed)
{
	uint8_t c = armed ? 0xcc : b->orig;

	for (struct proc *p = t->procs; p; p = p->next)
		if (p->writes_bps)
			mem_wr(p, b->addr, &c, 1);
}

/* Forget every breakpoint; restore their bytes where @restore (not after exec). */
static void bp_drop_all(struct ps_tracer *t, struct proc *except)
{
	for (int k = 0; k < t->nbp; k++)
		if (t->bp[k].enabled)
			for (struct proc *p = t->procs; p; p = p->next)
				if (p->writes_bps && p != except)
					mem_wr(p, t->bp[k].addr, &t->bp[k].orig, 1);
	t->nbp = 0;
	for (unsigned i = 0; i < t->bphcap; i++)
		t->bph[i] = -1;
	for (struct proc *p = t->procs; p; p = p->next)
		if (p->slot)
			for (int i = 0; i < SLOT_USER; i++)
				p->slot[i] = 0;
}

/* Classify the instruction @code (n bytes) at @b->addr: emulation or out-of-line copy. */
/* Read @n bytes of code at @a from @p with our int3s replaced by the original bytes. */
static ssize_t code_read(struct ps_tracer *t, struct proc *p, uint64_t a, uint8_t *buf, size_t n)
{
	ssize_t got = pread(p->memfd, buf, n, (off_t)a);

	for (ssize_t i = 0; i < got; i++) {
		int k = bp_find(t, a + (uint64_t)i);
		if (k >= 0)
			buf[i] = t->bp[k].orig;
		if (p->tramp_on && a + (uint64_t)i == p->entry)
			buf[i] = p->tramp.orig;
	}
	return got;
}

/* ---------------------------------------------------------------- stopping and resuming */

/* Resume a stopped thread, delivering @sig (or the first stashed signal; more stashed
 * signals are re-sent with tgkill). */
static void resume(struct ps_tracer *t, struct thread *th, int sig)
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

/* Report open frames whose entry rsp is below @sp as unwound and drop them. */
static void unwind_below(struct ps_tracer *t, struct thread *th, uint64_t sp)
{
	while (th->nfr && th->fr[th->nfr - 1].sp < sp) {
		struct frame f = th->fr[--th->nfr];
		if (!quiet(t, th) && t->ops.ret)
			cbres(t, t->ops.ret(t->ud, th->tid, f.bp, f.cookie, 1), "ret");
	}
}

/* ---------------------------------------------------------------- catching returns */

/* Install the trampoline int3 at the entry point of @p. */
static int tramp_on(struct ps_tracer *t, struct proc *p)
{
	uint8_t code[16], cc = 0xcc;
	ssize_t n;

	if (p->tramp_on)
		return 0;
	if (!p->entry && !(p->entry = ps__tr_read_auxv(p->pid, AT_ENTRY)))
		return ps_error_set(t->err, ENOENT, "no AT_ENTRY in /proc/%d/auxv", (int)p->pid);
	n = code_read(t, p, p->entry, code, sizeof code);
	memset(&p->tramp, 0, sizeof p->tramp);
	p->tramp.addr = p->entry;
	p->tramp.kind = PS_BP_ADDR;
	if (n <= 0 || ps__tr_bp_prepare(&p->tramp, code, (size_t)n, t->err))
		return -1;
	p->tramp.orig = code[0];
	if (mem_wr(p, p->entry, &cc, 1))
		return ps_error_set(t->err, errno, "cannot write the entry point of %d: %s", (int)p->pid,
				    strerror(errno));
	p->tramp_on = 1;
	return 0;
}

/* Swap the return address at [rsp] for the trampoline and push a frame. */
static int catch_return(struct ps_tracer *t, struct thread *th, const struct user_regs_struct *r, int id,
			uint64_t cookie)
{
	struct proc *p = th->proc;
	struct frame f = {0, r->rsp, cookie, id, 0};
	uint64_t cur;

	if (tramp_on(t, p) || mem_rd(p, r->rsp, &cur, 8))
		return -1;
	f.ret = cur;
	if (cur == p->entry) {
		/* a tail call from a caught function: the slot is already swapped */
		int i = th->nfr - 1;
		while (i >= 0 && th->fr[i].sp != r->rsp)
			i--;
		if (i < 0)
			return -1;
		f.ret = th->fr[i].ret;
	} else if (mem_wr(p, r->rsp, &p->entry, 8)) {
		return -1;
	}
	if (fr_push(th, &f)) {
		mem_wr(p, r->rsp, &cur, 8);
		return -1;
	}
	return 0;
}

/* The thread trapped at the trampoline. */
static int on_tramp(struct ps_tracer *t, struct thread *th, struct user_regs_struct *r)
{
	struct proc *p = th->proc;
	uint64_t sp = r->rsp - 8;
	int fsig = 0, rc;

	unwind_below(t, th, sp);
	if (th->nfr && th->fr[th->nfr - 1].sp == sp) {
		uint64_t ret = 0;
		while (th->nfr && th->fr[th->nfr - 1].sp == sp) {
			struct frame f = th->fr[--th->nfr];
			ret = f.ret;
			if (!quiet(t, th) && t->ops.ret)
				cbres(t, t->ops.ret(t->ud, th->tid, f.bp, f.cookie, 0), "ret");
		}
		r->rip = ret;
	} else {
		/* the program itself runs _start */
		r->rip = p->entry;
		rc = ps__tr_displaced(t, th, &p->tramp, SLOT_TRAMP, -1, r, &fsig);
		if (rc == 1 && !fsig)
			return 0;
		if (rc < 0)
			return -1;
	}
	if (ptrace(PTRACE_SETREGS, th->tid, 0, r) && errno != ESRCH)
		return ps_error_set(t->err, errno, "ptrace(SETREGS, %d): %s", (int)th->tid, strerror(errno));
	resume(t, th, fsig);
	return 0;
}

/* ---------------------------------------------------------------- breakpoint stops */

/* si_perf_data of a TRAP_PERF SIGTRAP: the sig_data of the perf event (glibc's siginfo_t
   does not name it; it sits after si_addr in the fault union). */
static int perf_trap(pid_t tid, uint64_t *data)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si))
		return 0;
	if (si.si_code == 6 /* TRAP_PERF */) {
		memcpy(data, (const char *)&si + 24, sizeof *data);
		return 1;
	}
	/* A debug exception the kernel did not match to a perf event: it happens when a
	   hardware breakpoint's period is changed (its debug register reloaded) while the
	   thread is about to run the address. No ptrace debug registers are ours, so with
	   hardware breakpoints in use it is a stray of ours, not the program's. */
	if (si.si_code == 1 /* TRAP_BRKPT */ || si.si_code == 4 /* TRAP_HWBKPT */)
		return 2;
	return 0;
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
	int id = PS_BP_HW_BASE + (int)(data & 0xffffff), rc;

	unwind_below(t, th, r->rsp);
	if (!quiet(t, th) && t->ops.hit) {
		struct user_regs_struct at = *r;
		t->ret_slot = 0;
		rc = t->ops.hit(t->ud, th->tid, id, r, &cookie);
		cbres(t, rc, "hit");
		if (t->ret_slot)
			at.rsp = t->ret_slot;
		if (rc > 0 && (rc & PS_TRACER_CATCH_RETURN))
			catch_return(t, th, &at, id, cookie);
	}
	resume(t, th, 0);
	return 0;
}

/* A SIGTRAP signal-delivery stop of @th. */
static int on_trap(struct ps_tracer *t, struct thread *th)
{
	struct user_regs_struct r;
	struct proc *p = th->proc;
	uint64_t cookie = 0;
	int id, rc, fsig = 0, caught = 0;

	if (ptrace(PTRACE_GETREGS, th->tid, 0, &r))
		return errno == ESRCH ? 0 : ps_error_set(t->err, errno, "ptrace(GETREGS): %s", strerror(errno));
	uint64_t a = r.rip - 1;
	if (p->tramp_on && a == p->entry)
		return on_tramp(t, th, &r);
	id = p->sees_bps ? bp_find(t, a) : -1;
	if (id < 0) {
		uint64_t data;
		int kind = t->hw_traps ? perf_trap(th->tid, &data) : 0;
		if (kind == 1)
			return on_perf_trap(t, th, &r, data);
		if (kind == 2) {
			if (!quiet(t, th) && t->ops.hit)
				cbres(t, t->ops.hit(t->ud, th->tid, PS_BP_HW_STRAY, &r, &cookie), "hit");
			r.eflags |= 0x10000; /* RF: run the instruction without trapping again */
			ptrace(PTRACE_SETREGS, th->tid, 0, &r);
			resume(t, th, 0);
			return 0;
		}
		resume(t, th, SIGTRAP); /* not ours */
		return 0;
	}
	r.rip = a;
	unwind_below(t, th, r.rsp);
	if (t->bp[id].kind == PS_BP_FUNC && th->nfr && th->fr[th->nfr - 1].sp == r.rsp) {
		/* a frame at this very slot: alive only if the slot still holds the trampoline
		 * (tail call); a fresh return address means it was unwound (longjmp) */
		uint64_t v;
		if (!mem_rd(p, r.rsp, &v, 8) && v != p->entry)
			unwind_below(t, th, r.rsp + 1);
	}
	if (t->bp[id].enabled && !quiet(t, th) && t->ops.hit) {
		rc = t->ops.hit(t->ud, th->tid, id, &r, &cookie);
		cbres(t, rc, "hit");
		if (rc > 0 && (rc & PS_TRACER_CATCH_RETURN) && t->bp[id].kind == PS_BP_FUNC &&
		    !catch_return(t, th, &r, id, cookie))
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
		bp_write(t, &t->bp[id], 0);
		r.rip = a;
		ptrace(PTRACE_SETREGS, th->tid, 0, &r);
		resume(t, th, 0);
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
	resume(t, th, fsig);
	return 0;
}

/* ---------------------------------------------------------------- thread life */

void ps__tr_thread_gone(struct ps_tracer *t, struct thread *th, int st)
{
	struct proc *p = th->proc;

	unwind_below(t, th, UINT64_MAX);
	if (th->announced && !quiet(t, th) && t->ops.thread_exit)
		t->ops.thread_exit(t->ud, th->tid);
	if (p && th->tid == t->pid && p->pid == t->pid && !t->ended) {
		t->ended = 1;
		t->code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		t->signo = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	}
	th_free(t, th);
}

/* Restore, in fork child @p's copy of memory, every breakpoint byte, the trampoline and
 * the return addresses of the frames @th inherited. */
static void proc_clean(struct ps_tracer *t, struct proc *p, struct thread *th)
{
	if (p->sees_bps)
		for (int k = 0; k < t->nbp; k++)
			if (t->bp[k].enabled)
				mem_wr(p, t->bp[k].addr, &t->bp[k].orig, 1);
	if (p->tramp_on) {
		mem_wr(p, p->entry, &p->tramp.orig, 1);
		for (int i = 0; i < th->nfr; i++) {
			uint64_t v;
			if (!mem_rd(p, th->fr[i].sp, &v, 8) && v == p->entry)
				mem_wr(p, th->fr[i].sp, &th->fr[i].ret, 8);
		}
	}
	th->nfr = 0;
}

/* Both halves of a new tracee are known (its first stop, its parent's event). */
static int born(struct ps_tracer *t, struct thread *ch, int sig, int ev)
{
	if (ch->release) {
		proc_clean(t, ch->proc, ch);
		ptrace(PTRACE_DETACH, ch->tid, 0, 0);
		th_free(t, ch);
		return 0;
	}
	ch->group = ev == PTRACE_EVENT_STOP && is_stopsig(sig);
	if (t->settling) {
		ch->state = TH_HELD;
		return 0;
	}
	if (!ch->proc->silent && t->ops.thread_new)
		cbres(t, t->ops.thread_new(t->ud, ch->tid), "thread_new");
	ch->announced = 1;
	resume(t, ch, 0);
	return 0;
}

/* PTRACE_EVENT_CLONE/FORK/VFORK stop of @th. */
static int on_newchild(struct ps_tracer *t, struct thread *th, int ev)
{
	unsigned long msg = 0;
	struct user_regs_struct r;
	struct proc *pp = th->proc, *p;

	if (ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg))
		return 0;
	pid_t c = (pid_t)msg;
	struct thread *ch = th_find(t, c);
	int early = ch && ch->state == TH_EARLY;
	if (!ch && !(ch = th_new(t, c, NULL, TH_AWAIT)))
		return ps_error_set(t->err, ENOMEM, "out of memory");
	if (ev == PTRACE_EVENT_CLONE && read_tgid(c) != pp->pid)
		ev = PTRACE_EVENT_FORK; /* clone() of a new process */
	ch->newkind = ev;
	if (ev == PTRACE_EVENT_CLONE) {
		ch->proc = pp;
		pp->nthreads++;
	} else {
		if (!(p = proc_new(t, c))) {
			/* the child died already, or /proc is not mounted: let it go */
			if (early)
				ptrace(PTRACE_DETACH, c, 0, 0);
			th_free(t, ch);
			goto parent;
		}
		p->nthreads = 1;
		ch->proc = p;
		p->entry = pp->entry;
		p->tramp_on = pp->tramp_on;
		p->tramp = pp->tramp;
		p->scratch = pp->scratch;
		if (pp->slot && (p->slot = malloc(NSLOT * sizeof *p->slot)))
			memcpy(p->slot, pp->slot, NSLOT * sizeof *p->slot);
		else
			p->scratch = 0;
		p->sees_bps = pp->sees_bps;
		if (t->follow) {
			p->writes_bps = pp->writes_bps;
		} else if (ev == PTRACE_EVENT_VFORK) {
			p->silent = 1; /* shares the parent's memory: keep it until exec/exit */
		} else {
			ch->release = 1;
		}
		/* the child's stack is a copy: it inherits the open frames of @th */
		if (!ptrace(PTRACE_GETREGS, th->tid, 0, &r))
			for (int i = 0; i < th->nfr; i++)
				if (th->fr[i].sp >= r.rsp)
					fr_push(ch, &th->fr[i]);
	}
	if (early)
		born(t, ch, 0, 0);
parent:
	if (t->settling)
		th->state = TH_HELD;
	else
		resume(t, th, 0);
	return 0;
}

/* PTRACE_EVENT_EXEC stop of @th (now the leader of its process). */
static int on_exec(struct ps_tracer *t, struct thread *th)
{
	unsigned long former = 0;
	struct proc *p = th->proc;
	char path[64];

	ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &former);
	if ((pid_t)former != th->tid) {
		struct thread *ft = th_find(t, (pid_t)former);
		if (ft) {
			unwind_below(t, ft, UINT64_MAX);
			if (ft->announced && !quiet(t, ft) && t->ops.thread_exit)
				t->ops.thread_exit(t->ud, ft->tid);
			th_free(t, ft);
		}
	}
	unwind_below(t, th, UINT64_MAX);
	if ((pid_t)former != th->tid && th->announced && !quiet(t, th) && t->ops.thread_exit) {
		t->ops.thread_exit(t->ud, th->tid);
		th->announced = 0;
	}
	/* a new address space */
	snprintf(path, sizeof path, "/proc/%d/mem", (int)p->pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		close(p->memfd);
		p->memfd = fd;
	}
	p->entry = 0;
	p->tramp_on = 0;
	p->scratch = 0;
	free(p->slot);
	p->slot = NULL;
	if (p->silent) {
		/* a released vfork child no longer shares our breakpoints */
		ptrace(PTRACE_DETACH, th->tid, 0, 0);
		th_free(t, th);
		return 0;
	}
	if (p->pid == t->pid) {
		bp_drop_all(t, p);
		p->writes_bps = p->sees_bps = 1;
	} else {
		p->writes_bps = p->sees_bps = 0;
	}
	if (t->settling) {
		th->state = TH_HELD;
		return 0;
	}
	if (!th->announced) {
		if (t->ops.thread_new)
			cbres(t, t->ops.thread_new(t->ud, th->tid), "thread_new");
		th->announced = 1;
	}
	if (t->ops.exec)
		cbres(t, t->ops.exec(t->ud, p->pid), "exec");
	resume(t, th, 0);
	return 0;
}

/* A stop while settling (attach, detach): hold every thread where it stopped, with
 * breakpoint traps rewound and signals kept for later delivery. */
static int settle_stop(struct ps_tracer *t, struct thread *th, int st)
{
	int sig = WSTOPSIG(st), ev = st >> 16;
	struct user_regs_struct r;

	if (ev == PTRACE_EVENT_CLONE || ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK)
		return on_newchild(t, th, ev);
	if (ev == PTRACE_EVENT_EXEC)
		return on_exec(t, th);
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
			unwind_below(t, th, sp);
			if (th->nfr && th->fr[th->nfr - 1].sp == sp) {
				while (th->nfr && th->fr[th->nfr - 1].sp == sp)
					r.rip = th->fr[--th->nfr].ret;
			} else {
				r.rip = a;
			}
			ptrace(PTRACE_SETREGS, th->tid, 0, &r);
			return 0;
		}
		if (p->sees_bps && bp_find(t, a) >= 0) {
			r.rip = a;
			ptrace(PTRACE_SETREGS, th->tid, 0, &r);
			return 0;
		}
		uint64_t data;
		if (t->hw_traps && perf_trap(th->tid, &data)) {
			/* a sampled entry while settling: not a hit, not the program's */
			r.eflags |= 0x10000;
			ptrace(PTRACE_SETREGS, th->tid, 0, &r);
			return 0;
		}
	}
	stash(th, sig);
	return 0;
}

/* Dispatch one waitpid() result. */
static int handle(struct ps_tracer *t, pid_t pid, int st)
{
	struct thread *th = th_find(t, pid);

	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		if (th)
			ps__tr_thread_gone(t, th, st);
		return 0;
	}
	if (!WIFSTOPPED(st))
		return 0;
	if (!th) {
		/* a new tracee whose parent's event has not been seen yet: hold it */
		return th_new(t, pid, NULL, TH_EARLY) ? 0 : ps_error_set(t->err, ENOMEM, "out of memory");
	}
	int sig = WSTOPSIG(st), ev = st >> 16;
	if (th->state == TH_AWAIT)
		return born(t, th, sig, ev);
	if (t->settling)
		return settle_stop(t, th, st);
	switch (ev) {
	case 0:
		break;
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		return on_newchild(t, th, ev);
	case PTRACE_EVENT_EXEC:
		return on_exec(t, th);
	case PTRACE_EVENT_STOP:
		if (is_stopsig(sig))
			th->group = 1;
		resume(t, th, 0);
		return 0;
	default:
		resume(t, th, 0);
		return 0;
	}
	if (sig == SIGTRAP)
		return on_trap(t, th);
	resume(t, th, ps__tr_tty_signal(t, th->tid, sig) ? 0 : sig);
	return 0;
}

static int busy(const struct ps_tracer *t)
{
	for (unsigned i = 0; i < t->thcap; i++)
		if (t->th[i] && (t->th[i]->state == TH_RUN || t->th[i]->state == TH_AWAIT))
			return 1;
	return 0;
}

/* Stop every running thread and handle stops until all are held. */
static int settle(struct ps_tracer *t)
{
	int st;

	t->settling = 1;
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
						th_free(t, t->th[i]), i = (unsigned)-1;
				break;
			}
			t->settling = 0;
			return ps_error_set(t->err, errno, "waitpid: %s", strerror(errno));
		}
		t->stops++;
		if (handle(t, w, st)) {
			t->settling = 0;
			return -1;
		}
	}
	t->settling = 0;
	return 0;
}

/* ---------------------------------------------------------------- public API */

static struct ps_tracer *tracer_new(const struct ps_tracer_ops *ops, void *ud)
{
	struct ps_tracer *t = calloc(1, sizeof *t);

	if (!t)
		return NULL;
	if (ops)
		t->ops = *ops;
	t->ud = ud;
	t->code = -1;
	t->err = &t->errbuf;
	t->sfd = -1;
	if (bph_rebuild(t, 16)) {
		free(t);
		return NULL;
	}
	return t;
}

/* The file execvp() would run for @prog, in @path; 0, or -1 with errno (ENOENT). */
static int find_program(const char *prog, char *path, size_t size)
{
	const char *dirs = getenv("PATH");

	if (strchr(prog, '/'))
		return snprintf(path, size, "%s", prog) < (int)size ? 0 : (errno = ENAMETOOLONG, -1);
	for (const char *d = dirs ? dirs : "/usr/local/bin:/usr/bin:/bin"; d;
	     d = strchr(d, ':') ? strchr(d, ':') + 1 : NULL) {
		int len = (int)strcspn(d, ":");
		if (snprintf(path, size, "%.*s%s%s", len, d, len ? "/" : "", prog) < (int)size &&
		    access(path, X_OK) == 0)
			return 0;
	}
	errno = ENOENT;
	return -1;
}

/* One line on why @prog cannot be traced (missing, a directory, not executable, a script,
 * not ELF), or 0 when it is an executable ELF file. */
static int check_program(const char *prog, struct ps_error *err)
{
	char path[4096], head[128] = {0};
	struct stat sb;
	ssize_t n;
	int fd;

	if (find_program(prog, path, sizeof path) || stat(path, &sb)) {
		if (!strchr(prog, '/') && access(prog, F_OK) == 0)
			return ps_error_set(err, ENOENT, "cannot run '%s': it is not in PATH; give its path, ./%s",
					    prog, prog);
		return ps_error_set(err, ENOENT, "cannot run '%s': no such program; give the path of a program", prog);
	}
	if (S_ISDIR(sb.st_mode))
		return ps_error_set(err, EISDIR, "cannot run '%s': it is a directory; give the program to run", prog);
	if (access(path, X_OK))
		return ps_error_set(err, EACCES, "cannot run '%s': it is not executable (chmod +x it)", prog);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return ps_error_set(err, errno, "cannot run '%s': %s", prog, strerror(errno));
	n = read(fd, head, sizeof head - 1);
	close(fd);
	if (n >= 2 && head[0] == '#' && head[1] == '!') {
		head[strcspn(head, "\n")] = '\0';
		return ps_error_set(err, ENOEXEC,
				    "'%s' is a script (%s); perfsh traces the ELF program itself: give that program "
				    "and its arguments instead",
				    prog, head);
	}
	if (n < 4 || memcmp(head, ELFMAG, SELFMAG))
		return ps_error_set(err, ENOEXEC, "cannot run '%s': it is not an ELF program; give a compiled program",
				    prog);
	return 0;
}

int ps_tracer_spawn(struct ps_tracer **tp, char *const argv[], const struct ps_tracer_ops *ops, void *ud,
		    struct ps_error *err)
{
	struct ps_tracer *t;
	int fds[2], st = 0, e = 0;
	pid_t pid, parent = getpid();

	*tp = NULL;
	if (!argv || !argv[0])
		return ps_error_set(err, PS_EUSAGE, "spawn: no program given");
	if (check_program(argv[0], err))
		return -1;
	if (!(t = tracer_new(ops, ud)))
		return ps_error_set(err, ENOMEM, "out of memory");
	if (pipe2(fds, O_CLOEXEC)) {
		e = errno;
		free(t->bph);
		free(t);
		return ps_error_set(err, e, "pipe: %s", strerror(e));
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(fds[0]);
		close(fds[1]);
		free(t->bph);
		free(t);
		return ps_error_set(err, e, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		close(fds[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		raise(SIGSTOP);
		execvp(argv[0], argv);
		e = errno;
		if (write(fds[1], &e, sizeof e) < 0)
			_exit(126);
		_exit(127);
	}
	close(fds[1]);
	t->pid = pid;
	t->spawned = 1;
	while (waitpid(pid, &st, WUNTRACED) < 0 && errno == EINTR)
		;
	if (!WIFSTOPPED(st)) {
		close(fds[0]);
		ps_tracer_free(t);
		return ps_error_set(err, ECHILD, "cannot run '%s': the child died before exec", argv[0]);
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_OPTS)) {
		e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		close(fds[0]);
		free(t->bph);
		free(t);
		return ps_error_set(err, e, "ptrace(SEIZE, %d): %s", (int)pid, strerror(e));
	}
	t->attached = 1;
	kill(pid, SIGCONT);
	for (;;) {
		pid_t w = waitpid(pid, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			ssize_t n = read(fds[0], &e, sizeof e);
			close(fds[0]);
			t->attached = 0;
			free(t->bph);
			free(t);
			if (n == (ssize_t)sizeof e)
				return ps_error_set(err, e, "cannot run '%s': %s", argv[0], strerror(e));
			return ps_error_set(err, ECHILD, "cannot run '%s': it died before exec", argv[0]);
		}
		int ev = st >> 16, sig = WSTOPSIG(st);
		if (ev == PTRACE_EVENT_EXEC)
			break;
		ptrace(PTRACE_CONT, pid, 0, ev ? 0 : (long)(sig == SIGSTOP ? 0 : sig));
	}
	close(fds[0]);
	struct proc *p = proc_new(t, pid);
	struct thread *th = p ? th_new(t, pid, p, TH_HELD) : NULL;
	if (!th) {
		e = errno ? errno : ENOMEM;
		ps_tracer_free(t);
		return ps_error_set(err, e, "cannot open /proc/%d/mem: %s", (int)pid, strerror(e));
	}
	p->writes_bps = p->sees_bps = 1;
	*tp = t;
	return 0;
}

/* Why ptrace(SEIZE) of @pid failed with @e: another user's process, one traced already, or
 * (where the yama module is loaded) its ptrace_scope. */
static int attach_denied(pid_t pid, int e, struct ps_error *err)
{
	char path[64], line[256];
	long uid = -1, tracer = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (e == EPERM && (f = fopen(path, "re"))) {
		while (fgets(line, sizeof line, f)) {
			sscanf(line, "Uid: %ld", &uid);
			sscanf(line, "TracerPid: %ld", &tracer);
		}
		fclose(f);
	}
	if (e != EPERM)
		return ps_error_set(err, e, "ptrace(SEIZE, %d): %s", (int)pid, strerror(e));
	if (tracer > 0)
		return ps_error_set(err, e,
				    "attach %d: the process is traced already (by pid %ld); end that tracer first",
				    (int)pid, tracer);
	if (uid >= 0 && uid != (long)geteuid() && geteuid() != 0)
		return ps_error_set(err, e,
				    "attach %d: the process belongs to another user (uid %ld); run perfsh as that "
				    "user (or as root)",
				    (int)pid, uid);
	if (access("/proc/sys/kernel/yama/ptrace_scope", F_OK) == 0)
		return ps_error_set(err, e,
				    "attach %d: not permitted by /proc/sys/kernel/yama/ptrace_scope; set it to 0 "
				    "or run perfsh as root",
				    (int)pid);
	return ps_error_set(err, e, "attach %d: not permitted (ptrace: %s); run perfsh as root", (int)pid, strerror(e));
}

int ps_tracer_attach(struct ps_tracer **tp, pid_t pid, const struct ps_tracer_ops *ops, void *ud, struct ps_error *err)
{
	struct ps_tracer *t;
	struct proc *p = NULL;
	char path[64];
	int changed;

	*tp = NULL;
	if (!(t = tracer_new(ops, ud)))
		return ps_error_set(err, ENOMEM, "out of memory");
	t->pid = pid;
	t->err = err ? err : &t->errbuf;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	do {
		DIR *d = opendir(path);
		struct dirent *de;
		changed = 0;
		if (!d) {
			int e = errno == ENOENT ? ESRCH : errno;
			ps_tracer_free(t);
			return ps_error_set(err, e, "attach %d: %s", (int)pid,
					    e == ESRCH ? "no such process" : strerror(e));
		}
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || th_find(t, tid))
				continue;
			/* no PTRACE_O_EXITKILL: a process perfsh did not start outlives it */
			if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_OPTS & ~PTRACE_O_EXITKILL)) {
				if (tid != pid || t->attached)
					continue;
				int e = errno;
				closedir(d);
				ps_tracer_free(t);
				return attach_denied(pid, e, err);
			}
			t->attached = 1;
			if (!p && !(p = proc_new(t, pid))) {
				closedir(d);
				ptrace(PTRACE_DETACH, tid, 0, 0);
				t->attached = 0;
				ps_tracer_free(t);
				return ps_error_set(err, errno, "cannot open %s/../mem", path);
			}
			p->writes_bps = p->sees_bps = 1;
			if (!th_new(t, tid, p, TH_RUN)) {
				ptrace(PTRACE_DETACH, tid, 0, 0);
				continue;
			}
			changed = 1;
		}
		closedir(d);
		if (!t->attached) {
			ps_tracer_free(t);
			return ps_error_set(err, ESRCH, "attach %d: no such process", (int)pid);
		}
		if (settle(t)) {
			ps_tracer_free(t);
			return -1;
		}
	} while (changed);
	t->err = &t->errbuf;
	*tp = t;
	return 0;
}

pid_t ps_tracer_pid(const struct ps_tracer *t)
{
	return t->pid;
}

int ps_tracer_set_follow_fork(struct ps_tracer *t, int follow)
{
	t->follow = !!follow;
	return 0;
}

static struct proc *main_proc(struct ps_tracer *t)
{
	for (struct proc *p = t->procs; p; p = p->next)
		if (p->pid == t->pid)
			return p;
	return NULL;
}

int ps_tracer_bp_add(struct ps_tracer *t, uint64_t addr, int kind, struct ps_error *err)
{
	struct proc *p = main_proc(t);
	uint8_t code[16];
	struct bp b;
	int k;

	if (kind != PS_BP_FUNC && kind != PS_BP_ADDR)
		return ps_error_set(err, PS_EUSAGE, "breakpoint kind %d is not PS_BP_FUNC or PS_BP_ADDR", kind);
	if (!p || !t->attached)
		return ps_error_set(err, ESRCH, "process %d is not traced any more", (int)t->pid);
	if ((k = bp_find(t, addr)) >= 0) {
		if (t->bp[k].kind != kind)
			return ps_error_set(err, EEXIST, "a breakpoint of another kind is at 0x%llx already",
					    (unsigned long long)addr);
		return k;
	}
	if (!p->entry)
		p->entry = ps__tr_read_auxv(p->pid, AT_ENTRY);
	if (addr == p->entry)
		return ps_error_set(err, PS_EUSAGE,
				    "cannot place a breakpoint at the entry point 0x%llx: it is the "
				    "return trampoline",
				    (unsigned long long)addr);
	ssize_t n = code_read(t, p, addr, code, sizeof code);
	if (n <= 0)
		return ps_error_set(err, EFAULT, "cannot read code at 0x%llx in process %d: %s",
				    (unsigned long long)addr, (int)p->pid, n < 0 ? strerror(errno) : "not mapped");
	memset(&b, 0, sizeof b);
	b.addr = addr;
	b.kind = kind;
	b.orig = code[0];
	if (ps__tr_bp_prepare(&b, code, (size_t)n, err))
		return -1;
	if (t->nbp == t->capbp) {
		int ncap = t->capbp ? t->capbp * 2 : 16;
		struct bp *nb = realloc(t->bp, (size_t)ncap * sizeof *nb);
		if (!nb)
			return ps_error_set(err, ENOMEM, "out of memory");
		t->bp = nb;
		t->capbp = ncap;
	}
	uint8_t cc = 0xcc;
	if (mem_wr(p, addr, &cc, 1))
		return ps_error_set(err, errno, "cannot write a breakpoint at 0x%llx in %d: %s",
				    (unsigned long long)addr, (int)p->pid, strerror(errno));
	b.enabled = 1;
	k = t->nbp++;
	t->bp[k] = b;
	if ((unsigned)t->nbp * 2 > t->bphcap) {
		if (bph_rebuild(t, t->bphcap * 2)) {
			t->nbp--;
			mem_wr(p, addr, &b.orig, 1);
			return ps_error_set(err, ENOMEM, "out of memory");
		}
	} else {
		unsigned i = bp_home(t, addr);
		while (t->bph[i] >= 0)
			i = (i + 1) & (t->bphcap - 1);
		t->bph[i] = k;
	}
	bp_write(t, &t->bp[k], 1); /* followed children too */
	return k;
}

int ps_tracer_bp_enable(struct ps_tracer *t, int id, int on, struct ps_error *err)
{
	if (id < 0 || id >= t->nbp)
		return ps_error_set(err, PS_EUSAGE, "no breakpoint %d", id);
	on = !!on;
	if (t->bp[id].enabled != on) {
		t->bp[id].enabled = on;
		bp_write(t, &t->bp[id], on);
	}
	return 0;
}

int ps_tracer_run(struct ps_tracer *t, struct ps_error *err)
{
	int st;

	t->err = err ? err : &t->errbuf;
	t->pause = 0;
	t->abort = NULL;
	if (!t->attached)
		return t->nth ? ps_error_set(err, PS_EUSAGE, "the tracer is detached") : 1;
	/* threads found at spawn/attach are announced now; held threads (first run, or
	 * paused by a callback) go on */
	for (unsigned i = 0; i < t->thcap; i++) {
		struct thread *th = t->th[i];
		if (th && th->state == TH_HELD && th->proc && !th->announced) {
			if (!th->proc->silent && t->ops.thread_new)
				cbres(t, t->ops.thread_new(t->ud, th->tid), "thread_new");
			th->announced = 1;
		}
	}
	t->pause = 0;
	for (unsigned i = 0; i < t->thcap; i++)
		if (t->th[i] && t->th[i]->state == TH_HELD && t->th[i]->proc)
			resume(t, t->th[i], 0);
	for (;;) {
		if (t->abort)
			return ps_error_set(err, PS_EUSAGE, "stopped: the %s callback returned -1", t->abort);
		if (t->pause)
			return 0;
		if (!t->nth)
			return 1;
		if (t->intr) {
			t->intr = 0;
			return 0;
		}
		pid_t w = ps__tr_wait(t, &st);
		if (w == 0)
			continue; /* interrupted, or the deadline passed */
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD) {
				while (t->nth)
					for (unsigned i = 0; i < t->thcap; i++)
						if (t->th[i]) {
							th_free(t, t->th[i]);
							break;
						}
				return 1;
			}
			return ps_error_set(err, errno, "waitpid: %s", strerror(errno));
		}
		t->stops++;
		if (handle(t, w, st))
			return -1;
	}
}

int ps_tracer_status(const struct ps_tracer *t, int *exited, int *code, int *signo)
{
	if (exited)
		*exited = t->ended;
	if (code)
		*code = t->ended ? t->code : -1;
	if (signo)
		*signo = t->ended ? t->signo : 0;
	return t->ended;
}

/* Whether a SIGTRAP waits in thread @tid's own queue (SigPnd of its status). */
static int sigtrap_pending(pid_t tid)
{
	char path[64], line[128];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "SigPnd: %llx", &mask) == 1)
			break;
	fclose(f);
	return !!(mask & (1ull << (SIGTRAP - 1)));
}

/*
 * A thread that executed one of our int3s just as PTRACE_INTERRUPT stopped it reports the
 * interrupt first and keeps the SIGTRAP pending; detached like that, it would die of it.
 * Let each such thread take its SIGTRAP now, while the breakpoints and frames are still
 * known, so that settle_stop() rewinds it (or pops its frame at the trampoline).
 */
static int drain_traps(struct ps_tracer *t)
{
	t->settling = 1;
	for (unsigned i = 0; i < t->thcap; i++) {
		struct thread *th = t->th[i];
		for (int round = 0; th && round < 4 && th->state == TH_HELD && sigtrap_pending(th->tid); round++) {
			pid_t tid = th->tid;
			int st;
			th->state = TH_RUN;
			if (ptrace(PTRACE_CONT, tid, 0, 0) || waitpid(tid, &st, __WALL) != tid)
				break;
			t->stops++;
			if (handle(t, tid, st)) {
				t->settling = 0;
				return -1;
			}
			th = t->th[i]; /* gone if it exited */
		}
	}
	t->settling = 0;
	return 0;
}

int ps_tracer_detach(struct ps_tracer *t, struct ps_error *err)
{
	struct user_regs_struct r;

	if (!t->attached)
		return 0;
	t->err = err ? err : &t->errbuf;
	if (settle(t) || drain_traps(t) || settle(t))
		return -1;
	for (struct proc *p = t->procs; p; p = p->next) {
		if (p->writes_bps)
			for (int k = 0; k < t->nbp; k++)
				if (t->bp[k].enabled)
					mem_wr(p, t->bp[k].addr, &t->bp[k].orig, 1);
		if (p->tramp_on)
			mem_wr(p, p->entry, &p->tramp.orig, 1);
	}
	for (unsigned i = 0; i < t->thcap; i++) {
		struct thread *th = t->th[i];
		if (!th || !th->proc)
			continue;
		if (th->nfr && !ptrace(PTRACE_GETREGS, th->tid, 0, &r))
			for (int j = 0; j < th->nfr; j++) {
				uint64_t v;
				struct frame *f = &th->fr[j];
				if (f->sp >= r.rsp && !mem_rd(th->proc, f->sp, &v, 8) && v == th->proc->entry)
					mem_wr(th->proc, f->sp, &f->ret, 8);
			}
		th->nfr = 0;
	}
	while (t->nth) {
		for (unsigned i = 0; i < t->thcap; i++) {
			struct thread *th = t->th[i];
			if (!th)
				continue;
			int sig = th->nsig ? th->sig[0] : 0;
			for (int j = 1; j < th->nsig; j++)
				syscall(SYS_tgkill, th->proc ? th->proc->pid : th->tid, th->tid, th->sig[j]);
			ptrace(PTRACE_DETACH, th->tid, 0, (long)sig);
			th_free(t, th);
			break;
		}
	}
	t->attached = 0;
	return 0;
}

void ps_tracer_free(struct ps_tracer *t)
{
	int st;

	if (!t)
		return;
	t->ops = (struct ps_tracer_ops){0}; /* no callback from here on */
	if (t->attached && t->spawned) {
		for (unsigned i = 0; i < t->thcap; i++)
			if (t->th[i])
				kill(t->th[i]->tid, SIGKILL);
		kill(t->pid, SIGKILL);
		while (t->nth) {
			pid_t w = waitpid(-1, &st, __WALL);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			struct thread *th = th_find(t, w);
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				if (th)
					ps__tr_thread_gone(t, th, st);
			} else if (!th) {
				kill(w, SIGKILL); /* a new tracee born meanwhile */
			}
		}
	} else if (t->attached) {
		ps_tracer_detach(t, NULL);
	}
	while (t->nth)
		for (unsigned i = 0; i < t->thcap; i++)
			if (t->th[i]) {
				th_free(t, t->th[i]);
				break;
			}
	while (t->procs) {
		struct proc *p = t->procs;
		t->procs = p->next;
		close(p->memfd);
		free(p->slot);
		free(p);
	}
	if (t->sfd >= 0)
		close(t->sfd);
	free(t->th);
	free(t->bp);
	free(t->bph);
	free(t);
}

uint64_t ps_tracer_entry(struct ps_tracer *t)
{
	struct proc *p = main_proc(t);

	if (p && !p->entry)
		p->entry = ps__tr_read_auxv(p->pid, AT_ENTRY);
	return p ? p->entry : 0;
}

/* Load bias of the ELF file @path mapped at @start with file offset 0. */
static uint64_t elf_bias(const char *path, uint64_t start)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t bias = PS_TRACER_NO_BIAS;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return bias;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64)
		for (int i = 0; i < eh.e_phnum; i++) {
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
			    (ssize_t)sizeof ph)
				break;
			if (ph.p_type == PT_LOAD) {
				bias = start - ((ph.p_vaddr - ph.p_offset) & ~(uint64_t)4095);
				break;
			}
		}
	close(fd);
	return bias;
}

uint64_t ps_tracer_load_bias(struct ps_tracer *t, const char *path_or_null)
{
	char maps[64], exe[4096], line[4096 + 128], file[4096];
	uint64_t bias = PS_TRACER_NO_BIAS;
	const char *want = path_or_null;
	FILE *f;

	if (!want) {
		snprintf(maps, sizeof maps, "/proc/%d/exe", (int)t->pid);
		ssize_t n = readlink(maps, exe, sizeof exe - 1);
		if (n <= 0)
			return bias;
		exe[n] = '\0';
		want = exe;
	}
	snprintf(maps, sizeof maps, "/proc/%d/maps", (int)t->pid);
	if (!(f = fopen(maps, "re")))
		return bias;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, off;
		int pos = 0;
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %n", &lo, &off, &pos) < 2 || !pos)
			continue;
		char *nl = strchr(line + pos, '\n');
		if (nl)
			*nl = '\0';
		snprintf(file, sizeof file, "%s", line + pos);
		const char *base = strrchr(file, '/');
		if (off != 0 || !file[0] ||
		    (strcmp(file, want) && !(strchr(want, '/') == NULL && base && !strcmp(base + 1, want))))
			continue;
		bias = elf_bias(file, lo);
		break;
	}
	fclose(f);
	return bias;
}

int ps_tracer_cpu(struct ps_tracer *t, pid_t tid)
{
	struct thread *th = th_find(t, tid);
	char buf[1024], path[64];
	ssize_t n;

	if (!th)
		return -1;
	if (th->statfd < 0) {
		snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)(th->proc ? th->proc->pid : tid), (int)tid);
		if ((th->statfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return -1;
	}
	n = pread(th->statfd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *s = strrchr(buf, ')');
	if (!s)
		return -1;
	/* after ')' comes field 3 (state); field 39 is 36 fields further */
	for (int field = 2; field < 39; field++) {
		s = strchr(s + 1, ' ');
		if (!s)
			return -1;
	}
	return atoi(s + 1);
}

int ps_tracer_frames_restore(struct ps_tracer *t, pid_t tid)
{
	struct thread *th = th_find(t, tid);

	if (!th || !th->proc)
		return -1;
	for (int i = 0; i < th->nfr; i++) {
		struct frame *f = &th->fr[i];
		if (!f->restored && !mem_wr(th->proc, f->sp, &f->ret, 8))
			f->restored = 1;
	}
	return 0;
}

int ps_tracer_frames_reswap(struct ps_tracer *t, pid_t tid)
{
	struct thread *th = th_find(t, tid);
	struct user_regs_struct r;

	if (!th || !th->proc || ptrace(PTRACE_GETREGS, tid, 0, &r))
		return -1;
	unwind_below(t, th, r.rsp); /* the frames the exception went through */
	for (int i = 0; i < th->nfr; i++) {
		struct frame *f = &th->fr[i];
		uint64_t v;
		if (f->restored && !mem_rd(th->proc, f->sp, &v, 8) && v == f->ret &&
		    !mem_wr(th->proc, f->sp, &th->proc->entry, 8))
			f->restored = 0;
	}
	return 0;
}

void ps_tracer_ret_slot(struct ps_tracer *t, uint64_t sp)
{
	t->ret_slot = sp;
}

void ps_tracer_hw_traps(struct ps_tracer *t, int on)
{
	t->hw_traps = on;
}

uint64_t ps_tracer_stops(const struct ps_tracer *t)
{
	return t->stops;
}
