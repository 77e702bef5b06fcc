/* core/binary/x86/x86insn.c - what one x86-64 instruction means, from Zydis's decoded instruction and
 * operands (64-bit mode only); see x86insn.h. */
#include "x86insn.h"

#include <Zydis/Zydis.h>
#include <string.h>

static bool decoder(ZydisDecoder *dec)
{
	return ZYAN_SUCCESS(ZydisDecoderInit(dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64));
}

/* The legacy prefixes and REX, as Zydis saw them. */
static uint8_t prefixes(const ZydisDecodedInstruction *z)
{
	uint8_t p = 0;

	for (int i = 0; i < z->raw.prefix_count; i++) {
		uint8_t c = z->raw.prefixes[i].value;
		p |= (c & 0xf0) == 0x40 ? 0 /* REX: below */
		     : c == 0x66	? PS_X86_P66
		     : c == 0x67	? PS_X86_P67
		     : c == 0xf0	? PS_X86_LOCK
		     : c == 0xf3	? PS_X86_REP
		     : c == 0xf2	? PS_X86_REPNE
					: PS_X86_SEG;
	}
	if (z->attributes & ZYDIS_ATTRIB_HAS_REX)
		p |= PS_X86_REX;
	return p;
}

/* A register's number in x86insn.h's numbering: 0..15, 16..19 for ah..bh, or PS_X86_OTHREG. */
static int8_t gpr(ZydisRegister r)
{
	ZydisRegisterClass c = ZydisRegisterGetClass(r);

	if (r == ZYDIS_REGISTER_NONE)
		return PS_X86_NOREG;
	if (c != ZYDIS_REGCLASS_GPR8 && c != ZYDIS_REGCLASS_GPR16 && c != ZYDIS_REGCLASS_GPR32 &&
	    c != ZYDIS_REGCLASS_GPR64)
		return PS_X86_OTHREG;
	int8_t n = (int8_t)(ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r) - ZYDIS_REGISTER_RAX);
	return (int8_t)(r >= ZYDIS_REGISTER_AH && r <= ZYDIS_REGISTER_BH ? 16 + n : n);
}

static uint32_t bit(int8_t reg)
{
	return reg >= 0 ? 1u << (reg & 15) : 0;
}

/* What Zydis's mnemonic means to the emulator and the entry step. */
static uint8_t op_of(ZydisMnemonic m)
{
	static const struct {
		ZydisMnemonic m;
		uint8_t op;
	} ops[] = {
	    {ZYDIS_MNEMONIC_ADD, PS_X86_ADD},	   {ZYDIS_MNEMONIC_OR, PS_X86_OR},
	    {ZYDIS_MNEMONIC_ADC, PS_X86_ADC},	   {ZYDIS_MNEMONIC_SBB, PS_X86_SBB},
	    {ZYDIS_MNEMONIC_AND, PS_X86_AND},	   {ZYDIS_MNEMONIC_SUB, PS_X86_SUB},
	    {ZYDIS_MNEMONIC_XOR, PS_X86_XOR},	   {ZYDIS_MNEMONIC_CMP, PS_X86_CMP},
	    {ZYDIS_MNEMONIC_TEST, PS_X86_TEST},	   {ZYDIS_MNEMONIC_MOV, PS_X86_MOV},
	    {ZYDIS_MNEMONIC_MOVZX, PS_X86_MOVZX},  {ZYDIS_MNEMONIC_MOVSX, PS_X86_MOVSX},
	    {ZYDIS_MNEMONIC_MOVSXD, PS_X86_MOVSX}, {ZYDIS_MNEMONIC_LEA, PS_X86_LEA},
	    {ZYDIS_MNEMONIC_PUSH, PS_X86_PUSH},	   {ZYDIS_MNEMONIC_PUSHFQ, PS_X86_PUSHFQ},
	    {ZYDIS_MNEMONIC_IMUL, PS_X86_IMUL},
	};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (ops[i].m == m)
			return ops[i].op;
	return PS_X86_OTHER;
}

/* The condition of a jcc (the low nibble of its opcode), or -1. */
static int condition(ZydisMnemonic m)
{
	static const ZydisMnemonic cc[16] = {
	    ZYDIS_MNEMONIC_JO, ZYDIS_MNEMONIC_JNO, ZYDIS_MNEMONIC_JB,  ZYDIS_MNEMONIC_JNB,
	    ZYDIS_MNEMONIC_JZ, ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_JNBE,
	    ZYDIS_MNEMONIC_JS, ZYDIS_MNEMONIC_JNS, ZYDIS_MNEMONIC_JP,  ZYDIS_MNEMONIC_JNP,
	    ZYDIS_MNEMONIC_JL, ZYDIS_MNEMONIC_JNL, ZYDIS_MNEMONIC_JLE, ZYDIS_MNEMONIC_JNLE,
	};
	for (int i = 0; i < 16; i++)
		if (cc[i] == m)
			return i;
	return -1;
}

