/* core/catch/marker/inproc_lib.c - a function of a shared library, patched by the agent like
 * one of the program's own (inproc_lib.h). perfsh holds the program before its loader has run,
 * so the library is not mapped yet: the site is the function's link-time address in the file
 * the loader will map (the session found it there), with the file's device and inode, by which
 * the agent finds the library among those mapped before main() and adds its load bias. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "inproc_lib.h"
#include "procmaps.h"
#include "sitereloc.h"
#include "symbols.h"

/* Refused: one line, and what measures it instead. */
#define REFUSE(err, name, ...)                                                                                         \
	ps_error_set(err, PS_ENEEDS_UPROBE, "region '%s': %s; use --backend uprobe", name, __VA_ARGS__)

/* Whether ELF file @path defines an unwinder of its own (libgcc's, linked in statically). */
static int own_unwinder(const char *path)
{
	struct ps_symtab *st;
	const struct ps_sym *sym;
	struct ps_error e;
	int yes;

	if (ps_sym_open(&st, path, &e))
		return 0;
	yes = ps_sym_lookup(st, "_Unwind_RaiseException", &sym, NULL) == 0;
	ps_sym_close(st);
	return yes;
}

/* What keeps the agent from the program or library @path, or NULL. */
static const char *refused(const struct ps_catch_env *env, pid_t pid, const char *path)
{
	char exe[64], lib[PATH_MAX];
	struct ps_error e;

	snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
	if (ps_lib_resolve(pid, "libasan", lib, sizeof lib, &e) == 0 ||
	    ps_lib_resolve(pid, "libtsan", lib, sizeof lib, &e) == 0)
		return "a program built with a sanitizer wants its runtime loaded before the in-process agent";
	if (env->unwinds == 1 && (own_unwinder(exe) || own_unwinder(path)))
		return "the program or the library has an unwinder of its own linked in (not libgcc_s's), which the "
		       "in-process agent cannot interpose";
	return NULL;
}

int ps_inproc_lib_site(const struct ps_catch_env *env, pid_t pid, const struct ps_catch_point *p,
		       struct ps_mshm_site *out, struct ps_error *err)
{
	const char *name = env->reg[p->region].spec, *why;
	char lib[256], fn[256];
	struct ps_symtab *st;
	const struct ps_sym *sym;
	struct ps_x86_reloc r;
	struct stat sb;
	int rc = -1;

	if ((why = refused(env, pid, p->path)))
		return REFUSE(err, name, why);
	if ((rc = ps_lib_linked(pid, p->path, err)) <= 0)
		return rc < 0 ? -1
			      : REFUSE(err, name,
				       "the program does not link its library: one dlopen loads later is not mapped "
				       "when the in-process agent patches");
	rc = -1;
	if (stat(p->path, &sb) < 0) {
		int e = errno;
		return ps_error_set(err, e, "%s: %s", p->path, strerror(e));
	}
	if (ps_sym_lib_split(name, lib, sizeof lib, fn, sizeof fn) != 1 || ps_sym_open(&st, p->path, err))
		return -1;
	if (ps_sym_lookup(st, fn, &sym, err))
		;
	else if (!sym->size)
		REFUSE(err, name, "its entry has no function symbol with a size to patch from");
	else if (ps_site_reloc(p->path, sym->addr, 0, 5, sym->addr + (1u << 20), 0, &r, err)) {
		char was[sizeof err->msg];

		snprintf(was, sizeof was, "%s", err->msg);
		REFUSE(err, name, was);
	} else
		rc = 0;
	if (rc == 0) {
		memset(out, 0, sizeof *out);
		out->addr = sym->addr;
		out->size = sym->size;
		out->dev = (uint64_t)sb.st_dev;
		out->ino = (uint64_t)sb.st_ino;
		out->flags = PS_MSHM_SITE_LIB |
			     (env->reg[p->region].flags & PS_REGION_EVERY_LEVEL ? PS_MSHM_SITE_EVERY_LEVEL : 0);
		snprintf(out->name, sizeof out->name, "%.127s", name);
	}
	ps_sym_close(st);
	return rc;
}
