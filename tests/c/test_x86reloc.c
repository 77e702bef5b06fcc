/* tests/c/test_x86reloc.c - core/binary/x86/x86reloc.c: prologues displaced from known byte sequences,
 * their copies decoded back (every branch, call and rip-relative operand must reach the
 * original absolute address), the refusals, and copies that run: functions of this test binary
 * patched with a jmp to a trampoline mmapped near them, called, and their results compared to
 * the direct call's. */
#include "ctest.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elffile.h"
#include "symbols.h"
#include "x86insn.h"
#include "x86reloc.h"

#define FN 0x401000ull /* where the byte rows are said to be */

/* The absolute address the rip-relative operand of @in (at @a) points at. */
static uint64_t riprel_target(const struct ps_x86_insn *in, uint64_t a)
{
	for (int i = 0; i < in->nopnd; i++)
		if (in->opnd[i].kind == PS_X86_OPND_MEM && in->opnd[i].riprel)
			return a + in->len + (uint64_t)in->opnd[i].val;
	return 0;
}

/* A copy's jump or jcc beyond +-2 GB (jmp *0(%rip) and the address; under a jcc of the
   opposite condition that skips it) as @c would be the near one, with its target. */
static void as_near(const uint8_t *p, size_t n, struct ps_x86_insn *c)
{
	static const uint8_t abs[6] = {0xff, 0x25, 0, 0, 0, 0};
	size_t skip = c->flow == PS_X86_JCC && c->len == 2 && p[1] == 14 ? 2 : 0;

	if (n < skip + 14 || memcmp(p + skip, abs, sizeof abs) || (!skip && c->flow != PS_X86_JMP_IND))
		return;
	memcpy(&c->target, p + skip + 6, 8);
	c->flow = skip ? PS_X86_JCC : PS_X86_JMP;
	c->cc = skip ? c->cc ^ 1 : 0;
	c->nopnd = 0;
	c->riprel = 0;
}

/* Check that copy @r (made for @tramp from @code at @addr) does what the displaced
   instructions did: each branch to the same target, each call's return address pushed and its
   target jumped to, each rip-relative operand at the same address, other bytes unchanged, and
   a jmp back to the first instruction not displaced. The failed checks. */
static int copies_agree(const uint8_t *code, uint64_t addr, uint64_t tramp, const struct ps_x86_reloc *r)
{
	int bad = 0;
	size_t first = (size_t)(r->site - addr);
	struct ps_x86_insn o, c;

	for (int i = 0; i <= r->n; i++) {
		size_t at = i < r->n ? r->to[i] : r->size - 5, off = first + (i < r->n ? r->from[i] : 0);
		uint64_t ca = tramp + at;
		if (ps_x86_decode(r->code + at, r->size - at, ca, &c)) {
			bad++;
			continue;
		}
		if (i == r->n) { /* the jmp back */
			bad += c.flow != PS_X86_JMP || c.target != r->site + r->len || at + c.len != r->size;
			continue;
		}
		ps_x86_decode(code + off, 15, addr + off, &o);
		if (o.flow == PS_X86_CALL || o.flow == PS_X86_CALL_IND) { /* push, then jmp */
			uint32_t lo, hi = 0;
			uint64_t ret = addr + off + o.len;
			size_t j = at + (r->code[at + 5] == 0xc7 ? 13 : 5);
			memcpy(&lo, r->code + at + 1, 4);
			if (j == at + 13)
				memcpy(&hi, r->code + at + 9, 4);
			else
				hi = lo & 0x80000000u ? ~0u : 0;
			bad += r->code[at] != 0x68 || ((uint64_t)hi << 32 | lo) != ret;
			bad += ps_x86_decode(r->code + j, r->size - j, tramp + j, &c) != 0;
			as_near(r->code + j, r->size - j, &c);
			bad += o.flow == PS_X86_CALL ? c.flow != PS_X86_JMP || c.target != o.target
						     : c.flow != PS_X86_JMP_IND || riprel_target(&c, tramp + j) !=
										       riprel_target(&o, addr + off);
			continue;
		}
		if (o.flow == PS_X86_LOOP) { /* loop +2 to a jmp to the target, over a jmp past it */
			struct ps_x86_insn over, j;
			size_t at2 = at + c.len, at3 = (size_t)(c.target - tramp);
			bad += c.flow != o.flow || c.cc != o.cc || at3 != at2 + 2;
			bad += ps_x86_decode(r->code + at2, 2, tramp + at2, &over) || over.flow != PS_X86_JMP;
			bad += ps_x86_decode(r->code + at3, r->size - at3, tramp + at3, &j) || j.flow != PS_X86_JMP ||
			       j.target != o.target || over.target != tramp + at3 + j.len;
			continue;
		}
		as_near(r->code + at, r->size - at, &c);
		if (o.flow == PS_X86_JCC || o.flow == PS_X86_JMP) /* a loop to the entry: to the copies */
			o.target = o.target == r->entry || o.target == r->site ? tramp : o.target;
		bad += c.flow != o.flow || c.cc != o.cc || c.target != o.target;
		bad += riprel_target(&c, ca) != riprel_target(&o, addr + off);
		if (o.flow != PS_X86_JCC && o.flow != PS_X86_JMP && o.flow != PS_X86_LOOP && !o.riprel)
			bad += c.len != o.len || memcmp(r->code + at, code + off, o.len) != 0;
	}
	return bad;
}

