/* tests/c/test_retsites.c - core/binary/retsites.c against objdump: every ret and every jump out of
 * functions of tests/fixtures/retsites.c (gcc -O2), their cold parts included. */
#include "ctest.h"
#include "fixtures.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "elffile.h"
#include "procmaps.h"
#include "retsites.h"
#include "symbols.h"

/* The file offset of function @fn of @prog (0 if not found). */
static uint64_t offset_of(const char *prog, const char *fn)
{
	struct ps_symtab *st;
	struct ps_elf_file *f;
	const struct ps_sym *s;
	struct ps_error err;
	uint64_t off = 0;

	if (ps_sym_open(&st, prog, &err) < 0)
		return 0;
	if (ps_sym_lookup(st, fn, &s, &err) == 0 && ps_elf_open(&f, prog, &err) == 0) {
		if (ps_elf_file_offset(f->elf, s->addr, &off))
			off = 0;
		ps_elf_close(f);
	}
	ps_sym_close(st);
	return off;
}

/* The exits of @fn as objdump shows them: "ADDR ret", "ADDR jmp" (to another function),
   "ADDR jmp*" (indirect, unless @tables: the function's indirect jumps go through tables), in
   address order, from <FN> and <FN.cold>. */
static char *objdump_exits(char *buf, size_t n, const char *prog, const char *fn, int tables)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd,
		 "objdump -d --no-show-raw-insn '%s' | awk -v f='%s' -v t=%d '"
		 "/^[0-9a-f]+ </ { in_f = ($2 == \"<\" f \">:\" || $2 == \"<\" f \".cold>:\"); next }"
		 "in_f && $2 == \"ret\" { a[n++] = $1 \" ret\" }"
		 "in_f && $2 == \"jmp\" && $3 ~ /^\\*/ && !t { a[n++] = $1 \" jmp*\" }"
		 "in_f && $2 == \"jmp\" && $4 ~ /^</ { g = $4; sub(/^</, \"\", g); sub(/[+>].*/, \"\", g);"
		 " if (g != f && g != f \".cold\") a[n++] = $1 \" jmp\" }"
		 "END { for (i = 0; i < n; i++) printf \"%%s%%s\", (i ? \" \" : \"\"), a[i]; print \"\" }' "
		 "| tr -d :",
		 prog, fn, tables);
	return fixtures_first_line(buf, n, cmd);
}

/* The same from ps_retsites_find(), address order as objdump gives it (the .cold parts first
   where they lie lower). */
static char *found_exits(char *buf, size_t n, const struct ps_retsites *rs)
{
	static const char *kind[] = {"?", "ret", "jmp", "jmp*"};
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < rs->n && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%llx %s", i ? " " : "",
					(unsigned long long)rs->site[i].addr, kind[rs->site[i].kind]);
	return buf;
}

TEST(retsites_finds_each_ret_and_each_jump_out_of_a_function_and_its_cold_parts)
{
	const char *prog = fixtures_cc("retsites.c", "retsites", "-O2 -g");
	static const struct {
		const char *fn;
		int tables, kinds, nparts;
	} rows[] = {
	    {"rs_leaf", 0, 1 << PS_RETSITE_RET, 1},    {"rs_plain", 0, 1 << PS_RETSITE_RET, 1},
	    {"rs_two", 0, 1 << PS_RETSITE_RET, 1},     {"rs_tail", 0, 1 << PS_RETSITE_JMP, 1},
	    {"rs_ptr", 0, 1 << PS_RETSITE_JMP_IND, 1}, {"rs_switch", 1, 1 << PS_RETSITE_RET, 0},
	    {"rs_cold", 0, 1 << PS_RETSITE_RET, 0},
	};
	char want[1024], got[1024];
	struct ps_retsites rs;
	struct ps_error err;

	CHECK(prog != NULL);
	if (!prog)
		return;
	if (!fixtures_first_line(want, sizeof want, "command -v objdump")[0])
		SKIP("objdump is not installed");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		uint64_t off = offset_of(prog, rows[i].fn);
		int kinds = 0;
		CHECK(off != 0);
		CHECK_EQ_INT(ps_retsites_find(prog, off, &rs, &err), 0);
		objdump_exits(want, sizeof want, prog, rows[i].fn, rows[i].tables);
		CHECK(want[0] != '\0');
		CHECK_STR(found_exits(got, sizeof got, &rs), want);
		for (int k = 0; k < rs.n; k++)
			kinds |= 1 << rs.site[k].kind;
		CHECK_EQ_INT(kinds, rows[i].kinds);
		if (rows[i].nparts)
			CHECK_EQ_INT(rs.nparts, rows[i].nparts);
		CHECK_EQ_INT(rs.cold, rs.nparts - 1);
	}
}

