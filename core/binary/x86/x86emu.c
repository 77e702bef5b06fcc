/* core/binary/x86/x86emu.c - exact emulation of register-only entry instructions (see x86emu.h). */
#include "x86emu.h"

#include "x86insn.h"

#include <stddef.h>
#include <string.h>

enum {
	E_ALU,	    /* + 0..7: add or adc sbb and sub xor cmp (the opcode's /reg order) */
	E_TEST = 8, /* and, flags only */
	E_MOV,	    /* dst = src or imm */
	E_MOVZX,    /* dst = zero-extended src */
	E_MOVSX,    /* dst = sign-extended src (movsx, movsxd) */
	E_LEA,	    /* dst = imm + base + index * scale */
	E_PUSH,	    /* rsp -= 8, store dst */
	E_NOP,	    /* endbr64, nop, nop r/m (which reads no memory) */
	K_ADD = 0,
	K_OR,
	K_ADC,
	K_SBB,
	K_AND,
	K_SUB,
	K_XOR,
	K_CMP,
};

#define F_CF 0x001ull
#define F_PF 0x004ull
#define F_AF 0x010ull
#define F_ZF 0x040ull
#define F_SF 0x080ull
#define F_OF 0x800ull
#define F_ARITH (F_CF | F_PF | F_AF | F_ZF | F_SF | F_OF)

static const uint8_t gpr_off[16] = {
    offsetof(struct user_regs_struct, rax), offsetof(struct user_regs_struct, rcx),
    offsetof(struct user_regs_struct, rdx), offsetof(struct user_regs_struct, rbx),
    offsetof(struct user_regs_struct, rsp), offsetof(struct user_regs_struct, rbp),
    offsetof(struct user_regs_struct, rsi), offsetof(struct user_regs_struct, rdi),
    offsetof(struct user_regs_struct, r8),  offsetof(struct user_regs_struct, r9),
    offsetof(struct user_regs_struct, r10), offsetof(struct user_regs_struct, r11),
    offsetof(struct user_regs_struct, r12), offsetof(struct user_regs_struct, r13),
    offsetof(struct user_regs_struct, r14), offsetof(struct user_regs_struct, r15),
};

static unsigned long long *gpr(struct user_regs_struct *r, int n)
{
	return (unsigned long long *)(void *)((char *)r + gpr_off[n & 15]);
}

