/* core/x86insn.c - x86-64 instruction decoding for the tracer, by Zydis (64-bit mode only).
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
