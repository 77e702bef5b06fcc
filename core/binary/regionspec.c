/* core/binary/regionspec.c - the one parser of the regions a command line or a script names:
 * functions, lines, addresses, sdt: and marker: (see regionspec.h). */
#include "regionspec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"
#include "symbols.h"

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* "0x" and hex digits from @p; sets *end past them. -1 when there are none or too many. */
static int parse_hex(const char *p, uint64_t *v, const char **end)
{
	const char *q;

	if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X') || !is_hex(p[2]))
		return -1;
	for (q = p + 2; is_hex(*q); q++)
		;
	if (q - (p + 2) > 16)
		return -1;
	*v = strtoull(p + 2, NULL, 16);
	*end = q;
	return 0;
}

static int parse_addrs(const char *text, struct ps_region_spec *out, struct ps_error *err)
{
	const char *end;

	if (parse_hex(text, &out->addr1, &end))
		return ps_error_set(err, PS_EUSAGE, "bad address '%s': expected 0xHEX or 0xHEX-0xHEX", text);
	if (!*end) {
		out->kind = PS_RSPEC_ADDR;
		return 0;
	}
	if (*end != '-' || parse_hex(end + 1, &out->addr2, &end) || *end)
		return ps_error_set(err, PS_EUSAGE, "bad address '%s': expected 0xHEX or 0xHEX-0xHEX", text);
	if (out->addr2 <= out->addr1)
		return ps_error_set(err, PS_EUSAGE, "address range '%s' ends at or before its start", text);
	out->kind = PS_RSPEC_ADDR_RANGE;
	return 0;
}

/* Has @text a ":DIGITS-", where a line range splits? */
static int has_line_dash(const char *text)
{
	for (const char *p = strchr(text, ':'); p; p = strchr(p + 1, ':')) {
		const char *q = p + 1;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q > p + 1 && *q == '-')
			return 1;
	}
	return 0;
}

/* "FILE.EXT:N" with no other ':' - one source line, which a region cannot be. */
static int one_line(const char *text, struct ps_error *err)
{
	const char *colon = strrchr(text, ':'), *dot, *p;
	char *end;
	long n;

	if (!colon || colon == text || memchr(text, ':', (size_t)(colon - text)) || !colon[1])
		return 0;
	for (p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	for (dot = colon - 1; dot > text && *dot != '.'; dot--)
		if (!(*dot == '+' || *dot == '_' || (*dot >= '0' && *dot <= '9') ||
		      ((*dot | 32) >= 'a' && (*dot | 32) <= 'z')))
			return 0;
	if (*dot != '.' || dot == text || dot + 1 == colon)
		return 0;
	errno = 0;
	n = strtol(colon + 1, &end, 10);
	if (errno || n >= INT_MAX)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s' is one line; a line region is a range FILE:L1-L2 (from L1 to L2, L2 "
				    "excluded)",
				    text);
	return ps_error_set(err, PS_EUSAGE,
			    "region '%s' is one line; a line region is a range FILE:L1-L2 (from L1 to L2, L2 "
			    "excluded), e.g. %s-%ld",
			    text, text, n + 1);
}

int ps_sdt_is_spec(const char *text)
{
	return !strncmp(text, "sdt:", 4);
}

/* "PROVIDER:NAME" (or "NAME" when @provider is given) from [p, end) into slot @k of @out. */
static int point(const char *p, const char *end, const char *provider, struct ps_sdt_spec *out, int k)
{
	const char *colon = memchr(p, ':', (size_t)(end - p));

	if (!colon && !provider)
		return -1;
	if (colon) {
		if (colon == p || (size_t)(colon - p) >= PS_SDT_NAME_MAX)
			return -1;
		memcpy(out->provider[k], p, (size_t)(colon - p));
		out->provider[k][colon - p] = 0;
		p = colon + 1;
	} else {
		snprintf(out->provider[k], PS_SDT_NAME_MAX, "%s", provider);
	}
	if (p == end || (size_t)(end - p) >= PS_SDT_NAME_MAX || memchr(p, ':', (size_t)(end - p)))
		return -1;
	memcpy(out->name[k], p, (size_t)(end - p));
	out->name[k][end - p] = 0;
	return 0;
}

