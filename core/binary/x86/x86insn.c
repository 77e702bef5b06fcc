/* core/binary/x86/x86insn.c - x86-64 instruction decoding for the tracer, by Zydis (64-bit mode only).
 *
 * Zydis knows every encoding; this file only reports where the parts the tracer rewrites or
 * emulates are (ModRM, displacement, immediate, REX, VEX/EVEX) and whether the memory operand
 * is rip-relative, in the struct the tracer has always used.
 */
#include "x86insn.h"

#include <Zydis/Zydis.h>
#include <string.h>

/* The legacy prefixes Zydis saw (REX is not one of them). */
static void legacy_prefixes(const ZydisDecodedInstruction *z, struct ps_x86_insn *in)
{
	for (int i = 0; i < z->raw.prefix_count; i++) {
		uint8_t c = z->raw.prefixes[i].value;
		if ((c & 0xf0) == 0x40)
			continue;
		in->p66 |= c == 0x66;
		in->p67 |= c == 0x67;
		in->lock |= c == 0xf0;
		in->pf2 |= c == 0xf2;
		in->pf3 |= c == 0xf3;
		in->other_prefix |= c == 0x2e || c == 0x36 || c == 0x3e || c == 0x26 || c == 0x64 || c == 0x65;
		in->nlegacy++;
	}
}

int ps_x86_decode(const uint8_t *buf, size_t n, struct ps_x86_insn *in)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction z;
	int esc;

	memset(in, 0, sizeof *in);
	if (n > 15)
		n = 15;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, buf, n, &z)))
		return -1;
	/* 3DNow!, XOP and MVEX (Xeon Phi) are not relocated */
	if (z.encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY && z.encoding != ZYDIS_INSTRUCTION_ENCODING_VEX &&
	    z.encoding != ZYDIS_INSTRUCTION_ENCODING_EVEX)
		return -1;
	in->len = z.length;
	in->map = (uint8_t)z.opcode_map;
	in->opcode = z.opcode;
	legacy_prefixes(&z, in);
	if (z.attributes & ZYDIS_ATTRIB_HAS_MODRM) {
		in->has_modrm = 1;
		in->modrm_off = z.raw.modrm.offset;
		in->modrm = buf[in->modrm_off];
		/* mod 00, rm 101: [rip + disp32] in 64-bit mode (an instruction that forces the
		   register form, like mov to a control register, has no displacement) */
		in->riprel = z.raw.modrm.mod == 0 && z.raw.modrm.rm == 5 && z.raw.disp.size == 32;
	}
	if (z.raw.disp.size) {
		in->disp_off = z.raw.disp.offset;
		in->disp_len = z.raw.disp.size / 8;
	}
	if (z.raw.imm[0].size) {
		in->imm_off = z.raw.imm[0].offset;
		in->imm_len = (uint8_t)((z.raw.imm[0].size + z.raw.imm[1].size) / 8); /* enter: iw, ib */
	}
	if (z.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY) {
		if (z.attributes & ZYDIS_ATTRIB_HAS_REX) {
			in->rex_off = z.raw.rex.offset;
			in->rex = buf[in->rex_off];
		}
		esc = z.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT ? 0 : z.opcode_map == ZYDIS_OPCODE_MAP_0F ? 1 : 2;
		in->opc_off = (uint8_t)(z.raw.prefix_count + esc);
	} else if (z.encoding == ZYDIS_INSTRUCTION_ENCODING_VEX) {
		in->vex = z.raw.vex.size;
		in->vex_off = z.raw.vex.offset;
		in->vvvv = (uint8_t)(~z.raw.vex.vvvv & 15);
		in->opc_off = (uint8_t)(in->vex_off + in->vex);
	} else {
		in->vex = 4;
		in->vex_off = z.raw.evex.offset;
		in->vvvv = (uint8_t)(~z.raw.evex.vvvv & 15);
		in->opc_off = (uint8_t)(in->vex_off + 4);
	}
	return 0;
}

