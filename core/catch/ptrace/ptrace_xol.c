/* core/catch/ptrace/ptrace_xol.c - what runs in place of the instruction a breakpoint displaced: emulated
 * on the saved registers when it is simple (no second stop), else executed out of line in a
 * scratch page of the tracee (the comment at the top of ptrace_trap.c describes both). */
#include "ptrace_trap_priv.h"

#include "x86insn.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int ps__tr_bp_prepare(struct bp *b, const uint8_t *code, size_t n, struct ps_error *err)
{
	/* what runs for each flow of control (x86insn.h), and why some cannot be displaced */
	static const uint8_t emu[] = {
	    [PS_X86_NOP] = EMU_SKIP,  [PS_X86_JCC] = EMU_JCC,	   [PS_X86_LOOP] = EMU_LOOP,	 [PS_X86_JMP] = EMU_JMP,
	    [PS_X86_CALL] = EMU_CALL, [PS_X86_JMP_IND] = EMU_STEP, [PS_X86_CALL_IND] = EMU_STEP,
	};
	static const char *const why[] = {
	    [PS_X86_FAR_JMP] = "a far call or jump",
	    [PS_X86_FAR_CALL] = "a far call or jump",
	    [PS_X86_FAR_RET] = "a far return",
	    [PS_X86_INT] = "an int/iret instruction",
	    [PS_X86_IRET] = "an int/iret instruction",
	    [PS_X86_SYSCALL] = "a syscall instruction",
	    [PS_X86_XBEGIN] = "xbegin",
	};
	/* prefixes a relative branch must not have, nor a return that is emulated */
	const unsigned brpfx = PS_X86_P66 | PS_X86_P67 | PS_X86_LOCK | PS_X86_REP;
	struct ps_x86_insn in;
	const char *bad;

	if (ps_x86_decode(code, n, b->addr, &in))
		return ps_error_set(err, PS_EUSAGE,
				    "cannot decode the instruction at 0x%llx (not an instruction start?)",
				    (unsigned long long)b->addr);
	b->len = in.len;
	b->emu = in.flow < sizeof emu ? emu[in.flow] : EMU_XOL;
	b->fixcall = in.flow == PS_X86_CALL_IND;
	b->arg = (int64_t)in.target;
	b->cc = in.cc;
	bad = in.flow < sizeof why / sizeof why[0] ? why[in.flow] : NULL;
	if (in.flow >= PS_X86_JCC && in.flow <= PS_X86_CALL && (in.prefixes & brpfx))
		bad = "a relative branch with an operand- or address-size prefix";
	if (in.flow == PS_X86_RET)
		b->emu = in.pop ? EMU_STEP : in.prefixes & (brpfx | PS_X86_REX) ? EMU_XOL : EMU_RET;
	else if (in.flow == PS_X86_NEXT && in.op == PS_X86_PUSHFQ && !in.prefixes)
		b->emu = EMU_PUSHF;
	else if (in.flow == PS_X86_NEXT && !ps_x86_emu_prepare(&b->x, code, n, b->addr))
		b->emu = EMU_REG;
	/* the out-of-line copy: the instruction, rip-relative operand rewritten, then int3 */
	b->xreg = (int8_t)ps_x86_relocate(&in, code, b->xol);
	if (b->xreg == PS_X86_OTHREG)
		bad = "no register is free to take rip's place in its copy";
	if (bad)
		return ps_error_set(err, PS_EUSAGE, "cannot place a breakpoint at 0x%llx: %s",
				    (unsigned long long)b->addr, bad);
	b->xol[in.len] = INT3;
	b->xol_len = (uint8_t)(in.len + 1);
	return 0;
}

/* ---------------------------------------------------------------- out-of-line execution */

/* Run thread @th from r->rip in the scratch page: single-step (@step) until rip leaves
 * @start, or run until the int3 that ends the copy traps (rip == @end). Asynchronous
 * signals that arrive meanwhile are stashed for the next resume.
 * Return: 0 done (*r updated), 1 the thread is gone, 2 the instruction faulted (*fsig),
 * -1 error. */
