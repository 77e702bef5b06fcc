/* core/binary/lines_range.c - how a line range is read, and its breakpoints.
 *
 * Where the line table gives each instruction of the functions to one side (the range's
 * lines, the end line, neither), the range is read by its lines' code through the control
 * flow (lines_cfg.c): a hit starts where control enters the range's code and ends where it
 * reaches the end line's. Where it does not (start and end lines begin at one address, or
 * code of the end line is interleaved with the range's), or where that reading never ends,
 * the range is read as Perforator reads one: from the start line's first address to the end
 * line's first address that is not also that one. Either way one line says how it was read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lines_cfg.h"

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

/* "line 41" or "lines 41-42": the lines of the range [l1, l2). */
static const char *range_lines(char *buf, size_t n, int l1, int l2)
{
	snprintf(buf, n, l2 - 1 > l1 ? "lines %d-%d" : "line %d", l1, l2 - 1);
	return buf;
}

/* The instruction at @addr in the functions of @c, or NULL; *fn receives its function. */
static struct insn *insn_at(struct cfg *c, uint64_t addr, struct fn **fn)
{
	for (int k = 0; k < c->nf; k++) {
		int i = ps__graph_find(&c->fn[k], addr);
		if (i >= 0) {
			*fn = &c->fn[k];
			return &c->fn[k].in[i];
		}
	}
	return NULL;
}

/* The first address of line @line of @c's file, other than @other: the lowest of its rows and of
   its inlined calls that begins an instruction of the functions; 0 if none. */
static uint64_t first_addr(const struct ps_lines *l, struct cfg *c, int line, uint64_t other)
{
	uint64_t best = 0;
	struct fn *fn;

	for (size_t i = 0; i < l->nrows; i++) {
		const struct row *r = &l->rows[i];
		if (!r->end && r->line == line && r->addr != other && (!best || r->addr < best) &&
		    ps__same_file(r->file, c->file) && insn_at(c, r->addr, &fn))
			best = r->addr;
	}
	for (int k = 0; k < c->nf; k++)
		for (int m = 0; m < c->fn[k].ninl; m++) {
			const struct inl *in = &c->fn[k].inl[m];
			if (in->line == line && in->lo != other && (!best || in->lo < best) && insn_at(c, in->lo, &fn))
				best = in->lo;
		}
	return best;
}

/* The lowest line of the range with a row at @addr (a view there), or c->l1. */
static int range_line_at(const struct ps_lines *l, const struct cfg *c, uint64_t addr)
{
	int best = 0;

	for (size_t i = 0; i < l->nrows; i++) {
		const struct row *r = &l->rows[i];
		if (!r->end && r->addr == addr && r->line >= c->l1 && r->line < c->l2 && (!best || r->line < best) &&
		    ps__same_file(r->file, c->file))
			best = r->line;
	}
	return best ? best : c->l1;
}

/* The breakpoints chosen (insn.arm) into @r, ends first (where one hit ends and the next starts,
   the roles run in that order). 0, or -1 when there are too many. */
static int collect(const struct cfg *c, struct ps_lines_range *r)
{
	r->narm = 0;
	for (int pass = 2; pass >= 1; pass--)
		for (int k = 0; k < c->nf; k++)
			for (int i = 0; i < c->fn[k].n; i++) {
				if (c->fn[k].in[i].arm != pass)
					continue;
				if (r->narm == PS_LINES_MAX_ARMS)
					return -1;
				r->arm[r->narm].addr = c->fn[k].in[i].addr;
				r->arm[r->narm++].end = pass == 2;
				if (pass == 2 && (ps__cfg_ways_in(&c->fn[k], i) & ST_CLOSED))
					r->end_idle = 1;
			}
	return 0;
}

/* Why the table gives the range more than one reading ("" if it gives one), into @why. */
static void ambiguity(const struct ps_lines *l, const struct cfg *c, const char *file, char *why, size_t n)
{
	const struct fn *fn;
	const struct insn *in;
	char lines[40];

	why[0] = '\0';
	if ((in = ps__cfg_shared(c, &fn)))
		snprintf(why, n, "lines %d and %d of %s begin at one address (0x%" PRIx64 " in %s)",
			 range_line_at(l, c, in->addr), c->l2, file, in->addr, fn->name);
	else if ((in = ps__cfg_interleaved(c, &fn)))
		snprintf(why, n, "code of line %d of %s is interleaved with that of %s (0x%" PRIx64 " in %s)", c->l2,
			 file, range_lines(lines, sizeof lines, c->l1, c->l2), in->addr, fn->name);
}

/*
 * The flow reading, where the table gives one (@why empty): 1 when it was taken (@r filled);
 * 0 when it cannot be (@why says why); -1 when the code cannot be analysed.
 */
