/* core/catch/ptrace/ptrace_trap.c - the ptrace catcher's traps on the tracer: the hooks it registers
 * (struct ps_tracer_traps, core/proc/tracer_traps.h) for each SIGTRAP, settling, fork, exec and
 * detach, and the entry points of ptrace_bp.h that need them registered. ptrace_trap_priv.h lists the
 * other files.
 *
 * Choices:
 *
 * - Breakpoints are int3 bytes written with pwrite() on /proc/PID/mem; they stay in
 *   place while armed (no re-insertion dance). The displaced instruction is, in order of
 *   preference: emulated by the tracer (endbr64, nops, push reg, pushf, call/jmp/jcc/loop
 *   rel, ret, and the register-only mov, movzx/movsx/movsxd, lea, add/sub/and/or/xor/adc/
 *   sbb/cmp/test of x86emu.c, flags exact: no extra stop; ptrace_xol.c), or executed OUT OF LINE
 *   in a scratch page mapped in the tracee (one mmap syscall injected at first need, and
 *   a munmap at detach):
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
 *   (longjmp, exception) and are reported with unwound=1. An unwinder cannot read past
 *   the trampoline: the layer above puts the real return addresses back while a C++
 *   exception unwinds (ps_tracer_frames_restore/_reswap). Limit: a handler on a
 *   sigaltstack above the thread's stack makes its open frames look unwound.
 * - An entry may instead be reported by a hardware execute breakpoint that the layer above
 *   opened as a perf event with sigtrap=1 (PS_BP_HW_BASE in ptrace_bp.h): nothing is
 *   displaced, and the return is caught as for an int3 (on_perf_trap() below).
 * - The per-stop path allocates nothing (shadow stacks grow by doubling) and adds a pread
 *   and a pwrite to the tracer's GETREGS/SETREGS/CONT when a return is caught.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "ptrace_trap_priv.h"

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
static int on_perf_trap(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r, uint64_t data)
{
	struct pt *pt = pt_of(t);
	uint64_t cookie = 0;
	int id = PS_BP_HW_BASE + (int)(data & HW_ID_MASK), rc;

	ps__tr_unwind_below(t, th, r->rsp);
	if (!quiet(t, th) && t->ops.hit) {
		struct user_regs_struct at = *r;
		pt->ret_slot = 0;
		rc = t->ops.hit(t->ud, th->tid, id, r, &cookie);
		cbres(t, rc, "hit");
		if (pt->ret_slot)
			at.rsp = pt->ret_slot;
		if (rc > 0 && (rc & PS_TRACER_CATCH_RETURN))
			ps__tr_catch_return(t, th, &at, id, cookie);
	}
	ps__tr_resume(t, th, 0);
	return 0;
}

/* A SIGTRAP of @th (registers @r) that no breakpoint explains: a perf event's, a stray debug
 * exception of ours, or the program's own (delivered). */
static int other_trap(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r)
{
	uint64_t data, cookie = 0;
	int kind = pt_of(t)->hw_traps ? perf_trap(th->tid, &data) : TRAP_OTHER;

	if (kind == TRAP_OF_PERF)
		return on_perf_trap(t, th, r, data);
	if (kind == TRAP_STRAY) {
		if (!quiet(t, th) && t->ops.hit)
			cbres(t, t->ops.hit(t->ud, th->tid, PS_BP_HW_STRAY, r, &cookie), "hit");
		r->eflags |= EFLAGS_RF; /* run the instruction without trapping again */
		ptrace(PTRACE_SETREGS, th->tid, 0, r);
		ps__tr_resume(t, th, 0);
		return 0;
	}
	ps__tr_resume(t, th, SIGTRAP); /* not ours */
	return 0;
}

/* Report the hit of breakpoint @id by @th (registers @r, rip at the breakpoint) and catch its
 * return when hit() asks for it. Return: 1 when the return was caught, else 0. */
static int report_hit(struct ps_tracer *t, struct ps_tr_thread *th, const struct user_regs_struct *r, int id)
{
	uint64_t cookie = 0;
	int func = pt_of(t)->bp[id].kind == PS_BP_FUNC, rc;

	if (func)
		ps__tr_prefetch(t, th, r->rsp); /* the CPU and the return address: one read */
	rc = t->ops.hit(t->ud, th->tid, id, r, &cookie);
	cbres(t, rc, "hit");
	return rc > 0 && (rc & PS_TRACER_CATCH_RETURN) && func && !ps__tr_catch_return(t, th, r, id, cookie);
}

/* The instruction breakpoint @id displaced cannot be run: disarm the breakpoint, undo the return
 * caught for this hit (@caught) and let @th run the instruction in place. -1 with t->err set. */
static int displace_failed(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r, int id, int caught)
{
	struct pt *pt = pt_of(t);
	char msg[sizeof t->err->msg];

	snprintf(msg, sizeof msg, "%s", t->err->msg);
	if (caught) {
		struct frame f = fr_pop(th);
		mem_wr(th->proc, f.sp, &f.ret, 8);
	}
	pt->bp[id].enabled = 0;
	ps__tr_bp_write(t, &pt->bp[id], 0);
	r->rip = pt->bp[id].addr;
	ptrace(PTRACE_SETREGS, th->tid, 0, r);
	ps__tr_resume(t, th, 0);
	return ps_error_set(t->err, t->err->code, "breakpoint %d disarmed: %s", id, msg);
}

