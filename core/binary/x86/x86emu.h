/* core/binary/x86/x86emu.h - exact emulation of the register-only instructions compilers put at function
 * entries, on a saved register set: what the tracer does in place of an instruction its entry
 * breakpoint displaced, so the hit costs no second stop.
 *
 * Covered (no memory operand; 8-, 16-, 32- and 64-bit forms where the encoding has them), as
 * Zydis decodes the operands (x86insn.h): mov reg/imm to reg, movzx/movsx/movsxd reg to reg, lea
 * (any address, rip-relative too: lea reads no memory), add/or/adc/sbb/and/sub/xor/cmp reg or
 * imm with a register, test reg/imm with a register, push reg (whose store the caller does),
 * and what does nothing (nop, nop r/m, pause, endbr64/32). CF PF AF ZF SF OF are set as
 * the SDM defines them; AF, undefined after and/or/xor/test, is cleared as Intel and AMD
 * processors do. Anything else (memory operands, lock, rep, segment and 67h prefixes on
 * anything but a nop) is refused.
 */
#ifndef PS_X86EMU_H
#define PS_X86EMU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

/**
 * struct ps_x86_emu - one instruction, prepared for ps_x86_emu_run().
 * @op:      what it does (internal codes of x86emu.c)
 * @size:    operand size in bytes (1, 2, 4, 8)
 * @srcsize: size of the source of movzx/movsx/movsxd
 * @dst, @src: register numbers (0..15; 16..19 are ah ch dh bh); @src -1: the immediate
 * @base, @index, @scale: lea's address registers (-1 none)
 * @len:     instruction length
 * @imm:     the immediate (sign-extended to 64 bits) or lea's displacement (with rip-relative
 *           addressing, the address itself)
 */
struct ps_x86_emu {
	uint8_t op, size, srcsize, len;
	int8_t dst, src, base, index;
	uint8_t scale;
	int64_t imm;
};

/**
 * ps_x86_emu_prepare() - decide whether the instruction at @code can be emulated.
 * @e:    filled on success
 * @code: the instruction bytes, @n of them available
 * @addr: the address of the instruction (for rip-relative lea)
 *
 * Return: 0 if ps_x86_emu_run() can carry it out, -1 if not.
 */
int ps_x86_emu_prepare(struct ps_x86_emu *e, const uint8_t *code, size_t n, uint64_t addr);

/**
 * ps_x86_emu_run() - carry out @e on @r (r->rip at the instruction; it ends after it).
 * @store: for a push, the 8 bytes the caller must write at the new r->rsp
 *
 * Return: 0 done, 1 done and *@store must be written at r->rsp (push).
 */
int ps_x86_emu_run(const struct ps_x86_emu *e, struct user_regs_struct *r, uint64_t *store);

#endif
