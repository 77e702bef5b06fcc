/* tests/c/test_lines.c - core/binary/lines.c against addr2line and nm.
 *
 * tests/fixtures/lines.c is compiled at run time into a temporary directory
 * (removed at exit); its lines are found by the LINE-* markers in its comments.
 */
#include "ctest.h"
#include "fixtures.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "lines.h"

#define FIXTURE_PROBE "lines.c"

static const char *fixtures(void)
{
	return fixtures_dir(FIXTURE_PROBE);
}

static const char *src_path(void)
{
	static char path[700];

	snprintf(path, sizeof path, "%s/lines.c", fixtures());
	return path;
}

/* The fixture compiled with @flags into @name; NULL if the compiler fails. */
static const char *build(const char *name, const char *flags)
{
	static char paths[2][600];
	char cmd[1500];
	int i = strcmp(name, "lines") == 0 ? 0 : 1;

	const char *tmpdir = fixtures_tmpdir();
	if (!tmpdir)
		return NULL;
	if (paths[i][0])
		return paths[i];
	snprintf(paths[i], sizeof paths[i], "%s/%s", tmpdir, name);
	snprintf(cmd, sizeof cmd, "cc %s -o %s %s", flags, paths[i], src_path());
	if (system(cmd) != 0) {
		paths[i][0] = '\0';
		return NULL;
	}
	return paths[i];
}

static const char *fixture(void)
{
	return build("lines", "-O2 -g");
}

/* First line of the output of a shell command, without its newline. */
static char *run(char *buf, size_t n, const char *cmd)
{
	return fixtures_first_line(buf, n, cmd);
}

/* The line of the fixture that holds @marker. */
static int marker_line(const char *marker)
{
	char cmd[1500], buf[32];

	snprintf(cmd, sizeof cmd, "grep -n '%s' %s | cut -d: -f1", marker, src_path());
	return atoi(run(buf, sizeof buf, cmd));
}

/* "basename:line" of @addr according to addr2line. */
static char *addr2line(char *buf, size_t n, const char *exe, uint64_t addr)
{
	char cmd[1500], out[600], *sp, *slash;

	snprintf(cmd, sizeof cmd, "addr2line -e %s 0x%" PRIx64, exe, addr);
	run(out, sizeof out, cmd);
	if ((sp = strchr(out, ' ')))
		*sp = '\0'; /* " (discriminator N)" */
	slash = strrchr(out, '/');
	snprintf(buf, n, "%s", slash ? slash + 1 : out);
	return buf;
}

/* The [lo, hi) of function @name according to nm -S. */
static void nm_range(const char *exe, const char *name, uint64_t *lo, uint64_t *hi)
{
	char cmd[1500], buf[128];
	uint64_t size = 0;

	snprintf(cmd, sizeof cmd, "nm -S %s | awk '$4 == \"%s\" {print $1, $2}'", exe, name);
	*lo = 0;
	sscanf(run(buf, sizeof buf, cmd), "%" SCNx64 " %" SCNx64, lo, &size);
	*hi = *lo + size;
}

TEST(lines_addr_of_line)
{
	const char *exe = fixture(), *file;
	const char *names[] = {"lines.c", "fixtures/lines.c", src_path()};
	int body = marker_line("LINE-BODY"), actual = 0, n, line;
	struct ps_lines *l;
	struct ps_error err;
	uint64_t addrs[16];
	char got[600], want[64];

	if (!exe) {
		CHECK(!"cannot build the fixture with cc -O2 -g");
		return;
	}
	CHECK(body > 0);
	CHECK_EQ_INT(ps_lines_open(&l, exe, &err), 0);
	n = ps_lines_addrs(l, "lines.c", body, addrs, 16, &actual, &err);
	CHECK(n >= 1);
	CHECK_EQ_INT(actual, body);
	snprintf(want, sizeof want, "lines.c:%d", body);
	for (int i = 0; i < n; i++) {
		CHECK_STR(addr2line(got, sizeof got, exe, addrs[i]), want);
		CHECK_EQ_INT(ps_lines_addr2line(l, addrs[i], &file, &line), 0);
		CHECK_EQ_INT(line, body);
		CHECK(strcmp(strrchr(file, '/'), "/lines.c") == 0);
	}
	/* the same with more of the path */
	for (size_t k = 1; k < 3; k++) {
		uint64_t again[16];
		CHECK_EQ_INT(ps_lines_addrs(l, names[k], body, again, 16, NULL, &err), n);
		CHECK(memcmp(again, addrs, (size_t)n * sizeof *addrs) == 0);
	}
	CHECK_EQ_INT(ps_lines_addr2line(l, 1, &file, &line), -1);
	ps_lines_close(l);
}

