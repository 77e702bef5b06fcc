/* core/catch/ptrace/ptrace_trap_priv.h - the inside of the ptrace catcher's traps, shared by its files:
 *   ptrace_trap.c  the trap hooks it registers with the tracer (core/proc/tracer_traps.h): each
 *                  breakpoint and perf trap, settling, fork, exec, detach; the public entry points
 *   ptrace_ret.c   catching returns (the trampoline and the shadow stacks)
 *   ptrace_bp.c    the breakpoint table
 *   ptrace_xol.c   the displaced instruction: emulated or run out of line
 * Each calls only the files below it in this list, and the tracer. Not for use outside them.
 */
#ifndef PS_PTRACE_TRAP_PRIV_H
#define PS_PTRACE_TRAP_PRIV_H

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/user.h>

#include "ptrace_bp.h"
#include "tracer_traps.h"
#include "x86emu.h"
#include "x86insn.h"

#define SLOT_SIZE 32
#define NSLOT 2048
#define SCRATCH_SIZE (NSLOT * SLOT_SIZE)
#define SLOT_TRAMP (NSLOT - 1) /* _start's first instruction */
#define SLOT_SPARE (NSLOT - 2) /* breakpoints with ids beyond the cached slots */
#define SLOT_TOUCH (NSLOT - 3) /* "push %rax; pop %rax; int3": grows the stack */
#define SLOT_USER (NSLOT - 3)

#define INT3 0xcc /* the breakpoint instruction */

/* EFLAGS' resume flag: the next instruction does not raise a debug exception (a hardware
 * breakpoint at rip is stepped over once). */
#define EFLAGS_RF 0x10000ull

/* si_code of a SIGTRAP sent by a perf event with sigtrap=1 (<asm-generic/siginfo.h>). */
#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

/* The sig_data of a perf-event trap carries the breakpoint number in its low 24 bits (the
 * layer above sets it; see PS_BP_HW_BASE in ptrace_bp.h). */
#define HW_ID_MASK 0xffffffull

enum emu {
	EMU_XOL,  /* run out of line, int3 after it */
	EMU_STEP, /* run out of line, single-step (indirect branches) */
	EMU_SKIP, /* no effect: endbr64, nop */
	EMU_PUSHF,
	EMU_CALL, /* call rel32 to arg */
	EMU_JMP,  /* jmp rel to arg */
	EMU_JCC,  /* jcc (cc = condition) to arg */
	EMU_LOOP, /* loopne/loope/loop/jrcxz (cc = opcode & 3) to arg */
	EMU_RET,
	EMU_REG, /* register-only (push: and its store), by x86emu.c (@x) */
};

struct bp {
	uint64_t addr;
	int kind, enabled;
	uint8_t orig, len, emu, cc;
	int8_t xreg;	 /* register replacing rip in the out-of-line copy, -1 none */
	uint8_t fixcall; /* indirect call: fix the pushed return address */
	uint8_t xol_len;
	int64_t arg;
	struct ps_x86_emu x; /* EMU_REG */
	uint8_t xol[SLOT_SIZE];
};

struct frame {
	uint64_t ret, sp, cookie;
	int bp;
	int restored; /* the real return address is back in its slot (an exception unwinds) */
};

/* Per process (struct ps_tr_proc's trap): the trampoline and the scratch page. */
struct pt_proc {
	int tramp_on; /* int3 written at entry */
	struct bp tramp;
	uint64_t scratch;
	int slot[NSLOT]; /* per slot: bp index + 1 held there, -1 fixed content written */
};

/* Per thread (struct ps_tr_thread's trap): the shadow stack of the calls whose return is caught. */
struct pt_thread {
	int nfr, capfr;
	struct frame fr[];
};

/* Per tracer (t->traps_ud): the breakpoints. */
struct pt {
	int hw_traps;	   /* hardware breakpoints of the layer above are in use */
	uint64_t ret_slot; /* set by hit() of a perf trap: where the return address is (0: at rsp) */
	struct bp *bp;
	int nbp, capbp;
	int *bph; /* address hash: bp index, -1 empty */
	unsigned bphcap;
};

