/* tests/c/test_x86reloc_run.c - prologues moved by core/binary/x86/x86reloc.c, run for real: a
 * function's entry is patched with a jmp to a trampoline mmapped within +-2 GB of it, which
 * counts the hit (the hook: lock incq, the flags and the red zone kept) and runs the moved instructions, which jump
 * back. Each call must give the direct call's result and count one hit; with the bytes restored, no hit. The functions
 * are written here in assembly (exact encodings: a rip-relative load, jcc rel8, jrcxz, a call, a loop to the entry,
 * which must not count a hit per turn) and compiled from tests/fixtures/reloc.c (gcc -O0, -O2) into shared objects,
 * whose code is read from the file as the agent will. */
#include "ctest.h"
#include "fixtures.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elffile.h"
#include "procmaps.h"
#include "symbols.h"
#include "x86insn.h"
#include "x86reloc.h"

int rx_riprel(int x), rx_jcc(int x), rx_call(int x), rx_jrcxz(int x), rx_o0(int x), rx_count(int x);
extern const char rx_riprel_end[], rx_jcc_end[], rx_call_end[], rx_jrcxz_end[], rx_o0_end[], rx_count_end[];

__asm__(".intel_syntax noprefix\n"
	".pushsection .text\n"
	".p2align 4\n"
	"rx_riprel: mov eax, dword ptr [rip + rx_data]\n add eax, edi\n ret\n"
	"rx_riprel_end:\n"
	".p2align 4\n"
	"rx_jcc: test edi, edi\n jle 1f\n lea eax, [rdi + rdi]\n ret\n"
	"1: mov eax, -7\n ret\n"
	"rx_jcc_end:\n"
	".p2align 4\n"
	"rx_call: sub rsp, 8\n call rx_helper\n add rsp, 8\n add eax, 1\n ret\n"
	"rx_call_end:\n"
	"rx_helper: lea eax, [rdi * 4]\n ret\n"
	".p2align 4\n"
	"rx_jrcxz: mov rcx, rdi\n jrcxz 1f\n lea eax, [rcx + 1]\n ret\n"
	"1: mov eax, 99\n ret\n"
	"rx_jrcxz_end:\n"
	".p2align 4\n"
	"rx_o0: push rbp\n mov rbp, rsp\n mov dword ptr [rbp - 4], edi\n mov eax, dword ptr [rbp - 4]\n"
	" imul eax, eax\n pop rbp\n ret\n"
	"rx_o0_end:\n"
	".p2align 4\n"
	"rx_count: dec edi\n jg rx_count\n mov eax, edi\n ret\n"
	"rx_count_end:\n"
	".popsection\n"
	".pushsection .data\n"
	"rx_data: .long 1000\n"
	".popsection\n"
	".att_syntax prefix\n");

/* The trampoline's hook: counts the hit at COUNT, leaving the flags and the red zone below rsp
   as they were (a patch inside a function may be where both are live):
   lea -0x80(%rsp),%rsp; pushfq; lock incq COUNT(%rip); popfq; lea 0x80(%rsp),%rsp */
#define HOOK 23
#define COUNT 0x800

/* A page within 1 GB of @a for a trampoline, or NULL. */
static uint8_t *page_near(uint64_t a)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (uint64_t d = 1u << 20; d < 1u << 30; d += 1u << 20)
		for (int up = 0; up < 2; up++) {
			uint64_t h = ((up ? a + d : a - d) & ~(uint64_t)(pg - 1));
			void *p = mmap((void *)h, (size_t)pg, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p != MAP_FAILED)
				return p;
		}
	return NULL;
}

/* Make the pages of [a, a + n) writable (or not again). */
static int text_writable(uint64_t a, size_t n, int w)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), lo = a & ~(pg - 1);

	return mprotect((void *)lo, a + n - lo, PROT_READ | PROT_EXEC | (w ? PROT_WRITE : 0));
}

struct patch {
	uint8_t *page, saved[5];
	struct ps_x86_reloc r;
};

/* A function to patch: its bytes @code (@n of them), the patch @at bytes into it. */
struct subject {
	int (*fn)(int);
	const uint8_t *code;
	size_t n, at;
	const char *name;
};

/* Move the instructions at @s's patch site to a trampoline that counts hits, and patch a jmp to
   it over them. 0, or -1 with @err. */
