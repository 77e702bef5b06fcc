/* core/binary/lines.c - source lines to addresses and back, and inlined copies (libdw).
 *
 * The line tables of all compile units are read once into one array of rows, in
 * table order (each sequence in address order). File names are libdw's strings,
 * valid until ps_lines_close().
 */
#include "lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lines_priv.h"
#include "symbols.h"

void ps_lines_close(struct ps_lines *l)
{
	if (!l)
		return;
	ps_elf_close(l->file);
	for (size_t i = 0; i < l->npool; i++)
		free(l->pool[i]);
	free(l->pool);
	free(l->rows);
	free(l->path);
	free(l);
}

static int add_row(struct ps_lines *l, const struct row *r)
{
	if (l->nrows == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 1024;
		struct row *p = realloc(l->rows, ncap * sizeof *p);
		if (!p)
			return -1;
		l->rows = p;
		l->cap = ncap;
	}
	l->rows[l->nrows++] = *r;
	return 0;
}

/* Append the rows of every compile unit, without sequences at address 0 (discarded code). */
static int read_rows(struct ps_lines *l)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t type;

	while (dwarf_get_units(l->dw, cu, &cu, NULL, &type, &cudie, NULL) == 0) {
		Dwarf_Lines *lines;
		size_t n;
		uint64_t seq_start = 0;
		bool new_seq = true;

		if ((type != DW_UT_compile && type != DW_UT_partial && type != DW_UT_skeleton) ||
		    dwarf_getsrclines(&cudie, &lines, &n) != 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			Dwarf_Line *ln = dwarf_onesrcline(lines, i);
			Dwarf_Addr addr;
			struct row r = {0};

			if (!ln || dwarf_lineaddr(ln, &addr) != 0 || dwarf_lineno(ln, &r.line) != 0 ||
			    dwarf_linebeginstatement(ln, &r.stmt) != 0 || dwarf_lineendsequence(ln, &r.end) != 0 ||
			    !(r.file = dwarf_linesrc(ln, NULL, NULL)))
				continue;
			r.addr = addr;
			if (new_seq)
				seq_start = addr;
			new_seq = r.end;
			if (seq_start != 0 && add_row(l, &r) < 0)
				return -1;
		}
	}
	return 0;
}

