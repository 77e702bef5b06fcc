/* core/catch/uprobe/upsites.c - the uprobe catcher's table of probe sites: each added site,
 * the counter groups small functions share, and how a function's exits are caught (plain
 * uprobes at its return sites, core/binary/retsites.h, or a uretprobe where those cannot be
 * found and the program cannot unwind). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "retsites.h"
#include "upsites.h"

/* Room for one more site. */
static int grow_sites(struct ps_upcatch *u, struct ps_error *err)
{
	int cap = u->capsites ? 2 * u->capsites : 8;
	struct ps_uprobe_site *ns;
	char(*np)[PATH_MAX];
	int *nr;
	enum ps_uprobe_point *nk;

	if (u->nsites < u->capsites)
		return 0;
	if ((ns = realloc(u->sites, (size_t)cap * sizeof *ns)))
		u->sites = ns;
	if ((np = ns ? realloc(u->paths, (size_t)cap * sizeof *np) : NULL))
		u->paths = np;
	if ((nr = np ? realloc(u->site_region, (size_t)cap * sizeof *nr) : NULL))
		u->site_region = nr;
	if (!(nk = nr ? realloc(u->site_kind, (size_t)cap * sizeof *nk) : NULL))
		return ps_error_set(err, ENOMEM, "out of memory");
	u->site_kind = nk;
	u->capsites = cap;
	for (int i = 0; i < u->nsites; i++) /* the paths may have moved */
		u->sites[i].path = u->paths[i];
	return 0;
}

/* Probe file @path at @offset for @region (semaphore at @ref_ctr_offset, 0 for none), in counter
   group @group (0: the region's own, or none for a function's entry with a uretprobe). */
int ps__up_site_add(struct ps_upcatch *u, const char *path, uint64_t offset, int region, enum ps_uprobe_point kind,
		    uint64_t ref_ctr_offset, int group, int ret, struct ps_error *err)
{
	const char *name = region >= 0 ? u->env->reg[region].name : "";
	struct ps_uprobe_site *site;
	struct ps_error e2;

	if (u->env->started)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': with the uprobe catcher, add regions before the first run", name);
	if (grow_sites(u, err))
		return -1;
	snprintf(u->paths[u->nsites], PATH_MAX, "%s", path);
	site = &u->sites[u->nsites];
	*site = (struct ps_uprobe_site){.path = u->paths[u->nsites],
					.offset = offset,
					.ret = ret,
					.group = group ? group
						 : ret ? 0
						       : region + 1,
					.ref_ctr_offset = ref_ctr_offset};
	u->site_region[u->nsites] = region;
	u->site_kind[u->nsites] = kind;
	u->nop5 += ps_uprobe_site_is_nop5(path, offset, &e2) == 1;
	u->nsites++;
	return 0;
}

/* The counter group of a function with @probes probes: the pack of the function armed just before
   while it holds PACK_PROBES, else a new one (a function with more has one of its own). */
static int pack_group(struct ps_upcatch *u, int probes)
{
	if (!u->pack || !u->nsites || u->sites[u->nsites - 1].group != u->pack ||
	    u->pack_probes + probes > PACK_PROBES) {
		u->pack = -++u->npacks;
		u->pack_probes = 0;
	}
	u->pack_probes += probes;
	return u->pack;
}

/* A function's entry at @offset of @path and its exits (core/binary/retsites.h), plain uprobes in
   one counter group; where its exits cannot be found, a uretprobe catches its returns, unless the
   program can unwind exceptions. A leaf (it calls nothing and leaves by its rets only) takes a
   uretprobe too: nothing can unwind or jump through a frame that calls nothing, and a return
   through the kernel's trampoline costs a fraction of a probe on a ret, which the kernel cannot
   emulate and single-steps (a second trap). */
int ps__up_func_sites(struct ps_upcatch *u, const char *path, uint64_t offset, int region, struct ps_error *err)
{
	const char *name = u->env->reg[region].name;
	struct ps_retsites rs;
	struct ps_error why;
	int group, rc;

	if (ps_retsites_find(path, offset, &rs, &why)) {
		if (u->env->unwinds)
			return ps_error_set(
			    err, PS_ENEEDS_PTRACE,
			    "region '%s': its exits cannot be found (%s), and %s can unwind exceptions "
			    "(C++, Rust): an unwinder that meets the return address a uretprobe put in "
			    "place terminates the program; it needs the ptrace catcher (--backend ptrace)",
			    name, why.msg, u->exe[0] ? u->exe : "the program");
		ps_catch_notice(u->env, "region '%s': its exits cannot be found (%s); a uretprobe catches its returns",
				name, why.msg);
		return ps__up_site_add(u, path, offset, region, PS_UPOINT_ENTRY, 0, pack_group(u, 2), 1, err);
	}
	if (ps_retsites_leaf(&rs))
		return ps__up_site_add(u, path, offset, region, PS_UPOINT_LEAF, 0, pack_group(u, 2), 1, err);
	group = pack_group(u, 1 + rs.n);
	rc = ps__up_site_add(u, path, offset, region, PS_UPOINT_ENTRY, 0, group, 0, err);
	for (int i = 0; rc == 0 && i < rs.n; i++)
		rc = ps__up_site_add(u, path, rs.site[i].offset, region, PS_UPOINT_EXIT, 0, group, 0, err);
	return rc;
}