int ps_sdt_spec_parse(const char *text, struct ps_sdt_spec *out, struct ps_error *err)
{
	const char *p = text + 4, *comma, *end = text + strlen(text);

	memset(out, 0, sizeof *out);
	if (!ps_sdt_is_spec(text))
		goto bad;
	comma = strchr(p, ',');
	if (point(p, comma ? comma : end, NULL, out, 0))
		goto bad;
	out->npoints = 1;
	if (!comma)
		return 0;
	p = comma + 1;
	if (ps_sdt_is_spec(p))
		p += 4;
	else if (memchr(p, ':', (size_t)(end - p)))
		goto bad;
	if (point(p, end, out->provider[0], out, 1) || strchr(p, ','))
		goto bad;
	out->npoints = 2;
	if (!strcmp(out->provider[0], out->provider[1]) && !strcmp(out->name[0], out->name[1]))
		return ps_error_set(err, PS_EUSAGE,
				    "SDT region '%s' starts and ends at the same probe; name it once (sdt:%s:%s) to "
				    "count it as a point event",
				    text, out->provider[0], out->name[0]);
	return 0;
bad:
	return ps_error_set(err, PS_EUSAGE,
			    "bad SDT region '%.200s': expected sdt:PROVIDER:NAME (one probe, a point event) or "
			    "sdt:PROVIDER:START,sdt:PROVIDER:END (a pair)",
			    text);
}

/* "marker:NAME" (NAME of letters, digits and '_', as perfsh/marker.h names a marker) into @out. */
static int parse_marker(const char *text, struct ps_region_spec *out, struct ps_error *err)
{
	const char *p = text + 7;
	size_t n = strlen(p);

	out->kind = PS_RSPEC_MARKER;
	if (n == 0 || n >= sizeof out->marker ||
	    strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789_") != n)
		return ps_error_set(err, PS_EUSAGE,
				    "bad marker region '%.200s': expected marker:NAME, NAME as given to "
				    "ps_marker_region or PS_MARK_BEGIN (perfsh --list sdt BINARY shows "
				    "perfsh:NAME_begin)",
				    text);
	memcpy(out->marker, p, n + 1);
	return 0;
}

int ps_region_spec_parse(const char *text, struct ps_region_spec *out, struct ps_error *err)
{
	int rc;

	memset(out, 0, sizeof *out);
	if (!*text)
		return ps_error_set(err, PS_EUSAGE, "empty region: name a function, FILE:L1-L2 or 0xADDR");
	if (ps_sdt_is_spec(text)) {
		out->kind = PS_RSPEC_SDT;
		return ps_sdt_spec_parse(text, &out->sdt, err);
	}
	if (!strncmp(text, "marker:", 7))
		return parse_marker(text, out, err);
	if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
		return parse_addrs(text, out, err);
	if (has_line_dash(text)) {
		out->kind = PS_RSPEC_LINE_RANGE;
		return ps_lines_parse_range(text, out->file1, sizeof out->file1, &out->line1, out->file2,
					    sizeof out->file2, &out->line2, err);
	}
	if (one_line(text, err))
		return -1;
	rc = ps_sym_lib_split(text, out->lib, sizeof out->lib, out->func, sizeof out->func);
	if (rc < 0 && errno == ENAMETOOLONG)
		return ps_error_set(err, PS_EUSAGE, "region name too long: '%.40s...'", text);
	if (rc < 0)
		return ps_error_set(err, PS_EUSAGE, "bad function name '%s': expected LIB:FUNCTION", text);
	out->kind = rc ? PS_RSPEC_LIBFUNC : PS_RSPEC_FUNC;
	return 0;
}
