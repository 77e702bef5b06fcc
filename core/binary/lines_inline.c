/* core/binary/lines_inline.c - where the hits of an inlined copy of a function end.
 *
 * An inlined copy has an entry (DW_AT_entry_pc) and address ranges, but no return: a hit of it
 * runs from the entry until control leaves the ranges. The function that holds the copy is
 * decoded into its flow graph (lines_graph.c); the hit's code is what control reaches from the
 * entry without leaving the ranges, and the copy ends at the target of every edge from it to
 * an instruction outside them (a fall-through past a range's end, a jump out), and before a
 * return, a tail jump out of the function, or an indirect jump whose targets are unknown,
 * taken inside it. An end is never inside the copy, and code of the copy that runs before its
 * entry (hoisted by the compiler) ends nothing.
 * Where the code cannot be decoded, the ends are the ranges' ends that are not inside the copy.
 */
#include <stdlib.h>

#include "lines_graph.h"
#include "lines_priv.h"

/* Whether @addr is in a range of copy @copy of @in[0..n). */
static int inside(const struct ps_inline *in, int n, int copy, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (in[i].copy == copy && addr >= in[i].lo && addr < in[i].hi)
			return 1;
	return 0;
}

/* Add end @addr to @ends (*@nends of @max), once. 0, or -1 when there is no room. */
static int add_end(uint64_t *ends, int *nends, int max, uint64_t addr)
{
	for (int k = 0; k < *nends; k++)
		if (ends[k] == addr)
			return 0;
	if (*nends == max)
		return -1;
	ends[(*nends)++] = addr;
	return 0;
}

/* The ends of instruction @i of @f, inside the copy: where control goes from it out of the copy. */
static int insn_ends(const struct fn *f, int i, const struct ps_inline *in, int n, int copy, uint64_t *ends, int *nends,
		     int max)
{
	const struct insn *x = &f->in[i];
	int rc = 0;

	for (int k = x->first; k < x->first + x->nout && !rc; k++)
		if (!inside(in, n, copy, f->in[f->e[k].to].addr))
			rc = add_end(ends, nends, max, f->in[f->e[k].to].addr);
	if (x->kind == K_STOP || (x->kind == K_JMP && ps__graph_find(f, x->target) < 0) ||
	    (x->kind == K_IND && x->nout == 0))
		rc |= add_end(ends, nends, max, x->addr); /* leaves with no known next: ends before it */
	return rc;
}

/* Mark in @in_hit the instructions of the copy that control reaches from its entry @e without
   leaving it; *@again: one of them leads back to the entry. 0, or -1 (no memory). */
static int hit_code(const struct fn *f, int e, const struct ps_inline *in, int n, int copy, uint8_t *in_hit, int *again)
{
	int *stack = malloc((size_t)f->n * sizeof *stack), sp = 0;

	if (!stack)
		return -1;
	in_hit[e] = 1;
	stack[sp++] = e;
	while (sp) {
		int i = stack[--sp];
		for (int k = f->in[i].first; k < f->in[i].first + f->in[i].nout; k++) {
			int j = f->e[k].to;
			*again |= j == e;
			if (!in_hit[j] && inside(in, n, copy, f->in[j].addr)) {
				in_hit[j] = 1;
				stack[sp++] = j;
			}
		}
	}
	free(stack);
	return 0;
}

/* The ends from the flow graph of the function holding the copy: the count, 0 when the code
   cannot be analysed, -1 when there are more than @max (or no memory). Only the code a hit
   runs counts: code of the copy that runs before its entry (hoisted) ends nothing. */
static int flow_ends(struct ps_lines *l, const struct ps_inline *in, int n, int copy, uint64_t entry, uint64_t *ends,
		     int max, int *again)
{
	struct fn f;
	Dwarf_Die sp;
	uint8_t *in_hit = NULL;
	int nends = 0, rc = 0, e;

	if (!ps__graph_holder(l->dw, entry, &sp))
		return 0;
	ps__graph_fn_of(&sp, &f);
	if (f.nr == 0 || ps__graph_decode(l->elf, &f) < 0 || ps__graph_edges(l->elf, &f) < 0 ||
	    (e = ps__graph_find(&f, entry)) < 0)
		rc = 1;
	for (int r = 0; r < n && !rc; r++) /* every instruction of the copy must be decoded */
		if (in[r].copy == copy && in[r].lo < in[r].hi && ps__graph_find(&f, in[r].lo) < 0)
			rc = 1;
	if (!rc && (!(in_hit = calloc((size_t)f.n, 1)) || hit_code(&f, e, in, n, copy, in_hit, again) < 0))
		rc = -1;
	for (int i = 0; i < f.n && !rc; i++)
		if (in_hit[i])
			rc = insn_ends(&f, i, in, n, copy, ends, &nends, max) ? -1 : 0;
	free(in_hit);
	free(f.in);
	free(f.e);
	free(f.inl);
	return rc < 0 ? -1 : rc ? 0 : nends;
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
	return a < b ? -1 : a > b;
}

int ps_lines_inline_ends(struct ps_lines *l, const struct ps_inline *in, int n, int copy, uint64_t *ends, int max,
			 int *again, struct ps_error *err)
{
	uint64_t entry = 0;
	int nends, found = 0;

	for (int i = 0; i < n && !found; i++)
		if (in[i].copy == copy) {
			entry = in[i].entry;
			found = 1;
		}
	if (!found)
		return ps_error_set(err, PS_ENOTFOUND, "no inlined copy #%d", copy);
	*again = 0;
	nends = flow_ends(l, in, n, copy, entry, ends, max, again);
	if (nends == 0) { /* not decoded (or never left): the ranges' ends */
		*again = 1;
		for (int i = 0; i < n && nends >= 0; i++)
			if (in[i].copy == copy && !inside(in, n, copy, in[i].hi) &&
			    add_end(ends, &nends, max, in[i].hi) < 0)
				nends = -1;
	}
	if (nends < 0)
		return ps_error_set(err, PS_EUSAGE, "inlined copy #%d leaves its code at more than %d places", copy,
				    max);
	qsort(ends, (size_t)nends, sizeof *ends, cmp_u64);
	return nends;
}
