/* core/x86insn.c - x86-64 instruction length decoder (64-bit mode only).
 *
 * Legacy prefixes, REX, VEX (c4/c5) and EVEX (62); the one-byte, 0f, 0f38 and 0f3a maps.
 * It answers "how long, where are ModRM/displacement/immediate, is it rip-relative";
 * it does not name instructions.
 */
#include "x86insn.h"

#include <string.h>

/* One bit per opcode: 1 if the one-byte opcode has a ModRM byte. */
static int modrm1(uint8_t op)
{
	if (op < 0x40)
		return (op & 7) < 4;
	switch (op) {
	case 0x63:
	case 0x69:
	case 0x6b:
	case 0xc0:
	case 0xc1:
	case 0xc6:
	case 0xc7:
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
	case 0xf6:
	case 0xf7:
	case 0xfe:
	case 0xff:
		return 1;
	}
	return (op >= 0x80 && op <= 0x8f) || (op >= 0xd8 && op <= 0xdf);
}

/* Opcodes that do not exist in 64-bit mode (or that this decoder refuses). */
static int invalid1(uint8_t op)
{
	switch (op) {
	case 0x06:
	case 0x07:
	case 0x0e:
	case 0x16:
	case 0x17:
	case 0x1e:
	case 0x1f:
	case 0x27:
	case 0x2f:
	case 0x37:
	case 0x3f:
	case 0x60:
	case 0x61:
	case 0x82:
	case 0x9a:
	case 0xce:
	case 0xd4:
	case 0xd5:
	case 0xd6:
	case 0xea:
		return 1;
	}
	return 0;
}

/* Immediate size of a one-byte opcode; z is the size of an "Iz" operand (2 or 4).
 * The f6/f7 groups are handled by the caller (they depend on ModRM.reg). */
static int imm1(uint8_t op, int z, int rexw, int p67)
{
	if (op < 0x40) {
		int c = op & 7;
		return c == 4 ? 1 : c == 5 ? z : 0;
	}
	if (op >= 0x70 && op <= 0x7f)
		return 1;
	if (op >= 0xb0 && op <= 0xb7)
		return 1;
	if (op >= 0xb8 && op <= 0xbf)
		return rexw ? 8 : z;
	if (op >= 0xe0 && op <= 0xe7)
		return 1;
	if (op >= 0xa0 && op <= 0xa3)
		return p67 ? 4 : 8;
	switch (op) {
	case 0x6a:
	case 0x6b:
	case 0x80:
	case 0x83:
	case 0xa8:
	case 0xc0:
	case 0xc1:
	case 0xc6:
	case 0xcd:
	case 0xeb:
		return 1;
	case 0x68:
	case 0x69:
	case 0x81:
	case 0xa9:
	case 0xc7:
		return z;
	case 0xe8:
	case 0xe9:
		return 4;
	case 0xc2:
	case 0xca:
		return 2;
	case 0xc8:
		return 3;
	}
	return 0;
}

/* 0f map: 1 if the opcode has no ModRM byte. */
static int nomodrm0f(uint8_t op)
{
	if (op >= 0x80 && op <= 0x8f)
		return 1;
	if (op >= 0xc8 && op <= 0xcf)
		return 1;
	if (op >= 0x30 && op <= 0x37)
		return 1;
	switch (op) {
	case 0x05:
	case 0x06:
	case 0x07:
	case 0x08:
	case 0x09:
	case 0x0b:
	case 0x0e:
	case 0x77:
	case 0xa0:
	case 0xa1:
	case 0xa2:
	case 0xa8:
	case 0xa9:
	case 0xaa:
		return 1;
	}
	return 0;
}

static int invalid0f(uint8_t op)
{
	switch (op) {
	case 0x04:
	case 0x0a:
	case 0x0c:
	case 0x0f:
	case 0x24:
	case 0x25:
	case 0x26:
	case 0x27:
	case 0x36:
	case 0x39:
	case 0x3b:
	case 0x3c:
	case 0x3d:
	case 0x3e:
	case 0x3f:
	case 0x7a:
	case 0x7b:
		return 1;
	}
	return 0;
}

/* imm8 in the 0f map (also VEX/EVEX map 1). */
static int imm0f(uint8_t op)
{
	return (op >= 0x70 && op <= 0x73) || op == 0xa4 || op == 0xac || op == 0xba || op == 0xc2 ||
	       (op >= 0xc4 && op <= 0xc6);
}

/* Parse ModRM (+SIB, displacement) at @p; returns the new offset or -1. */
static int parse_modrm(const uint8_t *b, size_t n, int p, struct ps_x86_insn *in)
{
	uint8_t m, mod, rm;

	if ((size_t)p >= n)
		return -1;
	m = b[p];
	in->has_modrm = 1;
	in->modrm = m;
	in->modrm_off = (uint8_t)p;
	p++;
	mod = m >> 6;
	rm = m & 7;
	if (mod == 3)
		return p;
	if (rm == 4) {
		if ((size_t)p >= n)
			return -1;
		uint8_t sib = b[p++];
		if (mod == 0 && (sib & 7) == 5)
			in->disp_len = 4;
	}
	if (mod == 0 && rm == 5) {
		in->disp_len = 4;
		in->riprel = 1;
	} else if (mod == 1) {
		in->disp_len = 1;
	} else if (mod == 2) {
		in->disp_len = 4;
	}
	if (in->disp_len)
		in->disp_off = (uint8_t)p;
	return p + in->disp_len;
}

