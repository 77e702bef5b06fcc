/* core/binary/emptyhit.c - the sites of a function's empty hits (core/binary/emptyhit.h): its code read
 * from the executable segment that holds it and decoded from its first byte to its end (x86insn.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elffile.h"
#include "emptyhit.h"
#include "symbols.h"
#include "x86insn.h"

#define MAX_CODE (4u << 20) /* a function larger than this is not decoded */

/* Decode @n bytes of code at @addr into @out (entry, next, tails). */
static int decode(const uint8_t *code, uint64_t n, uint64_t addr, struct ps_empty_hit *out, struct ps_error *err)
{
	uint64_t off = 0, prev_at = 0;
	bool prev_ok = false;

	while (off < n) {
		struct ps_x86_insn in;

		if (ps_x86_decode(code + off, n - off, addr + off, &in))
			return ps_error_set(err, PS_EUSAGE, "cannot decode the instruction at 0x%llx",
					    (unsigned long long)(addr + off));
		/* the next instruction in address order runs after it: no branch, call, return,
		   system call or trap */
		bool through = in.flow == PS_X86_NEXT || in.flow == PS_X86_NOP;
		if (off == 0 && through)
			out->next = addr + in.len;
		if (in.flow == PS_X86_RET && prev_ok && out->ntails < PS_EMPTYHIT_MAX_TAILS) {
			out->tail[out->ntails].at = prev_at;
			out->tail[out->ntails++].ret = addr + off;
		}
		prev_ok = through && !(in.writes & 1u << 4); /* push and pop write rsp */
		prev_at = addr + off;
		off += in.len;
	}
	return 0;
}

int ps_empty_hit_sites(const char *path, const char *func, struct ps_empty_hit *out, struct ps_error *err)
{
	struct ps_symtab *st;
	const struct ps_sym *s = NULL;
	uint64_t addr, end;
	uint8_t *code;
	char *tail;
	struct ps_elf_file *f;
	int rc;

	memset(out, 0, sizeof *out);
	if (ps_sym_open(&st, path, err) < 0)
		return -1;
	addr = strncmp(func, "0x", 2) == 0 ? strtoull(func, &tail, 16) : 0;
	if (addr && *tail == '\0')
		s = ps_sym_by_addr(st, addr);
	else if (ps_sym_lookup(st, func, &s, err) < 0) {
		ps_sym_close(st);
		return -1;
	}
	if (!s || !s->size) {
		rc = ps_error_set(err, PS_ENOTFOUND, "%s: %s has no symbol with a size to decode", path, func);
		ps_sym_close(st);
		return rc;
	}
	if (!addr)
		addr = s->addr;
	end = s->addr + s->size;
	ps_sym_close(st);
	if (end - addr > MAX_CODE)
		return ps_error_set(err, PS_EUSAGE, "%s: %s is larger than %u bytes", path, func, MAX_CODE);
	if (ps_elf_open(&f, path, err))
		return -1;
	code = ps_elf_code(f, addr, end - addr);
	ps_elf_close(f);
	if (!code)
		return ps_error_set(err, PS_EUSAGE, "%s: the code of %s is not in an executable segment", path, func);
	out->entry = addr;
	rc = decode(code, end - addr, addr, out, err);
	free(code);
	return rc;
}