TEST(lines_empty_line)
{
	const char *exe = fixture();
	int empty = marker_line("LINE-EMPTY"), actual = 0, n;
	struct ps_lines *l;
	struct ps_error err;
	uint64_t addrs[16];
	char got[600], want[64];

	if (!exe) {
		CHECK(!"cannot build the fixture with cc -O2 -g");
		return;
	}
	CHECK_EQ_INT(ps_lines_open(&l, exe, &err), 0);
	n = ps_lines_addrs(l, "lines.c", empty, addrs, 16, &actual, &err);
	CHECK(n >= 1);
	CHECK_EQ_INT(actual, empty + 1);
	snprintf(want, sizeof want, "lines.c:%d", actual);
	for (int i = 0; i < n; i++)
		CHECK_STR(addr2line(got, sizeof got, exe, addrs[i]), want);
	/* past the end */
	CHECK_EQ_INT(ps_lines_addrs(l, "lines.c", 9999, addrs, 16, &actual, &err), -1);
	CHECK(strstr(err.msg, "line 9999 of lines.c is past its last line with code (") == err.msg);
	ps_lines_close(l);
}

TEST(lines_inline_line)
{
	const char *exe = fixture();
	int twice = marker_line("LINE-TWICE"), n;
	struct ps_lines *l;
	struct ps_error err;
	uint64_t addrs[16], alo, ahi, blo, bhi;

	if (!exe) {
		CHECK(!"cannot build the fixture with cc -O2 -g");
		return;
	}
	CHECK_EQ_INT(ps_lines_open(&l, exe, &err), 0);
	nm_range(exe, "use_a", &alo, &ahi);
	nm_range(exe, "use_b", &blo, &bhi);
	/* one start per inlined copy */
	n = ps_lines_addrs(l, "lines.c", twice, addrs, 16, NULL, &err);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK(addrs[0] >= alo && addrs[0] < ahi);
		CHECK(addrs[1] >= blo && addrs[1] < bhi);
	}
	ps_lines_close(l);
}

