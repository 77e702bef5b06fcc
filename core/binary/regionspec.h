/* core/binary/regionspec.h - the region a command line or a script names: a function, a library's
 * function, an address, a range of lines or addresses, SDT probes or a marker. This is the one
 * parser of that grammar: the sessions, the bindings (core.region_spec) and every recipe use it. */
#ifndef PS_REGIONSPEC_H
#define PS_REGIONSPEC_H

#include <stdint.h>

#include "error.h"
#include "sdt.h"

enum ps_rspec_kind {
	PS_RSPEC_FUNC = 1,	 /* "sum", "ns::K::f(int)" */
	PS_RSPEC_LIBFUNC = 2,	 /* "libm.so.6:frexp" */
	PS_RSPEC_ADDR = 3,	 /* "0x1140": a function's link-time entry */
	PS_RSPEC_ADDR_RANGE = 4, /* "0x1140-0x1160" */
	PS_RSPEC_LINE_RANGE = 5, /* "sum.c:41-43", "sum.c:41-sum.c:43" */
	PS_RSPEC_SDT = 6,	 /* "sdt:PROVIDER:NAME", "sdt:P:START,sdt:P:END" (core/binary/sdt.h) */
	PS_RSPEC_MARKER = 7	 /* "marker:NAME", a marker of perfsh/marker.h */
};

/**
 * struct ps_region_spec - a parsed region spec.
 * @kind:         which form it has.
 * @lib:          the library (PS_RSPEC_LIBFUNC).
 * @func:         the function (PS_RSPEC_FUNC and PS_RSPEC_LIBFUNC).
 * @file1, @line1, @file2, @line2: a line range (PS_RSPEC_LINE_RANGE), L2 excluded.
 * @addr1, @addr2: an address (PS_RSPEC_ADDR: @addr1) or an address range.
 * @sdt:          one SDT probe or a pair (PS_RSPEC_SDT).
 * @marker:       the marker's name (PS_RSPEC_MARKER).
 */
struct ps_region_spec {
	enum ps_rspec_kind kind;
	char lib[256], func[256];
	char file1[256], file2[256];
	int line1, line2;
	uint64_t addr1, addr2;
	struct ps_sdt_spec sdt;
	char marker[64];
};

/* Is @text an SDT region spec (it starts with "sdt:")? */
int ps_sdt_is_spec(const char *text);

/**
 * ps_sdt_spec_parse() - parse "sdt:PROVIDER:NAME[,[sdt:PROVIDER:]NAME]" into @out.
 * @text: the spec.
 * @out:  its probes.
 * @err:  what is wrong with it.
 * Return: 0, or -1 with @err set (PS_EUSAGE) saying what form to write.
 */
int ps_sdt_spec_parse(const char *text, struct ps_sdt_spec *out, struct ps_error *err);

/**
 * ps_region_spec_parse() - parse @text into @out; reads nothing but @text.
 *
 * "sdt:..." is an SDT probe or pair (ps_sdt_spec_parse()); "marker:NAME" a marker;
 * "0xA-0xB" is an address range and "FILE:L1-L2" or "FILE1:L1-FILE2:L2" a line range (a file
 * name may contain '-' and ':'; the split is at the first ":DIGITS-"); "0xA" is an address;
 * "LIB.so[.N]:FUNC" a library's function; anything else a function name.
 * Return: 0, or -1 with @err set (PS_EUSAGE): a single line "FILE.c:N" (with the range to
 * write instead), a bad line range, a bad address, "LIB.so:" without a function, a bad SDT
 * spec, a marker name that is not letters, digits and '_', or a part longer than 255 bytes.
 */
int ps_region_spec_parse(const char *text, struct ps_region_spec *out, struct ps_error *err);

#endif