TEST(reloc_copies_an_O0_prologue_push_rbp_mov_rbp_rsp_unchanged_and_jumps_back)
{
	/* push %rbp; mov %rsp,%rbp; mov %edi,-0x4(%rbp); mov -0x4(%rbp),%eax; pop %rbp; ret */
	static const uint8_t f[] = {0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xfc, 0x8b, 0x45, 0xfc, 0x5d, 0xc3};
	static const uint8_t want[] = {0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xfc, 0xe9};
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	uint64_t t = FN + 0x100000;
	int32_t back;

	CHECK_EQ_INT(ps_x86_reloc(f, sizeof f, FN, 5, t, 0, "o0", &r, &err), 0);
	CHECK_STR(err.msg, "");
	CHECK(r.site == FN && !r.nop);
	CHECK_EQ_INT(r.len, 7);
	CHECK_EQ_INT(r.n, 3);
	CHECK_EQ_INT(r.from[2], 4);
	CHECK_EQ_INT(r.to[2], 4);
	CHECK_EQ_INT(r.size, 12);
	CHECK(memcmp(r.code, want, sizeof want) == 0);
	memcpy(&back, r.code + 8, 4);
	CHECK(t + 12 + (uint64_t)(int64_t)back == FN + 7);
	CHECK_EQ_INT(copies_agree(f, FN, t, &r), 0);
}

TEST(reloc_keeps_an_endbr64_at_the_entry_and_patches_after_it)
{
	static const uint8_t f[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xfc, 0x5d, 0xc3};
	struct ps_x86_reloc r;
	struct ps_error err = {0};

	CHECK_EQ_INT(ps_x86_reloc(f, sizeof f, FN, 5, FN - 0x5000, 0, "cet", &r, &err), 0);
	CHECK(r.site == FN + 4);
	CHECK_EQ_INT(r.len, 7);
	CHECK_EQ_INT(r.code[0], 0x55);
	CHECK_EQ_INT(copies_agree(f, FN, FN - 0x5000, &r), 0);
}

