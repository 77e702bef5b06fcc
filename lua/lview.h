/* lua/lview.h - records seen from Lua, whoever holds them: a live session's store or a
 * mapped .psnap file (core/records/analysis.h says what they mean). */
#ifndef PS_LVIEW_H
#define PS_LVIEW_H

#include <lua.h>
#include <stdint.h>

#include "analysis.h"

/* Push record @i (0-based) as a table (see README: r:hits()), or nil when out of range. */
void ps_l_push_record(lua_State *L, const struct ps_view *v, uint64_t i);

/* Push the statistics of region @region's complete records (see README: r:stats()); with
   the optional argument at stack index @by ("thread" or "cpu"), an array of them, one per
   thread or CPU (each with its tid or cpu). */
int ps_l_push_region_stats(lua_State *L, const struct ps_view *v, int region, int by);

/* Push an array of one number per complete record of @region: the delta of event @k, or
   k = -1 on-CPU time, -2 wall time. */
int ps_l_push_series(lua_State *L, const struct ps_view *v, int region, int k);

#endif
