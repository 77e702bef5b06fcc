/* tests/c/test_regionspec.c - region specs as a command line gives them (core/binary/regionspec.c, the one
 * parser of functions, lines, addresses, sdt: and marker:). */
#include "ctest.h"
#include "regionspec.h"

static const struct {
	const char *text;
	enum ps_rspec_kind kind; /* 0: an error */
	const char *a, *b;	 /* func and lib, or the two files; for an error, the message */
	long long n1, n2;	 /* lines or addresses */
} rows[] = {
    {"sum", PS_RSPEC_FUNC, "sum", "", 0, 0},
    {"ns::K::f(int)", PS_RSPEC_FUNC, "ns::K::f(int)", "", 0, 0},
    {"libm.so.6:frexp", PS_RSPEC_LIBFUNC, "frexp", "libm.so.6", 0, 0},
    {"0x1140", PS_RSPEC_ADDR, NULL, NULL, 0x1140, 0},
    {"0x1140-0x1160", PS_RSPEC_ADDR_RANGE, NULL, NULL, 0x1140, 0x1160},
    {"sum.c:41-43", PS_RSPEC_LINE_RANGE, "sum.c", "sum.c", 41, 43},
    {"sum.c:41-sum.c:43", PS_RSPEC_LINE_RANGE, "sum.c", "sum.c", 41, 43},
    {"a-b.c:3-c:d.h:9", PS_RSPEC_LINE_RANGE, "a-b.c", "c:d.h", 3, 9},
    {"loop.c:42", 0,
     "region 'loop.c:42' is one line; a line region is a range FILE:L1-L2 (from L1 to L2, L2 excluded), e.g. "
     "loop.c:42-43",
     NULL, 0, 0},
    {"x.c:5-3", 0, "line range 'x.c:5-3' ends at or before its start (line 3 <= 5)", NULL, 0, 0},
    {"0x20-0x10", 0, "address range '0x20-0x10' ends at or before its start", NULL, 0, 0},
    {"0xZZ", 0, "bad address '0xZZ': expected 0xHEX or 0xHEX-0xHEX", NULL, 0, 0},
    {"0x10000000000000000", 0, "bad address '0x10000000000000000': expected 0xHEX or 0xHEX-0xHEX", NULL, 0, 0},
    {"libm.so:", 0, "bad function name 'libm.so:': expected LIB:FUNCTION", NULL, 0, 0},
    {"", 0, "empty region: name a function, FILE:L1-L2 or 0xADDR", NULL, 0, 0},
    {"marker:iter", PS_RSPEC_MARKER, "iter", NULL, 0, 0},
    {"marker:a-b", 0,
     "bad marker region 'marker:a-b': expected marker:NAME, NAME as given to ps_marker_region or PS_MARK_BEGIN "
     "(perfsh --list sdt BINARY shows perfsh:NAME_begin)",
     NULL, 0, 0},
    {"marker:", 0,
     "bad marker region 'marker:': expected marker:NAME, NAME as given to ps_marker_region or PS_MARK_BEGIN "
     "(perfsh --list sdt BINARY shows perfsh:NAME_begin)",
     NULL, 0, 0},
    {"sdt:demo:tick", PS_RSPEC_SDT, "demo", "tick", 1, 0},
    {"sdt:demo:a,b", PS_RSPEC_SDT, "demo", "a", 2, 0},
};

TEST(region_spec_rows)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_region_spec rs;
		struct ps_error err = {0};
		int rc = ps_region_spec_parse(rows[i].text, &rs, &err);

		if (!rows[i].kind) {
			CHECK_EQ_INT(rc, -1);
			CHECK_STR(err.msg, rows[i].a);
			continue;
		}
		CHECK_EQ_INT(rc, 0);
		if (rc)
			fprintf(stderr, "  %s: %s\n", rows[i].text, err.msg);
		CHECK_EQ_INT(rs.kind, rows[i].kind);
		if (rs.kind == PS_RSPEC_FUNC || rs.kind == PS_RSPEC_LIBFUNC) {
			CHECK_STR(rs.func, rows[i].a);
			CHECK_STR(rs.lib, rows[i].b);
		} else if (rs.kind == PS_RSPEC_MARKER) {
			CHECK_STR(rs.marker, rows[i].a);
		} else if (rs.kind == PS_RSPEC_SDT) {
			CHECK_STR(rs.sdt.provider[0], rows[i].a);
			CHECK_STR(rs.sdt.name[0], rows[i].b);
			CHECK_EQ_INT(rs.sdt.npoints, rows[i].n1);
		} else if (rs.kind == PS_RSPEC_LINE_RANGE) {
			CHECK_STR(rs.file1, rows[i].a);
			CHECK_STR(rs.file2, rows[i].b);
			CHECK_EQ_INT(rs.line1, rows[i].n1);
			CHECK_EQ_INT(rs.line2, rows[i].n2);
		} else {
			CHECK_EQ_INT((long long)rs.addr1, rows[i].n1);
			CHECK_EQ_INT((long long)rs.addr2, rows[i].n2);
		}
	}
}