TEST(reloc_finds_a_5_byte_nop_entry_needs_no_relocation)
{
	static const struct {
		uint8_t f[16];
		size_t n;
		unsigned site, len;
	} rows[] = {
	    {{0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55, 0xc3}, 7, 0, 5},		      /* -pg -mfentry -mnop-mcount */
	    {{0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}, 10, 4, 5}, /* the same under CET */
	    {{0x90, 0x90, 0x90, 0x90, 0x90, 0x31, 0xc0, 0xc3}, 8, 0, 5},	      /* -fpatchable-function-entry=5 */
	    {{0x66, 0x90, 0x0f, 0x1f, 0x40, 0x00, 0xc3}, 7, 0, 6},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_x86_reloc r;
		struct ps_error err = {0};
		CHECK_EQ_INT(ps_x86_reloc(rows[i].f, rows[i].n, FN, 5, FN + 0x1000, 0, "nop", &r, &err), 0);
		CHECK(r.nop);
		CHECK(r.site == FN + rows[i].site);
		CHECK_EQ_INT(r.len, rows[i].len);
		CHECK_EQ_INT(r.n + (int)r.size, 0);
	}
}

TEST(reloc_gives_a_rip_relative_load_the_displacement_of_the_same_address)
{
	/* mov 0x2f0a(%rip),%eax; add %edi,%eax; ret ... and a lea, a cmp with an immediate after
	   the displacement, a VEX load */
	static const uint8_t rows[][9] = {
	    {0x8b, 0x05, 0x0a, 0x2f, 0x00, 0x00, 0x01, 0xf8, 0xc3},
	    {0x48, 0x8d, 0x05, 0xf0, 0xff, 0xff, 0xff, 0x90, 0xc3},
	    {0x83, 0x3d, 0x10, 0x20, 0x00, 0x00, 0x07, 0x90, 0xc3},
	    {0xc5, 0xfa, 0x10, 0x05, 0x00, 0x01, 0x00, 0x00, 0xc3},
	};
	uint64_t tramps[] = {FN + 0x7000000, FN - 0x300000, FN + 0x40};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		for (size_t k = 0; k < sizeof tramps / sizeof tramps[0]; k++) {
			struct ps_x86_reloc r;
			struct ps_error err = {0};
			CHECK_EQ_INT(ps_x86_reloc(rows[i], sizeof rows[i], FN, 5, tramps[k], 0, "rip", &r, &err), 0);
			CHECK_STR(err.msg, "");
			CHECK_EQ_INT(r.n, 1);
			CHECK(memcmp(r.code, rows[i], 2) == 0);
			CHECK_EQ_INT(copies_agree(rows[i], FN, tramps[k], &r), 0);
		}
}

TEST(reloc_widens_jcc_and_jmp_rel8_to_rel32_with_the_same_targets)
{
	static const struct {
		uint8_t f[24];
		size_t n;
		unsigned len;
		uint8_t op0, op1; /* the first bytes of the branch's copy */
		int at;		  /* its index */
	} rows[] = {
	    /* test %edi,%edi; jle +0x10; lea (%rdi,%rdi),%eax; ret */
	    {{0x85, 0xff, 0x7e, 0x10, 0x8d, 0x04, 0x3f, 0xc3}, 8, 7, 0x0f, 0x8e, 1},
	    /* xor %eax,%eax; nop; jmp +0x10 */
	    {{0x31, 0xc0, 0x90, 0xeb, 0x10}, 5, 5, 0xe9, 0, 2},
	    /* je rel32 at the entry */
	    {{0x0f, 0x84, 0x00, 0x01, 0x00, 0x00, 0xc3}, 7, 6, 0x0f, 0x84, 0},
	    /* jrcxz +0x10 over three nops: jrcxz +2; jmp +5; jmp rel32 */
	    {{0xe3, 0x10, 0x90, 0x90, 0x90, 0xc3}, 6, 5, 0xe3, 0x02, 0},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_x86_reloc r;
		struct ps_error err = {0};
		uint64_t t = FN - 0x10000;
		CHECK_EQ_INT(ps_x86_reloc(rows[i].f, rows[i].n, FN, 5, t, 0, "jcc", &r, &err), 0);
		CHECK_STR(err.msg, "");
		CHECK_EQ_INT(r.len, rows[i].len);
		CHECK_EQ_INT(r.code[r.to[rows[i].at]], rows[i].op0);
		if (rows[i].op1)
			CHECK_EQ_INT(r.code[r.to[rows[i].at] + 1], rows[i].op1);
		CHECK_EQ_INT(copies_agree(rows[i].f, FN, t, &r), 0);
	}
}

