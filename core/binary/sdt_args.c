/* core/binary/sdt_args.c - the argument strings of SDT probes ("-4@%edi 8@-16(%rbp) 4@$5", as
 * <sys/sdt.h> has the x86 assembler write them). Region specs ("sdt:PROVIDER:NAME") are parsed
 * in core/binary/regionspec.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdt.h"

static int is_ident(int c, int first)
{
	return c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

/* A signed decimal or 0x number at *p; moves *p past it. */
static int number(const char **p, int64_t *v)
{
	char *end;
	long long n;

	if (!(**p >= '0' && **p <= '9') && !((**p == '-' || **p == '+') && (*p)[1] >= '0' && (*p)[1] <= '9'))
		return -1;
	errno = 0;
	n = strtoll(*p, &end, 0);
	if (errno)
		return -1;
	*v = n;
	*p = end;
	return 0;
}

/* "%NAME" at *p into @out (without the %); moves *p past it. */
static int reg(const char **p, char *out, size_t max)
{
	size_t n = 0;

	if (**p != '%')
		return -1;
	for ((*p)++; ((**p >= 'a' && **p <= 'z') || (**p >= '0' && **p <= '9')) && n + 1 < max; (*p)++)
		out[n++] = **p;
	out[n] = 0;
	return n && !((**p >= 'a' && **p <= 'z') || (**p >= '0' && **p <= '9')) ? 0 : -1;
}

/* A memory operand: [SYM][+-N][(%BASE[,%INDEX[,SCALE]])], at least one part. */
static int memory(const char *p, struct ps_sdt_arg *a)
{
	size_t n = 0;
	int any = 0;

	a->kind = PS_SDT_ARG_MEM;
	a->scale = 1;
	if (is_ident(*p, 1)) {
		while (is_ident(*p, 0) && n + 1 < sizeof a->sym)
			a->sym[n++] = *p++;
		if (is_ident(*p, 0))
			return -1;
		a->sym[n] = 0;
		any = 1;
	}
	if (*p && *p != '(') {
		if (number(&p, &a->disp))
			return -1;
		any = 1;
	}
	if (*p == '(') {
		p++;
		if (*p == '%' && reg(&p, a->reg, sizeof a->reg))
			return -1;
		if (*p == ',') {
			int64_t scale = 1;
			p++;
			if (reg(&p, a->index, sizeof a->index))
				return -1;
			if (*p == ',') {
				p++;
				if (number(&p, &scale) || (scale != 1 && scale != 2 && scale != 4 && scale != 8))
					return -1;
			}
			a->scale = (int)scale;
		}
		if (*p++ != ')' || (!a->reg[0] && !a->index[0]))
			return -1;
		any = 1;
	}
	return any && !*p ? 0 : -1;
}

/* One argument, "[-]SIZE@OPERAND" or a bare operand (old notes give no size). */
static int one_arg(const char *text, struct ps_sdt_arg *a)
{
	const char *at = strchr(text, '@'), *p = text;

	memset(a, 0, sizeof *a);
	snprintf(a->text, sizeof a->text, "%s", text);
	if (at) {
		int64_t size;
		if (number(&p, &size) || p != at)
			return -1;
		a->is_signed = size < 0;
		size = size < 0 ? -size : size;
		if (size != 1 && size != 2 && size != 4 && size != 8)
			return -1;
		a->size = (int)size;
		p = at + 1;
	}
	if (*p == '%') {
		a->kind = PS_SDT_ARG_REG;
		return reg(&p, a->reg, sizeof a->reg) || *p ? -1 : 0;
	}
	if (*p == '$') {
		p++;
		a->kind = PS_SDT_ARG_IMM;
		return number(&p, &a->disp) || *p ? -1 : 0;
	}
	return memory(p, a);
}

int ps_sdt_parse_args(const char *text, struct ps_sdt_arg *args, int max, struct ps_error *err)
{
	int n = 0;

	for (const char *p = text;;) {
		char tok[sizeof args[0].text];
		size_t len;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return n;
		len = strcspn(p, " \t");
		if (n >= max)
			return ps_error_set(err, PS_EUSAGE, "more than %d SDT arguments in '%.80s'", max, text);
		if (len >= sizeof tok)
			return ps_error_set(err, PS_EUSAGE, "SDT argument #%d is longer than %zu bytes", n + 1,
					    sizeof tok - 1);
		memcpy(tok, p, len);
		tok[len] = 0;
		if (one_arg(tok, &args[n]))
			return ps_error_set(err, PS_EUSAGE,
					    "SDT argument #%d '%s' is not SIZE@%%REG, SIZE@$CONST or "
					    "SIZE@DISP(%%BASE[,%%INDEX,SCALE])",
					    n + 1, tok);
		n++;
		p += len;
	}
}
