/* core/session/session_find.c - where a region's code is: functions by name in the program's
 * ELF symbols or in a library's (mapped, or the file its loader will map), link-time addresses
 * checked against the code, the DWARF line tables, the program's file after exec. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codeaddr.h"
#include "procmaps.h"
#include "session_priv.h"
#include "uprobe.h"

void ps__forget_images(struct ps_session *s)
{
	ps_sym_close(s->sym);
	ps_lines_close(s->lines);
	s->sym = NULL;
	s->lines = NULL;
	s->exe[0] = '\0';
}

/* The main executable's path, from /proc/PID/exe. */
int ps__exe_path(struct ps_session *s, struct ps_error *err)
{
	char link[64];
	ssize_t n;

	if (s->exe[0])
		return 0;
	snprintf(link, sizeof link, "/proc/%d/exe", (int)s->env->pid);
	n = readlink(link, s->exe, PATH_MAX - 1);
	if (n < 0)
		return ps_error_set(err, errno, "%s: %s", link, strerror(errno));
	s->exe[n] = '\0';
	return 0;
}

int ps__symtab(struct ps_session *s, struct ps_error *err)
{
	if (s->sym)
		return 0;
	if (ps__exe_path(s, err))
		return -1;
	return ps_sym_open(&s->sym, s->exe, err);
}

/* Line tables are optional: NULL without an error when the binary has no DWARF. */
struct ps_lines *ps__lines(struct ps_session *s, struct ps_error *err)
{
	if (!s->lines && ps__exe_path(s, err) == 0)
		ps_lines_open(&s->lines, s->exe, err);
	return s->lines;
}

uint64_t ps__main_bias(struct ps_session *s)
{
	uint64_t b = ps_tracer_load_bias(s->t, NULL);
	return b == PS_TRACER_NO_BIAS ? 0 : b;
}

/* An IFUNC's symbol is its resolver: say so, with implementations the loader may pick. */
static int ifunc_error(const struct ps_symtab *st, const struct ps_sym *ifunc, const char *lib, struct ps_error *err)
{
	char list[300] = "";
	size_t len = strlen(ifunc->name);
	int n = 0;

	for (size_t i = 0; i < ps_sym_count(st) && n < 3; i++) {
		const struct ps_sym *c = ps_sym_at(st, i);
		/* glibc's naming: __memcpy_avx_unaligned_erms implements memcpy */
		if (!c->ifunc && !strncmp(c->name, "__", 2) && !strncmp(c->name + 2, ifunc->name, len) &&
		    c->name[2 + len] == '_') {
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s:%s", n ? ", " : "", lib,
				 c->name);
			n++;
		}
	}
	if (!n)
		return ps_error_set(err, PS_EUSAGE,
				    "%s is an IFUNC: the loader picks one of its implementations at run time, and %s "
				    "names none of them; measure the function that calls it instead",
				    ifunc->name, lib);
	return ps_error_set(err, PS_EUSAGE,
			    "%s is an IFUNC: the loader picks one of its implementations at run time; name that one, "
			    "e.g. %s",
			    ifunc->name, list);
}

/* A probe may go at link-time address @addr of the main executable (core/binary/codeaddr.h). */
int ps__code_addr(struct ps_session *s, uint64_t addr, unsigned flags, struct ps_error *err)
{
	struct ps_error e2;

	if (ps__exe_path(s, err))
		return -1;
	return ps_code_check(s->exe, ps__symtab(s, &e2) ? NULL : s->sym, addr, flags, err);
}

/* The run-time entry of function @fn in the main executable or in library @lib. 1 = found,
   0 = the library is not mapped yet, -1 = error. */
int ps__find_function(struct ps_session *s, const char *lib, const char *fn, uint64_t *addr, struct ps_error *err)
{
	const struct ps_sym *sym;

	if (lib) {
		char path[PATH_MAX];
		uint64_t bias;
		struct ps_symtab *st;
		struct ps_error e2;
		int rc;

		if (ps_sym_find_mapping(s->env->pid, lib, path, sizeof path, &bias, &e2))
			return 0;
		if (ps_sym_open(&st, path, err))
			return -1;
		rc = ps_sym_lookup(st, fn, &sym, err);
		if (rc == 0 && sym->ifunc)
			rc = ifunc_error(st, sym, lib, err);
		if (rc == 0)
			*addr = sym->addr + bias;
		ps_sym_close(st);
		return rc == 0 ? 1 : -1;
	}
	if (fn[0] == '0' && fn[1] == 'x') {
		char *end;
		*addr = strtoull(fn, &end, 16);
		if (*end)
			return ps_error_set(err, PS_EUSAGE, "bad address '%s'", fn);
		if (ps__code_addr(s, *addr, PS_CODE_ENTRY, err))
			return -1;
		*addr += ps__main_bias(s);
		return 1;
	}
	if (ps__symtab(s, err) || ps_sym_lookup(s->sym, fn, &sym, err))
		return -1;
	*addr = sym->addr + ps__main_bias(s);
	return 1;
}

/* Whether the program can unwind exceptions through its frames: an unwinder linked in, or a
   C++ runtime or libgcc_s among the libraries its loader will map. */
int ps__unwinds(struct ps_session *s)
{
	const struct ps_sym *sym;
	char path[PATH_MAX];
	struct ps_error e;

	if (s->unwinds < 0)
		s->unwinds =
		    (ps__symtab(s, &e) == 0 && ps_sym_lookup(s->sym, "_Unwind_RaiseException", &sym, NULL) == 0) ||
		    ps_lib_resolve(s->env->pid, "libgcc_s", path, sizeof path, &e) == 0 ||
		    ps_lib_resolve(s->env->pid, "libstdc++", path, sizeof path, &e) == 0;
	return s->unwinds;
}

/* A catcher that probes files: a function of a library not mapped yet (the program is held
   before its first instruction) is found in the file its loader will map, @path at @off. */
int ps__lib_func_file(struct ps_session *s, const char *lib, const char *fn, char path[PATH_MAX], uint64_t *off,
		      struct ps_error *err)
{
	struct ps_symtab *st;
	const struct ps_sym *sym;
	int rc;

	if (ps_lib_resolve(s->env->pid, lib, path, PATH_MAX, err) || ps_sym_open(&st, path, err))
		return -1;
	rc = ps_sym_lookup(st, fn, &sym, err);
	if (rc == 0 && sym->ifunc)
		rc = ifunc_error(st, sym, lib, err);
	if (rc == 0)
		rc = ps_uprobe_file_offset(path, sym->addr, off, err);
	ps_sym_close(st);
	return rc ? -1 : 0;
}