TEST(reloc_reaches_a_branch_target_beyond_2gb_of_the_trampoline_through_an_absolute_jump)
{
	/* jne +0x7ff00000 (rel32), then a trampoline 1 GB below: the target is 3 GB away */
	static const uint8_t f[] = {0x0f, 0x85, 0x00, 0x00, 0xf0, 0x7f, 0xc3};
	static const uint8_t skip[] = {0x74, 14, 0xff, 0x25, 0, 0, 0, 0};
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	uint64_t to;

	CHECK_EQ_INT(ps_x86_reloc(f, sizeof f, FN + 0x80000000ull, 5, FN + 0x40000000ull, 0, "far", &r, &err), 0);
	CHECK(memcmp(r.code, skip, sizeof skip) == 0);
	memcpy(&to, r.code + 8, 8);
	CHECK(to == FN + 0x80000000ull + 6 + 0x7ff00000ull);
	CHECK_EQ_INT(r.size, 16 + 5);
	CHECK_EQ_INT(copies_agree(f, FN + 0x80000000ull, FN + 0x40000000ull, &r), 0);
	/* call +0x70000000 there: the push, then the absolute jump */
	static const uint8_t c[] = {0xe8, 0x00, 0x00, 0x00, 0x70, 0xc3};
	CHECK_EQ_INT(ps_x86_reloc(c, sizeof c, FN + 0x80000000ull, 5, FN + 0x40000000ull, 0, "farcall", &r, &err), 0);
	CHECK(r.size == 13 + 14 + 5 && memcmp(r.code + 13, skip + 2, 6) == 0);
	CHECK_EQ_INT(copies_agree(c, FN + 0x80000000ull, FN + 0x40000000ull, &r), 0);
}

TEST(reloc_turns_a_call_into_a_push_of_its_return_address_and_a_jump_without_a_shadow_stack)
{
	/* sub $0x8,%rsp; call +0x100 */
	static const uint8_t f[] = {0x48, 0x83, 0xec, 0x08, 0xe8, 0x00, 0x01, 0x00, 0x00, 0x48, 0x83, 0xc4, 0x08, 0xc3};
	static const uint8_t hi[] = {0x68, 0x09, 0x00, 0x00, 0x80, 0xc7, 0x44, 0x24, 0x04, 0x7f, 0x00, 0x00, 0x00};
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	struct ps_x86_insn j;

	CHECK_EQ_INT(ps_x86_reloc(f, sizeof f, FN, 5, FN + 0x1000, PS_X86_RELOC_SHADOW_STACK, "call", &r, &err), -1);
	CHECK_STR(err.msg, "call+0x4: a call cannot be moved under a shadow stack");
	CHECK_EQ_INT(ps_x86_reloc(f, sizeof f, FN, 5, FN + 0x1000, 0, "call", &r, &err), 0);
	CHECK_EQ_INT(r.len, 9);
	CHECK_EQ_INT(copies_agree(f, FN, FN + 0x1000, &r), 0);
	CHECK_EQ_INT(r.code[4], 0x68); /* push $FN+9 */
	CHECK(ps_x86_decode(r.code + 9, r.size - 9, FN + 0x1000 + 9, &j) == 0 && j.flow == PS_X86_JMP &&
	      j.target == FN + 9 + 0x100);
	/* a return address above 2 GB: its high half written over the sign extension */
	uint64_t a = 0x7f80000000ull;
	CHECK_EQ_INT(ps_x86_reloc(f, sizeof f, a, 5, a + 0x1000, 0, "call", &r, &err), 0);
	CHECK(memcmp(r.code + 4, hi, sizeof hi) == 0);
	CHECK_EQ_INT(copies_agree(f, a, a + 0x1000, &r), 0);
}

