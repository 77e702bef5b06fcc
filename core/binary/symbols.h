/* core/binary/symbols.h - the function symbols of an ELF file (libelf), demangled (libiberty).
 *
 * Addresses are link-time (st_value); the caller adds the load bias, which
 * ps_sym_find_mapping() computes for a running process.
 */
#ifndef PS_SYMBOLS_H
#define PS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "suggest.h"

struct ps_symtab; /* the function symbols of one ELF file */

/**
 * struct ps_sym - one function symbol.
 * @addr:      link-time address (st_value).
 * @size:      st_size (0 for some assembly functions).
 * @name:      the raw (mangled) name.
 * @demangled: the demangled name (C++: with its parameter list; Rust legacy: with its
 *             ::h<hash>; Rust v0: without crate disambiguators), or NULL if @name is
 *             not mangled.
 */
struct ps_sym {
	uint64_t addr;
	uint64_t size;
	const char *name;
	const char *demangled;
	int ifunc; /* STT_GNU_IFUNC: addr is the resolver; the loader picks an implementation */
};

/**
 * ps_sym_open() - read the function symbols (STT_FUNC, STT_GNU_IFUNC) of @path.
 * @st:   set to the new table on success.
 * @path: an ELF file (executable or shared library).
 * @err:  filled on failure ("cannot open PATH: ...", "PATH is not an ELF file").
 *
 * Reads .symtab and .dynsym, keeps defined symbols with a nonzero address and
 * removes duplicates. A file without any is not an error (lookups then fail).
 * Return: 0, or -1 with @err set.
 */
int ps_sym_open(struct ps_symtab **st, const char *path, struct ps_error *err);

/** ps_sym_close() - free @st (NULL is allowed). */
void ps_sym_close(struct ps_symtab *st);

/** ps_sym_is_pie() - 1 if the file is ET_DYN (PIE or shared library), 0 if not. */
int ps_sym_is_pie(const struct ps_symtab *st);

/** ps_sym_entry() - the file's e_entry (link-time). */
uint64_t ps_sym_entry(const struct ps_symtab *st);

/** ps_sym_has_symtab() - 1 if the file has a .symtab (is not stripped). */
int ps_sym_has_symtab(const struct ps_symtab *st);

/**
 * ps_sym_lookup() - find the function called @name.
 * @st:   the table.
 * @name: a raw name, a demangled name, a C++ name without its parameter list, a Rust
 *        path without its hash, or a substring of a single demangled name.
 * @out:  set to the symbol (owned by @st).
 * @err:  on failure: "'f' is ambiguous: f(int), f(double) (give the full name)",
 *        "no function 'x' in PATH; did you mean 'a', 'b' or 'c'?", for a function the
 *        file imports "'x' is not in PATH but in a library it loads: name it libc.so.6:x",
 *        or for a stripped file "PATH is stripped (no .symtab): rebuild it without -s
 *        ...". Code PS_ENOTFOUND
 *        (PS_EUSAGE when ambiguous).
 *
 * The forms are tried in that order; the first form that matches anything decides.
 * Candidates at one address (aliases) count once.
 * Return: 0, or -1 with @err set.
 */
int ps_sym_lookup(const struct ps_symtab *st, const char *name, const struct ps_sym **out, struct ps_error *err);

/** ps_sym_count() - number of symbols in @st. */
size_t ps_sym_count(const struct ps_symtab *st);

/** ps_sym_at() - the @i-th symbol, in address order; NULL if @i is out of range. */
const struct ps_sym *ps_sym_at(const struct ps_symtab *st, size_t i);

/**
 * ps_sym_by_addr() - the function containing link-time address @addr.
 *
 * A symbol of size 0 is taken to extend to the next symbol.
 * Return: the symbol, or NULL if no function contains @addr.
 */
const struct ps_sym *ps_sym_by_addr(const struct ps_symtab *st, uint64_t addr);

/**
 * ps_sym_lib_split() - split "LIB:FUNC" (e.g. "libc.so.6:memcpy").
 * @spec: the user's text.
 * @lib, @libn: receives LIB, or "" when @spec names no library.
 * @fn, @fnn:   receives FUNC, or all of @spec when it names no library.
 *
 * LIB is what precedes the first single ':' (not a C++ "::") when it ends in ".so"
 * or ".so.N[.N...]". "sum", "ns::Klass::f" and "file.c:12" name no library.
 * Return: 1 if @spec names a library, 0 if not, -1 (errno EINVAL for "libm.so:",
 * ENAMETOOLONG when a buffer is too small).
 */
int ps_sym_lib_split(const char *spec, char *lib, size_t libn, char *fn, size_t fnn);

/**
 * ps_sym_find_mapping() - where a file is mapped in process @pid.
 * @pid:  the process.
 * @lib:  a library's basename ("libc.so.6"; "libc.so" or "libc" work if unique), or a
 *        full path, or NULL for the main executable (/proc/PID/exe).
 * @path: receives the mapped file's path, @n bytes.
 * @bias: receives the load bias: runtime address = link-time address + bias.
 * @err:  filled on failure (not mapped: lists the libraries that are).
 *
 * The bias is the one rule of core/binary/procmaps.h: where the file's lowest PT_LOAD is mapped
 * minus that segment's p_vaddr rounded down to a page.
 * Return: 0, or -1 with @err set.
 */
int ps_sym_find_mapping(pid_t pid, const char *lib, char *path, size_t n, uint64_t *bias, struct ps_error *err);

/**
 * ps_sym_demangle() - demangle a C++ or Rust (legacy or v0) symbol name.
 *
 * Return: a malloc'd string for the caller to free, or NULL if @raw is not mangled.
 */
char *ps_sym_demangle(const char *raw);

/**
 * ps_sym_base_len() - length of a demangled name without its parameter list and
 * qualifiers: 11 for "ns::K::m(int) const", strlen(@name) when there is none.
 */
size_t ps_sym_base_len(const char *name);

/* "Did you mean": the 3 names closest to a query, ranked by core/base/suggest.c (the ranking of
 * every did-you-mean). Start from {0}; do not copy one once names were added. */
struct ps_sym_near {
	struct ps_suggest s;
	char out[3][128];
	int n; /* names kept */
};

/** ps_sym_near_add() - offer the @len bytes at @cand for @query (names of 128 bytes or more are not kept). */
void ps_sym_near_add(struct ps_sym_near *near, const char *query, const char *cand, size_t len);

/**
 * ps_sym_near_format() - write "'a', 'b' or 'c'" (or "'a' or 'b'", or "'a'") to @buf.
 * Return: the number of names written (0: @buf is "").
 */
int ps_sym_near_format(const struct ps_sym_near *near, char *buf, size_t n);

#endif
