/* core/binary/retsites.c - the exits of a function (core/binary/retsites.h): its parts from its symbol,
 * its DWARF ranges and its ".cold" symbols, decoded and linked by the line flow graph
 * (lines_graph.c), each ret and each jump out kept. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "elffile.h"
#include "lines_graph.h"
#include "procmaps.h"
#include "retsites.h"
#include "symbols.h"
#include "x86insn.h"

/* The link-time address of file offset @off, through the PT_LOAD segment whose file part holds
   it (an executable one first: segments may share a page of the file). 0, or -1. */
static int vaddr_of(Elf *elf, uint64_t off, uint64_t *vaddr)
{
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n) != 0)
		return -1;
	for (int exec = 1; exec >= 0; exec--)
		for (size_t i = 0; i < n; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && !!(ph.p_flags & PF_X) == exec &&
			    off >= ph.p_offset && off - ph.p_offset < ph.p_filesz) {
				*vaddr = ph.p_vaddr + (off - ph.p_offset);
				return 0;
			}
	return -1;
}

static bool in_parts(const struct ps_retsites *rs, uint64_t a)
{
	for (int i = 0; i < rs->nparts; i++)
		if (a >= rs->lo[i] && a < rs->hi[i])
			return true;
	return false;
}

/* Add [lo, hi) to the parts, joined to one it overlaps. 0, or -1 when there are too many. */
static int add_part(struct ps_retsites *rs, uint64_t lo, uint64_t hi)
{
	int i;

	if (hi <= lo)
		return 0;
	for (i = 0; i < rs->nparts; i++)
		if (lo <= rs->hi[i] && rs->lo[i] <= hi) {
			rs->lo[i] = lo < rs->lo[i] ? lo : rs->lo[i];
			rs->hi[i] = hi > rs->hi[i] ? hi : rs->hi[i];
			return 0;
		}
	if (rs->nparts == PS_RETSITES_MAX_PARTS)
		return -1;
	for (i = rs->nparts++; i > 0 && rs->lo[i - 1] > lo; i--) {
		rs->lo[i] = rs->lo[i - 1];
		rs->hi[i] = rs->hi[i - 1];
	}
	rs->lo[i] = lo;
	rs->hi[i] = hi;
	return 0;
}

/* The ranges of the DWARF subprogram with a range that begins at @start (none without DWARF). */
static int dwarf_parts(struct ps_elf_file *f, uint64_t start, struct ps_retsites *rs)
{
	Dwarf *dw = ps_elf_dwarf(f);
	Dwarf_Die cu, *scopes = NULL;
	int ns, rc = 0;

	if (!dw || !dwarf_addrdie(dw, start, &cu) || (ns = dwarf_getscopes(&cu, start, &scopes)) <= 0)
		return 0;
	for (int k = 0; k < ns; k++) {
		Dwarf_Addr base, lo, hi, entry;
		ptrdiff_t off = 0;
		bool begins = dwarf_entrypc(&scopes[k], &entry) == 0 && entry == start;

		if (dwarf_tag(&scopes[k]) != DW_TAG_subprogram)
			continue;
		while (!begins && (off = dwarf_ranges(&scopes[k], off, &base, &lo, &hi)) > 0)
			begins = lo == start;
		off = 0;
		while (begins && rc == 0 && (off = dwarf_ranges(&scopes[k], off, &base, &lo, &hi)) > 0)
			rc = add_part(rs, lo, hi);
		break;
	}
	free(scopes);
	return rc;
}

int ps_retsites_parts(struct ps_elf_file *f, const struct ps_symtab *st, const struct ps_sym *s, struct ps_retsites *rs)
{
	size_t len = strlen(s->name);

	if (add_part(rs, s->addr, s->addr + s->size) || dwarf_parts(f, s->addr, rs))
		return -1;
	for (size_t i = 0; i < ps_sym_count(st); i++) {
		const struct ps_sym *c = ps_sym_at(st, i);
		const char *tail = c->name + len;
		if (!strncmp(c->name, s->name, len) && !strncmp(tail, ".cold", 5) && (!tail[5] || tail[5] == '.') &&
		    add_part(rs, c->addr, c->addr + c->size))
			return -1;
	}
	for (int i = 0; i < rs->nparts; i++)
		rs->cold += !(rs->lo[i] <= s->addr && s->addr < rs->hi[i]);
	return 0;
}