static int run_insn(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r, uint64_t start,
		    uint64_t end, int step, int *fsig)
{
	int st;

	if (ptrace(PTRACE_SETREGS, th->tid, 0, r))
		return ps_error_set(t->err, errno, "ptrace(SETREGS, %d): %s", (int)th->tid, strerror(errno));
	for (;;) {
		if (ptrace(step ? PTRACE_SINGLESTEP : PTRACE_CONT, th->tid, 0, 0) && errno != ESRCH)
			return ps_error_set(t->err, errno, "ptrace(resume, %d): %s", (int)th->tid, strerror(errno));
		pid_t w;
		while ((w = waitpid(th->tid, &st, __WALL)) < 0 && errno == EINTR)
			;
		if (w < 0)
			return ps_error_set(t->err, errno, "waitpid(%d): %s", (int)th->tid, strerror(errno));
		t->stops++;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			ps__tr_thread_gone(t, th, st);
			return 1;
		}
		if (st >> 16)
			continue; /* group-stop or interrupt: finish the instruction first */
		int sig = WSTOPSIG(st);
		if (ptrace(PTRACE_GETREGS, th->tid, 0, r))
			return ps_error_set(t->err, errno, "ptrace(GETREGS, %d): %s", (int)th->tid, strerror(errno));
		if (sig == SIGTRAP && (step ? r->rip != start : r->rip == end))
			return 0;
		if (sig == SIGTRAP && step && r->rip == start)
			continue;
		if (r->rip == start &&
		    (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP)) {
			siginfo_t si;
			if (!ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) && si.si_code > 0) {
				*fsig = sig;
				return 2;
			}
		}
		stash(th, sig);
	}
}

/* Make stopped thread @th, with registers *@r, run system call @nr(@a[0..5]) at entry+1 (never
 * executed by the program after start-up; entry itself may hold the trampoline int3). *@ret
 * gets its result; the thread's registers are left as the call left them.
 * Return: 0, 1 the thread is gone, -1 error. */
static int inject_syscall(struct ps_tracer *t, struct ps_tr_thread *th, const struct user_regs_struct *r, long nr,
			  const uint64_t a[6], uint64_t *ret)
{
	struct ps_tr_proc *p = th->proc;
	struct user_regs_struct s = *r;
	uint8_t save[2], sc[2] = {0x0f, 0x05};
	int fsig = 0, rc;

	if (!p->entry && !(p->entry = ps__tr_read_auxv(p->pid, AT_ENTRY)))
		return ps_error_set(t->err, ENOENT, "no AT_ENTRY in /proc/%d/auxv", (int)p->pid);
	uint64_t at = p->entry + 1;
	if (mem_rd(p, at, save, 2) || mem_wr(p, at, sc, 2))
		return ps_error_set(t->err, errno, "cannot write the code of process %d: %s", (int)p->pid,
				    strerror(errno));
	s.rip = at;
	s.rax = (unsigned long long)nr;
	s.orig_rax = (unsigned long long)-1; /* no system call of its own to restart */
	s.rdi = a[0];
	s.rsi = a[1];
	s.rdx = a[2];
	s.r10 = a[3];
	s.r8 = a[4];
	s.r9 = a[5];
	rc = run_insn(t, th, &s, at, 0, 1, &fsig);
	mem_wr(p, at, save, 2);
	if (rc == 1)
		return 1;
	if (rc)
		return rc < 0 ? -1
			      : ps_error_set(t->err, EFAULT, "system call %ld injected in %d faulted (signal %d)", nr,
					     (int)th->tid, fsig);
	if (s.rax > (unsigned long long)-4096)
		return ps_error_set(t->err, (int)-s.rax, "system call %ld injected in %d: %s", nr, (int)th->tid,
				    strerror((int)-s.rax));
	*ret = s.rax;
	return 0;
}