/* The flow of an instruction that is no jcc. */
static uint8_t flow_of(const ZydisDecodedInstruction *z, uint8_t prefixes, bool relative, uint8_t *cc)
{
	bool far = z->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;

	switch (z->mnemonic) {
	case ZYDIS_MNEMONIC_NOP: /* 90 (not f2 90) and 0f 1f (not under f2 or f3) */
		return (z->opcode == 0x90 && !(prefixes & PS_X86_REPNE)) ||
			       (z->opcode == 0x1f && !(prefixes & (PS_X86_REP | PS_X86_REPNE)))
			   ? PS_X86_NOP
			   : PS_X86_NEXT;
	case ZYDIS_MNEMONIC_PAUSE:
	case ZYDIS_MNEMONIC_ENDBR64:
	case ZYDIS_MNEMONIC_ENDBR32:
		return PS_X86_NOP;
	case ZYDIS_MNEMONIC_LOOPNE:
		*cc = 0;
		return PS_X86_LOOP;
	case ZYDIS_MNEMONIC_LOOPE:
		*cc = 1;
		return PS_X86_LOOP;
	case ZYDIS_MNEMONIC_LOOP:
		*cc = 2;
		return PS_X86_LOOP;
	case ZYDIS_MNEMONIC_JRCXZ:
	case ZYDIS_MNEMONIC_JECXZ:
		*cc = 3;
		return PS_X86_LOOP;
	case ZYDIS_MNEMONIC_XBEGIN:
		return PS_X86_XBEGIN;
	case ZYDIS_MNEMONIC_XEND:
		return PS_X86_XEND;
	case ZYDIS_MNEMONIC_XABORT:
		return PS_X86_XABORT;
	case ZYDIS_MNEMONIC_JMP:
		return far ? PS_X86_FAR_JMP : relative ? PS_X86_JMP : PS_X86_JMP_IND;
	case ZYDIS_MNEMONIC_CALL:
		return far ? PS_X86_FAR_CALL : relative ? PS_X86_CALL : PS_X86_CALL_IND;
	case ZYDIS_MNEMONIC_RET:
		return far ? PS_X86_FAR_RET : PS_X86_RET;
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
		return PS_X86_INT;
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
		return PS_X86_IRET;
	case ZYDIS_MNEMONIC_SYSCALL:
	case ZYDIS_MNEMONIC_SYSENTER:
	case ZYDIS_MNEMONIC_SYSRET:
	case ZYDIS_MNEMONIC_SYSEXIT:
		return PS_X86_SYSCALL;
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT:
		return PS_X86_STOP;
	default:
		return z->meta.category == ZYDIS_CATEGORY_SYSTEM ? PS_X86_SYSTEM : PS_X86_NEXT;
	}
}

/* One of Zydis's operands: into @in's register sets, and into @o when visible. */
static void operand(struct ps_x86_insn *in, const ZydisDecodedInstruction *z, const ZydisDecodedOperand *zo,
		    uint64_t addr, struct ps_x86_opnd *o)
{
	struct ps_x86_opnd x = {.size = (uint8_t)(zo->size / 8), .reg = PS_X86_NOREG};

	if (zo->type == ZYDIS_OPERAND_TYPE_REGISTER) {
		x.kind = PS_X86_OPND_REG;
		x.reg = gpr(zo->reg.value);
		if (zo->actions & ZYDIS_OPERAND_ACTION_MASK_READ)
			in->reads |= bit(x.reg);
		if (zo->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
			in->writes |= bit(x.reg);
	} else if (zo->type == ZYDIS_OPERAND_TYPE_MEMORY) {
		x.kind = PS_X86_OPND_MEM;
		x.riprel = zo->mem.base == ZYDIS_REGISTER_RIP;
		x.base = x.riprel ? PS_X86_NOREG : gpr(zo->mem.base);
		x.index = gpr(zo->mem.index);
		x.scale = zo->mem.scale;
		x.val = zo->mem.disp.value;
		in->reads |= bit(x.base) | bit(x.index);
		in->riprel |= x.riprel;
	} else if (zo->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
		x.kind = PS_X86_OPND_IMM;
		x.val = zo->imm.is_signed ? zo->imm.value.s : (int64_t)zo->imm.value.u;
		if (zo->imm.is_relative) {
			ZyanU64 to;
			if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(z, zo, addr, &to)))
				in->target = to;
		}
	}
	if (o)
		*o = x;
}

