/* lua/lview.h - records seen from Lua, whoever holds them: a live session's store or a
 * mapped .psnap file. */
#ifndef PS_LVIEW_H
#define PS_LVIEW_H

#include <lua.h>
#include <stdint.h>

#include "snapshot.h"

/**
 * struct ps_view - records and what they mean.
 * @base:  contiguous records (a live session's store), or NULL and then @get gives them.
 * @get:   record @i of @ctx (a .psnap file's kept records are not contiguous).
 * @nev:   named events; every record has at least @nev values (a file's reader checks it).
 * @group: the counter group of each event (0 = the one whose times are in the header; see
 *         snapshot.h for where later groups' times are)
 */
struct ps_view {
	const unsigned char *base;
	const struct ps_snap *(*get)(const void *ctx, uint64_t i);
	const void *ctx;
	uint64_t n;
	size_t recsize;
	int nev;
	const char *names[PS_MAX_EVENTS];
	int group[PS_MAX_EVENTS];
};

static inline const struct ps_snap *ps_view_rec(const struct ps_view *v, uint64_t i)
{
	if (v->get)
		return v->get(v->ctx, i);
	return (const struct ps_snap *)(v->base + i * v->recsize);
}

/* Delta of event @k over the record, scaled by its group's running/enabled ratio. */
double ps_view_delta(const struct ps_view *v, const struct ps_snap *r, int k, double *ratio);
/* On-CPU time of the hit (time_enabled of the first group), or wall time without a group. */
double ps_view_cpu_time(const struct ps_snap *r);

/* Push record @i (0-based) as a table (see README: r:hits()), or nil when out of range. */
void ps_l_push_record(lua_State *L, const struct ps_view *v, uint64_t i);

/* Push the statistics of region @region's complete records (see README: r:stats()). */
int ps_l_push_region_stats(lua_State *L, const struct ps_view *v, int region);

/* Push an array of one number per complete record of @region: the delta of event @k, or
   k = -1 on-CPU time, -2 wall time. */
int ps_l_push_series(lua_State *L, const struct ps_view *v, int region, int k);

#endif
