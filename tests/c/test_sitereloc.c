/* tests/c/test_sitereloc.c - core/binary/sitereloc.c on tests/fixtures/sitereloc.c: what only the
 * whole code of a function tells (its jump tables, its cold parts) refuses a patch site, at
 * the entry or inside, or lets it be moved. */
#include "ctest.h"
#include "fixtures.h"

#include <stdlib.h>
#include <string.h>

#include "elffile.h"
#include "sitereloc.h"
#include "symbols.h"

TEST(site_reloc_refuses_an_entry_that_a_jump_table_or_a_cold_part_jumps_into)
{
	const char *prog = fixtures_cc("sitereloc.c", "sitereloc", "-O2 -g -no-pie -fno-pie");
	static const struct {
		const char *fn, *why;
	} rows[] = {
	    {"er_table", "er_table: a branch at +0xb lands inside the 7 bytes displaced for the patch"},
	    {"er_hot", "er_hot: a branch at 0x%llx (er_hot.cold) lands inside the 6 bytes displaced for the patch"},
	    {"er_reg",
	     "er_reg: an indirect jump at +0x8 whose targets are not known may land inside the patched bytes"},
	};
	if (!prog)
		SKIP("tests/fixtures/sitereloc.c does not build");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_x86_reloc r;
		struct ps_error err = {0};
		char why[256];
		uint64_t a = fixtures_addr_of(prog, rows[i].fn);
		snprintf(why, sizeof why, rows[i].why, (unsigned long long)fixtures_addr_of(prog, "er_hot.cold") + 2);
		CHECK(a != 0);
		CHECK_EQ_INT(ps_site_reloc(prog, a, 0, 5, a + 0x100000, 0, &r, &err), -1);
		CHECK_EQ_INT(err.code, PS_EUSAGE);
		CHECK_STR(err.msg, why);
	}
}

TEST(site_reloc_moves_an_entry_whose_jump_table_and_pointer_jumps_land_elsewhere)
{
	const char *prog = fixtures_cc("sitereloc.c", "sitereloc", "-O2 -g -no-pie -fno-pie");
	static const char *const fns[] = {"er_switch", "er_ptr"};

	if (!prog)
		SKIP("tests/fixtures/sitereloc.c does not build");
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
		struct ps_x86_reloc r;
		struct ps_error err = {0};
		uint64_t a = fixtures_addr_of(prog, fns[i]), bias = 0x7f0000000000ull;
		CHECK(a != 0);
		CHECK_EQ_INT(ps_site_reloc(prog, a, bias, 5, a + bias - 0x10000, 0, &r, &err), 0);
		CHECK_STR(err.msg, "");
		CHECK(r.site == a + bias && r.len >= 5 && r.size > 5);
	}
	/* without its jump table read, er_switch's jmp *TABLE(,%rdi,8) would refuse it */
	struct ps_elf_file *f;
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	uint64_t a = fixtures_addr_of(prog, "er_switch");
	uint8_t *code;
	CHECK(ps_elf_open(&f, prog, &err) == 0);
	CHECK((code = ps_elf_code(f, a, 0x40)) != NULL);
	CHECK_EQ_INT(ps_x86_reloc(code, 0x40, a, 5, a + 0x1000, 0, "er_switch", &r, &err), -1);
	CHECK(strstr(err.msg, "an indirect jump whose targets are not known") != NULL);
	free(code);
	ps_elf_close(f);
}

TEST(site_reloc_moves_the_instructions_at_a_boundary_inside_a_function)
{
	const char *prog = fixtures_cc("sitereloc.c", "sitereloc", "-O2 -g -no-pie -fno-pie");
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	char want[600];
	uint64_t a;

	if (!prog)
		SKIP("tests/fixtures/sitereloc.c does not build");
	/* er_table's loop head, which its jump table goes back to */
	a = fixtures_addr_of(prog, "er_table");
	CHECK_EQ_INT(ps_site_reloc(prog, a + 2, 0, 5, a + 0x1000, 0, &r, &err), 0);
	CHECK_STR(err.msg, "");
	CHECK(r.site == a + 2 && r.len == 5 && r.again == a + 0xb);
	/* inside er_switch's first instruction, and after it */
	a = fixtures_addr_of(prog, "er_switch");
	CHECK_EQ_INT(ps_site_reloc(prog, a + 1, 0, 5, a + 0x1000, 0, &r, &err), -1);
	CHECK_STR(err.msg, "er_switch+0x1: no instruction of the function begins there");
	CHECK_EQ_INT(ps_site_reloc(prog, a + 3, 0, 5, a + 0x1000, 0, &r, &err), 0);
	CHECK(r.site == a + 3 && r.len == 6);
	/* outside every function */
	CHECK_EQ_INT(ps_site_reloc(prog, 0x10, 0, 5, 0x1000, 0, &r, &err), -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
	snprintf(want, sizeof want, "%s: no function holds 0x10", prog);
	CHECK_STR(err.msg, want);
}

TEST(site_reloc_names_a_jump_back_to_the_entry_from_a_cold_part)
{
	const char *prog = fixtures_cc("sitereloc.c", "sitereloc", "-O2 -g -no-pie -fno-pie");
	struct ps_x86_reloc r;
	struct ps_error err = {0};
	uint64_t a, bias = 0x1000;

	if (!prog)
		SKIP("tests/fixtures/sitereloc.c does not build");
	a = fixtures_addr_of(prog, "er_back");
	CHECK_EQ_INT(ps_site_reloc(prog, a, bias, 5, a + bias + 0x1000, 0, &r, &err), 0);
	CHECK_STR(err.msg, "");
	CHECK(r.again == fixtures_addr_of(prog, "er_back.cold") + 2 + bias);
	/* er_switch goes back to nowhere */
	a = fixtures_addr_of(prog, "er_switch");
	CHECK_EQ_INT(ps_site_reloc(prog, a, bias, 5, a + bias + 0x1000, 0, &r, &err), 0);
	CHECK(r.again == 0);
}