static inline struct pt *pt_of(const struct ps_tracer *t)
{
	return (struct pt *)t->traps_ud;
}

/* @p's trampoline and scratch page, NULL while it has none. */
static inline struct pt_proc *pt_proc(const struct ps_tr_proc *p)
{
	return (struct pt_proc *)p->trap;
}

/* @p's trampoline and scratch page, made on first need; NULL when out of memory. */
static inline struct pt_proc *pt_proc_get(struct ps_tr_proc *p)
{
	if (!p->trap)
		p->trap = calloc(1, sizeof(struct pt_proc));
	return (struct pt_proc *)p->trap;
}

/* @p's trampoline is in place. */
static inline int tramp_is_on(const struct ps_tr_proc *p)
{
	return p->trap && pt_proc(p)->tramp_on;
}

/* How many frames of @th are open. */
static inline int nfr(const struct ps_tr_thread *th)
{
	return th->trap ? ((const struct pt_thread *)th->trap)->nfr : 0;
}

/* @th's open frame @i (0: the oldest); @i < nfr(th). */
static inline struct frame *fr_at(const struct ps_tr_thread *th, int i)
{
	return &((struct pt_thread *)th->trap)->fr[i];
}

/* @th's newest open frame, taken off its shadow stack; nfr(th) > 0. */
static inline struct frame fr_pop(struct ps_tr_thread *th)
{
	struct pt_thread *s = th->trap;
	return s->fr[--s->nfr];
}

static inline unsigned long long *regp(struct user_regs_struct *r, int n)
{
	switch (n) {
	case 0:
		return &r->rax;
	case 1:
		return &r->rcx;
	case 2:
		return &r->rdx;
	case 3:
		return &r->rbx;
	case 4:
		return &r->rsp;
	case 5:
		return &r->rbp;
	case 6:
		return &r->rsi;
	case 7:
		return &r->rdi;
	case 8:
		return &r->r8;
	case 9:
		return &r->r9;
	case 10:
		return &r->r10;
	case 11:
		return &r->r11;
	case 12:
		return &r->r12;
	case 13:
		return &r->r13;
	case 14:
		return &r->r14;
	default:
		return &r->r15;
	}
}

/* ptrace_ret.c */
void ps__tr_unwind_below(struct ps_tracer *t, struct ps_tr_thread *th, uint64_t sp);
int ps__tr_catch_return(struct ps_tracer *t, struct ps_tr_thread *th, const struct user_regs_struct *r, int id,
			uint64_t cookie);
int ps__tr_on_tramp(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r);
void ps__tr_frames_unswap(struct ps_tr_proc *p, const struct ps_tr_thread *th, uint64_t sp);
int ps__tr_fr_push(struct ps_tr_thread *th, const struct frame *f);

/* ptrace_bp.c */
int ps__tr_bp_find(const struct ps_tracer *t, uint64_t a);
int ps__tr_bph_rebuild(struct pt *pt, unsigned cap);
int ps__tr_bp_insert(struct ps_tracer *t, uint64_t addr, int kind, struct ps_error *err);
int ps__tr_bp_arm(struct ps_tracer *t, int id, int on, struct ps_error *err);
void ps__tr_bp_write(struct ps_tracer *t, const struct bp *b, int armed);
void ps__tr_bp_unwrite(struct ps_tracer *t, struct ps_tr_proc *p);
void ps__tr_bp_drop_all(struct ps_tracer *t, struct ps_tr_proc *except);
ssize_t ps__tr_code_read(struct ps_tracer *t, struct ps_tr_proc *p, uint64_t a, uint8_t *buf, size_t n);

/* ptrace_xol.c */
int ps__tr_bp_prepare(struct bp *b, const uint8_t *code, size_t n, struct ps_error *err);
int ps__tr_displaced(struct ps_tracer *t, struct ps_tr_thread *th, const struct bp *b, int slot, int key,
		     struct user_regs_struct *r, int *fsig);
/* Unmap the scratch page of @th's process: stopped thread @th runs a munmap system call, as it
 * was mapped, and gets its registers back. 0 (also without a page), 1 the thread is gone, -1. */
int ps__tr_scratch_unmap(struct ps_tracer *t, struct ps_tr_thread *th);

#endif
