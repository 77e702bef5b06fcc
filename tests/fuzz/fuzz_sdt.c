/* tests/fuzz/fuzz_sdt.c - the SDT note reader (core/binary/sdt.c) on a mutated ELF image, and the
 * argument and region-spec parsers (core/binary/sdt_args.c) on the input as text. The corpus starts from
 * examples/sdt (stripped) and argument strings.
 *
 * Whatever is read, each probe's strings are terminated and its arguments within bounds.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sdt.h"

static void check_probe(const struct ps_sdt_probe *p)
{
	if (!memchr(p->provider, 0, sizeof p->provider) || !memchr(p->name, 0, sizeof p->name) ||
	    !memchr(p->argstr, 0, sizeof p->argstr) || p->nargs > PS_SDT_MAX_ARGS || !p->provider[0] || !p->name[0])
		__builtin_trap();
	for (int i = 0; i < p->nargs; i++)
		if (!memchr(p->args[i].text, 0, sizeof p->args[i].text) || p->args[i].kind < PS_SDT_ARG_REG ||
		    p->args[i].kind > PS_SDT_ARG_IMM)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_sdt_set s;
	struct ps_sdt_arg args[PS_SDT_MAX_ARGS];
	struct ps_sdt_spec sp;
	struct ps_error err;
	char *text;

	if (ps_sdt_read_mem(data, size, "fuzz", &s, &err) == 0) {
		for (size_t i = 0; i < s.n; i++)
			check_probe(&s.probes[i]);
		if (s.n)
			(void)ps_sdt_find(&s, s.probes[0].provider, "no_such_probe", "fuzz", &err);
		ps_sdt_free(&s);
	}
	if (size > 4096 || !(text = malloc(size + 1)))
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	if (ps_sdt_parse_args(text, args, PS_SDT_MAX_ARGS, &err) > PS_SDT_MAX_ARGS)
		__builtin_trap();
	if (ps_sdt_spec_parse(text, &sp, &err) == 0 && (sp.npoints < 1 || sp.npoints > 2 || !sp.name[0][0]))
		__builtin_trap();
	free(text);
	return 0;
}
