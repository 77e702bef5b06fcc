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

/* The source of @e: a general register or an immediate. Return 0, or -1 for anything else. */
static int source(struct ps_x86_emu *e, const struct ps_x86_opnd *s)
{
	if (s->kind == PS_X86_OPND_IMM) {
		e->imm = s->val;
		return 0;
	}
	if (s->kind != PS_X86_OPND_REG || s->reg < 0)
		return -1;
	e->src = s->reg;
	if (e->op == E_MOVZX || e->op == E_MOVSX)
		e->srcsize = s->size;
	return 0;
}

/* lea: any address (it reads no memory), rip-relative ones from the next instruction's address. */
static int lea(struct ps_x86_emu *e, const struct ps_x86_opnd *m, uint64_t next)
{
	if (m->kind != PS_X86_OPND_MEM || m->base == PS_X86_OTHREG || m->index == PS_X86_OTHREG || e->size == 2)
		return -1;
	e->op = E_LEA;
	e->imm = m->val + (m->riprel ? (int64_t)next : 0);
	e->base = m->base;
	e->index = m->index;
	e->scale = m->scale;
	return 0;
}

/* What instruction @in does to a general register (its first operand), from its operands. */
static int operands(struct ps_x86_emu *e, const struct ps_x86_insn *in, uint64_t next)
{
	const struct ps_x86_opnd *d = &in->opnd[0], *s = &in->opnd[1];

	if (!in->nopnd || d->kind != PS_X86_OPND_REG || d->reg < 0)
		return -1;
	e->dst = d->reg;
	e->size = d->size;
	if (in->op == PS_X86_PUSH) {
		e->op = E_PUSH;
		return in->nopnd == 1 && d->size == 8 ? 0 : -1;
	}
	if (in->nopnd != 2)
		return -1;
	if (in->op >= PS_X86_ADD && in->op <= PS_X86_CMP)
		e->op = (uint8_t)(E_ALU + in->op - PS_X86_ADD);
	else if (in->op == PS_X86_TEST)
		e->op = E_TEST;
	else if (in->op == PS_X86_MOV)
		e->op = E_MOV;
	else if (in->op == PS_X86_MOVZX)
		e->op = E_MOVZX;
	else if (in->op == PS_X86_MOVSX && (d->size == 8 || s->size < 4)) /* movsxd: with REX.W */
		e->op = E_MOVSX;
	else if (in->op == PS_X86_LEA)
		return lea(e, s, next);
	else
		return -1;
	return source(e, s);
}

int ps_x86_emu_prepare(struct ps_x86_emu *e, const uint8_t *code, size_t n, uint64_t addr)
{
	struct ps_x86_insn in;

	memset(e, 0, sizeof *e);
	e->src = e->base = e->index = -1;
	if (ps_x86_decode(code, n, addr, &in) || in.vex || (in.prefixes & PS_X86_LOCK))
		return -1;
	e->len = in.len;
	e->op = E_NOP;
	if (in.flow == PS_X86_NOP)
		return 0;
	if (in.flow != PS_X86_NEXT || (in.prefixes & (PS_X86_REP | PS_X86_REPNE | PS_X86_P67 | PS_X86_SEG)))
		return -1;
	return operands(e, &in, addr + in.len);
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