/* The trap hook: a SIGTRAP signal-delivery stop of @th in a run. */
static int on_trap(struct ps_tracer *t, struct ps_tr_thread *th)
{
	struct user_regs_struct r;
	struct ps_tr_proc *p = th->proc;
	struct pt *pt = pt_of(t);
	int id, rc = 0, fsig = 0, caught = 0;

	if (ptrace(PTRACE_GETREGS, th->tid, 0, &r))
		return errno == ESRCH ? 0 : ps_error_set(t->err, errno, "ptrace(GETREGS): %s", strerror(errno));
	uint64_t a = r.rip - 1;
	if (tramp_is_on(p) && a == p->entry)
		return ps__tr_on_tramp(t, th, &r);
	id = p->sees_bps ? ps__tr_bp_find(t, a) : -1;
	if (id < 0)
		return other_trap(t, th, &r);
	r.rip = a;
	ps__tr_unwind_below(t, th, r.rsp);
	if (pt->bp[id].kind == PS_BP_FUNC && nfr(th) && fr_at(th, nfr(th) - 1)->sp == r.rsp) {
		/* a frame at this very slot: alive only if the slot still holds the trampoline
		 * (tail call); a fresh return address means it was unwound (longjmp) */
		uint64_t v;
		if (!mem_rd(p, r.rsp, &v, 8) && v != p->entry)
			ps__tr_unwind_below(t, th, r.rsp + 1);
	}
	if (pt->bp[id].enabled && !quiet(t, th) && t->ops.hit)
		caught = report_hit(t, th, &r, id);
	const struct bp *b = &pt->bp[id]; /* hit() may have added breakpoints */
	/* not enabled: disarmed while this thread was trapping, it runs the original byte */
	if (b->enabled)
		rc = ps__tr_displaced(t, th, b, id < SLOT_USER ? id : SLOT_SPARE, id < SLOT_USER ? id + 1 : 0, &r,
				      &fsig);
	if (rc == 1 && !fsig)
		return 0; /* gone */
	if (rc < 0)
		return displace_failed(t, th, &r, id, caught);
	if (fsig && caught && nfr(th) && fr_at(th, nfr(th) - 1)->sp == r.rsp) {
		/* the instruction faulted before the function ran: undo the catch */
		struct frame f = fr_pop(th);
		mem_wr(p, f.sp, &f.ret, 8);
		if (!quiet(t, th) && t->ops.ret)
			cbres(t, t->ops.ret(t->ud, th->tid, f.bp, f.cookie, 1), "ret");
	}
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &r) && errno != ESRCH)
		return ps_error_set(t->err, errno, "ptrace(SETREGS, %d): %s", (int)th->tid, strerror(errno));
	ps__tr_resume(t, th, fsig);
	return 0;
}

/* The settle hook: a SIGTRAP of @th while every thread is held. A breakpoint's trap is rewound, a
 * return at the trampoline is taken back to the caller, a perf trap is passed over. */
static int on_settle(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r)
{
	struct ps_tr_proc *p = th->proc;
	uint64_t a = r->rip - 1, data;

	if (tramp_is_on(p) && a == p->entry) {
		uint64_t sp = r->rsp - 8;
		ps__tr_unwind_below(t, th, sp);
		if (nfr(th) && fr_at(th, nfr(th) - 1)->sp == sp) {
			while (nfr(th) && fr_at(th, nfr(th) - 1)->sp == sp)
				r->rip = fr_pop(th).ret;
		} else {
			r->rip = a;
		}
	} else if (p->sees_bps && ps__tr_bp_find(t, a) >= 0) {
		r->rip = a;
	} else if (pt_of(t)->hw_traps && perf_trap(th->tid, &data) != TRAP_OTHER) {
		r->eflags |= EFLAGS_RF; /* a sampled entry while settling: not a hit, not the program's */
	} else {
		return 0;
	}
	ptrace(PTRACE_SETREGS, th->tid, 0, r);
	return 1;
}

/* The thread_end hook: @th's open frames are reported unwound. */
static void on_thread_end(struct ps_tracer *t, struct ps_tr_thread *th)
{
	ps__tr_unwind_below(t, th, UINT64_MAX);
}

/* The fork hook: @child's process has a copy of the parent's memory (the trampoline, the scratch
 * page), and its stack is a copy: it inherits the open frames of @parent. */
static void on_fork(struct ps_tracer *t, struct ps_tr_thread *parent, struct ps_tr_thread *child)
{
	const struct pt_proc *pp = pt_proc(parent->proc);
	struct user_regs_struct r;

	(void)t;
	if (pp && (child->proc->trap = malloc(sizeof *pp)))
		memcpy(child->proc->trap, pp, sizeof *pp);
	if (!ptrace(PTRACE_GETREGS, parent->tid, 0, &r))
		for (int i = 0; i < nfr(parent); i++)
			if (fr_at(parent, i)->sp >= r.rsp)
				ps__tr_fr_push(child, fr_at(parent, i));
}

