/* core/proc/inject_check.c - what makes a process unfit for ps_inject_library(), found without
 * touching it (/proc/PID/status and maps, the ELF symbols of its files), and the addresses of the
 * dlopen, dlerror and dlsym it will call. */
#include "inject_priv.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procmaps.h"
#include "symbols.h"

/* The raw symbol @name of @st, exactly (no demangled or partial match), or NULL. */
static const struct ps_sym *sym_exact(const struct ps_symtab *st, const char *name)
{
	for (size_t i = 0; i < ps_sym_count(st); i++) {
		const struct ps_sym *s = ps_sym_at(st, i);
		if (!strcmp(s->name, name))
			return s;
	}
	return NULL;
}

/* The name of the sanitizer runtime in file @path, or NULL: its init function is defined there. */
static const char *sanitizer_in(const char *path)
{
	static const char *const init[][2] = {{"__asan_init", "AddressSanitizer"},
					      {"__tsan_init", "ThreadSanitizer"},
					      {"__msan_init", "MemorySanitizer"},
					      {"__hwasan_init", "HWAddressSanitizer"}};
	struct ps_symtab *st;
	struct ps_error e;
	const char *found = NULL;

	if (ps_sym_open(&st, path, &e))
		return NULL;
	for (size_t i = 0; i < sizeof init / sizeof init[0] && !found; i++)
		if (sym_exact(st, init[i][0]))
			found = init[i][1];
	ps_sym_close(st);
	return found;
}

/* A sanitizer runtime in the program itself (clang links it in) or in a library it mapped
 * (gcc's libasan.so), by name; NULL if none. */
static const char *sanitizer(pid_t pid)
{
	static const char *const libs[] = {"libasan", "libtsan", "libmsan", "libhwasan"};
	char path[PATH_MAX];
	struct ps_error e;
	const char *s;

	if (!ps_maps_find(pid, NULL, PS_MAPS_EXACT, path, sizeof path, &e) && (s = sanitizer_in(path)))
		return s;
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
		if (!ps_maps_find(pid, libs[i], PS_MAPS_PREFIX, path, sizeof path, &e) && (s = sanitizer_in(path)))
			return s;
	return NULL;
}

/* dlopen, dlerror and dlsym of the libc.so.6 mapped in @pid: 0, 1 when its maps may not be read, or -1
 * with @err set. */
static int find_dlopen(pid_t pid, struct ps_inject_target *tg, struct ps_error *err)
{
	char libc[PATH_MAX];
	struct ps_symtab *st;
	const struct ps_sym *o, *e, *y;
	uint64_t bias;

	if (ps_sym_find_mapping(pid, "libc.so.6", libc, sizeof libc, &bias, err)) {
		if (err->code != PS_ENOTFOUND)
			return err->code == EACCES || err->code == EPERM ? 1 : -1;
		return ps_error_set(err, PS_ENOTFOUND,
				    "cannot load a library into process %d: it has no libc.so.6 mapped (a static "
				    "program, or one without the dynamic loader)",
				    (int)pid);
	}
	/* the file the process maps, seen from its root (its mount namespace may not be ours) */
	char rooted[PATH_MAX + 32];
	snprintf(rooted, sizeof rooted, "/proc/%d/root%s", (int)pid, libc);
	if (ps_sym_open(&st, access(rooted, R_OK) ? libc : rooted, err))
		return -1;
	o = sym_exact(st, "dlopen");
	e = sym_exact(st, "dlerror");
	y = sym_exact(st, "dlsym");
	if (o && e && y) {
		tg->dlopen = o->addr + bias;
		tg->dlerror = e->addr + bias;
		tg->dlsym = y->addr + bias;
	}
	ps_sym_close(st);
	if (!o || !e || !y)
		return ps_error_set(err, PS_ENOTFOUND,
				    "cannot load a library into process %d: %s has no dlopen (glibc 2.34 or later "
				    "has it)",
				    (int)pid, libc);
	return 0;
}

int ps__inject_check(pid_t pid, const char *path, struct ps_inject_target *tg, struct ps_error *err)
{
	char v[64];
	struct stat sb;
	const char *san;
	int rc;

	if (!realpath(path, tg->abspath) || stat(tg->abspath, &sb) || access(tg->abspath, R_OK))
		return ps_error_set(err, errno, "cannot load library '%s': %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return ps_error_set(err, PS_EUSAGE, "cannot load library '%s': not a regular file", path);
	if (ps_proc_status(pid, "Seccomp", v, sizeof v))
		return ps_error_set(err, ESRCH, "cannot load a library into process %d: no such process", (int)pid);
	if (strcmp(v, "0") != 0)
		return ps_error_set(err, PS_EUSAGE,
				    "cannot load a library into process %d: it runs under seccomp (mode %s), which "
				    "may kill the loader's system calls",
				    (int)pid, v);
	if ((rc = find_dlopen(pid, tg, err)) != 0)
		return rc;
	if ((san = sanitizer(pid)))
		return ps_error_set(err, PS_EUSAGE,
				    "cannot load a library into process %d: it is a %s build, whose runtime "
				    "wraps dlopen (a library loaded past the wrapper is not one it knows of)",
				    (int)pid, san);
	return 0;
}
