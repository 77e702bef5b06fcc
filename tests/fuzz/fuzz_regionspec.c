/* tests/fuzz/fuzz_regionspec.c - the region-spec parser (core/binary/regionspec.c) on any text. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "regionspec.h"

static int terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_region_spec rs;
	struct ps_error err;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (ps_region_spec_parse(text, &rs, &err) == 0) {
		/* every part is a string, and what was parsed is consistent */
		if (!terminated(rs.lib, sizeof rs.lib) || !terminated(rs.func, sizeof rs.func) ||
		    !terminated(rs.file1, sizeof rs.file1) || !terminated(rs.file2, sizeof rs.file2))
			__builtin_trap();
		if (rs.kind == PS_RSPEC_LINE_RANGE && (rs.line1 <= 0 || rs.line2 <= 0 || !rs.file1[0] || !rs.file2[0]))
			__builtin_trap();
		if (rs.kind == PS_RSPEC_ADDR_RANGE && rs.addr2 <= rs.addr1)
			__builtin_trap();
		if ((rs.kind == PS_RSPEC_FUNC || rs.kind == PS_RSPEC_LIBFUNC) && !rs.func[0])
			__builtin_trap();
	} else if (!err.msg[0] || (strchr(err.msg, '\n') && !strchr(text, '\n'))) {
		__builtin_trap(); /* a failure says why, on one line */
	}
	free(text);
	return 0;
}
