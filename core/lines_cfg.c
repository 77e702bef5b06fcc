/* core/lines_cfg.c - where a line range's hits start and end, from the control flow of the
 * functions that hold its code.
 *
 * Each function is decoded with Zydis into instructions with their successors. Every
 * instruction is in the range (a line in [L1, L2)), at the end line (L2), or elsewhere.
 * A forward data flow finds, after each instruction, whether a hit may be open, closed, or
 * either: entering the range opens one, reaching the end line closes it, anything else
 * keeps the state. An edge into the range from a state that may be closed can start a hit;
 * an edge into the end line from a state that may be open can end one. Only those edges
 * are armed: at their target when every way into it is such an edge, else at their source
 * when the source only leads there, else at the target (a start there while a hit is open,
 * or an end while none is, does nothing at run time: only a stop is wasted).
 */
#include <Zydis/Zydis.h>
#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "lines_priv.h"

enum { ST_CLOSED = 1, ST_OPEN = 2 };		 /* the state after an instruction: a set */
enum { M_OUT, M_RANGE, M_END };			 /* where an instruction is */
enum { K_PLAIN, K_JCC, K_JMP, K_IND, K_CALL, K_STOP }; /* how control leaves it */

struct insn {
	uint64_t addr, target; /* target: of a direct jump, jcc or call */
	uint8_t len, kind, member, st;
	int next, to; /* indices of the fall-through and jump successors, -1 if none */
	int npred;
	uint8_t arm; /* 1 start, 2 end */
};

#define MAX_RANGES 8
#define MAX_FUNCS 16

struct fn {
	uint64_t lo[MAX_RANGES], hi[MAX_RANGES], entry;
	int nr;
	const char *name;
	struct insn *in;
	int n;
};

static int cmp_insn(const void *pa, const void *pb)
{
	const struct insn *a = pa, *b = pb;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int find_insn(const struct fn *f, uint64_t addr)
{
	int lo = 0, hi = f->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (f->in[mid].addr == addr)
			return mid;
		if (f->in[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* The bytes of link-time range [lo, hi) in an executable section of @elf, or NULL. */
static const uint8_t *code_bytes(Elf *elf, uint64_t lo, uint64_t hi)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    lo < sh.sh_addr || hi > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < hi - sh.sh_addr)
			return NULL;
		return (const uint8_t *)d->d_buf + (lo - sh.sh_addr);
	}
	return NULL;
}

/* Decode every range of @f into f->in, sorted. 0, or -1 (an unknown instruction, no bytes). */
static int decode(Elf *elf, struct fn *f)
{
	ZydisDecoder dec;
	size_t cap = 0;

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	for (int r = 0; r < f->nr; r++)
		cap += f->hi[r] - f->lo[r];
	if (!(f->in = calloc(cap ? cap : 1, sizeof *f->in)))
		return -1;
	for (int r = 0; r < f->nr; r++) {
		const uint8_t *buf = code_bytes(elf, f->lo[r], f->hi[r]);
		uint64_t a = f->lo[r];

		if (!buf)
			return -1;
		while (a < f->hi[r]) {
			ZydisDecodedInstruction zi;
			struct insn *in = &f->in[f->n];

			if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, buf + (a - f->lo[r]),
									f->hi[r] - a, &zi)))
				return -1;
			in->addr = a;
			in->len = zi.length;
			in->kind = K_PLAIN;
			if (zi.meta.category == ZYDIS_CATEGORY_COND_BR)
				in->kind = K_JCC;
			else if (zi.meta.category == ZYDIS_CATEGORY_UNCOND_BR)
				in->kind = zi.raw.imm[0].is_relative ? K_JMP : K_IND;
			else if (zi.meta.category == ZYDIS_CATEGORY_CALL)
				in->kind = K_CALL;
			else if (zi.meta.category == ZYDIS_CATEGORY_RET || zi.mnemonic == ZYDIS_MNEMONIC_UD2 ||
				 zi.mnemonic == ZYDIS_MNEMONIC_HLT)
				in->kind = K_STOP;
			if (zi.raw.imm[0].is_relative)
				in->target = a + zi.length + (uint64_t)zi.raw.imm[0].value.s;
			a += zi.length;
			f->n++;
		}
	}
	qsort(f->in, (size_t)f->n, sizeof *f->in, cmp_insn);
	for (int i = 0; i < f->n; i++) {
		struct insn *in = &f->in[i];
		bool falls = in->kind == K_PLAIN || in->kind == K_JCC || in->kind == K_CALL;
		in->next = falls && i + 1 < f->n && f->in[i + 1].addr == in->addr + in->len ? i + 1 : -1;
		in->to = in->kind == K_JCC || in->kind == K_JMP ? find_insn(f, in->target) : -1;
	}
	for (int i = 0; i < f->n; i++) {
		if (f->in[i].next >= 0)
			f->in[f->in[i].next].npred++;
		if (f->in[i].to >= 0 && f->in[i].to != f->in[i].next)
			f->in[f->in[i].to].npred++;
	}
	return 0;
}

