/* tests/c/test_codeaddr.c - core/binary/codeaddr.c: which addresses a probe may take, against objdump
 * and readelf on tests/fixtures/tracer_fx.c built with symbols and stripped. */
#include "ctest.h"
#include "fixtures.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "codeaddr.h"
#include "emptyhit.h"

/* The address of the @k-th instruction (from 1) of function @fn of @bin, from objdump. */
static uint64_t insn_addr(const char *bin, const char *fn, int k)
{
	char cmd[1200], line[64];

	snprintf(cmd, sizeof cmd,
		 "objdump -d --no-show-raw-insn %s | awk '/<%s>:$/ {f = 1; next} f && /^ *[0-9a-f]+:/ {if (++n == "
		 "%d) {sub(\":\", \"\", $1); print $1; exit}}'",
		 bin, fn, k);
	return strtoull(fixtures_first_line(line, sizeof line, cmd), NULL, 16);
}

/* The address of section @name of @bin, from readelf. */
static uint64_t section_addr(const char *bin, const char *name)
{
	char cmd[1200], line[128];
	unsigned long long a = 0;

	snprintf(cmd, sizeof cmd,
		 "LC_ALL=C readelf -SW %s | sed 's/^ *\\[ *[0-9]*\\]//' | awk '$1 == \"%s\" {print $3}'", bin, name);
	sscanf(fixtures_first_line(line, sizeof line, cmd), "%llx", &a);
	return a;
}

/* The address of the instruction after the first push of function @fn of @bin, from objdump:
   there the return address is 16 bytes above the stack pointer. */
static uint64_t after_push(const char *bin, const char *fn)
{
	char cmd[1200], line[64];

	snprintf(cmd, sizeof cmd,
		 "objdump -d --no-show-raw-insn %s | awk '/<%s>:$/ {f = 1; next} f && /^ *[0-9a-f]+:/ {if (p) "
		 "{sub(\":\", \"\", $1); print $1; exit} if ($2 ~ /^push/) p = 1}'",
		 bin, fn);
	return strtoull(fixtures_first_line(line, sizeof line, cmd), NULL, 16);
}

/* ps_code_check() of @addr: its message ("" when accepted). */
static const char *check(const char *bin, uint64_t addr, unsigned flags)
{
	static struct ps_error err;

	err.msg[0] = '\0';
	if (ps_code_check(bin, NULL, addr, flags, &err) == 0)
		return "";
	return err.msg[0] ? err.msg : "(refused without a message)";
}

TEST(code_check_names_instruction_boundaries_sections_and_entries)
{
	const char *bin = fixtures_cc("tracer_fx.c", "codeaddr-fx", "-O2 -g -pthread");
	char want[600];

	if (!bin)
		SKIP("cc failed");
	uint64_t work = insn_addr(bin, "fx_work", 1), second = insn_addr(bin, "fx_work", 2);
	uint64_t ro = section_addr(bin, ".rodata");
	uint64_t rec = insn_addr(bin, "fx_rec", 1), pushed = after_push(bin, "fx_rec");
	CHECK(work && second > work + 1 && ro && rec && pushed > rec);

	CHECK_STR(check(bin, work, PS_CODE_ENTRY), "");
	CHECK_STR(check(bin, second, 0), "");
	snprintf(want, sizeof want,
		 "0x%" PRIx64 " is inside the instruction at 0x%" PRIx64
		 " in fx_work (fx_work+0); boundaries near it: 0x%" PRIx64 ", 0x%" PRIx64,
		 work + 1, work, work, second);
	CHECK_STR(check(bin, work + 1, 0), want);
	snprintf(want, sizeof want,
		 "0x%" PRIx64 " is inside fx_rec (fx_rec+%#" PRIx64
		 "), not at a function's entry (a function region starts where the return address is at the "
		 "stack pointer); give fx_rec's entry 0x%" PRIx64 ", or a range 0x%" PRIx64 "-0xEND",
		 pushed, pushed - rec, rec, pushed);
	CHECK_STR(check(bin, pushed, PS_CODE_ENTRY), want);
	snprintf(want, sizeof want, "0x%" PRIx64 " is in .rodata, not in code; its code is at 0x", ro + 4);
	CHECK(!strncmp(check(bin, ro + 4, 0), want, strlen(want)));
	snprintf(want, sizeof want, "0x0 is outside every section of %s; its code is at 0x", bin);
	CHECK(!strncmp(check(bin, 0, PS_CODE_ENTRY), want, strlen(want)));
	snprintf(want, sizeof want, "0xffffffff is outside every section of %s; its code is at 0x", bin);
	CHECK(!strncmp(check(bin, 0xffffffff, PS_CODE_ENTRY), want, strlen(want)));
}

/* Inside a function, a function region may start where .eh_frame puts the return address at the
   stack pointer: before a ret that keeps it (what perfsh check's floor runs catch). */
TEST(code_check_takes_a_function_region_where_the_return_address_is_at_the_stack_pointer)
{
	const char *bin = fixtures_cc("tracer_fx.c", "codeaddr-fx", "-O2 -g -pthread");
	struct ps_empty_hit e;
	struct ps_error err;

	if (!bin)
		SKIP("cc failed");
	CHECK_EQ_INT(ps_empty_hit_sites(bin, "fx_work", &e, &err), 0);
	CHECK(e.ntails > 0);
	for (int i = 0; i < e.ntails; i++) {
		CHECK(e.tail[i].at != e.entry);
		CHECK_STR(check(bin, e.tail[i].at, PS_CODE_ENTRY), "");
	}
}

/* Without symbols the instructions are decoded from their section's start, and the call frame
   information tells an entry (the return address at the stack pointer) from the rest. */
TEST(code_check_of_a_stripped_program)
{
	const char *bin = fixtures_cc("tracer_fx.c", "codeaddr-fx", "-O2 -g -pthread");
	const char *stripped = fixtures_cc("tracer_fx.c", "codeaddr-fx-stripped", "-O2 -s -pthread");
	char want[600];

	if (!bin || !stripped)
		SKIP("cc failed");
	uint64_t rec = insn_addr(bin, "fx_rec", 1), text = section_addr(stripped, ".text");
	/* fx_rec is recursive: it saves a register before it calls itself */
	uint64_t push = after_push(bin, "fx_rec");
	uint64_t at = rec, next = 0; /* the first instruction longer than a byte */
	for (int k = 2; k < 10 && (next = insn_addr(bin, "fx_rec", k)) == at + 1; k++)
		at = next;
	CHECK(rec && push && text && next > at + 1);
	CHECK_STR(check(stripped, rec, PS_CODE_ENTRY), "");
	snprintf(want, sizeof want,
		 "0x%" PRIx64 " is inside the instruction at 0x%" PRIx64 " in .text (.text+%#" PRIx64
		 "); boundaries near it: 0x%" PRIx64 ", 0x%" PRIx64,
		 at + 1, at, at - text, at, next);
	CHECK_STR(check(stripped, at + 1, 0), want);
	CHECK_STR(check(stripped, push, 0), "");
	snprintf(want, sizeof want,
		 "0x%" PRIx64 " in .text (.text+%#" PRIx64
		 ") is not a function's entry (its .eh_frame puts the return address away from the stack "
		 "pointer there); give an entry, or a range 0x%" PRIx64 "-0xEND",
		 push, push - text, push);
	CHECK_STR(check(stripped, push, PS_CODE_ENTRY), want);
}
