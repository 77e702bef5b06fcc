/* core/lines_cfg.c - where a line range's hits start and end, from the control flow of the
 * functions that hold its code.
 *
 * Each function is decoded into instructions with their successors (lines_graph.c). Every
 * instruction is in the range (a line in [L1, L2)), at the end line (L2), or elsewhere.
 * A forward data flow finds, after each instruction, whether a hit may be open, closed, or
 * either: entering the range opens one, reaching the end line closes it, anything else
 * keeps the state. An edge into the range from a state that may be closed can start a hit;
 * an edge into the end line from a state that may be open can end one. Only those edges
 * are armed: at their target when every way into it is such an edge, else at their source
 * when the source only leads there, else at the target (a start there while a hit is open,
 * or an end while none is, does nothing at run time: only a stop is wasted).
 */
#include <dwarf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "lines_graph.h"
#include "lines_priv.h"

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

/* Where line @line puts an instruction that is @was so far: the range wins over the end line. */
static uint8_t member(int line, int l1, int l2, uint8_t was)
{
	if ((line >= l1 && line < l2) || was == M_RANGE)
		return M_RANGE;
	return line == l2 ? M_END : was;
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
		f->in[i].rowstart = r->addr == f->in[i].addr;
		/* rows of both lines at this address: no instruction tells the start from the end */
		for (size_t j = k; j-- > 0 && rr[j].addr == f->in[i].addr;) {
			const struct row *o = &l->rows[rr[j].idx];
			if (ps__same_file(o->file, file) && (o->line == l1 || o->line == l2))
				f->in[i].both |= o->line == l1 ? 1 : 2;
		}
		/* the line, or the line of an inlined call this instruction belongs to */
		if (r->line > 0 && ps__same_file(r->file, file))
			f->in[i].member = member(r->line, l1, l2, M_OUT);
		for (int c = 0; c < f->ninl; c++)
			if (f->in[i].addr >= f->inl[c].lo && f->in[i].addr < f->inl[c].hi)
				f->in[i].member = member(f->inl[c].line, l1, l2, f->in[i].member);
	}
	free(rr);
	return 0;
}

/*
 * Optimized code interleaves lines: an instruction of the end line may come before more of
 * the range's in straight-line code (no branch out, nothing jumps in between). Control has
 * not left the range for the end line there: such an instruction is no end.
 */
static int interleaved(struct fn *f)
{
	int *npred = calloc((size_t)f->n + 1, sizeof *npred);
	bool range_after = false;

	if (!npred)
		return -1;
	for (int k = 0; k < f->ne; k++)
		npred[f->e[k].to]++;
	for (int i = f->n - 1; i >= 0; i--) {
		const struct insn *in = &f->in[i];
		bool straight = i + 1 < f->n && (in->kind == K_PLAIN || in->kind == K_CALL) && in->nout == 1 &&
				f->e[in->first].to == i + 1 && npred[i + 1] == 1;
		range_after = straight && (f->in[i + 1].member == M_RANGE || range_after);
		if (f->in[i].member == M_END && range_after)
			f->in[i].member = M_OUT;
	}
	free(npred);
	return 0;
}

/* The state coming into @i from outside the edges: the entry's, unknown indirect jumps'. */
static uint8_t outer_state(const struct fn *f, int i)
{
	return (f->in[i].addr == f->entry ? f->entry_st : 0) | (f->in[i].rowstart ? f->ind : 0);
}

/* The states after each reached instruction, to a fixed point. */
static int flow(struct fn *f)
{
	uint8_t *in_st = malloc((size_t)f->n);
	bool changed = true;

	if (!in_st)
		return -1;
	while (changed) {
		changed = false;
		for (int i = 0; i < f->n; i++)
			in_st[i] = outer_state(f, i);
		for (int k = 0; k < f->ne; k++)
			in_st[f->e[k].to] |= f->in[f->e[k].from].st;
		for (int i = 0; i < f->n; i++) {
			struct insn *in = &f->in[i];
			uint8_t st = in->member == M_RANGE ? ST_OPEN : in->member == M_END ? ST_CLOSED : in_st[i];
			if (!in->reached || st == in->st)
				continue;
			in->st = st;
			changed = true;
			if (in->kind == K_IND && f->unknown_ind)
				f->ind |= st;
		}
	}
	free(in_st);
	return 0;
}

