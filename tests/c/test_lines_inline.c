/* tests/c/test_lines_inline.c - core/binary/lines_inline.c: where the hits of an inlined copy end,
 * against objdump.
 *
 * tests/fixtures/inline_both.c is compiled with cc -O2 -g: step() is inlined into main and kept
 * out of line too; gcc hoists part of the copy before its entry, so a range of the copy ends at
 * the copy's entry. Every end must be reached from the copy by objdump's reading of the code.
 */
#include "ctest.h"
#include "fixtures.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"

/* Whether @addr is inside copy @copy of @in[0..n). */
static int in_copy(const struct ps_inline *in, int n, int copy, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (in[i].copy == copy && addr >= in[i].lo && addr < in[i].hi)
			return 1;
	return 0;
}

/* An instruction as objdump prints it: where, whether it jumps or returns (no fall-through),
   and the target of a direct jump. */
struct dis {
	uint64_t addr, target;
	int nofall;
};

/* The instructions of @exe, from objdump -d; *@n of them (free the array). */
static struct dis *objdump(const char *exe, int *n)
{
	char cmd[700], line[512];
	struct dis *d = NULL;
	int cap = 0;
	FILE *f;

	*n = 0;
	snprintf(cmd, sizeof cmd, "objdump -d --no-show-raw-insn %s", exe);
	if (!(f = popen(cmd, "r")))
		return NULL;
	while (fgets(line, sizeof line, f)) {
		char *p, mn[32] = "";
		uint64_t a = strtoull(line, &p, 16), t = 0;
		if (p == line || *p != ':' || sscanf(p + 1, " %31s %" SCNx64, mn, &t) < 1)
			continue;
		if (*n == cap) {
			struct dis *nd = realloc(d, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *d);
			if (!nd)
				break;
			d = nd;
		}
		d[*n] = (struct dis){a, mn[0] == 'j' ? t : 0, !strcmp(mn, "jmp") || !strncmp(mn, "ret", 3)};
		(*n)++;
	}
	pclose(f);
	return d;
}

/* Whether objdump's code reaches @addr from copy @copy: a jump in it to @addr, or an instruction
   of it just before @addr that falls through. */
static int reached(const struct dis *d, int nd, uint64_t addr, const struct ps_inline *in, int n, int copy)
{
	for (int i = 0; i < nd; i++) {
		if (!in_copy(in, n, copy, d[i].addr))
			continue;
		if (d[i].target == addr || (i + 1 < nd && d[i + 1].addr == addr && !d[i].nofall))
			return 1;
	}
	return 0;
}

TEST(lines_inline_ends_where_control_leaves_the_copy)
{
	const char *exe = fixtures_cc("inline_both.c", "inline_both", "-O2 -g");
	struct ps_lines *l;
	struct ps_error err;
	struct ps_inline in[16];
	uint64_t ends[64];
	int n, nd, copies = 0, inside_hi = 0;
	struct dis *d;

	if (!exe) {
		CHECK(!"cannot build tests/fixtures/inline_both.c with cc -O2 -g");
		return;
	}
	CHECK_EQ_INT(ps_lines_open(&l, exe, &err), 0);
	n = ps_lines_inlined(l, "step", in, 16, &err);
	CHECK(n >= 1);
	for (int i = 0; i < n; i++) {
		copies = in[i].copy + 1 > copies ? in[i].copy + 1 : copies;
		inside_hi |= in_copy(in, n, in[i].copy, in[i].hi);
	}
	CHECK(inside_hi); /* the fixture has a range that ends inside its copy: else it tests less */
	d = objdump(exe, &nd);
	CHECK(nd > 0);
	for (int c = 0; c < copies; c++) {
		int again = -1, ne = ps_lines_inline_ends(l, in, n, c, ends, 64, &again, &err);
		CHECK(ne >= 1);
		CHECK_EQ_INT(again, 0); /* the code was decoded, and a hit passes the entry once */
		for (int k = 0; k < ne; k++) {
			CHECK(!in_copy(in, n, c, ends[k])); /* never inside: not at the entry either */
			CHECK(k == 0 || ends[k - 1] < ends[k]);
			if (!reached(d, nd, ends[k], in, n, c)) {
				fprintf(stderr, "  end 0x%" PRIx64 " of copy %d: objdump shows no way to it from the copy\n",
					ends[k], c);
				CHECK(!"every end is reached from the copy");
			}
		}
	}
	int again;
	CHECK_EQ_INT(ps_lines_inline_ends(l, in, n, copies, ends, 64, &again, &err), -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
	CHECK_EQ_INT(ps_lines_inline_ends(l, in, n, 0, ends, 0, &again, &err), -1);
	free(d);
	ps_lines_close(l);
}
