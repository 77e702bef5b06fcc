/* core/binary/x86/x86insn.h - what one x86-64 instruction means, read from the operands Zydis decodes.
 *
 * One decode answers what every reader of machine code asks: the instruction's length, how
 * control leaves it (falls through, branches, returns, traps, enters the kernel), the general
 * registers it reads and writes, its operands (registers, immediates, memory addresses) for
 * the emulator (x86emu.h), and how to run a copy of it at another address (ps_x86_relocate()).
 * The tracer, the sampler's entry step, the line flow graph, the empty-hit analysis and the
 * entry relocation for trampolines (x86reloc.h, which writes the jumps it needs) all read
 * instructions through it; nothing else parses x86 encodings.
 */
#ifndef PS_X86INSN_H
#define PS_X86INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How control leaves an instruction. */
enum ps_x86_flow {
	PS_X86_NEXT,	 /* runs on to the next instruction */
	PS_X86_NOP,	 /* that and nothing else: nop, nop r/m, pause, endbr64, endbr32 */
	PS_X86_JCC,	 /* conditional relative jump to @target, condition @cc (0 jo .. 15 jnle) */
	PS_X86_LOOP,	 /* to @target: @cc 0 loopne, 1 loope, 2 loop, 3 jrcxz */
	PS_X86_JMP,	 /* relative jump to @target */
	PS_X86_CALL,	 /* relative call to @target */
	PS_X86_JMP_IND,	 /* near jump through a register or memory */
	PS_X86_CALL_IND, /* near call through a register or memory */
	PS_X86_RET,	 /* near return; @pop: bytes it releases above the return address */
	PS_X86_FAR_JMP,	 /* far jump, far call, far return */
	PS_X86_FAR_CALL,
	PS_X86_FAR_RET,
	PS_X86_INT, /* int, int3, int1, into */
	PS_X86_IRET,
	PS_X86_SYSCALL, /* syscall, sysenter, sysret, sysexit */
	PS_X86_XBEGIN,	/* xbegin: goes to @target when the transaction aborts */
	PS_X86_XEND,	/* xend: commits, or goes to the abort target of the transaction */
	PS_X86_XABORT,	/* xabort: goes to the abort target of the transaction, if any */
	PS_X86_STOP,	/* ud0, ud1, ud2, hlt: no next instruction */
	PS_X86_SYSTEM,	/* another system instruction (lgdt, wrmsr, ...) */
};

/* The operations the emulator and the entry step know by name (@op); PS_X86_OTHER any other. */
enum ps_x86_op {
	PS_X86_OTHER,
	PS_X86_ADD, /* ADD .. CMP in the order of their /reg extension: 0..7 */
	PS_X86_OR,
	PS_X86_ADC,
	PS_X86_SBB,
	PS_X86_AND,
	PS_X86_SUB,
	PS_X86_XOR,
	PS_X86_CMP,
	PS_X86_TEST,
	PS_X86_MOV,
	PS_X86_MOVZX,
	PS_X86_MOVSX, /* movsx and movsxd */
	PS_X86_LEA,
	PS_X86_PUSH,
	PS_X86_PUSHFQ,
	PS_X86_IMUL,
};

/* Prefixes (@prefixes), as Zydis saw them. */
#define PS_X86_P66 0x01u   /* operand size */
#define PS_X86_P67 0x02u   /* address size */
#define PS_X86_LOCK 0x04u  /* f0 */
#define PS_X86_REP 0x08u   /* f3 */
#define PS_X86_REPNE 0x10u /* f2 */
#define PS_X86_SEG 0x20u   /* a segment or branch-hint prefix: 2e 36 3e 26 64 65 */
#define PS_X86_REX 0x40u

/* General registers are numbered as the encoding does: 0 rax, 1 rcx, 2 rdx, 3 rbx, 4 rsp,
   5 rbp, 6 rsi, 7 rdi, 8..15 r8..r15; 16..19 name ah ch dh bh. */
#define PS_X86_NOREG (-1)  /* none */
#define PS_X86_OTHREG (-2) /* a register that is not a general one (segment, vector, control) */

enum { PS_X86_OPND_NONE, PS_X86_OPND_REG, PS_X86_OPND_MEM, PS_X86_OPND_IMM };

/**
 * struct ps_x86_opnd - one visible operand.
 * @kind:  PS_X86_OPND_REG, _MEM or _IMM
 * @size:  its size in bytes
 * @reg:   REG: the general register (0..19), or PS_X86_OTHREG
 * @base, @index, @scale: MEM: the address registers (PS_X86_NOREG: none; @scale with @index)
 * @riprel: MEM: the address is rip + @val
 * @val:   IMM: the value, sign-extended where the instruction extends it; MEM: the displacement
 */
