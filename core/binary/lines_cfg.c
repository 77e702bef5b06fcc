/* core/binary/lines_cfg.c - a line range through the control flow of the functions that hold its
 * code: where a hit may be open, and which edges can start or end one.
 *
 * Each function is decoded into instructions with their successors (lines_graph.c). Every
 * instruction is placed by a reading (lines_range.c): in the range, at the end, or elsewhere.
 * A forward data flow finds, after each instruction, whether a hit may be open, closed, or
 * either: entering the range opens one, reaching the end closes it, anything else keeps the
 * state. An edge into the range from a state that may be closed can start a hit; an edge
 * into the end from a state that may be open can end one. Only those edges are armed: at
 * their target when every way into it is such an edge, else at their source when the source
 * only leads there, else at the target (a start there while a hit is open, or an end while
 * none is, does nothing at run time: only a stop is wasted).
 */
#include <dwarf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "lines_cfg.h"

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

/* The side line @line of @c's file is on: AT_RANGE, AT_END or 0. */
static uint8_t side(const struct cfg *c, int line)
{
	return line >= c->l1 && line < c->l2 ? AT_RANGE : line == c->l2 ? AT_END : 0;
}

/* The sides of each instruction (insn.at): of every line with a row at its address (the views
   there: control passes each of those lines before it runs), else of the line of the last row
   before it; code of an inlined call made from the range is the range's. */
static int place(struct ps_lines *l, struct cfg *c, struct fn *f)
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
		struct insn *in = &f->in[i];
		const struct row *r;
		while (k < n && rr[k].addr <= in->addr)
			k++;
		if (!k)
			continue;
		r = &l->rows[rr[k - 1].idx];
		in->rowstart = r->addr == in->addr;
		for (size_t j = k; j-- > 0 && (j == k - 1 || rr[j].addr == in->addr);) {
			const struct row *o = &l->rows[rr[j].idx];
			if (o->line > 0 && ps__same_file(o->file, c->file))
				in->at |= side(c, o->line);
			if (o->addr != in->addr)
				break;
		}
		for (int m = 0; m < f->ninl; m++) {
			uint8_t call = side(c, f->inl[m].line);
			if (in->addr >= f->inl[m].lo && in->addr < f->inl[m].hi)
				in->at = call == AT_RANGE ? AT_RANGE : in->at | call;
		}
	}
	free(rr);
	return 0;
}

const struct insn *ps__cfg_shared(const struct cfg *c, const struct fn **fn)
{
	for (int k = 0; k < c->nf; k++)
		for (int i = 0; i < c->fn[k].n; i++)
			if (c->fn[k].in[i].at == (AT_RANGE | AT_END) && c->fn[k].in[i].reached) {
				*fn = &c->fn[k];
				return &c->fn[k].in[i];
			}
	return NULL;
}

void ps__cfg_place(struct cfg *c, uint64_t start, uint64_t end)
{
	for (int k = 0; k < c->nf; k++)
		for (int i = 0; i < c->fn[k].n; i++) {
			struct insn *in = &c->fn[k].in[i];
			if (start)
				in->member = in->addr == start ? M_RANGE : in->addr == end ? M_END : M_OUT;
			else
				in->member = in->at & AT_RANGE ? M_RANGE : in->at & AT_END ? M_END : M_OUT;
			in->arm = 0;
		}
}

/*
 * Optimized code interleaves lines: an instruction of the end line may come before more of
 * the range's in straight-line code (no branch out, nothing jumps in between). Whether control
 * left the range for the end line there, the table does not say: mark it (insn.woven).
 */
static int weave(struct fn *f)
{
	int *npred = calloc((size_t)f->n + 1, sizeof *npred);
	bool range_after = false;

	if (!npred)
		return -1;
	for (int k = 0; k < f->ne; k++)
		npred[f->e[k].to]++;
	for (int i = f->n - 1; i >= 0; i--) {
		struct insn *in = &f->in[i];
		bool straight = i + 1 < f->n && (in->kind == K_PLAIN || in->kind == K_CALL) && in->nout == 1 &&
				f->e[in->first].to == i + 1 && npred[i + 1] == 1;
		range_after = straight && ((f->in[i + 1].at & AT_RANGE) || range_after);
		in->woven = in->at == AT_END && range_after && in->reached;
	}
	free(npred);
	return 0;
}