TEST(lines_errors)
{
	const char *exe = fixture(), *nodebug = build("nodebug", "-O2");
	struct ps_lines *l = (struct ps_lines *)1;
	struct ps_error err;
	uint64_t addrs[4];
	char want[800];

	if (!exe || !nodebug) {
		CHECK(!"cannot build the fixture with cc");
		return;
	}
	CHECK_EQ_INT(ps_lines_open(&l, nodebug, &err), -1);
	CHECK(l == NULL);
	snprintf(want, sizeof want, "%s has no DWARF line info: rebuild with -g", nodebug);
	CHECK_STR(err.msg, want);
	CHECK_EQ_INT(ps_lines_open(&l, "/nonexistent/prog", &err), -1);
	CHECK_EQ_INT(err.code, ENOENT);
	CHECK_STR(err.msg, "cannot open /nonexistent/prog: No such file or directory");
	CHECK_EQ_INT(ps_lines_open(&l, src_path(), &err), -1);
	snprintf(want, sizeof want, "%s is not an ELF file", src_path());
	CHECK_STR(err.msg, want);

	CHECK_EQ_INT(ps_lines_open(&l, exe, &err), 0);
	CHECK_EQ_INT(ps_lines_addrs(l, "line.c", 10, addrs, 4, NULL, &err), -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
	snprintf(want, sizeof want, "no source file 'line.c' in the line info of %s; did you mean 'lines.c'", exe);
	CHECK(strncmp(err.msg, want, strlen(want)) == 0);
	CHECK_EQ_INT(ps_lines_addrs(l, "ines.c", 10, addrs, 4, NULL, &err), -1);
	ps_lines_close(l);
	ps_lines_close(NULL);
}

struct named {
	int n, lines_c;
};

static int one_file(void *ud, const char *file)
{
	struct named *nm = ud;
	size_t len = strlen(file);

	nm->n++;
	nm->lines_c += len >= 8 && strcmp(file + len - 8, "/lines.c") == 0;
	return 0;
}

/* The source files of the line tables (what completion offers): the fixture's own source among
   them; none without DWARF or without ELF; an error only for a file that cannot be opened. */
TEST(lines_source_files)
{
	const char *exe = fixture(), *nodebug = build("nodebug", "-O2");
	struct named nm = {0, 0};
	struct ps_error err;

	if (!exe || !nodebug) {
		CHECK(!"cannot build the fixture with cc");
		return;
	}
	CHECK_EQ_INT(ps_lines_source_files(exe, one_file, &nm, &err), 0);
	CHECK(nm.n >= 1);
	CHECK_EQ_INT(nm.lines_c, 1);
	nm.n = 0;
	CHECK_EQ_INT(ps_lines_source_files(nodebug, one_file, &nm, &err), 0);
	CHECK_EQ_INT(ps_lines_source_files(src_path(), one_file, &nm, &err), 0);
	CHECK_EQ_INT(nm.n, 0);
	CHECK_EQ_INT(ps_lines_source_files("/nonexistent/prog", one_file, &nm, &err), -1);
	CHECK_EQ_INT(err.code, ENOENT);
}

TEST(lines_inlined_copies)
{
	const char *exe = fixture();
	struct ps_lines *l;
	struct ps_error err;
	struct ps_inline in[16];
	uint64_t alo, ahi, blo, bhi;
	int n, copies = 0, seen_a = 0, seen_b = 0;

	if (!exe) {
		CHECK(!"cannot build the fixture with cc -O2 -g");
		return;
	}
	CHECK_EQ_INT(ps_lines_open(&l, exe, &err), 0);
	nm_range(exe, "use_a", &alo, &ahi);
	nm_range(exe, "use_b", &blo, &bhi);
	n = ps_lines_inlined(l, "twice", in, 16, &err);
	CHECK(n >= 2);
	for (int i = 0; i < n; i++) {
		if (in[i].copy + 1 > copies)
			copies = in[i].copy + 1;
		CHECK(in[i].lo < in[i].hi);
		if (strcmp(in[i].caller, "use_a") == 0) {
			seen_a++;
			CHECK(in[i].lo >= alo && in[i].hi <= ahi);
			CHECK(in[i].entry >= alo && in[i].entry < ahi);
		} else if (strcmp(in[i].caller, "use_b") == 0) {
			seen_b++;
			CHECK(in[i].lo >= blo && in[i].hi <= bhi);
			CHECK(in[i].entry >= blo && in[i].entry < bhi);
		} else {
			CHECK_STR(in[i].caller, "use_a or use_b");
		}
	}
	CHECK_EQ_INT(copies, 2);
	CHECK(seen_a && seen_b);
	/* out-of-line functions have no inlined copies */
	CHECK_EQ_INT(ps_lines_inlined(l, "use_a", in, 16, &err), 0);
	CHECK_EQ_INT(ps_lines_inlined(l, "twice", in, 1, &err), 1);
	ps_lines_close(l);
}

TEST(lines_parse_range)
{
	static const struct {
		const char *spec;
		int rc;
		const char *f1;
		int l1;
		const char *f2;
		int l2;
	} rows[] = {
	    {"a.c:10-20", 0, "a.c", 10, "a.c", 20},
	    {"a.c:10-b.c:5", 0, "a.c", 10, "b.c", 5},
	    {"src/my-file.c:3-7", 0, "src/my-file.c", 3, "src/my-file.c", 7},
	    {"x-1.c:3-y-2.c:4", 0, "x-1.c", 3, "y-2.c", 4},
	    {"a.c:10-a.c:12", 0, "a.c", 10, "a.c", 12},
	    {"a.c:10", -1, NULL, 0, NULL, 0},
	    {"a.c:20-10", -1, NULL, 0, NULL, 0},
	    {"a.c:10-10", -1, NULL, 0, NULL, 0},
	    {":10-20", -1, NULL, 0, NULL, 0},
	    {"a.c:x-20", -1, NULL, 0, NULL, 0},
	    {"a.c:10-b.c:", -1, NULL, 0, NULL, 0},
	    {"a.c:10-b.c:0", -1, NULL, 0, NULL, 0},
	    {"a.c:10-:5", -1, NULL, 0, NULL, 0},
	};
	char f1[64], f2[64];
	int l1, l2;
	struct ps_error err;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int rc = ps_lines_parse_range(rows[i].spec, f1, sizeof f1, &l1, f2, sizeof f2, &l2, &err);
		CHECK_EQ_INT(rc, rows[i].rc);
		if (rc != rows[i].rc)
			fprintf(stderr, "    for '%s'\n", rows[i].spec);
		if (rc != 0 || rows[i].rc != 0)
			continue;
		CHECK_STR(f1, rows[i].f1);
		CHECK_EQ_INT(l1, rows[i].l1);
		CHECK_STR(f2, rows[i].f2);
		CHECK_EQ_INT(l2, rows[i].l2);
	}
	CHECK_EQ_INT(ps_lines_parse_range("a.c:1-", f1, sizeof f1, &l1, f2, sizeof f2, &l2, &err), -1);
	CHECK_STR(err.msg, "bad line range 'a.c:1-': expected FILE:L1-L2 or FILE:L1-FILE:L2");
	CHECK_EQ_INT(ps_lines_parse_range("a.c:9-3", f1, sizeof f1, &l1, f2, sizeof f2, &l2, &err), -1);
	CHECK_STR(err.msg, "line range 'a.c:9-3' ends at or before its start (line 3 <= 9)");
}
