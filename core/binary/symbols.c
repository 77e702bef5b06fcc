/* core/binary/symbols.c - function symbols of an ELF file, name lookup, where a file is mapped
 * (through core/binary/procmaps.c).
 *
 * Symbols come from .symtab and .dynsym through libelf; names are demangled with
 * libiberty's cplus_demangle(), which handles C++ and Rust (legacy and v0). The
 * libiberty.a of Debian is built -fPIC, so it can be linked into core.so.
 */
#include "symbols.h"

#include "elffile.h"
#include "grow.h"
#include "procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ps_symtab {
	char *path;
	struct ps_sym *syms; /* sorted by address, then raw name */
	size_t n;
	int is_pie;
	int has_symtab;
	uint64_t entry;
	struct ps_import {
		char *name, *lib; /* lib: from the symbol's version (libc.so.6), or NULL */
	} * imports;		  /* functions the file calls in a shared library (undefined in .dynsym) */
	size_t nimports, capimports;
};

#define MAX_LISTED 8 /* names listed in an "ambiguous" message */

char *ps_sym_demangle(const char *raw)
{
	size_t len = strlen(raw);

	if (raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R'))
		return NULL;
	/* v0 Rust: no crate disambiguators (not verbose) */
	if (raw[1] == 'R')
		return cplus_demangle(raw, DMGL_PARAMS | DMGL_ANSI | DMGL_RUST);
	/* legacy Rust (_ZN...17h<16 hex>E): verbose keeps the ::h<hash> that tells
	 * monomorphized copies apart; plain C++ stays as c++filt prints it */
	if (len > 20 && raw[2] == 'N' && raw[len - 1] == 'E' && strncmp(raw + len - 20, "17h", 3) == 0)
		return cplus_demangle(raw, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO | DMGL_VERBOSE);
	return cplus_demangle(raw, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t k = strlen(suffix);

	return len >= k && memcmp(s + len - k, suffix, k) == 0;
}

size_t ps_sym_base_len(const char *name)
{
	static const char *const quals[] = {" const", " volatile", " &&", " &", " noexcept"};
	size_t end = strlen(name);
	int again = 1;

	while (again) {
		again = 0;
		/* " [clone .constprop.0]" and the like */
		if (end > 0 && name[end - 1] == ']') {
			size_t i = end - 1;
			while (i > 0 && name[i] != '[')
				i--;
			if (i > 0 && name[i - 1] == ' ') {
				end = i - 1;
				again = 1;
			}
		}
		for (size_t q = 0; q < sizeof quals / sizeof quals[0]; q++) {
			if (ends_with(name, end, quals[q])) {
				end -= strlen(quals[q]);
				again = 1;
			}
		}
	}
	if (end > 0 && name[end - 1] == ')') {
		int depth = 0;
		for (size_t i = end; i-- > 0;) {
			if (name[i] == ')')
				depth++;
			else if (name[i] == '(' && --depth == 0)
				return i;
		}
	}
	return end;
}

/* Length of a legacy Rust name without its "::h<16 hex>" suffix (or @len). */
static size_t rust_base_len(const char *s, size_t len)
{
	if (len < 19 || memcmp(s + len - 19, "::h", 3) != 0)
		return len;
	for (size_t i = len - 16; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return len;
	return len - 19;
}

/* The name a user would type: demangled, without parameters or Rust hash. */
static const char *short_name(const struct ps_sym *s, size_t *len)
{
	if (!s->demangled) {
		*len = strlen(s->name);
		return s->name;
	}
	*len = rust_base_len(s->demangled, ps_sym_base_len(s->demangled));
	return s->demangled;
}

void ps_sym_near_add(struct ps_sym_near *near, const char *query, const char *cand, size_t len)
{
	char name[sizeof near->out[0]];

	if (len >= sizeof name)
		return; /* too long to be a near miss (core/base/suggest.c ranks such names last) */
	if (!near->s.max)
		ps_suggest_init(&near->s, query, near->out, 3);
	memcpy(name, cand, len);
	name[len] = '\0';
	ps_suggest_add(&near->s, name);
	near->n = near->s.n;
}

int ps_sym_near_format(const struct ps_sym_near *near, char *buf, size_t n)
{
	size_t used = 0;

	if (n)
		buf[0] = '\0';
	for (int i = 0; i < near->n && used < n; i++) {
		const char *sep = i == 0 ? "" : i == near->n - 1 ? " or " : ", ";
		int w = snprintf(buf + used, n - used, "%s'%s'", sep, near->out[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return near->n;
}

static int cmp_sym(const void *pa, const void *pb)
{
	const struct ps_sym *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The .gnu.version data of @elf (symbol versions of .dynsym), or NULL. */
static Elf_Data *versym_data(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym)
			return elf_getdata(scn, NULL);
	return NULL;
}

/* The file that defines version @idx of @elf (a vn_file of .gnu.version_r), or NULL. */
static const char *version_file(Elf *elf, unsigned idx)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t off = 0;
		GElf_Verneed vn;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_GNU_verneed || !d)
			continue;
		while (gelf_getverneed(d, (int)off, &vn)) {
			size_t aoff = off + vn.vn_aux;
			GElf_Vernaux va;
			for (unsigned j = 0; j < vn.vn_cnt && gelf_getvernaux(d, (int)aoff, &va); j++) {
				if (va.vna_other == idx)
					return elf_strptr(elf, sh.sh_link, vn.vn_file);
				aoff += va.vna_next;
			}
			if (!vn.vn_next)
				break;
			off += vn.vn_next;
		}
	}
	return NULL;
}

/* Remember an undefined function of .dynsym, and the library its version names. */
static int add_import(struct ps_symtab *st, Elf *elf, const char *name, Elf_Data *vers, size_t i)
{
	GElf_Versym ver;
	const char *lib = NULL;

	if (vers && gelf_getversym(vers, (int)i, &ver) && (ver & 0x7fff) >= 2)
		lib = version_file(elf, ver & 0x7fff);
	struct ps_import *p = ps_grow(st->imports, &st->capimports, st->nimports, sizeof *p, 32);

	if (!p)
		return -1;
	st->imports = p;
	st->imports[st->nimports].name = strdup(name);
	st->imports[st->nimports].lib = lib ? strdup(lib) : NULL;
	if (!st->imports[st->nimports].name || (lib && !st->imports[st->nimports].lib)) {
		free(st->imports[st->nimports].name);
		free(st->imports[st->nimports].lib);
		return -1;
	}
	st->nimports++;
	return 0;
}

/* Append the function symbols of one symbol section. In .dynsym, old versions kept for
 * compatibility (memcpy@GLIBC_2.2.5 beside memcpy@@GLIBC_2.14) are left out. */
static int read_symbols(struct ps_symtab *st, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	Elf_Data *vers = sh->sh_type == SHT_DYNSYM ? versym_data(elf) : NULL;
	size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < count; i++) {
		GElf_Sym sym;
		GElf_Versym ver;
		const char *name;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (vers && gelf_getversym(vers, (int)i, &ver) && (ver & 0x8000))
			continue; /* VERSYM_HIDDEN: not the default version */
		type = GELF_ST_TYPE(sym.st_info);
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		if (type == STT_FUNC && sym.st_shndx == SHN_UNDEF && sh->sh_type == SHT_DYNSYM) {
			if (add_import(st, elf, name, vers, i) < 0)
				return -1;
			continue;
		}
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		if (st->n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 256;
			struct ps_sym *p = realloc(st->syms, ncap * sizeof *p);
			if (!p)
				return -1;
			st->syms = p;
			*cap = ncap;
		}
		st->syms[st->n].addr = sym.st_value;
		st->syms[st->n].size = sym.st_size;
		st->syms[st->n].demangled = NULL;
		st->syms[st->n].ifunc = type == STT_GNU_IFUNC;
		if (!(st->syms[st->n].name = strdup(name)))
			return -1;
		st->n++;
	}
	return 0;
}

static int read_elf(struct ps_symtab *st, Elf *elf, struct ps_error *err)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t cap = 0;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return ps_error_set(err, PS_EUSAGE, "%s is not an ELF file", st->path);
	st->is_pie = eh.e_type == ET_DYN;
	st->entry = eh.e_entry;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			st->has_symtab = 1;
		if (read_symbols(st, elf, scn, &sh, &cap) < 0)
			return ps_error_set(err, ENOMEM, "%s: out of memory reading symbols", st->path);
	}
	return 0;
}