TEST(reloc_refuses_what_cannot_be_moved_naming_the_function_and_offset)
{
	static const struct {
		uint8_t f[16];
		size_t n;
		unsigned flags;
		uint64_t tramp;
		const char *why;
	} rows[] = {
	    /* xor %eax,%eax; add %edi,%eax; dec %edi; jne -6 (to +2); ret */
	    {{0x31, 0xc0, 0x01, 0xf8, 0xff, 0xcf, 0x75, 0xfa, 0xc3},
	     9,
	     0,
	     FN + 0x1000,
	     "loop+0x6: a branch to +0x2 lands inside the 6 bytes displaced for the patch"},
	    {{0x31, 0xc0, 0xc3},
	     3,
	     0,
	     FN + 0x1000,
	     "tiny+0x2: a ret leaves the function within the 5 bytes of the patch"},
	    {{0x90, 0x90, 0x90},
	     3,
	     0,
	     FN + 0x1000,
	     "tiny+0x0: only 3 bytes of the function are left: too few for a patch of 5"},
	    {{0xcc, 0x90, 0x90, 0x90, 0x90, 0xc3}, 6, 0, FN + 0x1000, "trap+0x0: an int3 or int cannot be moved"},
	    {{0x90, 0x0f, 0x0b, 0x90, 0x90, 0x90},
	     6,
	     0,
	     FN + 0x1000,
	     "trap+0x1: a ud2 or hlt leaves the function within the 5 bytes of the patch"},
	    {{0x0f, 0x05, 0x90, 0x90, 0x90, 0xc3}, 6, 0, FN + 0x1000, "sys+0x0: a system call cannot be moved"},
	    {{0xff, 0xd0, 0x90, 0x90, 0x90, 0xc3},
	     6,
	     0,
	     FN + 0x1000,
	     "icall+0x0: a call is displaced with instructions after it (it would return inside the patch)"},
	    {{0x90, 0xff, 0x54, 0x24, 0x08, 0xc3},
	     6,
	     0,
	     FN + 0x1000,
	     "rspcall+0x1: a call through rsp or beyond +-2 GB of the trampoline cannot be moved"},
	    /* push %rbp; mov %rsp,%rbp; nop; jmp *%rax: a switch or a tail call */
	    {{0x55, 0x48, 0x89, 0xe5, 0x90, 0xff, 0xe0},
	     7,
	     0,
	     FN + 0x1000,
	     "ind+0x5: an indirect jump whose targets are not known may land inside the patched bytes"},
	    {{0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x90},
	     7,
	     0,
	     FN + 0x90000000ull,
	     "far+0x0: the trampoline at 0x90401000 is beyond +-2 GB of the patch"},
	    /* mov 0x70000000(%rip),%eax with the trampoline 1.8 GB below */
	    {{0x8b, 0x05, 0x00, 0x00, 0x00, 0x70, 0xc3},
	     7,
	     0,
	     FN - 0x70000000ull,
	     "ripfar+0x0: its rip-relative operand is beyond +-2 GB of the trampoline"},
	    {{0x06, 0x90, 0x90, 0x90, 0x90, 0xc3}, 6, 0, FN + 0x1000, "junk+0x0: the code does not decode"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_x86_reloc r;
		struct ps_error err = {0};
		char name[16];
		snprintf(name, sizeof name, "%.*s", (int)(strchr(rows[i].why, '+') - rows[i].why), rows[i].why);
		CHECK_EQ_INT(ps_x86_reloc(rows[i].f, rows[i].n, FN, 5, rows[i].tramp, rows[i].flags, name, &r, &err),
			     -1);
		CHECK_EQ_INT(err.code, PS_EUSAGE);
		CHECK_STR(err.msg, rows[i].why);
	}
}

TEST(reloc_lets_indirect_jumps_through_pointers_and_checked_tables_pass)
{
	/* push %rbp; mov %rsp,%rbp; pop %rbp; jmp *0x100(%rip): a tail call through the GOT */
	static const uint8_t got[] = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xff, 0x25, 0x00, 0x01, 0x00, 0x00};
	static const uint8_t reg[] = {0x55, 0x48, 0x89, 0xe5, 0x90, 0xff, 0xe0};
	struct ps_x86_reloc r;
	struct ps_error err = {0};

	CHECK_EQ_INT(ps_x86_reloc(got, sizeof got, FN, 5, FN + 0x1000, 0, "got", &r, &err), 0);
	CHECK_EQ_INT(ps_x86_reloc(reg, sizeof reg, FN, 5, FN + 0x1000, PS_X86_RELOC_IND_CHECKED, "reg", &r, &err), 0);
	CHECK_EQ_INT(r.len, 5);
}