/* Map the scratch page in the tracee, by a mmap system call that @th runs. */
static int scratch_map(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r)
{
	struct pt_proc *p = pt_proc_get(th->proc);
	const uint64_t a[6] = {0, SCRATCH_SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0};
	uint64_t addr = 0;
	int rc;

	if (!p)
		return ps_error_set(t->err, ENOMEM, "out of memory");
	if ((rc = inject_syscall(t, th, r, SYS_mmap, a, &addr)) != 0)
		return rc;
	p->scratch = addr;
	for (int i = 0; i < NSLOT; i++)
		p->slot[i] = 0;
	return 0;
}

int ps__tr_scratch_unmap(struct ps_tracer *t, struct ps_tr_thread *th)
{
	struct pt_proc *p = pt_proc(th->proc);
	struct user_regs_struct r;
	uint64_t ret;
	int rc;

	if (!p || !p->scratch)
		return 0;
	const uint64_t a[6] = {p->scratch, SCRATCH_SIZE, 0, 0, 0, 0};
	if (ptrace(PTRACE_GETREGS, th->tid, 0, &r))
		return ps_error_set(t->err, errno, "ptrace(GETREGS, %d): %s", (int)th->tid, strerror(errno));
	if ((rc = inject_syscall(t, th, &r, SYS_munmap, a, &ret)) == 1)
		return 1;
	if (rc == 0)
		p->scratch = 0;
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &r))
		return ps_error_set(t->err, errno, "ptrace(SETREGS, %d): %s", (int)th->tid, strerror(errno));
	return rc;
}

/* Put the copy of @b in scratch slot @slot (skipped when it is there already). */
static int slot_fill(struct ps_tracer *t, struct ps_tr_proc *p, const struct bp *b, int slot, int key)
{
	struct pt_proc *pp = pt_proc(p);

	if (key && pp->slot[slot] == key)
		return 0;
	if (mem_wr(p, pp->scratch + (uint64_t)slot * SLOT_SIZE, b->xol, b->xol_len))
		return ps_error_set(t->err, errno, "cannot write the scratch page of %d: %s", (int)p->pid,
				    strerror(errno));
	pp->slot[slot] = key;
	return 0;
}

/* Execute the instruction of @b for @th out of line; *r (rip = b->addr) is updated.
 * Return: 0 (set *r and resume), 1 (thread gone, or resumed into its fault handler:
 * *fsig set), -1. */
static int xol(struct ps_tracer *t, struct ps_tr_thread *th, const struct bp *b, int slot, int key,
	       struct user_regs_struct *r, int *fsig)
{
	struct ps_tr_proc *p = th->proc;
	struct user_regs_struct s = *r;
	int rc;

	if (!(pt_proc(p) && pt_proc(p)->scratch) && (rc = scratch_map(t, th, r)) != 0)
		return rc;
	if (slot_fill(t, p, b, slot, key))
		return -1;
	uint64_t sa = pt_proc(p)->scratch + (uint64_t)slot * SLOT_SIZE;
	if (b->xreg >= 0)
		*regp(&s, b->xreg) = b->addr + b->len;
	s.rip = sa;
	*fsig = 0;
	rc = run_insn(t, th, &s, sa, sa + b->len + 1, b->emu == EMU_STEP, fsig);
	if (rc == 1 || rc < 0)
		return rc;
	if (b->xreg >= 0)
		*regp(&s, b->xreg) = *regp(r, b->xreg);
	if (rc == 2) {
		/* faulted before completing: back at the original address, deliver the signal */
		s.rip = b->addr;
		*r = s;
		return 1;
	}
	if (b->emu == EMU_STEP) {
		uint64_t v;
		if (b->fixcall && !mem_rd(p, s.rsp, &v, 8) && v == sa + b->len) {
			v = b->addr + b->len;
			mem_wr(p, s.rsp, &v, 8);
		}
		if (s.rip == sa + b->len)
			s.rip = b->addr + b->len;
	} else {
		s.rip = b->addr + b->len;
	}
	*r = s;
	return 0;
}

