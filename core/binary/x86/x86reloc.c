/* core/binary/x86/x86reloc.c - a function's first instructions, copied to run in a trampoline
 * (x86reloc.h); decoded through x86insn.h. */
#include "x86reloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "x86insn.h"

static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

/* The trampoline's code as it is written: @at is the address of p[0]. */
struct emit {
	uint8_t *p;
	size_t n, cap;
	uint64_t at;
	bool full;
};

/* What the function is called where its offset @off is refused, and why. Returns -1. */
static int refuse(struct ps_error *err, const char *name, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refuse(struct ps_error *err, const char *name, uint64_t off, const char *fmt, ...)
{
	char why[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return ps_error_set(err, PS_EUSAGE, "%s+0x%llx: %s", name, (unsigned long long)off, why);
}

/* What an instruction that cannot be moved is, for a refusal. */
static const char *what(const struct ps_x86_insn *in)
{
	static const char *names[] = {
	    [PS_X86_RET] = "a ret",
	    [PS_X86_JMP] = "a jmp",
	    [PS_X86_JMP_IND] = "an indirect jmp",
	    [PS_X86_FAR_JMP] = "a far jmp",
	    [PS_X86_FAR_CALL] = "a far call",
	    [PS_X86_FAR_RET] = "a far ret",
	    [PS_X86_INT] = "an int3 or int",
	    [PS_X86_IRET] = "an iret",
	    [PS_X86_SYSCALL] = "a system call",
	    [PS_X86_XBEGIN] = "an xbegin",
	    [PS_X86_XEND] = "an xend",
	    [PS_X86_XABORT] = "an xabort",
	    [PS_X86_STOP] = "a ud2 or hlt",
	    [PS_X86_SYSTEM] = "a system instruction",
	};
	return in->flow < sizeof names / sizeof names[0] && names[in->flow] ? names[in->flow] : "an instruction";
}

static bool falls_through(uint8_t flow)
{
	return flow != PS_X86_RET && flow != PS_X86_JMP && flow != PS_X86_JMP_IND && flow != PS_X86_STOP &&
	       flow != PS_X86_FAR_JMP && flow != PS_X86_FAR_RET && flow != PS_X86_IRET;
}

static bool fits32(int64_t d)
{
	return d >= INT32_MIN && d <= INT32_MAX;
}

static void put(struct emit *e, const void *b, size_t k)
{
	if (e->n + k > e->cap) {
		e->full = true;
		return;
	}
	memcpy(e->p + e->n, b, k);
	e->n += k;
}

static void put8(struct emit *e, uint8_t b)
{
	put(e, &b, 1);
}

static void put32(struct emit *e, uint32_t v)
{
	put(e, &v, 4); /* little-endian, as the machine it runs on */
}

/* The length of a jump (@cc < 0: jmp, else jcc @cc) to @target written at @at. */
static size_t jump_len(uint64_t at, int cc, uint64_t target)
{
	size_t near = cc < 0 ? 5 : 6;

	return fits32((int64_t)(target - (at + near))) ? near : cc < 0 ? 14 : 16;
}

/* jmp rel32 / jcc rel32 to @target; beyond +-2 GB, jmp *0(%rip) and the address (under a jcc
   of the opposite condition that skips it). */
static void jump(struct emit *e, int cc, uint64_t target)
{
	static const uint8_t abs[6] = {0xff, 0x25, 0, 0, 0, 0};
	uint64_t at = e->at + e->n;
	size_t len = jump_len(at, cc, target);

	if (len <= 6) {
		if (cc >= 0)
			put8(e, 0x0f);
		put8(e, cc < 0 ? 0xe9 : (uint8_t)(0x80 | cc));
		put32(e, (uint32_t)(target - (at + len)));
		return;
	}
	if (cc >= 0) {
		put8(e, (uint8_t)(0x70 | (cc ^ 1)));
		put8(e, 14);
	}
	put(e, abs, sizeof abs);
	put(e, &target, 8);
}

/* Push the 64-bit address @a without touching the flags: push imm32 (sign-extended), and the
   high half written over where that is not @a's. */
static void push_addr(struct emit *e, uint64_t a)
{
	static const uint8_t movhi[4] = {0xc7, 0x44, 0x24, 0x04}; /* movl $imm32, 4(%rsp) */

	put8(e, 0x68);
	put32(e, (uint32_t)a);
	if ((uint64_t)(int64_t)(int32_t)(uint32_t)a != a) {
		put(e, movhi, sizeof movhi);
		put32(e, (uint32_t)(a >> 32));
	}
}

/* Copy instruction @in (bytes @b, at address @a), its rip-relative displacement made to reach
   the same address from the copy. 0, or -1 when the copy is beyond +-2 GB of it. */
static int copy(struct emit *e, const struct ps_x86_insn *in, const uint8_t *b, uint64_t a)
{
	size_t at = e->n, d = (size_t)in->modrm_off + 1;
	int32_t disp;
	int64_t moved;

	put(e, b, in->len);
	if (!in->riprel || e->full)
		return 0;
	/* [rip + disp32] is ModRM mod 00 rm 101 and the displacement right after it (no SIB) */
	if ((b[in->modrm_off] & 0xc7) != 0x05)
		return -1;
	memcpy(&disp, b + d, 4);
	moved = (int64_t)(a + in->len + (uint64_t)(int64_t)disp - (e->at + at + in->len));
	if (!fits32(moved))
		return -1;
	disp = (int32_t)moved;
	memcpy(e->p + at + d, &disp, 4);
	return 0;
}

/* loopcc/jrcxz rel8 (prefixes kept) over a short jmp, to a jump to the target. */
static void loop(struct emit *e, const struct ps_x86_insn *in, const uint8_t *b)
{
	put(e, b, in->len - 1u); /* prefixes and opcode */
	put8(e, 2);
	put8(e, 0xeb);
	put8(e, (uint8_t)jump_len(e->at + e->n + 1, -1, in->target));
	jump(e, -1, in->target);
}

/* A call, the last instruction displaced: its return address pushed, then a jump to its target
   (ff /2 becomes ff /4 with the same operand). 0, or -1 when it cannot be moved. */
static int call(struct emit *e, const struct ps_x86_insn *in, const uint8_t *b, uint64_t a)
{
	const struct ps_x86_opnd *o = &in->opnd[0];
	uint8_t c[15];

	if (in->flow == PS_X86_CALL_IND && (in->nopnd < 1 || (o->kind == PS_X86_OPND_REG && o->reg == 4) ||
					    (o->kind == PS_X86_OPND_MEM && (o->base == 4 || o->index == 4))))
		return -1; /* the push moves rsp under it */
	push_addr(e, a + in->len);
	if (in->flow == PS_X86_CALL) {
		jump(e, -1, in->target);
		return 0;
	}
	memcpy(c, b, in->len);
	c[in->modrm_off] = (uint8_t)((c[in->modrm_off] & ~0x38) | 0x20);
	return copy(e, in, c, a);
}

/* Write the copy of displaced instruction @in (bytes @b, at @a, offset @off in the function).
   0, or -1 with @err. */
static int move(struct emit *e, const struct ps_x86_insn *in, const uint8_t *b, uint64_t a, const char *name,
		uint64_t off, struct ps_error *err)
{
	bool branch = in->flow == PS_X86_JCC || in->flow == PS_X86_JMP || in->flow == PS_X86_CALL;

	if (branch && (in->prefixes & PS_X86_P66))
		return refuse(err, name, off, "a branch with an operand-size prefix cannot be moved");
	switch (in->flow) {
	case PS_X86_JCC:
		jump(e, in->cc, in->target);
		return 0;
	case PS_X86_JMP:
		jump(e, -1, in->target);
		return 0;
	case PS_X86_LOOP:
		loop(e, in, b);
		return 0;
	case PS_X86_CALL:
	case PS_X86_CALL_IND: /* the last one displaced (displace()) */
		return call(e, in, b, a) ? refuse(err, name, off,
						  "a call through rsp or beyond +-2 GB of the "
						  "trampoline cannot be moved")
					 : 0;
	case PS_X86_NEXT:
	case PS_X86_NOP:
	case PS_X86_RET:
	case PS_X86_JMP_IND:
		if (in->target)
			return refuse(err, name, off, "an instruction with a relative operand cannot be moved");
		if (copy(e, in, b, a))
			return refuse(err, name, off, "its rip-relative operand is beyond +-2 GB of the trampoline");
		return 0;
	default:
		return refuse(err, name, off, "%s cannot be moved", what(in));
	}
}

/* The instructions displaced from out->site for @patch bytes: out->len, out->n, out->from,
   out->nop. 0, or -1 with @err. */
static int displace(const uint8_t *code, size_t n, uint64_t addr, unsigned patch, unsigned flags, const char *name,
		    struct ps_x86_reloc *out, struct ps_error *err)
{
	size_t first = (size_t)(out->site - addr), off = first;
	struct ps_x86_insn in;
	bool nop = true, call;

	while (off < first + patch) {
		if (off >= n)
			return refuse(err, name, first,
				      "only %zu bytes of the function are left: too few for a patch of %u", n - first,
				      patch);
		if (ps_x86_decode(code + off, n - off, addr + off, &in))
			return refuse(err, name, off, "the code does not decode");
		call = in.flow == PS_X86_CALL || in.flow == PS_X86_CALL_IND;
		if (call && off + in.len < first + patch)
			return refuse(err, name, off,
				      "a call is displaced with instructions after it (it would return "
				      "inside the patch)");
		if (call && (flags & PS_X86_RELOC_SHADOW_STACK))
			return refuse(err, name, off, "a call cannot be moved under a shadow stack");
		out->from[out->n++] = (uint8_t)(off - first);
		nop &= in.flow == PS_X86_NOP;
		off += in.len;
		if (!falls_through(in.flow) && off < first + patch)
			return refuse(err, name, off - in.len,
				      "%s leaves the function within the %u bytes of the patch", what(&in), patch);
	}
	out->len = (unsigned)(off - first);
	out->nop = nop;
	return 0;
}

/* Is @in a jump (not a call) to the patch site of @r, or to the endbr64 before it? */
static bool loops_to_entry(const struct ps_x86_insn *in, const struct ps_x86_reloc *r)
{
	return (in->flow == PS_X86_JCC || in->flow == PS_X86_JMP || in->flow == PS_X86_LOOP) &&
	       (in->target == r->entry || in->target == r->site);
}

/* Does a branch of the function land inside the displaced bytes (after their first)? 0 when
   none does (out->again set to the first jump back to the entry from elsewhere), or -1 with
   @err. */
static int branches_in(const uint8_t *code, size_t n, uint64_t addr, unsigned flags, const char *name,
		       struct ps_x86_reloc *out, struct ps_error *err)
{
	struct ps_x86_insn in;
	uint64_t lo = out->site, hi = out->site + out->len;

	for (size_t off = 0; off < n; off += in.len) {
		const struct ps_x86_opnd *o = &in.opnd[0];
		bool direct;

		if (ps_x86_decode(code + off, n - off, addr + off, &in))
			return refuse(err, name, off, "the code does not decode");
		direct = in.flow == PS_X86_JCC || in.flow == PS_X86_JMP || in.flow == PS_X86_CALL ||
			 in.flow == PS_X86_LOOP || in.flow == PS_X86_XBEGIN;
		if (!out->again && (off < lo - addr || off >= hi - addr) && loops_to_entry(&in, out))
			out->again = addr + off;
		if (direct && in.target > lo && in.target < hi)
			return refuse(err, name, off,
				      "a branch to +0x%llx lands inside the %u bytes displaced for the patch",
				      (unsigned long long)(in.target - addr), out->len);
		if (in.flow == PS_X86_JMP_IND && !(flags & PS_X86_RELOC_IND_CHECKED) &&
		    (in.nopnd < 1 || o->kind != PS_X86_OPND_MEM || o->index != PS_X86_NOREG))
			return refuse(err, name, off,
				      "an indirect jump whose targets are not known may land inside "
				      "the patched bytes");
	}
	return 0;
}

/* The copies of the displaced instructions and the jmp back, at @tramp. 0, or -1 with @err. */
static int write_copies(const uint8_t *code, size_t n, uint64_t addr, uint64_t tramp, unsigned flags, const char *name,
			struct ps_x86_reloc *out, struct ps_error *err)
{
	struct emit e = {.p = out->code, .cap = sizeof out->code, .at = tramp};
	size_t first = (size_t)(out->site - addr);
	struct ps_x86_insn in;

	for (int i = 0; i < out->n; i++) {
		size_t off = first + out->from[i];
		ps_x86_decode(code + off, n - off, addr + off, &in); /* decoded once already */
		if (!(flags & PS_X86_RELOC_POINT) && loops_to_entry(&in, out))
			in.target = tramp; /* a loop to the entry goes on in the copies, not through the hook */
		out->to[i] = (uint8_t)e.n;
		if (move(&e, &in, code + off, addr + off, name, off, err))
			return -1;
	}
	if (!fits32((int64_t)(out->site + out->len - (e.at + e.n + 5))))
		return refuse(err, name, first, "the trampoline at 0x%llx is beyond +-2 GB of the function",
			      (unsigned long long)tramp);
	jump(&e, -1, out->site + out->len);
	if (e.full)
		return refuse(err, name, first, "the copies take more than %zu bytes", sizeof out->code);
	out->size = e.n;
	return 0;
}

int ps_x86_reloc_at(const uint8_t *code, size_t n, uint64_t addr, uint64_t at, unsigned patch, uint64_t tramp,
		    unsigned flags, const char *name, struct ps_x86_reloc *out, struct ps_error *err)
{
	uint64_t holder, next;

	memset(out, 0, sizeof *out);
	out->site = at;
	if (patch == 0 || patch > PS_X86_RELOC_MAX_PATCH)
		return refuse(err, name, at - addr, "a patch of %u bytes (1 to %d can be displaced)", patch,
			      PS_X86_RELOC_MAX_PATCH);
	if (at < addr || at >= addr + n || (at > addr && ps_x86_find_boundary(code, n, addr, at, &holder, &next)))
		return refuse(err, name, at - addr, "no instruction of the function begins there");
	if (at == addr && n >= sizeof endbr64 && !memcmp(code, endbr64, sizeof endbr64))
		out->site += sizeof endbr64;
	out->entry = out->site == at ? at : addr;
	if (displace(code, n, addr, patch, flags, name, out, err) || branches_in(code, n, addr, flags, name, out, err))
		return -1;
	if (out->nop) {
		out->n = 0;
		return 0;
	}
	if (!fits32((int64_t)(tramp - (out->site + 5))))
		return refuse(err, name, out->site - addr, "the trampoline at 0x%llx is beyond +-2 GB of the patch",
			      (unsigned long long)tramp);
	return write_copies(code, n, addr, tramp, flags, name, out, err);
}

int ps_x86_reloc(const uint8_t *code, size_t n, uint64_t addr, unsigned patch, uint64_t tramp, unsigned flags,
		 const char *name, struct ps_x86_reloc *out, struct ps_error *err)
{
	return ps_x86_reloc_at(code, n, addr, addr, patch, tramp, flags, name, out, err);
}