static int patch_on(struct patch *p, const struct subject *s, struct ps_error *err)
{
	uint64_t fn = (uint64_t)s->fn;

	static const uint8_t hook[HOOK] = {0x48, 0x8d, 0x64, 0x24, 0x80, 0x9c, 0xf0, 0x48, 0xff, 0x05, 0, 0,
					   0,	 0,    0x9d, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0,	 0,    0};
	int32_t d = COUNT - 14, jmp; /* from the end of the lock incq */

	if (!(p->page = page_near(fn)))
		return ps_error_set(err, ENOMEM, "no page near 0x%llx", (unsigned long long)fn);
	if (ps_x86_reloc_at(s->code, s->n, fn, fn + s->at, 5, (uint64_t)p->page + HOOK, 0, s->name, &p->r, err) ||
	    p->r.nop) {
		munmap(p->page, (size_t)sysconf(_SC_PAGESIZE));
		return p->r.nop ? ps_error_set(err, PS_EUSAGE, "%s: a no-op entry", s->name) : -1;
	}
	memcpy(p->page, hook, HOOK);
	memcpy(p->page + 10, &d, 4);
	memcpy(p->page + HOOK, p->r.code, p->r.size);
	mprotect(p->page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE | PROT_EXEC);
	jmp = (int32_t)((uint64_t)p->page - (p->r.site + 5));
	text_writable(p->r.site, 5, 1);
	memcpy(p->saved, (void *)p->r.site, 5);
	*(uint8_t *)p->r.site = 0xe9;
	memcpy((uint8_t *)p->r.site + 1, &jmp, 4);
	text_writable(p->r.site, 5, 0);
	__builtin___clear_cache((char *)p->r.site, (char *)p->r.site + 5);
	return 0;
}

static uint64_t hits(const struct patch *p)
{
	return *(volatile uint64_t *)(p->page + COUNT);
}

static void patch_off(struct patch *p)
{
	text_writable(p->r.site, 5, 1);
	memcpy((void *)p->r.site, p->saved, 5);
	text_writable(p->r.site, 5, 0);
	munmap(p->page, (size_t)sysconf(_SC_PAGESIZE));
}

/* Call @s on each of @args directly, patched and restored: the results must agree and the
   patched calls count one hit each. The failed checks, or -1 when the patch was refused. */
static int runs_alike_here(const struct subject *s, struct ps_error *err)
{
	int (*fn)(int) = s->fn;
	static const int args[] = {0, 1, 2, 5, -1, -3, 7, 100};
	int direct[8], bad = 0;
	struct patch p;

	for (int i = 0; i < 8; i++)
		direct[i] = fn(args[i]);
	if (patch_on(&p, s, err))
		return -1;
	for (int i = 0; i < 8; i++)
		bad += fn(args[i]) != direct[i];
	bad += hits(&p) != 8;
	patch_off(&p);
	for (int i = 0; i < 8; i++)
		bad += fn(args[i]) != direct[i];
	return bad;
}

/* The same in a child, so a copy that goes wrong fails the test rather than the runner: the
   failed checks, -1 when the patch was refused (@err says why), 1000 when the child was
   killed. */
static int runs_alike(const struct subject *s, struct ps_error *err)
{
	int st, rc;
	pid_t pid;

	fflush(NULL);
	if ((pid = fork()) < 0) {
		ps_error_set(err, errno, "fork: %s", strerror(errno));
		return 1000;
	}
	if (pid == 0) {
		alarm(30); /* a copy that loops ends too */
		rc = runs_alike_here(s, err);
		if (rc < 0)
			fprintf(stderr, "  %s\n", err->msg);
		_exit(rc < 0 ? 254 : rc > 253 ? 253 : rc);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		ps_error_set(err, PS_EUSAGE, "%s: the child was killed by signal %d", s->name,
			     WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		return 1000;
	}
	return WEXITSTATUS(st) == 254 ? -1 : WEXITSTATUS(st);
}

TEST(reloc_run_functions_of_this_binary_patched_at_entry_and_inside_give_the_direct_results)
{
	static const struct {
		int (*fn)(int);
		const char *end, *name;
		size_t at;
	} rows[] = {
	    {rx_riprel, rx_riprel_end, "rx_riprel", 0},
	    {rx_jcc, rx_jcc_end, "rx_jcc", 0},
	    {rx_call, rx_call_end, "rx_call", 0},
	    {rx_jrcxz, rx_jrcxz_end, "rx_jrcxz", 0},
	    {rx_o0, rx_o0_end, "rx_o0", 0},
	    {rx_count, rx_count_end, "rx_count", 0},
	    {rx_o0, rx_o0_end, "rx_o0", 4},    /* inside: mov %edi,-0x4(%rbp); mov -0x4(%rbp),%eax */
	    {rx_jcc, rx_jcc_end, "rx_jcc", 2}, /* inside: jle; lea */
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_error err = {0};
		const uint8_t *code = (const uint8_t *)rows[i].fn;
		struct subject s = {rows[i].fn, code, (size_t)((const uint8_t *)rows[i].end - code), rows[i].at,
				    rows[i].name};
		int bad = runs_alike(&s, &err);
		if (bad)
			fprintf(stderr, "  %s: %d (%s)\n", rows[i].name, bad, err.msg);
		CHECK_EQ_INT(bad, 0);
	}
	CHECK_EQ_INT(rx_call(5), 21);
	CHECK_EQ_INT(rx_jrcxz(0), 99);
}

/* The bytes of function @name in ELF file @path, as the file holds them, into @buf (its size
   in *@n). 0, or -1. */
static int file_code(const char *path, const char *name, uint8_t *buf, size_t *n)
{
	struct ps_symtab *st = NULL;
	struct ps_elf_file *f = NULL;
	const struct ps_sym *s;
	struct ps_error err;
	uint64_t off;
	int rc = -1;

	if (ps_sym_open(&st, path, &err) == 0 && ps_sym_lookup(st, name, &s, &err) == 0 && s->size <= *n &&
	    ps_elf_open(&f, path, &err) == 0 && ps_elf_file_offset(f->elf, s->addr, &off) == 0 &&
	    pread(f->fd, buf, s->size, (off_t)off) == (ssize_t)s->size) {
		*n = s->size;
		rc = 0;
	}
	ps_elf_close(f);
	ps_sym_close(st);
	return rc;
}

/* tests/fixtures/reloc.c, built as the tests need it */
enum { B_O0, B_O2, B_FENTRY, B_PFE };
static const char *const builds[][2] = {
    [B_O0] = {"reloc-O0.so", "-O0 -g -fPIC -shared"},
    [B_O2] = {"reloc-O2.so", "-O2 -fno-align-loops -g -fPIC -shared"},
    [B_FENTRY] = {"reloc-fentry", "-O2 -pg -mfentry -mnop-mcount -fno-pie -no-pie -nostartfiles -Wl,-e,rl_load"},
    [B_PFE] = {"reloc-pfe.so", "-O2 -fpatchable-function-entry=5 -fPIC -shared"},
};
static const char *const fns[] = {"rl_square", "rl_load", "rl_sign", "rl_calls", "rl_helper", "rl_loop"};

/* Its path, or NULL when it does not build. */
static const char *fixture(int b)
{
	return fixtures_cc("reloc.c", builds[b][0], builds[b][1]);
}

TEST(reloc_run_compiled_functions_moved_from_their_file_give_the_direct_results)
{
	for (int b = B_O0; b <= B_O2; b++) {
		const char *path = fixture(b);
		void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
		if (!h)
			SKIP("tests/fixtures/reloc.c does not build or load with %s", builds[b][1]);
		for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
			uint8_t code[256];
			size_t n = sizeof code;
			struct ps_error err = {0};
			void *fn = dlsym(h, fns[i]);
			int bad;
			CHECK(fn && file_code(path, fns[i], code, &n) == 0);
			if (!fn || n == sizeof code || (b == B_O2 && !strcmp(fns[i], "rl_loop")))
				continue; /* refused: below */
			bad = runs_alike(&(struct subject){(int (*)(int))fn, code, n, 0, fns[i]}, &err);
			if (bad)
				fprintf(stderr, "  %s %s: %d (%s)\n", builds[b][0], fns[i], bad, err.msg);
			CHECK_EQ_INT(bad, 0);
		}
		dlclose(h);
	}
}