/* Can control leave @f (a call, a return, a jump elsewhere) while a hit is open? */
static bool leaves_open(const struct fn *f)
{
	for (int i = 0; i < f->n; i++) {
		const struct insn *in = &f->in[i];
		if ((in->st & ST_OPEN) && (in->kind == K_CALL || in->kind == K_STOP || in->kind == K_IND ||
					   (in->kind == K_JMP && ps__graph_find(f, in->target) < 0)))
			return true;
	}
	return false;
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
static bool choose(struct fn *f)
{
	int *all = calloc((size_t)f->n, sizeof *all); /* per target: edges in, edges needing it */
	int *needed = calloc((size_t)f->n, sizeof *needed);
	bool ends = false;

	if (!all || !needed) {
		free(all);
		free(needed);
		return false;
	}
	for (int k = 0; k < f->ne; k++) {
		const struct insn *src = &f->in[f->e[k].from];
		if (!src->reached)
			continue;
		all[f->e[k].to]++;
		needed[f->e[k].to] += need(&f->in[f->e[k].to], src->st) != 0;
	}
	for (int i = 0; i < f->n; i++)
		if (outer_state(f, i)) {
			all[i]++;
			needed[i] += need(&f->in[i], outer_state(f, i)) != 0;
		}
	for (int i = 0; i < f->n; i++) {
		struct insn *in = &f->in[i];
		int kind = need(in, ST_CLOSED | ST_OPEN);
		uint8_t outer = outer_state(f, i);
		bool by_source;

		if (!needed[i] || !in->reached)
			continue;
		ends |= kind == 2;
		/* some ways in need no stop: arm instead the sources that only lead here, if all can be */
		by_source = needed[i] != all[i] && !need(in, outer);
		for (int k = 0; k < f->ne && by_source; k++) {
			const struct insn *src = &f->in[f->e[k].from];
			if (f->e[k].to == i && src->reached && need(in, src->st))
				by_source = src->nout == 1 && (src->kind == K_PLAIN || src->kind == K_JMP) &&
					    !needed[f->e[k].from];
		}
		if (!by_source) {
			in->arm = (uint8_t)kind;
			continue;
		}
		for (int k = 0; k < f->ne; k++)
			if (f->e[k].to == i && f->in[f->e[k].from].reached && need(in, f->in[f->e[k].from].st))
				f->in[f->e[k].from].arm = (uint8_t)kind;
	}
	free(all);
	free(needed);
	return ends;
}

static int add_inl(struct fn *f, uint64_t lo, uint64_t hi, int line)
{
	struct inl *p = realloc(f->inl, (size_t)(f->ninl + 1) * sizeof *p);

	if (!p)
		return -1;
	f->inl = p;
	f->inl[f->ninl++] = (struct inl){lo, hi, line};
	return 0;
}

/* The inlined calls under @die made from @file (DW_AT_call_file, DW_AT_call_line). */
static void find_inlines(Dwarf_Die *die, Dwarf_Files *files, const char *file, struct fn *f)
{
	Dwarf_Die child;

	if (dwarf_child(die, &child) != 0)
		return;
	do {
		Dwarf_Attribute a;
		Dwarf_Word cf, cl;
		const char *name;

		if (dwarf_tag(&child) == DW_TAG_inlined_subroutine &&
		    dwarf_formudata(dwarf_attr(&child, DW_AT_call_file, &a), &cf) == 0 &&
		    dwarf_formudata(dwarf_attr(&child, DW_AT_call_line, &a), &cl) == 0 &&
		    (name = dwarf_filesrc(files, cf, NULL, NULL)) && ps__same_file(name, file)) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0)
				if (add_inl(f, lo, hi, (int)cl) < 0)
					return;
		}
		if (dwarf_haschildren(&child) > 0)
			find_inlines(&child, files, file, f);
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* The functions (DWARF subprograms) holding code of lines [l1, l2] of @file. */
static int find_fns(struct ps_lines *l, const char *file, int l1, int l2, struct fn *fns, int max)
{
	int n = 0;
	Dwarf_Off seen[MAX_FUNCS];

	for (size_t i = 0; i < l->nrows; i++) {
		const struct row *r = &l->rows[i];
		Dwarf_Die cu, *scopes = NULL, *sp = NULL;
		Dwarf_Files *files;
		size_t nfiles;
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
			if (dwarf_diecu(sp, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0)
				find_inlines(sp, files, file, f);
			if (f->nr)
				n++;
		}
		free(scopes);
	}
	return n;
}

/* The first line from @line on with code (any row) in @file, or 0. */
static int line_with_code(const struct ps_lines *l, const char *file, int line)
{
	int best = 0;

	for (size_t i = 0; i < l->nrows; i++) {
		const struct row *r = &l->rows[i];
		if (!r->end && r->line >= line && (!best || r->line < best) && ps__same_file(r->file, file))
			best = r->line;
	}
	return best;
}

int ps_lines_range_arms(struct ps_lines *l, const char *file, int *pl1, int *pl2, struct ps_lines_arm *out, int max,
			char *note, size_t notelen, struct ps_error *err)
{
	struct fn fns[MAX_FUNCS];
	const char *f = ps__lines_find_file(l, file, err);
	int nf, n = 0, rc = 0, nrange = 0, l1, l2;
	bool ends = false;

	note[0] = '\0';
	if (!f)
		return -1;
	l1 = line_with_code(l, f, *pl1);
	l2 = line_with_code(l, f, *pl2);
	if (!l1 || !l2 || l1 >= l2)
		return 0;
	*pl1 = l1;
	*pl2 = l2;
	if ((nf = find_fns(l, f, l1, l2, fns, MAX_FUNCS)) <= 0)
		return 0;
	for (int k = 0; k < nf; k++) {
		fns[k].entry_st = ST_CLOSED;
		if (ps__graph_decode(l->elf, &fns[k]) < 0 || place(l, &fns[k], f, l1, l2) < 0 ||
		    ps__graph_edges(l->elf, &fns[k]) < 0 || interleaved(&fns[k]) < 0)
			goto fallback;
	}
	for (int pass = 0; pass < 2; pass++) {
		bool leaks = false;
		for (int k = 0; k < nf; k++) {
			for (int i = 0; i < fns[k].n; i++)
				fns[k].in[i].st = 0;
			fns[k].ind = 0;
			if (flow(&fns[k]) < 0)
				goto fallback;
			leaks |= leaves_open(&fns[k]);
			for (int i = 0; i < fns[k].n && !pass && !note[0]; i++)
				if (fns[k].in[i].kind == K_STOP && (fns[k].in[i].st & ST_OPEN))
					snprintf(note, notelen,
						 "%s: some paths return from %s inside the range; their hits end at "
						 "the next arrival at line %d",
						 file, fns[k].name, l2);
		}
		if (!leaks || pass)
			break;
		/* a hit may be open in a callee, a caller, or the next call: any entry may be in it */
		for (int k = 0; k < nf; k++)
			fns[k].entry_st = ST_CLOSED | ST_OPEN;
	}
	for (int k = 0; k < nf; k++) {
		struct fn *fn = &fns[k];
		ends |= choose(fn);
		for (int i = 0; i < fn->n; i++) {
			if (fn->in[i].both == 3) {
				rc = ps_error_set(err, PS_EUSAGE,
						  "ambiguous in this build: lines %d and %d of %s begin at one address "
						  "(0x%" PRIx64
						  " in %s), so no instruction tells the start from the end; "
						  "choose other lines",
						  l1, l2, file, fn->in[i].addr, fn->name);
				goto done;
			}
			nrange += fn->in[i].member == M_RANGE && fn->in[i].reached;
		}
	}
	if (!nrange) {
		rc = ps_error_set(err, PS_EUSAGE,
				  "lines %d-%d of %s have no code of their own (optimized away or merged)", l1, l2 - 1,
				  file);
		goto done;
	}
	if (!ends) {
		char lines[40];
		snprintf(lines, sizeof lines, l2 - 1 > l1 ? "lines %d-%d" : "line %d", l1, l2 - 1);
		rc = ps_error_set(err, PS_EUSAGE,
				  "line %d of %s never comes after the code of %s in %s (optimized code reorders or "
				  "interleaves them): the range never ends; choose another end line",
				  l2, file, lines, fns[0].name);
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
	for (int k = 0; k < nf; k++) {
		free(fns[k].in);
		free(fns[k].e);
		free(fns[k].inl);
	}
	return rc;
}