int ps_x86_decode(const uint8_t *b, size_t n, struct ps_x86_insn *in)
{
	int p = 0, rexw = 0, imm = 0, z;

	memset(in, 0, sizeof *in);
	if (n > 15)
		n = 15;
	/* legacy prefixes, REX (REX counts only right before the opcode) */
	for (;;) {
		if ((size_t)p >= n)
			return -1;
		uint8_t c = b[p];
		if (c == 0x66 || c == 0x67 || c == 0xf0 || c == 0xf2 || c == 0xf3 || c == 0x2e || c == 0x36 ||
		    c == 0x3e || c == 0x26 || c == 0x64 || c == 0x65) {
			in->p66 |= c == 0x66;
			in->p67 |= c == 0x67;
			in->lock |= c == 0xf0;
			in->pf2 |= c == 0xf2;
			in->pf3 |= c == 0xf3;
			in->other_prefix |= c == 0x2e || c == 0x36 || c == 0x3e || c == 0x26 || c == 0x64 || c == 0x65;
			in->nlegacy++;
			in->rex = 0;
			p++;
			continue;
		}
		if ((c & 0xf0) == 0x40) {
			in->rex = c;
			in->rex_off = (uint8_t)p;
			p++;
			continue;
		}
		break;
	}
	rexw = (in->rex & 8) != 0;
	z = (in->p66 && !rexw) ? 2 : 4;

	uint8_t c = b[p];
	if (c == 0xc4 || c == 0xc5 || c == 0x62) {
		/* VEX / EVEX: map and vvvv from the prefix, opcode, ModRM (except vzeroupper) */
		int map, w;
		if (in->rex)
			return -1;
		in->vex_off = (uint8_t)p;
		if (c == 0xc5) {
			if ((size_t)p + 3 > n)
				return -1;
			in->vex = 2;
			map = 1;
			in->vvvv = (uint8_t)((~b[p + 1] >> 3) & 15);
			p += 2;
		} else if (c == 0xc4) {
			if ((size_t)p + 4 > n)
				return -1;
			in->vex = 3;
			map = b[p + 1] & 31;
			w = b[p + 2] >> 7;
			(void)w;
			in->vvvv = (uint8_t)((~b[p + 2] >> 3) & 15);
			p += 3;
		} else {
			if ((size_t)p + 5 > n)
				return -1;
			in->vex = 4;
			map = b[p + 1] & 7;
			in->vvvv = (uint8_t)((~b[p + 2] >> 3) & 15);
			p += 4;
		}
		if (map < 1 || map > 6 || map == 4 || (in->vex != 4 && map > 3))
			return -1;
		in->map = (uint8_t)map;
		in->opc_off = (uint8_t)p;
		in->opcode = b[p++];
		if (!(map == 1 && in->opcode == 0x77 && in->vex != 4)) {
			p = parse_modrm(b, n, p, in);
			if (p < 0)
				return -1;
		}
		if (map == 3 || (map == 1 && imm0f(in->opcode)))
			imm = 1;
		goto imm;
	}

	if (c != 0x0f) {
		if (invalid1(c))
			return -1;
		in->map = 0;
		in->opc_off = (uint8_t)p;
		in->opcode = c;
		p++;
		if (modrm1(c)) {
			p = parse_modrm(b, n, p, in);
			if (p < 0)
				return -1;
		}
		imm = imm1(c, z, rexw, in->p67);
		if ((c == 0xf6 || c == 0xf7) && ((in->modrm >> 3) & 7) < 2)
			imm = c == 0xf6 ? 1 : z;
		goto imm;
	}

	/* two- and three-byte maps */
	if ((size_t)p + 2 > n)
		return -1;
	c = b[p + 1];
	if (c == 0x38 || c == 0x3a) {
		if ((size_t)p + 3 > n)
			return -1;
		in->map = c == 0x38 ? 2 : 3;
		in->opc_off = (uint8_t)(p + 2);
		in->opcode = b[p + 2];
		p += 3;
		p = parse_modrm(b, n, p, in);
		if (p < 0)
			return -1;
		imm = in->map == 3;
		goto imm;
	}
	if (invalid0f(c))
		return -1;
	in->map = 1;
	in->opc_off = (uint8_t)(p + 1);
	in->opcode = c;
	p += 2;
	if (!nomodrm0f(c)) {
		p = parse_modrm(b, n, p, in);
		if (p < 0)
			return -1;
	}
	if (c >= 0x80 && c <= 0x8f)
		imm = 4;
	else if (imm0f(c))
		imm = 1;

imm:
	if (imm) {
		in->imm_off = (uint8_t)p;
		in->imm_len = (uint8_t)imm;
		p += imm;
	}
	if ((size_t)p > n)
		return -1;
	in->len = (uint8_t)p;
	return 0;
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