int ps_x86_decode(const uint8_t *buf, size_t n, uint64_t addr, struct ps_x86_insn *in)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction z;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
	bool relative = false;

	memset(in, 0, sizeof *in);
	if (n > 15)
		n = 15;
	if (!decoder(&dec) || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, buf, n, &z, op)))
		return -1;
	/* 3DNow!, XOP and MVEX (Xeon Phi) are not relocated */
	if (z.encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY && z.encoding != ZYDIS_INSTRUCTION_ENCODING_VEX &&
	    z.encoding != ZYDIS_INSTRUCTION_ENCODING_EVEX)
		return -1;
	in->len = z.length;
	in->prefixes = prefixes(&z);
	in->op = op_of(z.mnemonic);
	for (int i = 0; i < z.operand_count; i++) {
		bool visible = i < z.operand_count_visible && in->nopnd < 4;
		operand(in, &z, &op[i], addr, visible ? &in->opnd[in->nopnd++] : NULL);
		relative |= op[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op[i].imm.is_relative;
	}
	int cc = condition(z.mnemonic);
	in->cc = (uint8_t)(cc < 0 ? 0 : cc);
	in->flow = cc >= 0 ? PS_X86_JCC : flow_of(&z, in->prefixes, relative, &in->cc);
	if (in->flow == PS_X86_RET && in->nopnd && in->opnd[0].kind == PS_X86_OPND_IMM)
		in->pop = (uint16_t)in->opnd[0].val;
	in->modrm_off = z.raw.modrm.offset;
	if (z.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY) {
		in->rex_off = z.raw.rex.offset;
	} else if (z.encoding == ZYDIS_INSTRUCTION_ENCODING_VEX) {
		in->vex = z.raw.vex.size;
		in->vex_off = z.raw.vex.offset;
	} else {
		in->vex = 4;
		in->vex_off = z.raw.evex.offset;
	}
	return 0;
}

int ps_x86_relocate(const struct ps_x86_insn *in, const uint8_t *code, uint8_t *out)
{
	static const int8_t cand[] = {6, 7, 3, 1, 2, 0, 5}; /* rsi, rdi, rbx, rcx, rdx, rax, rbp */
	uint32_t used = in->reads | in->writes;
	int8_t xreg = PS_X86_NOREG;

	memcpy(out, code, in->len);
	if (!in->riprel)
		return PS_X86_NOREG;
	for (size_t i = 0; i < sizeof cand && xreg < 0; i++)
		if (!(used & bit(cand[i])))
			xreg = cand[i];
	if (xreg < 0)
		return PS_X86_OTHREG;
	/* mod 00 rm 101 [rip + disp32] becomes mod 10 rm xreg [xreg + disp32]; the register is one
	   of the first eight, so REX.B (VEX/EVEX: inverted B) must say so */
	out[in->modrm_off] = (uint8_t)(0x80 | (code[in->modrm_off] & 0x38) | xreg);
	if (in->prefixes & PS_X86_REX)
		out[in->rex_off] &= (uint8_t)~1;
	if (in->vex == 3 || in->vex == 4)
		out[in->vex_off + 1] |= 0x20;
	return xreg;
}

int ps_x86_find_boundary(const uint8_t *buf, size_t n, uint64_t base, uint64_t addr, uint64_t *at, uint64_t *next)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction z;
	uint64_t a = base;

	*at = *next = base;
	if (!decoder(&dec))
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

/* Arithmetic and moves into general registers whose written registers the entry step checks. */
static bool entry_known(const struct ps_x86_insn *in)
{
	if (in->op == PS_X86_OTHER || in->op == PS_X86_PUSH || in->op == PS_X86_PUSHFQ)
		return false;
	for (int i = 0; i < in->nopnd; i++)
		if (in->opnd[i].kind == PS_X86_OPND_REG && in->opnd[i].reg == PS_X86_OTHREG)
			return false;
	return true;
}

int ps_x86_entry_step(const uint8_t *buf, size_t n, unsigned *len, unsigned *sp_down)
{
	struct ps_x86_insn in;
	const struct ps_x86_opnd *d = &in.opnd[0], *s = &in.opnd[1];
	/* rsp, and rcx rdx rsi rdi r8 r9: the argument registers */
	const uint32_t guarded = 1u << 4 | 1u << 1 | 1u << 2 | 1u << 6 | 1u << 7 | 1u << 8 | 1u << 9;

	if (ps_x86_decode(buf, n, 0, &in) || in.vex || (in.prefixes & (PS_X86_LOCK | PS_X86_P66 | PS_X86_SEG)))
		return -1;
	*len = in.len;
	*sp_down = 0;
	if (in.flow == PS_X86_NOP)
		return 0;
	if (in.flow != PS_X86_NEXT || (in.prefixes & (PS_X86_REP | PS_X86_REPNE)))
		return -1;
	if (in.op == PS_X86_PUSH && d->kind == PS_X86_OPND_REG && d->reg >= 0 && d->size == 8) {
		*sp_down = 8;
		return 0;
	}
	if (in.op == PS_X86_SUB && d->kind == PS_X86_OPND_REG && d->reg == 4 && d->size == 8 &&
	    s->kind == PS_X86_OPND_IMM) {
		if (s->val < 0 || s->val > INT32_MAX)
			return -1;
		*sp_down = (unsigned)s->val;
		return 0;
	}
	return entry_known(&in) && !(in.writes & guarded) ? 0 : -1;
}
