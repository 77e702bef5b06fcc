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
