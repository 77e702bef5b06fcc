/* tests/c/test_machine.c - core/events/machine.c (self-tests, PERFSH_SAMPLING, file offsets) and
 * ps_x86_entry_step(), one row per first instruction. */
#include "ctest.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "machine.h"
#include "procmaps.h"
#include "x86insn.h"

TEST(machine_entry_step)
{
	static const struct {
		const char *what;
		uint8_t code[8];
		size_t n;
		int ok;
		unsigned len, sp_down;
	} rows[] = {
	    {"endbr64", {0xf3, 0x0f, 0x1e, 0xfa}, 4, 0, 4, 0},
	    {"push %rbp", {0x55}, 1, 0, 1, 8},
	    {"push %r15", {0x41, 0x57}, 2, 0, 2, 8},
	    {"sub $0x18,%rsp", {0x48, 0x83, 0xec, 0x18}, 4, 0, 4, 0x18},
	    {"sub $0x1000,%rsp", {0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00}, 7, 0, 7, 0x1000},
	    {"mov %rdi,%rax", {0x48, 0x89, 0xf8}, 3, 0, 3, 0},
	    {"mov %rsp,%rbp", {0x48, 0x89, 0xe5}, 3, 0, 3, 0},
	    {"test %rdi,%rdi", {0x48, 0x85, 0xff}, 3, 0, 3, 0},
	    {"xor %eax,%eax", {0x31, 0xc0}, 2, 0, 2, 0},
	    {"movslq %edi,%rax", {0x48, 0x63, 0xc7}, 3, 0, 3, 0},
	    {"lea 0x1(%rdi),%rax", {0x48, 0x8d, 0x47, 0x01}, 4, 0, 4, 0},
	    {"cmp $0x0,%rdi", {0x48, 0x83, 0xff, 0x00}, 4, 0, 4, 0},
	    {"mov %rsi,%rdi: an argument", {0x48, 0x89, 0xf7}, 3, -1, 0, 0},
	    {"xor %edx,%edx: an argument", {0x31, 0xd2}, 2, -1, 0, 0},
	    {"mov $1,%ecx: an argument", {0xb9, 1, 0, 0, 0}, 5, -1, 0, 0},
	    {"lea 0x8(%rsp),%rsp", {0x48, 0x8d, 0x64, 0x24, 0x08}, 5, -1, 0, 0},
	    {"add $0x8,%rsp", {0x48, 0x83, 0xc4, 0x08}, 4, -1, 0, 0},
	    {"sub $0x8,%r12: not the stack", {0x49, 0x83, 0xec, 0x08}, 4, 0, 4, 0},
	    {"cmpb $0x0,(%rdi)", {0x80, 0x3f, 0x00}, 3, 0, 3, 0},
	    {"imul $0x3,%edi,%eax", {0x6b, 0xc7, 0x03}, 3, 0, 3, 0},
	    {"mov $1,%cl: an argument", {0xb1, 0x01}, 2, -1, 0, 0},
	    {"imul %esi: writes rdx, an argument", {0xf7, 0xee}, 2, -1, 0, 0},
	    {"pop %rbx: moves the stack", {0x5b}, 1, -1, 0, 0},
	    {"jmp", {0xe9, 0, 0, 0, 0}, 5, -1, 0, 0},
	    {"call", {0xe8, 0, 0, 0, 0}, 5, -1, 0, 0},
	    {"ret", {0xc3}, 1, -1, 0, 0},
	    {"int3", {0xcc}, 1, -1, 0, 0},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		unsigned len = 0, sp = 0;
		int rc = ps_x86_entry_step(rows[i].code, rows[i].n, &len, &sp);
		if (rc != rows[i].ok || (rc == 0 && (len != rows[i].len || sp != rows[i].sp_down))) {
			fprintf(stderr, "  %s: rc %d len %u sp_down %u\n", rows[i].what, rc, len, sp);
			CHECK(0);
		}
	}
}

TEST(machine_forced_by_environment)
{
	const char *was = getenv("PERFSH_SAMPLING");
	char *save = was ? strdup(was) : NULL;
	enum ps_counter c = PS_COUNT_BREAKPOINT;
	struct ps_error err;

	unsetenv("PERFSH_SAMPLING");
	CHECK_EQ_INT(ps_machine_forced(&c, &err), 0);
	setenv("PERFSH_SAMPLING", "uprobe", 1);
	CHECK_EQ_INT(ps_machine_forced(&c, &err), 1);
	CHECK_EQ_INT(c, PS_COUNT_UPROBE);
	setenv("PERFSH_SAMPLING", "int3", 1);
	CHECK_EQ_INT(ps_machine_forced(&c, &err), 1);
	CHECK_STR(ps_counter_name(c), "int3");
	setenv("PERFSH_SAMPLING", "dr7", 1);
	CHECK_EQ_INT(ps_machine_forced(&c, &err), -1);
	CHECK_STR(err.msg, "PERFSH_SAMPLING is 'dr7': set it to breakpoint, uprobe or int3, or unset it");
	if (save)
		setenv("PERFSH_SAMPLING", save, 1);
	else
		unsetenv("PERFSH_SAMPLING");
	free(save);
}

static int seven(int x)
{
	return 7 * x;
}

TEST(machine_self_tests)
{
	char why[256] = "", path[4096];
	uint64_t off = 0;
	struct ps_error err;

	/* the answer depends on the machine; a "no" says why, and the answer is kept */
	int bp = ps_machine_breakpoints_fire(why, sizeof why);
	CHECK(bp == 1 || (bp == 0 && why[0]));
	CHECK_EQ_INT(ps_machine_breakpoints_fire(why, sizeof why), bp);
	why[0] = '\0';
	int up = ps_machine_uprobes_fire(why, sizeof why);
	CHECK(up == 1 || (up == 0 && why[0]));
	if (up)
		CHECK(ps_machine_uprobe_type() >= 0);
	/* a function of this program is in this program's file */
	CHECK_EQ_INT(ps_maps_file_offset(0, (uint64_t)(uintptr_t)seven, path, sizeof path, &off, &err), 0);
	CHECK(strstr(path, "tests/c/run") != NULL);
	CHECK(off > 0);
	CHECK_EQ_INT(ps_maps_file_offset(0, 8, path, sizeof path, &off, &err), -1);
	CHECK(seven(1) == 7);
}