TEST(reloc_sends_a_loop_to_the_entry_to_the_copies_and_names_one_from_further_on)
{
	/* dec %edi; jg -4 (to +0); mov %edi,%eax; ret: the copy of the jg goes to the copy of dec */
	static const uint8_t in[] = {0xff, 0xcf, 0x7f, 0xfc, 0x89, 0xf8, 0xc3};
	/* xor %eax,%eax; nop x3; add %edi,%eax; dec %edi; jne -0xb (to +0); ret */
	static const uint8_t on[] = {0x31, 0xc0, 0x90, 0x90, 0x90, 0x01, 0xf8, 0xff, 0xcf, 0x75, 0xf5, 0xc3};
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	struct ps_x86_insn j;
	uint64_t t = FN + 0x2000;

	CHECK_EQ_INT(ps_x86_reloc(in, sizeof in, FN, 5, t, 0, "in", &r, &err), 0);
	CHECK(ps_x86_decode(r.code + r.to[1], r.size - r.to[1], t + r.to[1], &j) == 0 && j.flow == PS_X86_JCC &&
	      j.target == t);
	CHECK(r.again == 0);
	CHECK_EQ_INT(copies_agree(in, FN, t, &r), 0);
	CHECK_EQ_INT(ps_x86_reloc(on, sizeof on, FN, 5, t, 0, "on", &r, &err), 0);
	CHECK(r.again == FN + 9);
	CHECK_EQ_INT(copies_agree(on, FN, t, &r), 0);
}

/* Every function of ELF file @path moved for a trampoline @d bytes from it: how many were moved
   (@moved), refused (@refused), and moved copies that do not agree with the original. */
static int move_all(const char *path, int64_t d, int *moved, int *refused)
{
	struct ps_symtab *st = NULL;
	struct ps_elf_file *f = NULL;
	struct ps_error err;
	int bad = 0;

	*moved = *refused = 0;
	if (ps_sym_open(&st, path, &err) || ps_elf_open(&f, path, &err)) {
		ps_sym_close(st);
		return 0;
	}
	for (size_t i = 0; i < ps_sym_count(st); i++) {
		const struct ps_sym *s = ps_sym_at(st, i);
		struct ps_x86_reloc r;
		uint8_t *code;
		if (!s->size || (i > 0 && ps_sym_at(st, i - 1)->addr == s->addr) ||
		    !(code = ps_elf_code(f, s->addr, s->size)))
			continue;
		if (ps_x86_reloc(code, s->size, s->addr, 5, s->addr + (uint64_t)d, 0, s->name, &r, &err)) {
			++*refused;
		} else {
			++*moved;
			bad += !r.nop && copies_agree(code, s->addr, s->addr + (uint64_t)d, &r) != 0;
		}
		free(code);
	}
	ps_elf_close(f);
	ps_sym_close(st);
	return bad;
}