static int read_flow(struct cfg *c, const char *file, struct ps_lines_range *r, char *why, size_t n)
{
	char lines[40], endname[24];
	int ends, nrange = 0;

	if (why[0])
		return 0;
	range_lines(lines, sizeof lines, c->l1, c->l2);
	snprintf(endname, sizeof endname, "line %d", c->l2);
	ps__cfg_place(c, 0, 0);
	if (ps__cfg_flow(c, file, endname, r->note, sizeof r->note) < 0 || (ends = ps__cfg_choose(c)) < 0)
		return -1;
	for (int k = 0; k < c->nf; k++)
		for (int i = 0; i < c->fn[k].n; i++)
			nrange += c->fn[k].in[i].member == M_RANGE && c->fn[k].in[i].reached;
	if (!nrange) {
		snprintf(why, n, "%s of %s %s no code of their own", lines, file, c->l2 - 1 > c->l1 ? "have" : "has");
		return 0;
	}
	if (!ends) {
		snprintf(why, n, "line %d of %s never comes after the code of %s in %s", c->l2, file, lines,
			 c->fn[0].name);
		return 0;
	}
	if (collect(c, r) < 0)
		return -1;
	snprintf(r->reading, sizeof r->reading, "hits run from entering %s to reaching line %d", lines, c->l2);
	return 1;
}

/*
 * Perforator's reading, after @why (the reason the flow reading was not taken): the number of
 * breakpoints; 0 when the code cannot be analysed; -1 with @err set when it never ends either.
 */
static int read_perforator(const struct ps_lines *l, struct cfg *c, const char *file, struct ps_lines_range *r,
			   const char *why, struct ps_error *err)
{
	uint64_t a = first_addr(l, c, c->l1, 0), b = a ? first_addr(l, c, c->l2, a) : 0;
	struct insn *sa = NULL, *sb = NULL;
	struct fn *fa, *fb;
	char endname[24];

	if (!a)
		return 0;
	if (!b)
		return ps_error_set(err, PS_EUSAGE,
				    "%s, and line %d has no code but at line %d's first address (0x%" PRIx64
				    "): no reading of the range ever ends; choose a later end line",
				    why, c->l2, c->l1, a);
	snprintf(endname, sizeof endname, "0x%" PRIx64, b);
	ps__cfg_place(c, a, b);
	r->note[0] = '\0';
	if (ps__cfg_flow(c, file, endname, r->note, sizeof r->note) < 0)
		return 0;
	if ((sa = insn_at(c, a, &fa)) && sa->reached)
		sa->arm = 1;
	if ((sb = insn_at(c, b, &fb)) && sb->reached && (ps__cfg_ways_in(fb, (int)(sb - fb->in)) & ST_OPEN))
		sb->arm = 2;
	if (!sa || !sa->arm || !sb || !sb->arm)
		return ps_error_set(err, PS_EUSAGE,
				    "%s; read as Perforator does, from line %d's first address (0x%" PRIx64
				    ") to line %d's (0x%" PRIx64
				    "), it never ends either: choose an end line that runs "
				    "after line %d",
				    why, c->l1, a, c->l2, b, c->l1);
	if (collect(c, r) < 0)
		return 0;
	r->perforator = 1;
	r->start = a;
	r->end = b;
	snprintf(r->reading, sizeof r->reading,
		 "%s: read as Perforator does, hits run from 0x%" PRIx64 " (line %d's first address) to 0x%" PRIx64
		 " (line %d's first%s)",
		 why, a, c->l1, b, c->l2, first_addr(l, c, c->l2, 0) == a ? " other than that" : "");
	return r->narm;
}

int ps_lines_range_arms(struct ps_lines *l, const char *file, struct ps_lines_range *r, struct ps_error *err)
{
	const char *f = ps__lines_find_file(l, file, err);
	struct cfg c = {.file = f};
	char why[200];
	int rc = 0;

	r->narm = r->perforator = r->end_idle = 0;
	r->start = r->end = 0;
	r->note[0] = r->reading[0] = '\0';
	if (!f)
		return -1;
	c.l1 = line_with_code(l, f, r->l1);
	c.l2 = line_with_code(l, f, r->l2);
	if (!c.l1 || !c.l2 || c.l1 >= c.l2)
		return 0;
	r->l1 = c.l1;
	r->l2 = c.l2;
	if (ps__cfg_build(l, &c)) {
		ambiguity(l, &c, file, why, sizeof why);
		rc = read_flow(&c, file, r, why, sizeof why);
		if (rc == 0)
			rc = read_perforator(l, &c, file, r, why, err);
		else
			rc = rc > 0 ? r->narm : 0;
	}
	ps__cfg_free(&c);
	return rc;
}