/* The release hook: restore, in fork child @ch's copy of memory, every breakpoint byte, the
 * trampoline and the return addresses of the frames it inherited. */
static void on_release(struct ps_tracer *t, struct ps_tr_thread *ch)
{
	struct ps_tr_proc *p = ch->proc;

	if (p->sees_bps)
		ps__tr_bp_unwrite(t, p);
	if (tramp_is_on(p)) {
		mem_wr(p, p->entry, &pt_proc(p)->tramp.orig, 1);
		ps__tr_frames_unswap(p, ch, 0);
	}
	if (ch->trap)
		((struct pt_thread *)ch->trap)->nfr = 0;
}

/* The exec hook: a new image has neither trampoline nor scratch page; the main process's exec
 * drops every breakpoint (ids restart from 0). */
static void on_exec(struct ps_tracer *t, struct ps_tr_thread *th)
{
	struct ps_tr_proc *p = th->proc;

	free(p->trap);
	p->trap = NULL;
	if (p->pid == t->pid)
		ps__tr_bp_drop_all(t, p);
}

/* Unmap each process's scratch page (ptrace_xol.c) through one of its threads, so that the memory
 * map is left as it was found. Not through a thread in a group-stop (it would run on), nor while a
 * vfork child shares a process's memory (its parent, held, waits for the child). */
static void unmap_scratch(struct ps_tracer *t)
{
	for (struct ps_tr_proc *p = t->procs; p; p = p->next)
		if (p->silent)
			return;
	for (struct ps_tr_proc *p = t->procs; p; p = p->next)
		for (unsigned i = 0; pt_proc(p) && pt_proc(p)->scratch && i < t->thcap; i++) {
			struct ps_tr_thread *th = t->th[i];
			if (th && th->proc == p && th->state == TH_HELD && !th->group &&
			    ps__tr_scratch_unmap(t, th) < 0)
				break; /* the page stays */
		}
}

/* The detach hook: every breakpoint byte, the trampoline and every swapped return address is
 * put back, and the scratch pages are unmapped. */
static void on_detach(struct ps_tracer *t)
{
	struct user_regs_struct r;

	for (struct ps_tr_proc *p = t->procs; p; p = p->next) {
		if (p->writes_bps)
			ps__tr_bp_unwrite(t, p);
		if (tramp_is_on(p))
			mem_wr(p, p->entry, &pt_proc(p)->tramp.orig, 1);
	}
	for (unsigned i = 0; i < t->thcap; i++) {
		struct ps_tr_thread *th = t->th[i];
		if (!th || !th->proc || !nfr(th))
			continue;
		/* frames below the stack pointer were unwound: their slots are the program's now */
		if (!ptrace(PTRACE_GETREGS, th->tid, 0, &r))
			ps__tr_frames_unswap(th->proc, th, r.rsp);
		((struct pt_thread *)th->trap)->nfr = 0;
	}
	unmap_scratch(t);
}

static void on_free(struct ps_tracer *t)
{
	struct pt *pt = pt_of(t);

	free(pt->bp);
	free(pt->bph);
	free(pt);
}

static const struct ps_tracer_traps traps = {
    .trap = on_trap,
    .settle = on_settle,
    .thread_end = on_thread_end,
    .fork = on_fork,
    .release = on_release,
    .exec = on_exec,
    .detach = on_detach,
    .free = on_free,
};

/* The breakpoints of @t, its traps registered on first use; NULL when out of memory. */
static struct pt *pt_get(struct ps_tracer *t)
{
	struct pt *pt = pt_of(t);

	if (pt)
		return pt;
	if (!(pt = calloc(1, sizeof *pt)))
		return NULL;
	if (ps__tr_bph_rebuild(pt, 16)) {
		free(pt);
		return NULL;
	}
	ps__tr_set_traps(t, &traps, pt);
	return pt;
}

int ps_tracer_bp_add(struct ps_tracer *t, uint64_t addr, int kind, struct ps_error *err)
{
	if (!pt_get(t))
		return ps_error_set(err, ENOMEM, "out of memory");
	return ps__tr_bp_insert(t, addr, kind, err);
}

int ps_tracer_bp_enable(struct ps_tracer *t, int id, int on, struct ps_error *err)
{
	if (!pt_of(t))
		return ps_error_set(err, PS_EUSAGE, "no breakpoint %d", id);
	return ps__tr_bp_arm(t, id, on, err);
}

int ps_tracer_hw_traps(struct ps_tracer *t, int on)
{
	struct pt *pt = pt_get(t);

	if (!pt)
		return -1;
	pt->hw_traps = on;
	return 0;
}

void ps_tracer_ret_slot(struct ps_tracer *t, uint64_t sp)
{
	if (pt_of(t))
		pt_of(t)->ret_slot = sp;
}
