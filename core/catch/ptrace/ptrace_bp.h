/* core/catch/ptrace/ptrace_bp.h - the ptrace catcher's traps: breakpoints in a traced program's code,
 * the instruction each displaces (emulated, or run out of line), and catching the returns of the
 * calls they stop at. They ride on the tracer (core/proc/tracer.h), which reports them through the
 * hit() and ret() callbacks of its struct ps_tracer_ops; they hook into it on first use (the first
 * ps_tracer_bp_add() or ps_tracer_hw_traps()).
 */
#ifndef PS_PTRACE_BP_H
#define PS_PTRACE_BP_H

#include <stdint.h>
#include <sys/types.h>

#include "catcher.h"
#include "error.h"
#include "tracer.h"

/* What hit() may return besides PS_TRACER_PAUSE (and OR'd with it): have the return reported
 * through ret(). */
enum { PS_TRACER_CATCH_RETURN = 1 };

/*
 * Hits that a perf event reports instead of an int3: a hardware execute breakpoint opened by
 * the layer above with sigtrap = 1 and sig_data = N (< 2^24) stops the thread at the entry
 * with a TRAP_PERF SIGTRAP; hit() then gets bp_id PS_BP_HW_BASE + N and may catch the return
 * as for a PS_BP_FUNC breakpoint. Such SIGTRAPs never reach the program. The layer above must
 * close those events before ps_tracer_detach().
 */
#define PS_BP_HW_BASE 0x40000000
/* A hardware breakpoint trap the kernel did not match to its perf event (it happens while a
 * breakpoint's period is being changed): hit() gets this id with rip at the address; the
 * entry was not counted by the event and cannot be caught. */
#define PS_BP_HW_STRAY (PS_BP_HW_BASE - 1)

/**
 * ps_tracer_bp_add() - place an armed breakpoint at @addr (an instruction start).
 * @kind: PS_BP_FUNC (a function entry: returns can be caught) or PS_BP_ADDR.
 *
 * Adding the same address twice returns the same id: one breakpoint serves both kinds (a
 * PS_BP_ADDR that is also a function's entry becomes PS_BP_FUNC). Refused: the
 * ELF entry point (it is the return trampoline), syscall/int instructions, far
 * branches, and bytes that do not decode.
 *
 * Return: the breakpoint id (>= 0), or -1.
 */
int ps_tracer_bp_add(struct ps_tracer *t, uint64_t addr, int kind, struct ps_error *err);

/* ps_tracer_bp_enable() - arm (@on=1) or disarm a breakpoint without forgetting it. */
int ps_tracer_bp_enable(struct ps_tracer *t, int bp_id, int on, struct ps_error *err);

/**
 * ps_tracer_frames_restore() - put the real return address back into the stack slot of every
 * open frame of stopped thread @tid, because an exception is about to unwind its stack (the
 * unwinder cannot read past the trampoline). Until ps_tracer_frames_reswap(), returns of those
 * frames are not caught; frames that the exception unwinds are reported unwound.
 */
int ps_tracer_frames_restore(struct ps_tracer *t, pid_t tid);

/**
 * ps_tracer_frames_reswap() - the exception was caught (stopped thread @tid is in its
 * handler): frames below the stack pointer are reported unwound, the others get the
 * trampoline back in their slot and their returns are caught again.
 */
int ps_tracer_frames_reswap(struct ps_tracer *t, pid_t tid);

/* ps_tracer_hw_traps() - the layer above uses hardware breakpoints (see PS_BP_HW_BASE): their
 * SIGTRAPs are taken as perfsh's, never the program's. Return: 0, or -1 (out of memory) when
 * they could not be taken: then no such event may be opened. */
int ps_tracer_hw_traps(struct ps_tracer *t, int on);

/* ps_tracer_ret_slot() - from hit() of a perf trap (PS_BP_HW_BASE + N): the return address of
 * the function entered is at @sp, not at the stack pointer (a uprobe's trap comes after the
 * entry's first instruction, which may have pushed). */
void ps_tracer_ret_slot(struct ps_tracer *t, uint64_t sp);

#endif
