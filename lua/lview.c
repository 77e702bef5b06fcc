/* lua/lview.c - records and their statistics (core/records/analysis.c) as Lua tables, for live sessions
 * and files alike. */
#include <lauxlib.h>
#include <stdlib.h>

#include "lhelp.h"
#include "lview.h"
#include "stats.h"

static void setint(lua_State *L, const char *k, lua_Integer v)
{
	lua_pushinteger(L, v);
	lua_setfield(L, -2, k);
}

void ps_l_push_record(lua_State *L, const struct ps_view *v, uint64_t i)
{
	const struct ps_snap *r;
	struct ps_snap *rw;
	double ratio = 1.0;

	if (i >= v->n) {
		lua_pushnil(L);
		return;
	}
	r = ps_view_rec(v, i);
	rw = (struct ps_snap *)r;
	lua_createtable(L, 0, 20 + v->nev);
	setint(L, "region", r->region);
	setint(L, "tid", r->tid);
	setint(L, "seq", (lua_Integer)r->seq);
	setint(L, "hit", (lua_Integer)r->hit);
	setint(L, "depth", r->depth);
	setint(L, "cpu_start", r->cpu_start);
	setint(L, "cpu_end", r->cpu_end);
	setint(L, "t_start", (lua_Integer)r->t_start);
	setint(L, "t_end", (lua_Integer)r->t_end);
	setint(L, "enabled_start", (lua_Integer)r->enabled_start);
	setint(L, "enabled_end", (lua_Integer)r->enabled_end);
	setint(L, "running_start", (lua_Integer)r->running_start);
	setint(L, "running_end", (lua_Integer)r->running_end);
	setint(L, "wall_ns", (lua_Integer)(r->t_end - r->t_start));
	setint(L, "time_ns", (lua_Integer)ps_view_cpu_time(r));
	setint(L, "flags", r->flags);
	lua_pushboolean(L, r->flags & PS_SNAP_UNWOUND);
	lua_setfield(L, -2, "unwound");
	lua_pushboolean(L, r->flags & PS_SNAP_EXITED);
	lua_setfield(L, -2, "exited");
	lua_pushboolean(L, r->flags & PS_SNAP_SAMPLED);
	lua_setfield(L, -2, "sampled");
	lua_createtable(L, r->nargs, 0);
	for (int k = 0; k < r->nargs; k++) {
		lua_pushinteger(L, (lua_Integer)ps_snap_args(rw)[k]);
		lua_rawseti(L, -2, k + 1);
	}
	lua_setfield(L, -2, "args");
	lua_createtable(L, r->nvals, 0);
	lua_createtable(L, r->nvals, 0);
	for (int k = 0; k < r->nvals; k++) {
		double rk;
		lua_pushinteger(L, (lua_Integer)ps_snap_start(rw)[k]);
		lua_rawseti(L, -3, k + 1);
		lua_pushinteger(L, (lua_Integer)ps_snap_end(rw)[k]);
		lua_rawseti(L, -2, k + 1);
		if (k >= v->nev)
			continue; /* group times */
		lua_pushinteger(L, (lua_Integer)(ps_view_delta(v, r, k, &rk) + 0.5));
		lua_setfield(L, -4, v->names[k]);
		if (rk < ratio)
			ratio = rk;
	}
	lua_setfield(L, -3, "end");
	lua_setfield(L, -2, "start");
	lua_pushnumber(L, ratio);
	lua_setfield(L, -2, "ratio");
}

static void push_stats(lua_State *L, const struct ps_stats *st, const char *name)
{
	ps_l_push_stats(L, st);
	lua_setfield(L, -2, name);
}

static void push_hit_stats(lua_State *L, const struct ps_view *v, const struct ps_hit_stats *h, const char *key)
{
	lua_createtable(L, 0, 6 + v->nev);
	push_stats(L, &h->wall, "wall_ns");
	push_stats(L, &h->time, "time_ns");
	for (int k = 0; k < v->nev; k++)
		push_stats(L, &h->ev[k], v->names[k]);
	setint(L, "hits", (lua_Integer)h->hits);
	setint(L, "incomplete", (lua_Integer)h->incomplete);
	setint(L, "migrated", (lua_Integer)h->migrated);
	lua_pushnumber(L, h->ratio_min);
	lua_setfield(L, -2, "ratio_min");
	if (key)
		setint(L, key, (lua_Integer)h->key);
}

int ps_l_push_region_stats(lua_State *L, const struct ps_view *v, int region, int by)
{
	static const char *const splits[] = {"region", "thread", "cpu", NULL};
	static const char *const keys[] = {NULL, "tid", "cpu"};
	int split = luaL_checkoption(L, by, "region", splits);
	struct ps_hit_stats *st;
	size_t n;

	if (ps_view_stats(v, region, (enum ps_split)split, &st, &n))
		return luaL_error(L, "statistics of region %d: out of memory", region);
	if (split == PS_SPLIT_NONE) {
		push_hit_stats(L, v, &st[0], NULL);
	} else {
		lua_createtable(L, (int)n, 0);
		for (size_t g = 0; g < n; g++) {
			push_hit_stats(L, v, &st[g], keys[split]);
			lua_rawseti(L, -2, (lua_Integer)g + 1);
		}
	}
	free(st);
	return 1;
}

int ps_l_push_series(lua_State *L, const struct ps_view *v, int region, int k)
{
	double *val;
	size_t n;

	if (ps_view_series(v, region, k, &val, &n))
		return luaL_error(L, "series of region %d: out of memory", region);
	lua_createtable(L, (int)n, 0);
	for (size_t j = 0; j < n; j++) {
		lua_pushnumber(L, val[j]);
		lua_rawseti(L, -2, (lua_Integer)j + 1);
	}
	free(val);
	return 1;
}