struct rowref {
	uint64_t addr;
	size_t idx;
};

static int cmp_rowref(const void *pa, const void *pb)
{
	const struct rowref *a = pa, *b = pb;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static bool in_fn(const struct fn *f, uint64_t addr)
{
	for (int r = 0; r < f->nr; r++)
		if (addr >= f->lo[r] && addr < f->hi[r])
			return true;
	return false;
}

/* Each instruction's place: the last row at or before its address (rows at one address: the
   last one is the instruction's line). */
static int place(struct ps_lines *l, struct fn *f, const char *file, int l1, int l2)
{
	struct rowref *rr = malloc((l->nrows ? l->nrows : 1) * sizeof *rr);
	size_t n = 0, k = 0;

	if (!rr)
		return -1;
	for (size_t i = 0; i < l->nrows; i++)
		if (!l->rows[i].end && in_fn(f, l->rows[i].addr))
			rr[n++] = (struct rowref){l->rows[i].addr, i};
	qsort(rr, n, sizeof *rr, cmp_rowref);
	for (int i = 0; i < f->n; i++) {
		const struct row *r;
		while (k < n && rr[k].addr <= f->in[i].addr)
			k++;
		if (!k)
			continue;
		r = &l->rows[rr[k - 1].idx];
		if (r->line <= 0 || !ps__same_file(r->file, file))
			continue;
		f->in[i].member = r->line >= l1 && r->line < l2 ? M_RANGE : r->line == l2 ? M_END : M_OUT;
	}
	free(rr);
	return 0;
}

/* The states after each instruction, to a fixed point. @ind: the states after the indirect
   jumps, which may go anywhere in the function. */
static uint8_t flow(struct fn *f)
{
	uint8_t ind = 0;
	bool changed = true;

	while (changed) {
		uint8_t *in_st = calloc((size_t)f->n, 1);
		changed = false;
		if (!in_st)
			return 0;
		for (int i = 0; i < f->n; i++) {
			if (f->in[i].addr == f->entry || f->in[i].npred == 0)
				in_st[i] |= ST_CLOSED;
			in_st[i] |= ind;
		}
		for (int i = 0; i < f->n; i++) {
			if (f->in[i].next >= 0)
				in_st[f->in[i].next] |= f->in[i].st;
			if (f->in[i].to >= 0)
				in_st[f->in[i].to] |= f->in[i].st;
		}
		for (int i = 0; i < f->n; i++) {
			struct insn *in = &f->in[i];
			uint8_t st = in->member == M_RANGE ? ST_OPEN : in->member == M_END ? ST_CLOSED : in_st[i];
			if (st != in->st) {
				in->st = st;
				changed = true;
			}
			if (in->kind == K_IND && (ind | st) != ind) {
				ind |= st;
				changed = true;
			}
		}
		free(in_st);
	}
	return ind;
}

/* What an edge into @to from a state @st needs: 1 start, 2 end, 0 nothing. */
static int need(const struct insn *to, uint8_t st)
{
	if (to->member == M_RANGE && (st & ST_CLOSED))
		return 1;
	if (to->member == M_END && (st & ST_OPEN))
		return 2;
	return 0;
}

/* Choose the breakpoints of @f (insn.arm). Returns whether any edge can end a hit. */
static bool choose(struct fn *f, uint8_t ind)
{
	int *all = calloc((size_t)f->n, sizeof *all); /* per target: edges in, edges needing it */
	int *needed = calloc((size_t)f->n, sizeof *needed);
	bool ends = false;

	if (!all || !needed) {
		free(all);
		free(needed);
		return false;
	}
	for (int i = 0; i < f->n; i++) {
		struct insn *in = &f->in[i];
		int succ[2] = {in->next, in->to != in->next ? in->to : -1};
		for (int k = 0; k < 2; k++)
			if (succ[k] >= 0) {
				all[succ[k]]++;
				needed[succ[k]] += need(&f->in[succ[k]], in->st) != 0;
			}
	}
	/* edges from outside the graph: the entry, code nothing jumps to, indirect jumps */
	for (int i = 0; i < f->n; i++) {
		uint8_t st = (f->in[i].addr == f->entry || f->in[i].npred == 0 ? ST_CLOSED : 0) | ind;
		if (st) {
			all[i]++;
			needed[i] += need(&f->in[i], st) != 0;
		}
	}
	for (int i = 0; i < f->n; i++) {
		struct insn *in = &f->in[i];
		int kind = need(in, ST_CLOSED | ST_OPEN);
		if (!needed[i])
			continue;
		ends |= kind == 2;
		if (needed[i] == all[i]) {
			in->arm = (uint8_t)kind;
			continue;
		}
		/* some ways in need no stop: arm instead the sources that only lead here, if all can be */
		uint8_t virt = (in->addr == f->entry || in->npred == 0 ? ST_CLOSED : 0) | ind;
		bool by_source = !need(in, virt);
		for (int p = 0; p < f->n && by_source; p++) {
			const struct insn *src = &f->in[p];
			if ((src->next == i || src->to == i) && need(in, src->st))
				by_source = (src->kind == K_PLAIN || src->kind == K_JMP) && !needed[p];
		}
		if (!by_source) {
			in->arm = (uint8_t)kind;
			continue;
		}
		for (int p = 0; p < f->n; p++)
			if ((f->in[p].next == i || f->in[p].to == i) && need(in, f->in[p].st))
				f->in[p].arm = (uint8_t)kind;
	}
	free(all);
	free(needed);
	return ends;
}

/* The functions (DWARF subprograms) holding code of lines [l1, l2] of @file. */
static int find_fns(struct ps_lines *l, const char *file, int l1, int l2, struct fn *fns, int max)
{
	int n = 0;
	Dwarf_Off seen[MAX_FUNCS];

	for (size_t i = 0; i < l->nrows; i++) {
		const struct row *r = &l->rows[i];
		Dwarf_Die cu, *scopes = NULL, *sp = NULL;
		int ns;
		bool known = false;

		if (r->end || r->line < l1 || r->line > l2 || !ps__same_file(r->file, file))
			continue;
		for (int k = 0; k < n && !known; k++)
			known = in_fn(&fns[k], r->addr);
		if (known || !dwarf_addrdie(l->dw, r->addr, &cu) || (ns = dwarf_getscopes(&cu, r->addr, &scopes)) <= 0)
			continue;
		for (int k = 0; k < ns && !sp; k++)
			if (dwarf_tag(&scopes[k]) == DW_TAG_subprogram)
				sp = &scopes[k];
		for (int k = 0; sp && k < n; k++)
			if (seen[k] == dwarf_dieoffset(sp))
				sp = NULL;
		if (sp && n == max) {
			free(scopes);
			return -1;
		}
		if (sp) {
			struct fn *f = &fns[n];
			Dwarf_Addr base, lo, hi, entry;
			ptrdiff_t off = 0;

			memset(f, 0, sizeof *f);
			while ((off = dwarf_ranges(sp, off, &base, &lo, &hi)) > 0 && f->nr < MAX_RANGES) {
				f->lo[f->nr] = lo;
				f->hi[f->nr++] = hi;
			}
			f->entry = dwarf_entrypc(sp, &entry) == 0 ? entry : f->lo[0];
			f->name = dwarf_diename(sp);
			if (!f->name)
				f->name = "?";
			seen[n] = dwarf_dieoffset(sp);
			if (f->nr)
				n++;
		}
		free(scopes);
	}
	return n;
}

int ps_lines_range_arms(struct ps_lines *l, const char *file, int l1, int l2, struct ps_lines_arm *out, int max,
			char *note, size_t notelen, struct ps_error *err)
{
	struct fn fns[MAX_FUNCS];
	const char *f = ps__lines_find_file(l, file, err);
	int nf, n = 0, rc = 0, nrange = 0;
	bool ends = false;

	note[0] = '\0';
	if (!f)
		return -1;
	if ((nf = find_fns(l, f, l1, l2, fns, MAX_FUNCS)) <= 0)
		return 0;
	for (int k = 0; k < nf; k++) {
		struct fn *fn = &fns[k];
		uint8_t ind;
		if (decode(l->elf, fn) < 0 || place(l, fn, f, l1, l2) < 0)
			goto fallback;
		ind = flow(fn);
		ends |= choose(fn, ind);
		for (int i = 0; i < fn->n; i++) {
			nrange += fn->in[i].member == M_RANGE;
			if (fn->in[i].kind == K_STOP && (fn->in[i].st & ST_OPEN) && !note[0])
				snprintf(note, notelen,
					 "%s: some paths return from %s inside the range; their hits end at the next "
					 "arrival at line %d",
					 file, fn->name, l2);
		}
	}
	if (!nrange) {
		rc = ps_error_set(err, PS_EUSAGE, "lines %d-%d of %s have no code of their own (optimized away or merged)",
				  l1, l2 - 1, file);
		goto done;
	}
	if (!ends) {
		rc = ps_error_set(err, PS_EUSAGE,
				  "no path from line %d of %s reaches line %d in %s (optimized code): the range never "
				  "ends; choose another end line",
				  l1, file, l2, fns[0].name);
		goto done;
	}
	/* ends first: where one hit ends and the next starts, the roles run in that order */
	for (int pass = 2; pass >= 1; pass--)
		for (int k = 0; k < nf; k++)
			for (int i = 0; i < fns[k].n; i++) {
				if (fns[k].in[i].arm != pass)
					continue;
				if (n == max)
					goto fallback;
				out[n].addr = fns[k].in[i].addr;
				out[n++].end = pass == 2;
			}
	rc = n;
	goto done;
fallback:
	rc = 0;
done:
	for (int k = 0; k < nf; k++)
		free(fns[k].in);
	return rc;
}