struct ps_x86_opnd {
	uint8_t kind, size, scale, riprel;
	int8_t reg, base, index;
	int64_t val;
};

/**
 * struct ps_x86_insn - one decoded instruction (64-bit mode).
 * @len:      length in bytes (1..15)
 * @flow:     how control leaves it (enum ps_x86_flow)
 * @op:       what it does, where the emulator or the entry step may care (enum ps_x86_op)
 * @cc:       PS_X86_JCC and PS_X86_LOOP: the condition
 * @prefixes: PS_X86_P66 ...
 * @vex:      0 legacy encoding, 2 or 3 VEX (c5, c4), 4 EVEX
 * @target:   a relative branch's destination (with the address given to ps_x86_decode())
 * @pop:      PS_X86_RET: the immediate of ret imm16 (0 for ret)
 * @nopnd:    visible operands in @opnd (at most 4 kept)
 * @reads, @writes: the general registers it reads / writes, hidden operands and address
 *            registers included: bit n for register n (a byte register counts as its whole one)
 * @riprel:   an operand addresses memory relative to rip (its displacement is 32 bits)
 * @modrm_off, @rex_off, @vex_off: where the ModRM byte, REX prefix and VEX/EVEX prefix are
 *            (what ps_x86_relocate() rewrites)
 */
struct ps_x86_insn {
	uint8_t len, flow, op, cc, prefixes, vex;
	uint8_t nopnd, riprel, modrm_off, rex_off, vex_off;
	uint16_t pop;
	uint32_t reads, writes;
	uint64_t target;
	struct ps_x86_opnd opnd[4];
};

/**
 * ps_x86_decode() - decode the instruction at @buf, which is at address @addr.
 * @buf: instruction bytes
 * @n:   bytes available (at most 15 are looked at)
 * @addr: its address (for @target and rip-relative operands)
 * @in:  filled on success
 *
 * Return: 0, or -1 if the bytes are not a valid 64-bit instruction this decoder knows
 * (invalid opcodes, 3DNow!, XOP, MVEX) or @n is too short.
 */
int ps_x86_decode(const uint8_t *buf, size_t n, uint64_t addr, struct ps_x86_insn *in);

/**
 * ps_x86_relocate() - a copy of instruction @in (bytes @code) that does the same when it runs at
 * another address: its rip-relative operand becomes [reg + disp32], with a register the
 * instruction does not use, which must hold the original next address (@code's address + len)
 * while the copy runs.
 * @out:  receives @in->len bytes
 *
 * Return: that register (0..7), PS_X86_NOREG when the copy is the instruction unchanged, or
 * PS_X86_OTHREG when the instruction uses every register that could take rip's place (no copy).
 */
int ps_x86_relocate(const struct ps_x86_insn *in, const uint8_t *code, uint8_t *out);

/**
 * ps_x86_find_boundary() - decode code from its start up to @addr: does an instruction begin
 * there, or which one holds it?
 * @buf, @n:  the code, whose first byte is at address @base and begins an instruction
 * @addr:     an address in [@base, @base + @n)
 * @at:       set to the start of the instruction that holds @addr (@addr itself when one
 *            begins there), or to the first address that does not decode
 * @next:     set to the start of the instruction after that one
 *
 * Every encoding Zydis knows counts (this only measures lengths).
 * Return: 0 when an instruction begins at @addr, 1 when @addr is inside the one at *@at, -1
 * when the bytes at *@at before @addr are no instruction.
 */
int ps_x86_find_boundary(const uint8_t *buf, size_t n, uint64_t base, uint64_t addr, uint64_t *at, uint64_t *next);

/**
 * ps_x86_entry_step() - what the first instruction of a function does to what a hit reads at
 * the entry, for a probe that stops the thread only after that instruction ran (a uprobe).
 * @buf, @n:  the instruction bytes
 * @len:      its length: the thread stops at entry + @len
 * @sp_down:  how many bytes it moved the stack pointer down (push: 8, sub $imm,%rsp: imm), so
 *            the return address is at rsp + @sp_down
 *
 * Return: 0, or -1 when the instruction branches, moves the stack pointer some other way,
 * may write an argument register (rdi, rsi, rdx, rcx, r8, r9), or is not one this knows.
 */
int ps_x86_entry_step(const uint8_t *buf, size_t n, unsigned *len, unsigned *sp_down);

#endif