int ps_x86_find_boundary(const uint8_t *buf, size_t n, uint64_t base, uint64_t addr, uint64_t *at, uint64_t *next)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction z;
	uint64_t a = base;

	*at = *next = base;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return -1;
	while (a <= addr && a - base < n) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, buf + (a - base), n - (a - base), &z)))
			break;
		*at = a;
		*next = a + z.length;
		if (a == addr)
			return 0;
		if (*next > addr)
			return 1;
		a = *next;
	}
	*at = *next = a;
	return -1;
}

/* The general register an instruction of the one-byte map writes: 0..15, -1 none (a compare,
   a memory destination), -2 unknown. */
static int written_reg(const struct ps_x86_insn *in)
{
	int reg = ((in->modrm >> 3) & 7) | (in->rex & 4 ? 8 : 0);
	int rm = (in->modrm & 7) | (in->rex & 1 ? 8 : 0);
	int rm_dst = in->modrm >> 6 == 3 ? rm : -1;
	uint8_t op = in->opcode;

	if (op >= 0xb8 && op <= 0xbf) /* mov $imm, r */
		return (op & 7) | (in->rex & 1 ? 8 : 0);
	if (!in->has_modrm)
		return -2;
	if (op < 0x40 && (op & 7) == 1) /* add/or/adc/sbb/and/sub/xor r, r/m; cmp writes nothing */
		return op == 0x39 ? -1 : rm_dst;
	if (op < 0x40 && (op & 7) == 3) /* the same, r/m into r */
		return op == 0x3b ? -1 : reg;
	switch (op) {
	case 0x85: /* test */
		return -1;
	case 0x89: /* mov r, r/m */
		return rm_dst;
	case 0x8b: /* mov r/m, r */
	case 0x8d: /* lea */
	case 0x63: /* movsxd */
		return reg;
	case 0x81:
	case 0x83: /* ALU $imm, r/m: /7 is cmp */
		return ((in->modrm >> 3) & 7) == 7 ? -1 : rm_dst;
	case 0xc7: /* mov $imm, r/m */
		return ((in->modrm >> 3) & 7) == 0 ? rm_dst : -2;
	}
	return -2;
}

int ps_x86_entry_step(const uint8_t *buf, size_t n, unsigned *len, unsigned *sp_down)
{
	struct ps_x86_insn in;
	int dst = -1;

	if (ps_x86_decode(buf, n, &in) || in.vex || in.lock || in.p66 || in.other_prefix)
		return -1;
	*len = in.len;
	*sp_down = 0;
	if (in.map == 1) {
		if (in.opcode == 0x1e && in.pf3 && in.modrm == 0xfa) /* endbr64 */
			return 0;
		if (in.opcode == 0x1f && !in.pf3 && !in.pf2) /* nop r/m */
			return 0;
		if (in.pf3 || in.pf2 ||
		    (in.opcode != 0xb6 && in.opcode != 0xb7 && in.opcode != 0xbe && in.opcode != 0xbf &&
		     in.opcode != 0xaf)) /* movzx, movsx, imul */
			return -1;
		dst = ((in.modrm >> 3) & 7) | (in.rex & 4 ? 8 : 0);
	} else if (in.map != 0 || in.pf3 || in.pf2) {
		return -1;
	} else if (in.opcode >= 0x50 && in.opcode <= 0x57) { /* push r */
		*sp_down = 8;
		return 0;
	} else if (in.opcode == 0x90 && !in.rex) { /* nop */
		return 0;
	} else if ((in.opcode == 0x83 || in.opcode == 0x81) && in.modrm == 0xec && (in.rex & 0xf9) == 0x48) {
		/* sub $imm, %rsp */
		int32_t imm;
		if (in.imm_len == 1) {
			imm = (int8_t)buf[in.imm_off];
		} else {
			memcpy(&imm, buf + in.imm_off, sizeof imm);
		}
		if (imm < 0)
			return -1;
		*sp_down = (unsigned)imm;
		return 0;
	} else {
		dst = written_reg(&in);
	}
	/* -2 unknown, 4 the stack pointer; rcx 1, rdx 2, rsi 6, rdi 7, r8, r9 hold arguments */
	if (dst == -2 || dst == 4 || dst == 1 || dst == 2 || dst == 6 || dst == 7 || dst == 8 || dst == 9)
		return -1;
	return 0;
}