int ps_sym_open(struct ps_symtab **out, const char *path, struct ps_error *err)
{
	struct ps_symtab *st;
	struct ps_elf_file *f;
	size_t j = 0;
	int rc;

	*out = NULL;
	if (!(st = calloc(1, sizeof *st)) || !(st->path = strdup(path))) {
		free(st);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	if (ps_elf_open(&f, path, err)) {
		ps_sym_close(st);
		return -1;
	}
	rc = read_elf(st, f->elf, err);
	ps_elf_close(f);
	if (rc < 0) {
		ps_sym_close(st);
		return -1;
	}
	if (st->n)
		qsort(st->syms, st->n, sizeof *st->syms, cmp_sym);
	/* the same symbol in .symtab and .dynsym */
	for (size_t i = 0; i < st->n; i++) {
		if (j > 0 && cmp_sym(&st->syms[j - 1], &st->syms[i]) == 0) {
			free((char *)st->syms[i].name);
			continue;
		}
		st->syms[j++] = st->syms[i];
	}
	st->n = j;
	for (size_t i = 0; i < st->n; i++)
		st->syms[i].demangled = ps_sym_demangle(st->syms[i].name);
	*out = st;
	return 0;
}

void ps_sym_close(struct ps_symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++) {
		free((char *)st->syms[i].name);
		free((char *)st->syms[i].demangled);
	}
	for (size_t i = 0; i < st->nimports; i++) {
		free(st->imports[i].name);
		free(st->imports[i].lib);
	}
	free(st->imports);
	free(st->syms);
	free(st->path);
	free(st);
}

