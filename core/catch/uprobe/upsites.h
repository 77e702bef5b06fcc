/* core/catch/uprobe/upsites.h - the uprobe catcher's state and its table of probe sites: what
 * each site is (a function's entry, one of its exits, a range's start or end) and which counter
 * group it is in. Private to core/catch/uprobe/ (uprobe_catcher.c, upsites.c). */
#ifndef PS_UPSITES_H
#define PS_UPSITES_H

#include <limits.h>
#include <stdint.h>

#include "catch_uprobe.h"
#include "catcher.h"
#include "upframes.h"

/* What a plain site is: a function's entry, one of its exits, a start, an end, or both at once. */
enum ps_uprobe_point {
	PS_UPOINT_ENTRY,
	PS_UPOINT_START,
	PS_UPOINT_END,
	PS_UPOINT_POINT,
	PS_UPOINT_EXIT,
	PS_UPOINT_CATCH, /* where the program catches an exception (no region): frames below end unwound */
	PS_UPOINT_LEAF,	 /* a leaf function's entry (core/binary/retsites.h), whose returns a uretprobe catches */
};

#define PACK_PROBES 8			   /* probes of small functions that share one counter group */
#define REGS_SP (1ull << PS_UPROBE_REG_SP) /* every hit's stack pointer: exits and unwound frames */

struct ps_upcatch {
	struct ps_catch base;
	struct ps_catch_env *env;
	struct ps_catch_uprobe *c;
	struct ps_uprobe_site *sites;
	char (*paths)[PATH_MAX];
	int *site_region;
	enum ps_uprobe_point *site_kind;
	int nsites, capsites;
	int nop5;		       /* sites on the 5-byte NOP: the kernel calls the probe, no trap */
	char exe[PATH_MAX];	       /* the program's file (/proc/PID/exe), "" if unknown */
	int probed;		       /* the sites were handed to the catcher */
	uint32_t window_ms, period_ms; /* sampling windows: probes on for window_ms of each period_ms */
	unsigned ring_pages;	       /* per thread; 0: 256 */
	struct ps_upframes *frames;    /* each thread's open function frames, by stack pointer */
	uint64_t regs_mask;	       /* the registers each hit carries */
	int pack, npacks, pack_probes; /* the counter group small functions are packed into (-1, -2, ...) */
	struct ps_uplib *libs;	       /* regions awaiting their library's mapping (uplibs.c) */
	int nlibs;
};

/* Probe file @path at @offset for @region (semaphore at @ref_ctr_offset, 0 for none), in counter
   group @group (0: the region's own, or none for a function's entry with a uretprobe); 0 or -1
   with @err. */
int ps__up_site_add(struct ps_upcatch *u, const char *path, uint64_t offset, int region, enum ps_uprobe_point kind,
		    uint64_t ref_ctr_offset, int group, int ret, struct ps_error *err);

/* The sites of function region @region entered at @offset of @path: its entry and how its exits
   are caught (upsites.c); 0 or -1 with @err (PS_ENEEDS_PTRACE where only ptrace can catch them). */
int ps__up_func_sites(struct ps_upcatch *u, const char *path, uint64_t offset, int region, struct ps_error *err);

#endif