TEST(reloc_run_O2_code_as_gcc_writes_it_rip_relative_jcc_rel8_and_a_loop_into_byte_2)
{
	const char *path = fixture(B_O2);
	uint8_t code[256];
	size_t n = sizeof code;
	struct ps_x86_insn in;
	struct ps_x86_reloc r;
	struct ps_error err = {0};

	if (!path)
		SKIP("tests/fixtures/reloc.c does not build with %s", builds[B_O2][1]);
	/* the first instruction of rl_load reads memory relative to rip */
	CHECK(file_code(path, "rl_load", code, &n) == 0 && ps_x86_decode(code, n, 0, &in) == 0 && in.riprel);
	/* rl_sign has a jcc rel8 among the instructions the patch displaces */
	n = sizeof code;
	CHECK(file_code(path, "rl_sign", code, &n) == 0);
	CHECK_EQ_INT(ps_x86_reloc(code, n, 0x10000, 5, 0x20000, 0, "rl_sign", &r, &err), 0);
	CHECK(r.n >= 2 && code[r.from[1]] >= 0x70 && code[r.from[1]] <= 0x7f);
	/* rl_loop loops back to its second instruction */
	n = sizeof code;
	CHECK(file_code(path, "rl_loop", code, &n) == 0);
	CHECK_EQ_INT(ps_x86_reloc(code, n, 0x10000, 5, 0x20000, 0, "rl_loop", &r, &err), -1);
	CHECK(strstr(err.msg, "rl_loop+0x") && strstr(err.msg, ": a branch to +0x2 lands inside the "));
}

TEST(reloc_finds_the_no_op_entries_of_mnop_mcount_and_patchable_function_entry)
{
	for (int b = B_FENTRY; b <= B_PFE; b++) {
		const char *path = fixture(b);
		if (!path)
			SKIP("tests/fixtures/reloc.c does not build with %s", builds[b][1]);
		for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
			uint8_t code[256];
			size_t n = sizeof code;
			struct ps_x86_reloc r;
			struct ps_error err = {0};
			CHECK(file_code(path, fns[i], code, &n) == 0);
			CHECK_EQ_INT(ps_x86_reloc(code, n, 0x10000, 5, 0x20000, 0, fns[i], &r, &err), 0);
			CHECK_STR(err.msg, "");
			CHECK(r.nop && r.len == 5 && r.n == 0);
			CHECK(r.site == 0x10000 || (r.site == 0x10004 && code[0] == 0xf3));
		}
	}
}
