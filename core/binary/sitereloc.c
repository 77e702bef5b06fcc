/* core/binary/sitereloc.c - the instructions at a patch site moved to a trampoline, the whole code's
 * flow graph of the function that holds it looked through for branches into them
 * (sitereloc.h). */
#include "sitereloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elffile.h"
#include "lines_graph.h"
#include "retsites.h"
#include "symbols.h"
#include "x86insn.h"

/* Where link-time address @a is, for a refusal: "+0x12" inside the symbol @s, else the address
   and the symbol that holds it. */
static const char *where(char *buf, size_t n, const struct ps_symtab *st, const struct ps_sym *s, uint64_t a)
{
	const struct ps_sym *h = ps_sym_by_addr(st, a);

	if (a >= s->addr && a < s->addr + s->size)
		snprintf(buf, n, "+0x%llx", (unsigned long long)(a - s->addr));
	else
		snprintf(buf, n, "0x%llx (%s)", (unsigned long long)a, h ? h->name : "?");
	return buf;
}

/* An indirect jump of @f whose targets no jump table gave, through a register or an indexed
   address: its index, or -1 when there is none. */
static int unknown_switch(struct ps_elf_file *file, const struct fn *f)
{
	for (int i = 0; i < f->n; i++) {
		const struct insn *in = &f->in[i];
		struct ps_x86_insn x;
		uint8_t *b;
		bool pointer;

		if (in->flow != PS_X86_JMP_IND || in->nout)
			continue;
		if (!(b = ps_elf_code(file, in->addr, in->len)))
			return i;
		pointer = ps_x86_decode(b, in->len, in->addr, &x) == 0 && x.nopnd >= 1 &&
			  x.opnd[0].kind == PS_X86_OPND_MEM && x.opnd[0].index == PS_X86_NOREG;
		free(b);
		if (!pointer)
			return i;
	}
	return -1;
}

/* An edge of @f into (lo, hi) other than one from the instruction before it in [lo, hi): its
   source's index, or -1. */
static int edge_into(const struct fn *f, uint64_t lo, uint64_t hi)
{
	for (int k = 0; k < f->ne; k++) {
		const struct insn *from = &f->in[f->e[k].from], *to = &f->in[f->e[k].to];
		bool falls = from->addr + from->len == to->addr && from->addr >= lo && from->addr < hi;

		if (to->addr > lo && to->addr < hi && !falls)
			return f->e[k].from;
	}
	return -1;
}

/* A jump of @f (a branch or a jump table's, not a fall-through, not a call) to @site or
   @entry, from outside [@site, @hi): its address, or 0. */
static uint64_t jump_back(const struct fn *f, uint64_t site, uint64_t entry, uint64_t hi)
{
	for (int k = 0; k < f->ne; k++) {
		const struct insn *from = &f->in[f->e[k].from], *to = &f->in[f->e[k].to];
		bool branch = from->kind == K_JMP || from->kind == K_IND ||
			      (from->kind == K_JCC && from->addr + from->len != to->addr);

		if (branch && (to->addr == site || to->addr == entry) && (from->addr < site || from->addr >= hi))
			return from->addr;
	}
	return 0;
}

/* What ps_site_reloc() asks: @req for the function @s (its bytes @code), moved into @out. */
struct req {
	struct ps_elf_file *file;
	const struct ps_symtab *st;
	const struct ps_sym *s;
	const char *name;
	const uint8_t *code;
	uint64_t at, bias, tramp;
	unsigned patch, flags;
};

/* Build the graph of @r's code through its parts, refuse what may jump into the displaced
   bytes, and move them. 0, or -1 with @err. */
static int move_checked(const struct req *r, struct ps_x86_reloc *out, struct ps_error *err)
{
	struct ps_retsites rs;
	struct fn f;
	char at[256];
	int i, rc = -1;

	memset(&rs, 0, sizeof rs);
	rs.entry = r->s->addr;
	if (ps_retsites_parts(r->file, r->st, r->s, &rs))
		return ps_error_set(err, PS_EUSAGE, "%s has more than %d parts", r->name, PS_RETSITES_MAX_PARTS);
	if (ps__graph_of(r->file->elf, rs.lo, rs.hi, rs.nparts, rs.entry, &f))
		ps_error_set(err, PS_EUSAGE, "%s: its code does not decode", r->name);
	else if ((i = unknown_switch(r->file, &f)) >= 0)
		ps_error_set(err, PS_EUSAGE,
			     "%s: an indirect jump at %s whose targets are not known may land inside the "
			     "patched bytes",
			     r->name, where(at, sizeof at, r->st, r->s, f.in[i].addr));
	else if (ps_x86_reloc_at(r->code, r->s->size, r->s->addr + r->bias, r->at + r->bias, r->patch, r->tramp,
				 r->flags, r->name, out, err) == 0) {
		uint64_t lo = out->site - r->bias, back = jump_back(&f, lo, out->entry - r->bias, lo + out->len);
		if (!out->again && back)
			out->again = back + r->bias;
		if ((i = edge_into(&f, lo, lo + out->len)) < 0)
			rc = 0;
		else
			ps_error_set(err, PS_EUSAGE,
				     "%s: a branch at %s lands inside the %u bytes displaced for the patch", r->name,
				     where(at, sizeof at, r->st, r->s, f.in[i].addr), out->len);
	}
	free(f.in);
	free(f.e);
	return rc;
}

int ps_site_reloc(const char *path, uint64_t addr, uint64_t bias, unsigned patch, uint64_t tramp, unsigned flags,
		  struct ps_x86_reloc *out, struct ps_error *err)
{
	struct req r = {
	    .at = addr, .bias = bias, .tramp = tramp, .patch = patch, .flags = flags | PS_X86_RELOC_IND_CHECKED};
	struct ps_symtab *st = NULL;
	uint8_t *code = NULL;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (ps_elf_open(&r.file, path, err) || ps_sym_open(&st, path, err))
		goto done;
	r.st = st;
	if (!(r.s = ps_sym_by_addr(st, addr))) {
		ps_error_set(err, PS_ENOTFOUND, "%s: no function holds 0x%llx", path, (unsigned long long)addr);
		goto done;
	}
	r.name = r.s->demangled ? r.s->demangled : r.s->name;
	if (!r.s->size)
		ps_error_set(err, PS_EUSAGE, "%s has no symbol size", r.name);
	else if (!(code = ps_elf_code(r.file, r.s->addr, r.s->size)))
		ps_error_set(err, PS_EUSAGE, "%s: its code is not in the file", r.name);
	else {
		r.code = code;
		rc = move_checked(&r, out, err);
	}
done:
	free(code);
	ps_sym_close(st);
	ps_elf_close(r.file);
	return rc;
}