int ps_sym_is_pie(const struct ps_symtab *st)
{
	return st->is_pie;
}

uint64_t ps_sym_entry(const struct ps_symtab *st)
{
	return st->entry;
}

int ps_sym_has_symtab(const struct ps_symtab *st)
{
	return st->has_symtab;
}

size_t ps_sym_count(const struct ps_symtab *st)
{
	return st->n;
}

const struct ps_sym *ps_sym_at(const struct ps_symtab *st, size_t i)
{
	return i < st->n ? &st->syms[i] : NULL;
}

const struct ps_sym *ps_sym_by_addr(const struct ps_symtab *st, uint64_t addr)
{
	size_t lo = 0, hi = st->n;

	/* first symbol above addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	/* a sized symbol that covers addr, looking a little way back for enclosing ones */
	for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++) {
		const struct ps_sym *s = &st->syms[i];
		if (s->size && addr - s->addr < s->size)
			return s;
	}
	/* else an unsized symbol at the nearest address below */
	for (size_t i = lo; i-- > 0 && st->syms[i].addr == st->syms[lo - 1].addr;)
		if (st->syms[i].size == 0)
			return &st->syms[i];
	return NULL;
}

/* Does symbol @s match @q (length @qlen) in lookup form @form? */
static int matches(const struct ps_sym *s, int form, const char *q, size_t qlen)
{
	const char *d = s->demangled;
	size_t len;

	switch (form) {
	case 0: /* the raw name */
		return strcmp(s->name, q) == 0;
	case 1: /* the demangled name */
		return d && strcmp(d, q) == 0;
	case 2: /* without the parameter list */
		return d && ps_sym_base_len(d) == qlen && memcmp(d, q, qlen) == 0;
	case 3: /* a Rust path without its hash */
		len = strlen(d ? d : "");
		return d && rust_base_len(d, len) == qlen && len != qlen && memcmp(d, q, qlen) == 0;
	default: /* a substring */
		return strstr(d ? d : s->name, q) != NULL;
	}
}

static const char *display_name(const struct ps_sym *s)
{
	return s->demangled ? s->demangled : s->name;
}

