/* tests/c/test_emptyhit.c - core/binary/emptyhit.c and core/binary/buildid.c against functions of known code
 * (tests/fixtures/emptyhit.c) and readelf's build id. */
#include "ctest.h"
#include "fixtures.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "buildid.h"
#include "emptyhit.h"

TEST(emptyhit_finds_the_entry_step_and_the_instructions_before_each_return)
{
	const char *prog = fixtures_cc("emptyhit.c", "emptyhit", "-O2");
	/* per function: next (0: none), then each tail's at and ret, as offsets from the entry */
	static const struct {
		const char *fn;
		int next, ntails, tail[2][2];
	} rows[] = {
	    {"eh_plain", 3, 1, {{3, 7}}},
	    {"eh_jump", 0, 1, {{2, 5}}},
	    {"eh_pop", 1, 0, {{0, 0}}},
	    {"eh_two", 3, 2, {{5, 8}, {9, 11}}},
	};
	struct ps_empty_hit e;
	struct ps_error err;

	CHECK(prog != NULL);
	if (!prog)
		return;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		uint64_t a = fixtures_addr_of(prog, rows[i].fn);
		CHECK(a != 0);
		CHECK_EQ_INT(ps_empty_hit_sites(prog, rows[i].fn, &e, &err), 0);
		CHECK_EQ_INT(e.entry, a);
		CHECK_EQ_INT(e.next, rows[i].next ? a + (uint64_t)rows[i].next : 0);
		CHECK_EQ_INT(e.ntails, rows[i].ntails);
		for (int k = 0; k < rows[i].ntails && k < e.ntails; k++) {
			CHECK_EQ_INT(e.tail[k].at, a + (uint64_t)rows[i].tail[k][0]);
			CHECK_EQ_INT(e.tail[k].ret, a + (uint64_t)rows[i].tail[k][1]);
		}
	}
}

TEST(emptyhit_names_what_it_cannot_find)
{
	const char *prog = fixtures_cc("emptyhit.c", "emptyhit", "-O2");
	struct ps_empty_hit e;
	struct ps_error err;

	CHECK(prog != NULL);
	if (!prog)
		return;
	CHECK_EQ_INT(ps_empty_hit_sites(prog, "no_such_fn", &e, &err), -1);
	CHECK(strstr(err.msg, "no function 'no_such_fn'") != NULL);
	CHECK_EQ_INT(ps_empty_hit_sites("/nonexistent/prog", "main", &e, &err), -1);
	CHECK(strstr(err.msg, "cannot open /nonexistent/prog") != NULL);
}

TEST(build_id_is_the_one_readelf_prints)
{
	const char *prog = fixtures_cc("emptyhit.c", "emptyhit-id", "-O2 -Wl,--build-id=sha1");
	const char *none = fixtures_cc("emptyhit.c", "emptyhit-noid", "-O2 -Wl,--build-id=none");
	char cmd[700], want[128], hex[41];
	struct ps_error err;

	CHECK(prog != NULL && none != NULL);
	if (!prog || !none)
		return;
	snprintf(cmd, sizeof cmd, "LC_ALL=C readelf -n %s | sed -n 's/.*Build ID: *//p'", prog);
	fixtures_first_line(want, sizeof want, cmd);
	CHECK_EQ_INT(strlen(want), 40);
	CHECK_EQ_INT(ps_build_id(prog, hex, sizeof hex, &err), 0);
	CHECK_STR(hex, want);
	CHECK_EQ_INT(ps_build_id(none, hex, sizeof hex, &err), 0);
	CHECK_STR(hex, "");
	CHECK_EQ_INT(ps_build_id("/nonexistent/prog", hex, sizeof hex, &err), -1);
	CHECK(strstr(err.msg, "cannot open /nonexistent/prog") != NULL);
}
