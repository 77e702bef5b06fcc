/* tests/c/test_x86tramp.c - entry trampolines (core/binary/x86/x86tramp.c): their bytes, and one
 * run for real, as the agent (agent/) runs them: a function of this binary patched with a jmp
 * to a trampoline that calls a hook (which sees the site number and the return address, and
 * keeps every register), then runs the moved prologue and jumps back. */
#include "ctest.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "x86reloc.h"
#include "x86tramp.h"

int tt_fn(int x);
void tt_hook(void);
extern const char tt_fn_end[];
extern uint64_t tt_count, tt_idx, tt_ret;

/* tt_fn: a frame-pointer prologue (moved), a result; tt_hook: counts, keeps the site number
   (at 16(%rsp) once rax is pushed) and the function's return address (at 24(%rsp)). */
__asm__(".pushsection .text\n"
	".p2align 4\n"
	"tt_fn: push %rbp\n mov %rsp, %rbp\n lea 3(%rdi,%rdi), %eax\n pop %rbp\n ret\n"
	"tt_fn_end:\n"
	"tt_hook: push %rax\n mov 16(%rsp), %rax\n mov %rax, tt_idx(%rip)\n mov 24(%rsp), %rax\n"
	" mov %rax, tt_ret(%rip)\n lock incq tt_count(%rip)\n pop %rax\n ret\n"
	".popsection\n"
	".pushsection .data\n"
	".p2align 3\n"
	"tt_count: .quad 0\ntt_idx: .quad 0\ntt_ret: .quad 0\n"
	".popsection\n");

TEST(tramp_bytes_hold_the_hook_the_site_number_and_the_jump_back_of_a_nop_entry)
{
	struct ps_x86_reloc r = {.site = 0x401000, .len = 5, .nop = true};
	uint64_t tramp = 0x402000, hook = 0x7f0000001234, h;
	uint8_t out[PS_X86_TRAMP_MAX];
	uint32_t idx;
	int32_t rel;
	size_t n = ps_x86_tramp(out, tramp, 7, hook, &r);

	CHECK_EQ_INT((int)n, PS_X86_TRAMP_HEAD + 5);
	memcpy(&h, out, 8);
	CHECK(h == hook);
	CHECK_EQ_INT(out[PS_X86_TRAMP_ENTRY], 0x68); /* push imm32 */
	memcpy(&idx, out + 9, 4);
	CHECK_EQ_INT((int)idx, 7);
	CHECK(out[13] == 0xff && out[14] == 0x15); /* call *disp32(%rip) */
	memcpy(&rel, out + 15, 4);
	CHECK_EQ_INT(19 + rel, 0); /* reads the hook at the trampoline's start */
	CHECK_EQ_INT(out[PS_X86_TRAMP_HEAD], 0xe9);
	memcpy(&rel, out + PS_X86_TRAMP_HEAD + 1, 4);
	CHECK(tramp + PS_X86_TRAMP_HEAD + 5 + (uint64_t)(int64_t)rel == r.site + r.len);
}

TEST(tramp_jmp32_refuses_a_target_beyond_2_gb)
{
	uint8_t j[5];
	int32_t rel;

	CHECK_EQ_INT(ps_x86_jmp32(j, 0x1000, 0x2000), 0);
	memcpy(&rel, j + 1, 4);
	CHECK_EQ_INT(rel, 0x2000 - 0x1005);
	CHECK_EQ_INT(ps_x86_jmp32(j, 0x1000, 0x1000 + (3ull << 30)), -1);
}

/* A page for a trampoline within 1 GB after @fn, or NULL. */
static uint8_t *near_page(uint64_t fn)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	for (uint64_t d = 1u << 20; d < 1u << 30; d += 1u << 20) {
		void *p = mmap((void *)((fn + d) & ~(pg - 1)), pg, PROT_READ | PROT_WRITE | PROT_EXEC,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED)
			return p;
	}
	return NULL;
}

/* Patch tt_fn, call it, check, restore: the failed checks (run in a child). */
static int run_patched(void)
{
	uint64_t fn = (uint64_t)tt_fn, pg = (uint64_t)sysconf(_SC_PAGESIZE), lo = fn & ~(pg - 1);
	uint8_t code[PS_X86_TRAMP_MAX], jmp[5], saved[5];
	struct ps_x86_reloc r;
	struct ps_error err;
	uint8_t *t = near_page(fn);
	int bad = 0, v;

	if (!t || ps_x86_reloc((const uint8_t *)fn, (size_t)(tt_fn_end - (const char *)fn), fn, 5,
			       (uint64_t)t + PS_X86_TRAMP_HEAD, 0, "tt_fn", &r, &err))
		return 100;
	memcpy(t, code, ps_x86_tramp(code, (uint64_t)t, 42, (uint64_t)tt_hook, &r));
	if (ps_x86_jmp32(jmp, r.site, (uint64_t)t + PS_X86_TRAMP_ENTRY) ||
	    mprotect((void *)lo, fn + 5 - lo, PROT_READ | PROT_WRITE | PROT_EXEC))
		return 101;
	memcpy(saved, (void *)fn, 5);
	memcpy((void *)fn, jmp, 5);
	v = ((int (*volatile)(int))tt_fn)(20);
	bad += v != 43;
	bad += tt_count != 1 || tt_idx != 42 || tt_ret == 0;
	memcpy((void *)fn, saved, 5);
	v = ((int (*volatile)(int))tt_fn)(1);
	bad += v != 5 || tt_count != 1;
	return bad;
}

