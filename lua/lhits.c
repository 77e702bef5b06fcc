/* lua/lhits.c - the records of a traced program's hits, methods of perfsh.tracee: how many,
 * one as a table, a region's statistics and series, saving them to a .psnap file, and spilling
 * them to one while the program runs. */
#include "lhelp.h"
#include "lview.h"
#include "psnap.h"
#include "session.h"
#include "session_view.h"

/* t:spill(path) / t:spill_flush() / t:spill_meta(k, v) / t:spill_close() -> true | nil, msg */
static int l_spill(lua_State *L)
{
	struct ps_error err;
	if (ps_session_spill(ps_l_tracee_check(L), luaL_checkstring(L, 2), &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_spill_flush(lua_State *L)
{
	struct ps_error err;
	if (ps_session_spill_flush(ps_l_tracee_check(L), &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_spill_meta(lua_State *L)
{
	struct ps_error err;
	if (ps_session_spill_meta(ps_l_tracee_check(L), luaL_checkstring(L, 2), luaL_checkstring(L, 3), &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_spill_close(lua_State *L)
{
	struct ps_error err;
	if (ps_session_spill_close(ps_l_tracee_check(L), &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_nrecords(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)ps_session_nrecords(ps_l_tracee_check(L)));
	return 1;
}

/* t:record(i) (1-based) -> a record table (README: r:hits()) | nil */
static int l_record(lua_State *L)
{
	struct ps_session *s = ps_l_tracee_check(L);
	lua_Integer i = luaL_checkinteger(L, 2);
	struct ps_view v;

	ps_session_view(s, &v);
	if (i < 1) {
		lua_pushnil(L);
		return 1;
	}
	ps_l_push_record(L, &v, (uint64_t)(i - 1));
	return 1;
}

/* t:stats(id [, "thread"|"cpu"]) -> {hits, incomplete, migrated, ratio_min,
   [event|"time_ns"|"wall_ns"] = {count, sum, ...}}, or an array of them by thread (tid) or CPU (cpu) */
static int l_stats(lua_State *L)
{
	struct ps_session *s = ps_l_tracee_check(L);
	const struct ps_region_info *ri = ps_l_tracee_region(L, s, 2);
	struct ps_view v;

	ps_session_view(s, &v);
	return ps_l_push_region_stats(L, &v, ri->id, 3);
}

/* t:series(id, event_index | -1 (time_ns) | -2 (wall_ns)) -> array over the complete hits */
static int l_series(lua_State *L)
{
	struct ps_session *s = ps_l_tracee_check(L);
	const struct ps_region_info *ri = ps_l_tracee_region(L, s, 2);
	lua_Integer k = luaL_checkinteger(L, 3);
	struct ps_view v;

	ps_session_view(s, &v);
	luaL_argcheck(L, k >= -2 && k < v.nev, 3, "an event index, -1 or -2");
	return ps_l_push_series(L, &v, ri->id, (int)k);
}

/* t:save(path [, {key = value}]) -> number of records | nil, msg: a .psnap file with the
   session's header (event and region names, group layout) and the given metadata. */
static int l_save(lua_State *L)
{
	struct ps_session *s = ps_l_tracee_check(L);
	const char *path = luaL_checkstring(L, 2);
	struct ps_psnap_meta *meta = NULL;
	struct ps_error err;
	size_t nmeta = 0, cap = 0;

	lua_settop(L, 3);
	lua_newtable(L); /* 4: key, value, key, ... as strings, anchored while meta points at them */
	if (lua_type(L, 3) == LUA_TTABLE) {
		lua_pushnil(L);
		while (lua_next(L, 3)) {
			if (lua_type(L, -2) == LUA_TSTRING && lua_isstring(L, -1)) {
				lua_pushvalue(L, -2);
				lua_rawseti(L, 4, (lua_Integer)(2 * cap + 1));
				lua_pushstring(L, lua_tostring(L, -1)); /* a number as its text */
				lua_rawseti(L, 4, (lua_Integer)(2 * cap + 2));
				cap++;
			}
			lua_pop(L, 1);
		}
	}
	meta = lua_newuserdatauv(L, (cap ? cap : 1) * sizeof *meta, 0);
	for (nmeta = 0; nmeta < cap; nmeta++) {
		lua_rawgeti(L, 4, (lua_Integer)(2 * nmeta + 1));
		meta[nmeta].key = lua_tostring(L, -1);
		lua_rawgeti(L, 4, (lua_Integer)(2 * nmeta + 2));
		meta[nmeta].value = lua_tostring(L, -1);
		lua_pop(L, 2);
	}
	if (ps_session_save(s, path, meta, nmeta, &err))
		return ps_l_fail(L, &err);
	lua_pushinteger(L, (lua_Integer)ps_session_nrecords(s));
	return 1;
}

const luaL_Reg ps_l_hits_methods[] = {{"save", l_save},
				      {"nrecords", l_nrecords},
				      {"spill", l_spill},
				      {"spill_flush", l_spill_flush},
				      {"spill_meta", l_spill_meta},
				      {"spill_close", l_spill_close},
				      {"record", l_record},
				      {"stats", l_stats},
				      {"series", l_series},
				      {NULL, NULL}};