int ps_lines_open(struct ps_lines **out, const char *path, struct ps_error *err)
{
	struct ps_lines *l;
	int e;

	*out = NULL;
	if (!(l = calloc(1, sizeof *l)) || !(l->path = strdup(path))) {
		free(l);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	if (ps_elf_open(&l->file, path, err)) {
		ps_lines_close(l);
		return -1;
	}
	l->elf = l->file->elf;
	if (!(l->dw = ps_elf_dwarf(l->file)) || read_rows(l) < 0 || l->nrows == 0) {
		e = l->dw && l->nrows ? ENOMEM : PS_EUSAGE;
		ps_lines_close(l);
		if (e == ENOMEM)
			return ps_error_set(err, e, "%s: out of memory reading line tables", path);
		return ps_error_set(err, e, "%s has no DWARF line info: rebuild with -g", path);
	}
	*out = l;
	return 0;
}

int ps_lines_source_files(const char *path, int (*fn)(void *ud, const char *file), void *ud, struct ps_error *err)
{
	struct ps_elf_file *f;
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dw;
	int stop = 0;

	if (ps_elf_open(&f, path, err))
		return err->code == PS_EUSAGE ? 0 : -1; /* no ELF file: no source files */
	dw = ps_elf_dwarf(f);
	while (dw && !stop && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die die;
		Dwarf_Files *files;
		size_t nfiles;
		if (dwarf_offdie(dw, off + hsize, &die) && dwarf_getsrcfiles(&die, &files, &nfiles) == 0)
			for (size_t i = 1; i < nfiles && !stop; i++) {
				const char *name = dwarf_filesrc(files, i, NULL, NULL);
				stop = name && fn(ud, name);
			}
		off = next;
	}
	ps_elf_close(f);
	return 0;
}

/* Is @path the file @q: equal, or ending in "/" @q? */
static bool file_matches(const char *path, const char *q)
{
	size_t pl = strlen(path), ql = strlen(q);

	if (ql > pl)
		return false;
	if (ql == pl)
		return strcmp(path, q) == 0;
	return path[pl - ql - 1] == '/' && strcmp(path + pl - ql, q) == 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The one file of the line tables that @q names, or NULL with @err set. */
const char *ps__lines_find_file(struct ps_lines *l, const char *q, struct ps_error *err)
{
	const char *found = NULL, *other = NULL, *last = NULL;
	struct ps_sym_near near = {0};
	bool by_path = strchr(q, '/') != NULL;
	char list[300];

	for (size_t i = 0; i < l->nrows; i++) {
		const char *f = l->rows[i].file;
		if (f == last)
			continue;
		last = f;
		if (!file_matches(f, q))
			continue;
		if (!found)
			found = f;
		else if (!other && strcmp(f, found) != 0)
			other = f;
	}
	if (found && other)
		return ps_error_set(err, PS_EUSAGE, "'%s' matches several source files: %s, %s (give more of the path)",
				    q, found, other),
		       NULL;
	if (found)
		return found;
	last = NULL;
	for (size_t i = 0; i < l->nrows; i++) {
		const char *f = l->rows[i].file;
		if (f != last) {
			const char *cand = by_path ? f : base_name(f);
			ps_sym_near_add(&near, q, cand, strlen(cand));
		}
		last = f;
	}
	ps_sym_near_format(&near, list, sizeof list);
	ps_error_set(err, PS_ENOTFOUND, "no source file '%s' in the line info of %s%s%s%s", q, l->path,
		     near.n ? "; did you mean " : "", list, near.n ? "?" : "");
	return NULL;
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

int ps_lines_addrs(struct ps_lines *l, const char *file, int line, uint64_t *addrs, int max, int *actual_line,
		   struct ps_error *err)
{
	const char *f = ps__lines_find_file(l, file, err);
	uint64_t *all;
	size_t n = 0, k = 0;
	int next = 0, last = 0;
	bool in_block = false, emitted = false;

	if (!f)
		return -1;
	if (line < 1 || max < 1)
		return ps_error_set(err, PS_EUSAGE, "bad line %d or room %d", line, max);
	/* the line itself or the next one with code */
	for (size_t i = 0; i < l->nrows; i++) {
		const struct row *r = &l->rows[i];
		if (r->end || !r->stmt || !ps__same_file(r->file, f))
			continue;
		if (r->line >= line && (!next || r->line < next))
			next = r->line;
		if (r->line > last)
			last = r->line;
	}
	if (!next)
		return ps_error_set(err, PS_EUSAGE, "line %d of %s is past its last line with code (%d)", line, file,
				    last);
	if (!(all = malloc(l->nrows * sizeof *all)))
		return ps_error_set(err, ENOMEM, "out of memory");
	/* the first stmt row of each run of rows of (f, next) */
	for (size_t i = 0; i < l->nrows; i++) {
		const struct row *r = &l->rows[i];
		if (r->end || r->line != next || !ps__same_file(r->file, f)) {
			in_block = false;
			continue;
		}
		if (!in_block) {
			in_block = true;
			emitted = false;
		}
		if (r->stmt && !emitted) {
			all[n++] = r->addr;
			emitted = true;
		}
	}
	qsort(all, n, sizeof *all, cmp_u64);
	for (size_t i = 0; i < n && k < (size_t)max; i++)
		if (k == 0 || all[i] != addrs[k - 1])
			addrs[k++] = all[i];
	free(all);
	if (actual_line)
		*actual_line = next;
	return (int)k;
}

/* Parse a decimal line number of s[0..n); 0 if it is not one. */
static int parse_line(const char *s, size_t n)
{
	long v = 0;

	if (n == 0 || n > 9)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return (int)v;
}

static int copy_part(char *dst, size_t n, const char *src, size_t len)
{
	if (len == 0 || len >= n)
		return -1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

int ps_lines_parse_range(const char *spec, char *file1, size_t n1, int *l1, char *file2, size_t n2, int *l2,
			 struct ps_error *err)
{
	const char *colon = NULL, *dash = NULL, *rest, *c2;

	/* the first ":DIGITS-" */
	for (const char *p = strchr(spec, ':'); p && !colon; p = strchr(p + 1, ':')) {
		const char *q = p + 1;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q > p + 1 && *q == '-') {
			colon = p;
			dash = q;
		}
	}
	if (!colon)
		goto bad;
	rest = dash + 1;
	if (copy_part(file1, n1, spec, (size_t)(colon - spec)) < 0 ||
	    !(*l1 = parse_line(colon + 1, (size_t)(dash - colon - 1))))
		goto bad;
	if ((*l2 = parse_line(rest, strlen(rest)))) {
		if (copy_part(file2, n2, file1, strlen(file1)) < 0)
			goto bad;
	} else {
		if (!(c2 = strrchr(rest, ':')) || !(*l2 = parse_line(c2 + 1, strlen(c2 + 1))) ||
		    copy_part(file2, n2, rest, (size_t)(c2 - rest)) < 0)
			goto bad;
	}
	if (strcmp(file1, file2) == 0 && *l2 <= *l1)
		return ps_error_set(err, PS_EUSAGE, "line range '%s' ends at or before its start (line %d <= %d)", spec,
				    *l2, *l1);
	return 0;
bad:
	return ps_error_set(err, PS_EUSAGE, "bad line range '%s': expected FILE:L1-L2 or FILE:L1-FILE:L2", spec);
}

static const char *attr_string(Dwarf_Die *die, unsigned int at)
{
	Dwarf_Attribute a;

	return dwarf_formstring(dwarf_attr_integrate(die, at, &a));
}

static const char *linkage_name(Dwarf_Die *die)
{
	const char *s = attr_string(die, DW_AT_linkage_name);

	return s ? s : attr_string(die, DW_AT_MIPS_linkage_name);
}

/* Does the function of @die (its abstract origin, for an inlined copy) match @q? */
static bool die_matches(Dwarf_Die *die, const char *q, size_t qbase)
{
	const char *name = attr_string(die, DW_AT_name), *link;
	size_t nl = name ? strlen(name) : 0;
	bool ok;
	char *d;

	if (name && strcmp(name, q) == 0)
		return true;
	/* "ns::K::f(int)" can only be a function whose DW_AT_name is "f" */
	if (name && (nl > qbase || memcmp(q + qbase - nl, name, nl) != 0))
		return false;
	if (!(link = linkage_name(die)))
		return false;
	if (strcmp(link, q) == 0)
		return true;
	if (!(d = ps_sym_demangle(link)))
		return false;
	ok = strcmp(d, q) == 0 || (ps_sym_base_len(d) == strlen(q) && memcmp(d, q, strlen(q)) == 0);
	free(d);
	return ok;
}

/* The name of the function @die, for a report: demangled if possible. */
static const char *caller_name(struct ps_lines *l, Dwarf_Die *die)
{
	const char *link = die ? linkage_name(die) : NULL;
	char *d, **p;

	if (!die)
		return "?";
	if (!link || !(d = ps_sym_demangle(link))) {
		const char *name = attr_string(die, DW_AT_name);
		return name ? name : "?";
	}
	if (!(p = realloc(l->pool, (l->npool + 1) * sizeof *p))) {
		free(d);
		return "?";
	}
	l->pool = p;
	l->pool[l->npool++] = d;
	return d;
}

struct walk {
	const char *q;
	size_t qbase;
	struct ps_inline *out;
	int max, n, copies;
};

/* Visit the children of @die; @caller is the innermost enclosing function. */
static void walk_dies(struct ps_lines *l, Dwarf_Die *die, Dwarf_Die *caller, struct walk *w)
{
	Dwarf_Die child;

	if (dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		Dwarf_Die here = child;

		if (tag == DW_TAG_inlined_subroutine && die_matches(&child, w->q, w->qbase)) {
			Dwarf_Addr base, lo, hi, entry;
			ptrdiff_t off = 0;
			int first = w->n, any = 0;
			bool has_entry = dwarf_entrypc(&child, &entry) == 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				any = 1;
				if (w->n >= w->max)
					continue;
				w->out[w->n].lo = lo;
				w->out[w->n].hi = hi;
				w->out[w->n].caller = caller_name(l, caller);
				w->out[w->n].copy = w->copies;
				w->out[w->n].entry = has_entry ? entry : lo;
				w->n++;
			}
			for (int i = first; !has_entry && i < w->n; i++)
				if (w->out[i].lo < w->out[first].entry)
					w->out[first].entry = w->out[i].lo;
			for (int i = first + 1; !has_entry && i < w->n; i++)
				w->out[i].entry = w->out[first].entry;
			w->copies += any;
		}
		if (dwarf_haschildren(&child) > 0)
			walk_dies(l, &child,
				  tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ? &here : caller, w);
	} while (dwarf_siblingof(&child, &child) == 0);
}

int ps_lines_inlined(struct ps_lines *l, const char *name, struct ps_inline *out, int max, struct ps_error *err)
{
	struct walk w = {name, ps_sym_base_len(name), out, max, 0, 0};
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t type;

	if (!name[0] || max < 0)
		return ps_error_set(err, PS_EUSAGE, "bad function name or room");
	while (dwarf_get_units(l->dw, cu, &cu, NULL, &type, &cudie, NULL) == 0)
		if (type == DW_UT_compile || type == DW_UT_partial)
			walk_dies(l, &cudie, NULL, &w);
	return w.n;
}

int ps_lines_addr2line(struct ps_lines *l, uint64_t addr, const char **file, int *line)
{
	Dwarf_Die cudie;
	Dwarf_Line *ln;

	if (!dwarf_addrdie(l->dw, addr, &cudie) || !(ln = dwarf_getsrc_die(&cudie, addr)) ||
	    dwarf_lineno(ln, line) != 0 || !(*file = dwarf_linesrc(ln, NULL, NULL)))
		return -1;
	return 0;
}