const struct insn *ps__cfg_interleaved(const struct cfg *c, const struct fn **fn)
{
	for (int k = 0; k < c->nf; k++)
		for (int i = 0; i < c->fn[k].n; i++)
			if (c->fn[k].in[i].woven) {
				*fn = &c->fn[k];
				return &c->fn[k].in[i];
			}
	return NULL;
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

/* Choose the breakpoints of @f (insn.arm). Returns whether any edge can end a hit: 1, 0, or -1
   (no memory). */
static int choose(struct fn *f)
{
	int *all = calloc((size_t)f->n, sizeof *all); /* per target: edges in, edges needing it */
	int *needed = calloc((size_t)f->n, sizeof *needed);
	bool ends = false;

	if (!all || !needed) {
		free(all);
		free(needed);
		return -1;
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
		Dwarf_Die cu, sp;
		Dwarf_Files *files;
		size_t nfiles;
		bool known = false;

		if (r->end || r->line < l1 || r->line > l2 || !ps__same_file(r->file, file))
			continue;
		for (int k = 0; k < n && !known; k++)
			known = in_fn(&fns[k], r->addr);
		if (known || !ps__graph_subprogram(l->dw, r->addr, &sp))
			continue;
		for (int k = 0; k < n && !known; k++)
			known = seen[k] == dwarf_dieoffset(&sp);
		if (known)
			continue;
		if (n == max)
			return -1;
		ps__graph_fn_of(&sp, &fns[n]);
		seen[n] = dwarf_dieoffset(&sp);
		if (dwarf_diecu(&sp, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0)
			find_inlines(&sp, files, file, &fns[n]);
		if (fns[n].nr)
			n++;
	}
	return n;
}

int ps__cfg_build(struct ps_lines *l, struct cfg *c)
{
	c->nf = find_fns(l, c->file, c->l1, c->l2, c->fn, MAX_FUNCS);
	if (c->nf <= 0) {
		c->nf = 0;
		return 0;
	}
	for (int k = 0; k < c->nf; k++)
		if (ps__graph_decode(l->elf, &c->fn[k]) < 0 || place(l, c, &c->fn[k]) < 0 ||
		    ps__graph_edges(l->elf, &c->fn[k]) < 0 || weave(&c->fn[k]) < 0)
			return 0;
	return 1;
}

void ps__cfg_free(struct cfg *c)
{
	for (int k = 0; k < c->nf; k++) {
		free(c->fn[k].in);
		free(c->fn[k].e);
		free(c->fn[k].inl);
	}
	c->nf = 0;
}

int ps__cfg_flow(struct cfg *c, const char *file, const char *endname, char *note, size_t n)
{
	for (int k = 0; k < c->nf; k++)
		c->fn[k].entry_st = ST_CLOSED;
	for (int pass = 0; pass < 2; pass++) {
		bool leaks = false;
		for (int k = 0; k < c->nf; k++) {
			struct fn *f = &c->fn[k];
			for (int i = 0; i < f->n; i++)
				f->in[i].st = 0;
			f->ind = 0;
			if (flow(f) < 0)
				return -1;
			leaks |= leaves_open(f);
			for (int i = 0; i < f->n && !pass && !note[0]; i++)
				if (f->in[i].kind == K_STOP && (f->in[i].st & ST_OPEN))
					snprintf(note, n,
						 "%s: some paths return from %s inside the range; their hits end at "
						 "the next arrival at %s",
						 file, f->name, endname);
		}
		if (!leaks || pass)
			break;
		/* a hit may be open in a callee, a caller, or the next call: any entry may be in it */
		for (int k = 0; k < c->nf; k++)
			c->fn[k].entry_st = ST_CLOSED | ST_OPEN;
	}
	return 0;
}

uint8_t ps__cfg_ways_in(const struct fn *f, int i)
{
	uint8_t st = outer_state(f, i);

	for (int k = 0; k < f->ne; k++)
		if (f->e[k].to == i && f->in[f->e[k].from].reached)
			st |= f->in[f->e[k].from].st;
	return st;
}

int ps__cfg_choose(struct cfg *c)
{
	int ends = 0;

	for (int k = 0; k < c->nf; k++) {
		int e = choose(&c->fn[k]);
		if (e < 0)
			return -1;
		ends |= e;
	}
	return ends;
}