static int cond(unsigned cc, unsigned long long fl)
{
	int cf = fl & 1, pf = (fl >> 2) & 1, zf = (fl >> 6) & 1, sf = (fl >> 7) & 1, of = (fl >> 11) & 1, v;

	switch (cc >> 1) {
	case 0:
		v = of;
		break;
	case 1:
		v = cf;
		break;
	case 2:
		v = zf;
		break;
	case 3:
		v = cf || zf;
		break;
	case 4:
		v = sf;
		break;
	case 5:
		v = pf;
		break;
	case 6:
		v = sf != of;
		break;
	default:
		v = zf || sf != of;
		break;
	}
	return (cc & 1) ? !v : v;
}

/* Write 8 bytes just below rsp; when the stack must grow first, let the thread push. */
static int push8(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r, uint64_t v, int *fsig)
{
	static const struct bp touch = {.xol = {0x50, 0x58, INT3}, .xol_len = 3, .len = 2, .xreg = -1, .emu = EMU_XOL};
	struct ps_tr_proc *p = th->proc;

	if (!mem_wr(p, r->rsp - 8, &v, 8))
		return 0;
	struct user_regs_struct s = *r;
	struct bp tb = touch;
	tb.addr = r->rip;
	int rc = xol(t, th, &tb, SLOT_TOUCH, -1, &s, fsig);
	if (rc)
		return rc;
	if (mem_wr(p, r->rsp - 8, &v, 8))
		return ps_error_set(t->err, errno, "cannot write the stack of %d at 0x%llx: %s", (int)th->tid,
				    r->rsp - 8, strerror(errno));
	return 0;
}

/* Carry out the instruction displaced by @b for @th (regs *r, rip = b->addr).
 * Return: 0 (set *r, resume), 1 (gone, or *fsig to deliver with *r), -1 error. */
int ps__tr_displaced(struct ps_tracer *t, struct ps_tr_thread *th, const struct bp *b, int slot, int key,
		     struct user_regs_struct *r, int *fsig)
{
	uint64_t next = b->addr + b->len, v;
	int rc;

	*fsig = 0;
	switch (b->emu) {
	case EMU_SKIP:
		r->rip = next;
		return 0;
	case EMU_PUSHF:
		v = r->eflags & ~0x30100ull;
		if (mem_wr(th->proc, r->rsp - 8, &v, 8))
			break; /* stack must grow: run it out of line */
		r->rsp -= 8;
		r->rip = next;
		return 0;
	case EMU_REG: {
		struct user_regs_struct s = *r;
		if (ps_x86_emu_run(&b->x, &s, &v) && mem_wr(th->proc, s.rsp, &v, 8))
			break; /* push, and the stack must grow: run it out of line */
		*r = s;
		return 0;
	}
	case EMU_CALL:
		if ((rc = push8(t, th, r, next, fsig)) != 0)
			return rc;
		r->rsp -= 8;
		r->rip = (uint64_t)b->arg;
		return 0;
	case EMU_JMP:
		r->rip = (uint64_t)b->arg;
		return 0;
	case EMU_JCC:
		r->rip = cond(b->cc, r->eflags) ? (uint64_t)b->arg : next;
		return 0;
	case EMU_LOOP: {
		int take;
		if (b->cc == 3) {
			take = r->rcx == 0;
		} else {
			r->rcx--;
			take = r->rcx != 0 && (b->cc == 2 || (b->cc == 1) == !!(r->eflags & 0x40));
		}
		r->rip = take ? (uint64_t)b->arg : next;
		return 0;
	}
	case EMU_RET:
		if (mem_rd(th->proc, r->rsp, &v, 8))
			break;
		r->rsp += 8;
		r->rip = v;
		return 0;
	default:
		break;
	}
	if (b->emu == EMU_REG || b->emu == EMU_PUSHF || b->emu == EMU_RET) {
		struct bp c = *b;
		c.emu = EMU_XOL;
		return xol(t, th, &c, SLOT_SPARE, 0, r, fsig);
	}
	return xol(t, th, b, slot, key, r, fsig);
}
