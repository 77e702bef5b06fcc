/* core/catch/uprobe/uplibs.c - the uprobe catcher's regions in libraries not mapped yet: a
 * library the program loads at start, or later with dlopen. The session finds the function in
 * the file the loader will map (core/binary/libpath.c); its probes are opened on that file
 * before it is mapped, and the kernel installs them when the program maps it (so no hit is
 * missed, and nothing stops the program). The rings report each file a thread maps
 * (PERF_RECORD_MMAP2, struct ps_uprobe_map): a region is no longer pending once its file is
 * seen mapped, or at its first hit. Where the program maps another file of that name instead
 * (another path, a glibc-hwcaps directory, a RUNPATH of the library that called dlopen), the
 * probes are in a file it never runs: the region is dropped with the reason, rather than
 * reported with no hits. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "procmaps.h"
#include "symbols.h"
#include "uplibs.h"
#include "upsites.h"

/* A region awaiting its library: the file probed, and what the program mapped in its name. */
struct ps_uplib {
	int region;
	uint64_t offset; /* the entry's file offset */
	dev_t dev;	 /* the probed file's device and inode */
	ino_t ino;
	char real[PATH_MAX];  /* its real path */
	char want[256];	      /* the library as the region names it */
	char other[PATH_MAX]; /* another file of that name the program mapped, "" none */
};

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int ps__up_lib_await(struct ps_upcatch *u, const char *path, uint64_t offset, int region, struct ps_error *err)
{
	struct ps_uplib *nl, *l;
	struct stat st;
	char fn[256];

	if (stat(path, &st) < 0) {
		int e = errno;
		return ps_error_set(err, e, "%s: %s", path, strerror(e));
	}
	if (!(nl = realloc(u->libs, (size_t)(u->nlibs + 1) * sizeof *nl)))
		return ps_error_set(err, ENOMEM, "out of memory");
	u->libs = nl;
	l = &nl[u->nlibs];
	memset(l, 0, sizeof *l);
	l->region = region;
	l->offset = offset;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	if (!realpath(path, l->real))
		snprintf(l->real, sizeof l->real, "%s", path);
	if (ps_sym_lib_split(u->env->reg[region].spec, l->want, sizeof l->want, fn, sizeof fn) != 1)
		snprintf(l->want, sizeof l->want, "%.255s", base_of(l->real));
	u->nlibs++;
	return 0;
}

void ps__up_lib_forget(struct ps_upcatch *u, int region)
{
	while (u->nlibs > 0 && u->libs[u->nlibs - 1].region == region)
		u->nlibs--;
}

int ps__up_lib_awaits(const struct ps_upcatch *u)
{
	return u->nlibs > 0;
}

void ps__up_lib_mapped(struct ps_upcatch *u, const struct ps_uprobe_map *m)
{
	for (int i = 0; i < u->nlibs; i++) {
		struct ps_uplib *l = &u->libs[i];
		struct ps_region_info *ri = &u->env->reg[l->region];

		if (!ri->pending)
			continue;
		if ((m->ino == (uint64_t)l->ino && m->maj == major(l->dev) && m->min == minor(l->dev)) ||
		    !strcmp(m->path, l->real)) {
			ri->pending = 0;
			if (l->offset >= m->pgoff && l->offset - m->pgoff < m->len)
				ri->addr = m->addr + (l->offset - m->pgoff);
		} else if (!l->other[0] && (!strcmp(base_of(m->path), base_of(l->real)) ||
					    ps_lib_name_match(m->path, l->want, PS_MAPS_EXACT))) {
			snprintf(l->other, sizeof l->other, "%s", m->path);
		}
	}
}

void ps__up_lib_verdict(struct ps_upcatch *u)
{
	for (int i = 0; i < u->nlibs; i++) {
		struct ps_uplib *l = &u->libs[i];
		struct ps_region_info *ri = &u->env->reg[l->region];

		if (!ri->pending || !l->other[0] || ri->dropped)
			continue;
		ri->pending = 0;
		ri->dropped = 1;
		snprintf(ri->why, sizeof ri->why,
			 "the program mapped %.250s, not %.250s where it was probed: its hits were not caught; name "
			 "that file (%.250s:FUNCTION), or use --backend ptrace",
			 l->other, l->real, l->other);
		ps_catch_notice(u->env, "region '%s' dropped: %s", ri->name, ri->why);
	}
}

void ps__up_lib_free(struct ps_upcatch *u)
{
	free(u->libs);
	u->libs = NULL;
	u->nlibs = 0;
}