static uint64_t mask(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

/* Register @n read as @size bytes; 16..19 are ah ch dh bh. */
static uint64_t get(struct user_regs_struct *r, int n, unsigned size)
{
	if (n >= 16)
		return (*gpr(r, n - 16) >> 8) & 0xff;
	return *gpr(r, n) & mask(size);
}

/* Write @v as @size bytes: 32-bit writes zero-extend, 8- and 16-bit ones merge. */
static void set(struct user_regs_struct *r, int n, unsigned size, uint64_t v)
{
	unsigned long long *p = gpr(r, n >= 16 ? n - 16 : n);

	if (n >= 16)
		*p = (*p & ~0xff00ull) | (v & 0xff) << 8;
	else if (size >= 4)
		*p = v & mask(size);
	else
		*p = (*p & ~mask(size)) | (v & mask(size));
}

/* A byte register's number: without REX, 4..7 name ah ch dh bh. */
static int8_t byte_reg(int n, int rex)
{
	return (int8_t)(!rex && n >= 4 && n < 8 ? 16 + n - 4 : n);
}

static int64_t le_signed(const uint8_t *p, int len)
{
	uint64_t v = 0;
	for (int i = len - 1; i >= 0; i--)
		v = v << 8 | p[i];
	if (len > 0 && len < 8 && (v >> (8 * len - 1)) & 1)
		v |= ~0ull << (8 * len);
	return (int64_t)v;
}

/* The one-byte map. Return 0 if emulable. */
static int map0(struct ps_x86_emu *e, const struct ps_x86_insn *in, const uint8_t *code, uint64_t next)
{
	uint8_t op = in->opcode, rex = in->rex;
	int mod = in->modrm >> 6, sub = (in->modrm >> 3) & 7;
	int reg = sub | (rex & 4 ? 8 : 0), rm = (in->modrm & 7) | (rex & 1 ? 8 : 0);
	unsigned osz = rex & 8 ? 8 : in->p66 ? 2 : 4;
	int regform = in->has_modrm && mod == 3;

	e->size = (uint8_t)osz;
	if (op < 0x40 && (op & 7) < 6) {
		int form = op & 7;
		e->op = (uint8_t)(E_ALU + (op >> 3));
		if (!(form & 1))
			e->size = 1;
		if (form >= 4) {
			e->dst = 0;
			return 0;
		}
		if (!regform)
			return -1;
		int d = form & 2 ? reg : rm, s = form & 2 ? rm : reg;
		e->dst = (int8_t)(e->size == 1 ? byte_reg(d, rex) : d);
		e->src = (int8_t)(e->size == 1 ? byte_reg(s, rex) : s);
		return 0;
	}
	switch (op) {
	case 0x80:
	case 0x81:
	case 0x83:
	case 0xc6:
	case 0xc7:
	case 0xf6:
	case 0xf7:
		if (!regform)
			return -1;
		if (op >= 0xc6 && sub != 0)
			return -1; /* c6/c7 /0 mov; f6/f7 /0 test (the others: not, neg, mul, div) */
		e->op = (uint8_t)(op == 0xc6 || op == 0xc7 ? E_MOV : op >= 0xf6 ? E_TEST : E_ALU + sub);
		if (!(op & 1))
			e->size = 1;
		e->dst = (int8_t)(e->size == 1 ? byte_reg(rm, rex) : rm);
		return 0;
	case 0xa8:
	case 0xa9:
		e->op = E_TEST;
		e->dst = 0;
		if (op == 0xa8)
			e->size = 1;
		return 0;
	case 0x84:
	case 0x85:
	case 0x88:
	case 0x89:
	case 0x8a:
	case 0x8b: {
		if (!regform)
			return -1;
		int d = op == 0x8a || op == 0x8b ? reg : rm, s = op == 0x8a || op == 0x8b ? rm : reg;
		e->op = op <= 0x85 ? E_TEST : E_MOV;
		if (!(op & 1))
			e->size = 1;
		e->dst = (int8_t)(e->size == 1 ? byte_reg(d, rex) : d);
		e->src = (int8_t)(e->size == 1 ? byte_reg(s, rex) : s);
		return 0;
	}
	case 0x63: /* movsxd with REX.W (without it: a 32-bit mov the SDM discourages) */
		if (!regform || !(rex & 8))
			return -1;
		e->op = E_MOVSX;
		e->srcsize = 4;
		e->dst = (int8_t)reg;
		e->src = (int8_t)rm;
		return 0;
	case 0x8d:
		if (!in->has_modrm || mod == 3 || in->p66)
			return -1;
		e->op = E_LEA;
		e->dst = (int8_t)reg;
		e->imm = in->disp_len ? le_signed(code + in->disp_off, in->disp_len) : 0;
		if (in->riprel) {
			e->imm += (int64_t)next;
		} else if ((in->modrm & 7) == 4) {
			uint8_t sib = code[in->modrm_off + 1];
			int idx = ((sib >> 3) & 7) | (rex & 2 ? 8 : 0);
			e->scale = (uint8_t)(1 << (sib >> 6));
			e->index = (int8_t)(idx == 4 ? -1 : idx);
			e->base = (int8_t)((sib & 7) == 5 && mod == 0 ? -1 : (sib & 7) | (rex & 1 ? 8 : 0));
		} else {
			e->base = (int8_t)rm;
		}
		return 0;
	}
	if (op >= 0x50 && op <= 0x57 && !in->p66) {
		e->op = E_PUSH;
		e->size = 8;
		e->dst = (int8_t)((op & 7) | (rex & 1 ? 8 : 0));
		return 0;
	}
	if (op >= 0xb0 && op <= 0xbf) {
		int n = (op & 7) | (rex & 1 ? 8 : 0);
		e->op = E_MOV;
		if (op < 0xb8)
			e->size = 1;
		e->dst = (int8_t)(e->size == 1 ? byte_reg(n, rex) : n);
		return 0;
	}
	return -1;
}

int ps_x86_emu_prepare(struct ps_x86_emu *e, const uint8_t *code, size_t n, uint64_t addr)
{
	struct ps_x86_insn in;

	memset(e, 0, sizeof *e);
	e->src = e->base = e->index = -1;
	if (ps_x86_decode(code, n, &in) || in.vex || in.lock)
		return -1;
	e->len = in.len;
	e->op = E_NOP;
	if (in.map == 1 && in.opcode == 0x1e && in.pf3 && (in.modrm == 0xfa || in.modrm == 0xfb))
		return 0; /* endbr64, endbr32 */
	if (in.pf2 || in.pf3 || in.p67 || in.other_prefix)
		return -1;
	if ((in.map == 0 && in.opcode == 0x90 && !(in.rex & 1)) ||
	    (in.map == 1 && in.opcode == 0x1f && !((in.modrm >> 3) & 7)))
		return 0;
	if (in.imm_len)
		e->imm = le_signed(code + in.imm_off, in.imm_len);
	if (in.map == 0)
		return map0(e, &in, code, addr + in.len);
	if (in.map != 1 || (in.opcode & 0xf6) != 0xb6 || !in.has_modrm || in.modrm >> 6 != 3)
		return -1;
	/* movzx (0f b6, b7), movsx (0f be, bf) from a register */
	int reg = ((in.modrm >> 3) & 7) | (in.rex & 4 ? 8 : 0), rm = (in.modrm & 7) | (in.rex & 1 ? 8 : 0);
	e->op = in.opcode & 8 ? E_MOVSX : E_MOVZX;
	e->size = in.rex & 8 ? 8 : in.p66 ? 2 : 4;
	e->srcsize = in.opcode & 1 ? 2 : 1;
	e->dst = (int8_t)reg;
	e->src = (int8_t)(e->srcsize == 1 ? byte_reg(rm, in.rex) : rm);
	return 0;
}

/* ZF SF PF of a @size-byte result. */
static uint64_t zsp(uint64_t v, unsigned size)
{
	return (v == 0 ? F_ZF : 0) | ((v >> (8 * size - 1)) & 1 ? F_SF : 0) |
	       (__builtin_parity((unsigned)(v & 0xff)) ? 0 : F_PF);
}

/* One of add or adc sbb and sub xor cmp test on @size bytes: the result, *fl updated. */
static uint64_t alu(int k, unsigned size, uint64_t a, uint64_t b, unsigned long long *fl)
{
	uint64_t m = mask(size), sign = 1ull << (8 * size - 1), v, f = 0;
	unsigned c = (k == K_ADC || k == K_SBB) ? (unsigned)(*fl & F_CF) : 0;
	unsigned __int128 wa, wb;

	a &= m;
	b &= m;
	wa = a;
	wb = b;
	switch (k) {
	case K_ADD:
	case K_ADC:
		v = (a + b + c) & m;
		f |= ((wa + wb + c) >> (8 * size)) & 1 ? F_CF : 0;
		f |= (a ^ v) & (b ^ v) & sign ? F_OF : 0;
		f |= (a ^ b ^ v) & 0x10 ? F_AF : 0;
		break;
	case K_SBB:
	case K_SUB:
	case K_CMP:
		v = (a - b - c) & m;
		f |= wa < wb + c ? F_CF : 0;
		f |= (a ^ b) & (a ^ v) & sign ? F_OF : 0;
		f |= (a ^ b ^ v) & 0x10 ? F_AF : 0;
		break;
	case K_OR:
		v = a | b;
		break;
	case K_XOR:
		v = a ^ b;
		break;
	default: /* and, test */
		v = a & b;
		break;
	}
	*fl = (*fl & ~F_ARITH) | f | zsp(v, size);
	return v;
}

int ps_x86_emu_run(const struct ps_x86_emu *e, struct user_regs_struct *r, uint64_t *store)
{
	uint64_t s = e->src >= 0 ? get(r, e->src, e->op == E_MOVZX || e->op == E_MOVSX ? e->srcsize : e->size)
				 : (uint64_t)e->imm;
	int rc = 0;

	if (e->op < E_TEST) {
		uint64_t v = alu(e->op - E_ALU, e->size, get(r, e->dst, e->size), s, &r->eflags);
		if (e->op - E_ALU != K_CMP)
			set(r, e->dst, e->size, v);
	} else if (e->op == E_TEST) {
		alu(K_AND, e->size, get(r, e->dst, e->size), s, &r->eflags);
	} else if (e->op == E_MOV || e->op == E_MOVZX) {
		set(r, e->dst, e->size, s);
	} else if (e->op == E_MOVSX) {
		unsigned sh = 64 - 8 * e->srcsize;
		set(r, e->dst, e->size, (uint64_t)((int64_t)(s << sh) >> sh));
	} else if (e->op == E_LEA) {
		uint64_t a = (uint64_t)e->imm;
		if (e->base >= 0)
			a += *gpr(r, e->base);
		if (e->index >= 0)
			a += *gpr(r, e->index) * e->scale;
		set(r, e->dst, e->size, a);
	} else if (e->op == E_PUSH) { /* the value before rsp moves (push %rsp pushes the old rsp) */
		*store = *gpr(r, e->dst);
		r->rsp -= 8;
		rc = 1;
	}
	r->rip += e->len;
	return rc;
}
