/* lua/lview.c - records to Lua tables and statistics, for live sessions and files alike. */
#include <lauxlib.h>
#include <stdlib.h>

#include "lhelp.h"
#include "lview.h"
#include "stats.h"

double ps_view_delta(const struct ps_view *v, const struct ps_snap *r, int k, double *ratio)
{
	struct ps_snap *rw = (struct ps_snap *)r;
	uint64_t d = ps_snap_end(rw)[k] - ps_snap_start(rw)[k];
	uint64_t en = r->enabled_end - r->enabled_start, run = r->running_end - r->running_start;
	int g = v->group[k];

	if (g > 0 && v->nev + 2 * g <= r->nvals) { /* the later groups' times follow the values */
		int w = v->nev + 2 * (g - 1);
		en = ps_snap_end(rw)[w] - ps_snap_start(rw)[w];
		run = ps_snap_end(rw)[w + 1] - ps_snap_start(rw)[w + 1];
	}
	*ratio = en ? (double)run / (double)en : 1.0;
	if (en && run && run < en)
		return (double)d * (double)en / (double)run;
	return (double)d;
}

double ps_view_cpu_time(const struct ps_snap *r)
{
	if (r->nvals)
		return (double)(r->enabled_end - r->enabled_start);
	return (double)(r->t_end - r->t_start);
}

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

/* Indexes of the complete records of @region (malloc'd; *n set), NULL on no memory. */
static uint64_t *complete_of(const struct ps_view *v, int region, size_t *n, size_t *incomplete)
{
	size_t cap = 1024, k = 0;
	uint64_t *idx = malloc(cap * sizeof *idx);

	*incomplete = 0;
	if (!idx)
		return NULL;
	for (uint64_t i = 0; i < v->n; i++) {
		const struct ps_snap *r = ps_view_rec(v, i);
		if ((int)r->region != region)
			continue;
		if (r->flags & (PS_SNAP_UNWOUND | PS_SNAP_EXITED)) {
			(*incomplete)++;
			continue;
		}
		if (k == cap) {
			uint64_t *p = realloc(idx, 2 * cap * sizeof *idx);
			if (!p) {
				free(idx);
				return NULL;
			}
			idx = p;
			cap *= 2;
		}
		idx[k++] = i;
	}
	*n = k;
	return idx;
}

static double series_value(const struct ps_view *v, const struct ps_snap *r, int k, double *ratio)
{
	*ratio = 1.0;
	if (k == -2)
		return (double)(r->t_end - r->t_start);
	if (k == -1)
		return ps_view_cpu_time(r);
	return ps_view_delta(v, r, k, ratio);
}

int ps_l_push_series(lua_State *L, const struct ps_view *v, int region, int k)
{
	size_t n, inc;
	double ratio;
	uint64_t *idx = complete_of(v, region, &n, &inc);

	if (!idx)
		return luaL_error(L, "out of memory");
	lua_createtable(L, (int)n, 0);
	for (size_t j = 0; j < n; j++) {
		lua_pushnumber(L, series_value(v, ps_view_rec(v, idx[j]), k, &ratio));
		lua_rawseti(L, -2, (lua_Integer)j + 1);
	}
	free(idx);
	return 1;
}

static void push_stats(lua_State *L, double *val, size_t n)
{
	struct ps_stats st;
	ps_stats_of(val, n, &st);
	ps_l_push_stats(L, &st);
}

int ps_l_push_region_stats(lua_State *L, const struct ps_view *v, int region)
{
	size_t n, inc;
	double ratio_min = 1.0, ratio, *val;
	uint64_t *idx = complete_of(v, region, &n, &inc);

	if (!idx)
		return luaL_error(L, "out of memory");
	val = malloc((n ? n : 1) * sizeof *val);
	if (!val) {
		free(idx);
		return luaL_error(L, "out of memory");
	}
	lua_createtable(L, 0, 4 + v->nev);
	for (int k = -2; k < v->nev; k++) {
		for (size_t j = 0; j < n; j++) {
			val[j] = series_value(v, ps_view_rec(v, idx[j]), k, &ratio);
			if (ratio < ratio_min)
				ratio_min = ratio;
		}
		push_stats(L, val, n);
		lua_setfield(L, -2, k == -2 ? "wall_ns" : k == -1 ? "time_ns" : v->names[k]);
	}
	free(val);
	free(idx);
	setint(L, "hits", (lua_Integer)n);
	setint(L, "incomplete", (lua_Integer)inc);
	lua_pushnumber(L, ratio_min);
	lua_setfield(L, -2, "ratio_min");
	return 1;
}