/* Keep instruction @in if it leaves the function. 0, or -1 with @err. */
static int keep_exit(Elf *elf, const struct insn *in, struct ps_retsites *rs, const char *name, struct ps_error *err)
{
	int kind = 0;
	struct ps_retsite *site;

	if (in->flow == PS_X86_CALL || in->flow == PS_X86_CALL_IND || in->flow == PS_X86_FAR_CALL)
		rs->calls++;
	if (in->flow == PS_X86_RET)
		kind = PS_RETSITE_RET;
	else if (in->flow == PS_X86_JMP && !in_parts(rs, in->target))
		kind = PS_RETSITE_JMP;
	else if (in->flow == PS_X86_JMP_IND && in->nout == 0)
		kind = PS_RETSITE_JMP_IND;
	else if ((in->flow == PS_X86_JCC || in->flow == PS_X86_LOOP) && !in_parts(rs, in->target))
		return ps_error_set(err, PS_EUSAGE, "%s: a conditional jump at 0x%llx leaves the function", name,
				    (unsigned long long)in->addr);
	else if (in->flow == PS_X86_FAR_JMP || in->flow == PS_X86_FAR_RET || in->flow == PS_X86_IRET)
		return ps_error_set(err, PS_EUSAGE, "%s: a far jump or return at 0x%llx", name,
				    (unsigned long long)in->addr);
	if (!kind)
		return 0;
	if (rs->n == PS_RETSITES_MAX)
		return ps_error_set(err, PS_EUSAGE, "%s has more than %d exits", name, PS_RETSITES_MAX);
	site = &rs->site[rs->n];
	site->addr = in->addr;
	site->kind = kind;
	if (ps_elf_file_offset(elf, in->addr, &site->offset))
		return ps_error_set(err, PS_EUSAGE, "%s: 0x%llx is not in the file", name,
				    (unsigned long long)in->addr);
	rs->n++;
	return 0;
}

/* Decode the parts of @rs and keep their exits. */
static int find_exits(Elf *elf, struct ps_retsites *rs, const char *name, struct ps_error *err)
{
	struct fn fn;
	int rc = 0;

	if (ps__graph_of(elf, rs->lo, rs->hi, rs->nparts, rs->entry, &fn))
		rc = ps_error_set(err, PS_EUSAGE, "%s: its code does not decode", name);
	for (int i = 0; rc == 0 && i < fn.n; i++)
		rc = keep_exit(elf, &fn.in[i], rs, name, err);
	free(fn.in);
	free(fn.e);
	return rc;
}

int ps_retsites_find(const char *path, uint64_t offset, struct ps_retsites *out, struct ps_error *err)
{
	struct ps_symtab *st = NULL;
	struct ps_elf_file *f = NULL;
	const struct ps_sym *s;
	const char *name;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (ps_elf_open(&f, path, err) || ps_sym_open(&st, path, err))
		goto out;
	if (vaddr_of(f->elf, offset, &out->entry) || !(s = ps_sym_by_addr(st, out->entry))) {
		ps_error_set(err, PS_ENOTFOUND, "%s: no function holds file offset 0x%llx", path,
			     (unsigned long long)offset);
		goto out;
	}
	name = s->demangled ? s->demangled : s->name;
	if (!s->size)
		ps_error_set(err, PS_EUSAGE, "%s has no symbol size", name);
	else if (ps_retsites_parts(f, st, s, out))
		ps_error_set(err, PS_EUSAGE, "%s has more than %d parts", name, PS_RETSITES_MAX_PARTS);
	else
		rc = find_exits(f->elf, out, name, err);
out:
	ps_sym_close(st);
	ps_elf_close(f);
	return rc;
}

int ps_retsites_leaf(const struct ps_retsites *rs)
{
	if (rs->calls)
		return 0;
	for (int i = 0; i < rs->n; i++)
		if (rs->site[i].kind != PS_RETSITE_RET)
			return 0;
	return 1;
}
