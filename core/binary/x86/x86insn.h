/* core/binary/x86/x86insn.h - x86-64 instruction decoding (by Zydis), enough to relocate one instruction.
 *
 * The tracer uses it to find how long the instruction under a breakpoint is, whether it
 * addresses memory relative to rip (and where its ModRM and displacement are), and which
 * opcode it is, so the instruction can be emulated or executed out of line.
 */
#ifndef PS_X86INSN_H
#define PS_X86INSN_H

#include <stddef.h>
#include <stdint.h>

/**
 * struct ps_x86_insn - one decoded instruction (64-bit mode).
 * @len:       total length in bytes (1..15)
 * @opc_off:   offset of the opcode byte (after prefixes, REX, VEX/EVEX)
 * @map:       opcode map: 0 one-byte, 1 0f, 2 0f38, 3 0f3a, 5/6 EVEX maps
 * @opcode:    the opcode byte in that map
 * @has_modrm: 1 if a ModRM byte follows the opcode; @modrm and @modrm_off then describe it
 * @disp_off, @disp_len: where the displacement is (len 0: none)
 * @imm_off, @imm_len:   where the immediate is (len 0: none)
 * @rex:       the REX byte, 0 if none; @rex_off its offset
 * @vex:       0, 2 (c5), 3 (c4) or 4 (62, EVEX); @vex_off offset of that first byte
 * @vvvv:      the register named by VEX/EVEX.vvvv (0..15), 0 without VEX
 * @p66, @pf2, @pf3, @p67, @lock: legacy prefixes seen; @nlegacy how many legacy prefixes
 * @other_prefix: a segment or branch-hint prefix (2e 36 3e 26 64 65) was seen
 * @riprel:    the ModRM operand is [rip + disp32]
 */
struct ps_x86_insn {
	uint8_t len, opc_off, map, opcode;
	uint8_t has_modrm, modrm, modrm_off;
	uint8_t disp_off, disp_len, imm_off, imm_len;
	uint8_t rex, rex_off, vex, vex_off, vvvv;
	uint8_t p66, pf2, pf3, p67, lock, nlegacy, other_prefix;
	uint8_t riprel;
};

/**
 * ps_x86_decode() - decode the instruction at @buf.
 * @buf: instruction bytes
 * @n:   bytes available (at most 15 are looked at)
 * @in:  filled on success
 *
 * Return: 0, or -1 if the bytes are not a valid 64-bit instruction this decoder knows
 * (invalid opcodes, 3DNow!, XOP, MVEX) or @n is too short.
 */
int ps_x86_decode(const uint8_t *buf, size_t n, struct ps_x86_insn *in);

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