TEST(reloc_moves_the_functions_of_libc_and_of_this_test_near_and_far_with_copies_that_agree)
{
	Dl_info dl;
	const char *paths[2] = {"/proc/self/exe", NULL};
	int moved, refused;

	if (dladdr((void *)printf, &dl) && dl.dli_fname)
		paths[1] = dl.dli_fname;
	for (int i = 0; i < 2 && paths[i]; i++) {
		/* 256 MB above; and 2 GB below less 1 MB, where branches to the rest of the file need
		   the absolute form and rip-relative operands beyond the trampoline's reach refuse */
		CHECK_EQ_INT(move_all(paths[i], 0x10000000, &moved, &refused), 0);
		CHECK(moved > 100);
		fprintf(stderr, "     %s: %d functions moved, %d refused\n", paths[i], moved, refused);
		CHECK_EQ_INT(move_all(paths[i], -0x7ff00000, &moved, &refused), 0);
		CHECK(moved > 100);
		fprintf(stderr, "     %s, 2 GB away: %d functions moved, %d refused\n", paths[i], moved, refused);
	}
}

TEST(reloc_at_moves_the_instructions_at_a_boundary_inside_a_function)
{
	/* push %rbp; mov %rsp,%rbp; mov %edi,-0x4(%rbp); mov -0x4(%rbp),%eax; pop %rbp; ret */
	static const uint8_t o0[] = {0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xfc, 0x8b, 0x45, 0xfc, 0x5d, 0xc3};
	/* xor %eax,%eax; add %edi,%eax; dec %edi; jne -6 (to +2); ret; then jmp -9 (to +2) */
	static const uint8_t loop[] = {0x31, 0xc0, 0x01, 0xf8, 0xff, 0xcf, 0x75, 0xfa, 0xc3, 0xeb, 0xf7};
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	struct ps_x86_insn j;
	uint64_t t = FN + 0x3000;

	CHECK_EQ_INT(ps_x86_reloc_at(o0, sizeof o0, FN, FN + 4, 5, t, 0, "o0", &r, &err), 0);
	CHECK(r.site == FN + 4 && r.entry == FN + 4 && r.len == 6 && r.n == 2);
	CHECK_EQ_INT(copies_agree(o0, FN, t, &r), 0);
	CHECK_EQ_INT(ps_x86_reloc_at(o0, sizeof o0, FN, FN + 2, 5, t, 0, "o0", &r, &err), -1);
	CHECK_STR(err.msg, "o0+0x2: no instruction of the function begins there");
	CHECK_EQ_INT(ps_x86_reloc_at(o0, sizeof o0, FN, FN + 10, 5, t, 0, "o0", &r, &err), -1);
	CHECK_STR(err.msg, "o0+0xb: a ret leaves the function within the 5 bytes of the patch");
	/* the loop's head: its back edge is moved with it (to the copies); the jmp after the ret
	   comes back through the patch */
	CHECK_EQ_INT(ps_x86_reloc_at(loop, sizeof loop, FN, FN + 2, 5, t, 0, "loop", &r, &err), 0);
	CHECK(r.len == 6 && r.again == FN + 9);
	CHECK(ps_x86_decode(r.code + r.to[2], r.size - r.to[2], t + r.to[2], &j) == 0 && j.target == t);
}

TEST(reloc_at_a_point_sends_a_jump_to_the_site_back_through_the_patch)
{
	/* xor %eax,%eax; add %edi,%eax; dec %edi; jne -6 (to +2); ret: a range's point at the loop's
	   head, whose hook runs at each turn as a breakpoint there would stop */
	static const uint8_t loop[] = {0x31, 0xc0, 0x01, 0xf8, 0xff, 0xcf, 0x75, 0xfa, 0xc3};
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	struct ps_x86_insn j;
	uint64_t t = FN + 0x3000;

	CHECK_EQ_INT(ps_x86_reloc_at(loop, sizeof loop, FN, FN + 2, 5, t, PS_X86_RELOC_POINT, "loop", &r, &err), 0);
	CHECK(r.len == 6 && r.n == 3);
	CHECK(ps_x86_decode(r.code + r.to[2], r.size - r.to[2], t + r.to[2], &j) == 0 && j.target == FN + 2);
	CHECK(r.code[r.to[0]] == 0x01 && r.code[r.to[1]] == 0xff); /* add and dec as they were */
}