/* Run @fn in a child (it patches code): its exit status, the failed checks (or -1). */
static int in_child(int (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

TEST(tramp_run_a_patched_entry_calls_the_hook_with_the_site_number_and_gives_the_result)
{
	CHECK_EQ_INT(in_child(run_patched), 0);
}

int tp_fn(int x);
void tp_hook(void);
extern const char tp_point[], tp_fn_end[];
extern uint64_t tp_count, tp_idx;

/* tp_fn: keeps x in its red zone and compares it with 5 before the point; after it, reads both
   back: 2x + 1 + 1000 * (the red zone's value) + 1000000 * (x < 5). tp_hook: writes below its
   stack, changes the flags and puts them back, counts, keeps the site number (8(%rsp) at its
   entry). */
__asm__(".pushsection .text\n"
	".p2align 4\n"
	"tp_fn: mov %edi, -8(%rsp)\n cmp $5, %edi\n"
	"tp_point: lea 1(%rdi,%rdi), %eax\n mov -8(%rsp), %ecx\n setl %dl\n movzbl %dl, %edx\n"
	" imul $1000, %ecx, %ecx\n imul $1000000, %edx, %edx\n add %ecx, %eax\n add %edx, %eax\n ret\n"
	"tp_fn_end:\n"
	"tp_hook: pushfq\n push %rax\n mov 24(%rsp), %rax\n mov %rax, tp_idx(%rip)\n lock incq tp_count(%rip)\n"
	" cmp %rax, %rax\n pop %rax\n popfq\n ret\n"
	".popsection\n"
	".pushsection .data\n"
	".p2align 3\n"
	"tp_count: .quad 0\ntp_idx: .quad 0\n"
	".popsection\n");

TEST(tramp_point_bytes_step_over_the_red_zone_around_the_call)
{
	struct ps_x86_reloc r = {.site = 0x401010, .len = 5, .nop = true};
	uint8_t out[PS_X86_TRAMP_MAX];
	int32_t rel;
	size_t n = ps_x86_tramp_point(out, 0x402000, 9, 0x7f0000001234, &r);

	CHECK_EQ_INT((int)n, PS_X86_TRAMP_POINT_HEAD + 5);
	CHECK(!memcmp(out + PS_X86_TRAMP_ENTRY, "\x48\x8d\x64\x24\x80\x68\x09\0\0\0\xff\x15", 12));
	memcpy(&rel, out + 20, 4);
	CHECK_EQ_INT(24 + rel, 0); /* reads the hook at the trampoline's start */
	CHECK(!memcmp(out + 24, "\x48\x8d\xa4\x24\x88\0\0\0", 8));
	CHECK_EQ_INT(out[PS_X86_TRAMP_POINT_HEAD], 0xe9);
}

/* Patch tp_fn at tp_point, call it, check: the failed checks (run in a child). */
static int run_point(void)
{
	uint64_t fn = (uint64_t)tp_fn, at = (uint64_t)tp_point, pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint8_t code[PS_X86_TRAMP_MAX], jmp[5], *t = near_page(fn);
	struct ps_x86_reloc r;
	struct ps_error err;
	int bad = 0;

	if (!t || ps_x86_reloc_at((const uint8_t *)fn, (size_t)(tp_fn_end - (const char *)fn), fn, at, 5,
				  (uint64_t)t + PS_X86_TRAMP_POINT_HEAD, PS_X86_RELOC_POINT, "tp_fn", &r, &err))
		return 100;
	memcpy(t, code, ps_x86_tramp_point(code, (uint64_t)t, 7, (uint64_t)tp_hook, &r));
	if (r.site != at || ps_x86_jmp32(jmp, at, (uint64_t)t + PS_X86_TRAMP_ENTRY) ||
	    mprotect((void *)(at & ~(pg - 1)), at + 5 - (at & ~(pg - 1)), PROT_READ | PROT_WRITE | PROT_EXEC))
		return 101;
	memcpy((void *)at, jmp, 5);
	bad += ((int (*volatile)(int))tp_fn)(3) != 7 + 3000 + 1000000;
	bad += ((int (*volatile)(int))tp_fn)(20) != 41 + 20000;
	bad += tp_count != 2 || tp_idx != 7;
	return bad;
}

TEST(tramp_run_a_patched_point_keeps_the_red_zone_and_the_flags_and_calls_the_hook)
{
	CHECK_EQ_INT(in_child(run_point), 0);
}