TEST(retsites_tells_a_leaf_that_calls_nothing_and_leaves_by_its_rets_only)
{
	const char *prog = fixtures_cc("retsites.c", "retsites", "-O2 -g");
	static const struct {
		const char *fn;
		int leaf, calls;
	} rows[] = {
	    {"rs_leaf", 1, 0},			  /* x + 1; ret */
	    {"rs_plain", 0, 1}, {"rs_two", 0, 2}, /* a call (rs_leaf inlined nowhere: noinline) */
	    {"rs_tail", 0, 0},			  /* no call, but a tail call out: jmp rs_leaf */
	    {"rs_ptr", 0, 0},			  /* a tail call through a pointer */
	};
	struct ps_retsites rs;
	struct ps_error err;

	CHECK(prog != NULL);
	if (!prog)
		return;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CHECK_EQ_INT(ps_retsites_find(prog, offset_of(prog, rows[i].fn), &rs, &err), 0);
		CHECK_EQ_INT(ps_retsites_leaf(&rs), rows[i].leaf);
		CHECK_EQ_INT(rs.calls, rows[i].calls);
	}
}

TEST(retsites_takes_in_the_cold_parts_gcc_split_off)
{
	const char *prog = fixtures_cc("retsites.c", "retsites", "-O2 -g");
	char cmd[256], out[256];
	struct ps_retsites rs;
	struct ps_error err;
	int in_cold = 0;

	CHECK(prog != NULL);
	if (!prog)
		return;
	snprintf(cmd, sizeof cmd, "nm '%s' | grep -c ' rs_cold\\.cold$'", prog);
	if (strcmp(fixtures_first_line(out, sizeof out, cmd), "1"))
		SKIP("this compiler did not split rs_cold into rs_cold.cold");
	/* rs_cold's cold part calls and jumps back into rs_cold: two parts, one exit, in the hot one */
	CHECK_EQ_INT(ps_retsites_find(prog, offset_of(prog, "rs_cold"), &rs, &err), 0);
	CHECK_EQ_INT(rs.nparts, 2);
	CHECK_EQ_INT(rs.cold, 1);
	CHECK_EQ_INT(rs.n, 1);
	CHECK(rs.n == 1 && rs.site[0].addr > rs.entry);
	snprintf(cmd, sizeof cmd, "nm '%s' | grep -c ' rs_switch\\.cold$'", prog);
	if (strcmp(fixtures_first_line(out, sizeof out, cmd), "1"))
		return;
	/* rs_switch's default case went to rs_switch.cold, with a ret of its own, below rs_switch */
	CHECK_EQ_INT(ps_retsites_find(prog, offset_of(prog, "rs_switch"), &rs, &err), 0);
	for (int k = 0; k < rs.n; k++)
		in_cold += rs.site[k].addr < rs.entry;
	CHECK_EQ_INT(rs.cold, 1);
	CHECK_EQ_INT(in_cold, 1);
}

TEST(retsites_takes_the_exits_of_the_function_that_holds_an_entry_inside_it)
{
	const char *prog = fixtures_cc("retsites.c", "retsites", "-O2 -g");
	struct ps_retsites whole, in;
	struct ps_error err;
	uint64_t off;

	CHECK(prog != NULL);
	if (!prog)
		return;
	off = offset_of(prog, "rs_two");
	CHECK_EQ_INT(ps_retsites_find(prog, off, &whole, &err), 0);
	/* rs_two's last ret, entered there as an empty hit's tail: the same exits */
	CHECK(whole.n > 0);
	if (whole.n <= 0)
		return;
	CHECK_EQ_INT(ps_retsites_find(prog, whole.site[whole.n - 1].offset, &in, &err), 0);
	CHECK_EQ_INT(in.entry, whole.site[whole.n - 1].addr);
	CHECK_EQ_INT(in.n, whole.n);
	CHECK_EQ_INT(in.site[0].addr, whole.site[0].addr);
	/* inside an instruction: no instruction begins there */
	CHECK_EQ_INT(ps_retsites_find(prog, off + 1, &in, &err), -1);
	CHECK_EQ_INT(ps_retsites_find(prog, 0, &in, &err), -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
	CHECK(strstr(err.msg, "no function holds file offset 0x0") != NULL);
	CHECK_EQ_INT(ps_retsites_find("/nonexistent/prog", 0x1000, &in, &err), -1);
}