static int ambiguous(const struct ps_symtab *st, const char *q, const size_t *idx, size_t n, struct ps_error *err)
{
	char list[400];
	size_t used = 0, shown = n < MAX_LISTED ? n : MAX_LISTED;
	int same = 0;

	/* one name at several addresses (static functions of several files): show them */
	for (size_t i = 1; i < shown; i++)
		same |= strcmp(display_name(&st->syms[idx[i]]), display_name(&st->syms[idx[0]])) == 0;
	list[0] = '\0';
	for (size_t i = 0; i < shown && used < sizeof list; i++) {
		const struct ps_sym *s = &st->syms[idx[i]];
		int w = same ? snprintf(list + used, sizeof list - used, "%s%s at 0x%" PRIx64, i ? ", " : "",
					display_name(s), s->addr)
			     : snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", display_name(s));
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return ps_error_set(err, PS_EUSAGE, "'%s' is ambiguous: %s%s (give the full name)", q, list,
			    n > MAX_LISTED ? ", ..." : "");
}

static int not_found(const struct ps_symtab *st, const char *q, struct ps_error *err)
{
	struct ps_sym_near near = {0};
	char list[300];

	for (size_t i = 0; i < st->nimports; i++)
		if (strcmp(st->imports[i].name, q) == 0)
			return ps_error_set(err, PS_ENOTFOUND,
					    "'%s' is not in %s but in a library it loads: name it %s:%s%s", q, st->path,
					    st->imports[i].lib ? st->imports[i].lib : "LIB", q,
					    st->imports[i].lib ? "" : " (ldd lists the libraries)");
	if (!st->has_symtab)
		return ps_error_set(err, PS_ENOTFOUND,
				    "%s is stripped (no .symtab): rebuild it without -s (with -g for line "
				    "regions), or give the function's address, -r 0xADDR (as nm prints it on an "
				    "unstripped build)",
				    st->path);
	for (size_t i = 0; i < st->n; i++) {
		size_t len;
		const char *name = short_name(&st->syms[i], &len);
		ps_sym_near_add(&near, q, name, len);
	}
	if (ps_sym_near_format(&near, list, sizeof list) == 0)
		return ps_error_set(err, PS_ENOTFOUND, "no function '%s' in %s", q, st->path);
	return ps_error_set(err, PS_ENOTFOUND, "no function '%s' in %s; did you mean %s?", q, st->path, list);
}

int ps_sym_lookup(const struct ps_symtab *st, const char *name, const struct ps_sym **out, struct ps_error *err)
{
	size_t idx[MAX_LISTED], qlen = strlen(name);
	uint64_t last = 0;

	*out = NULL;
	if (!qlen)
		return ps_error_set(err, PS_EUSAGE, "empty function name");
	for (int form = 0; form <= 4; form++) {
		size_t n = 0;
		for (size_t i = 0; i < st->n; i++) {
			if (!matches(&st->syms[i], form, name, qlen))
				continue;
			/* aliases (one address) count once; the table is sorted by address */
			if (n && st->syms[i].addr == last)
				continue;
			last = st->syms[i].addr;
			if (n < MAX_LISTED)
				idx[n] = i;
			n++;
		}
		if (n == 1) {
			*out = &st->syms[idx[0]];
			return 0;
		}
		if (n > 1 && n <= MAX_LISTED) {
			/* a function and the cold part gcc split off it ("f.cold"): the function */
			size_t keep = 0, k = 0;
			for (size_t j = 0; j < n; j++)
				if (!strstr(st->syms[idx[j]].name, ".cold"))
					keep = idx[j], k++;
			if (k == 1) {
				*out = &st->syms[keep];
				return 0;
			}
		}
		if (n > 1)
			return ambiguous(st, name, idx, n, err);
	}
	return not_found(st, name, err);
}

/* Is s[0..len) "x.so" or "x.so.N[.N...]"? */
static int is_lib_name(const char *s, size_t len)
{
	const char *p = NULL;

	for (size_t i = 0; i + 3 <= len; i++)
		if (memcmp(s + i, ".so", 3) == 0 && (i + 3 == len || s[i + 3] == '.'))
			p = s + i + 3;
	if (!p || p == s + 3)
		return 0;
	for (; p < s + len; p++)
		if (!((*p >= '0' && *p <= '9') || (*p == '.' && p + 1 < s + len && p[1] != '.')))
			return 0;
	return 1;
}

int ps_sym_lib_split(const char *spec, char *lib, size_t libn, char *fn, size_t fnn)
{
	const char *colon = NULL;
	size_t len = strlen(spec), llen;

	for (const char *p = spec; *p; p++) {
		if (*p == ':' && p[1] == ':') {
			p++;
			continue;
		}
		if (*p == ':') {
			colon = p;
			break;
		}
	}
	llen = colon ? (size_t)(colon - spec) : 0;
	if (!colon || !is_lib_name(spec, llen)) {
		if (libn == 0 || fnn <= len)
			goto too_long;
		lib[0] = '\0';
		memcpy(fn, spec, len + 1);
		return 0;
	}
	if (!colon[1]) {
		errno = EINVAL;
		return -1;
	}
	if (libn <= llen || fnn <= strlen(colon + 1))
		goto too_long;
	memcpy(lib, spec, llen);
	lib[llen] = '\0';
	strcpy(fn, colon + 1);
	return 1;
too_long:
	errno = ENAMETOOLONG;
	return -1;
}

int ps_sym_find_mapping(pid_t pid, const char *lib, char *path, size_t n, uint64_t *bias, struct ps_error *err)
{
	if (ps_maps_find(pid, lib, PS_MAPS_PREFIX, path, n, err))
		return -1;
	return ps_maps_bias(pid, path, bias, err);
}
