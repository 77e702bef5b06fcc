/* lua/lsnapset.c - core.load(path): a .psnap file, mapped, seen as records (perfsh.snapset). */
#include <stdlib.h>
#include <string.h>

#include "lhelp.h"
#include "lview.h"
#include "psnap.h"

#define SNAPSET_MT "perfsh.snapset"

struct lsnapset {
	struct ps_psnap_reader *r;
	struct ps_view v;
};

static struct lsnapset *check(lua_State *L)
{
	struct lsnapset *ss = luaL_checkudata(L, 1, SNAPSET_MT);
	if (!ss->r)
		luaL_error(L, "attempt to use a closed snapshot file");
	return ss;
}

static const struct ps_snap *record_of(const void *r, uint64_t i)
{
	return ps_psnap_record(r, i);
}

/* core.load(path) -> snapset | nil, msg */
static int l_load(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct lsnapset *ss = lua_newuserdatauv(L, sizeof *ss, 0);
	struct ps_error err;

	memset(ss, 0, sizeof *ss);
	luaL_setmetatable(L, SNAPSET_MT);
	if (ps_psnap_open(path, &ss->r, &err))
		return ps_l_fail(L, &err);
	ss->v.n = ps_psnap_count(ss->r);
	ss->v.recsize = ps_psnap_recsize(ss->r);
	ss->v.get = record_of;
	ss->v.ctx = ss->r;
	ss->v.nev = (int)ps_psnap_nevents(ss->r); /* <= nvals, checked by the reader */
	for (int k = 0; k < ss->v.nev; k++)
		ss->v.names[k] = ps_psnap_event(ss->r, (size_t)k);
	ps_view_set_groups(&ss->v, ps_psnap_meta_get(ss->r, "groups"), ps_psnap_nvals(ss->r));
	return 1;
}

static int l_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)check(L)->v.n);
	return 1;
}

static int l_record(lua_State *L)
{
	struct lsnapset *ss = check(L);
	lua_Integer i = luaL_checkinteger(L, 2);
	if (i < 1)
		lua_pushnil(L);
	else
		ps_l_push_record(L, &ss->v, (uint64_t)(i - 1));
	return 1;
}

static int l_stats(lua_State *L)
{
	struct lsnapset *ss = check(L);
	return ps_l_push_region_stats(L, &ss->v, (int)luaL_checkinteger(L, 2), 3);
}

static int l_series(lua_State *L)
{
	struct lsnapset *ss = check(L);
	lua_Integer k = luaL_checkinteger(L, 3);
	luaL_argcheck(L, k >= -2 && k < ss->v.nev, 3, "an event index, -1 or -2");
	return ps_l_push_series(L, &ss->v, (int)luaL_checkinteger(L, 2), (int)k);
}

/* The iterator of ss:hits(): upvalues the snapset, the next index, the ids wanted (or nil). */
static int hits_next(lua_State *L)
{
	struct lsnapset *ss = lua_touserdata(L, lua_upvalueindex(1));
	uint64_t i = (uint64_t)lua_tointeger(L, lua_upvalueindex(2));
	int filter = lua_istable(L, lua_upvalueindex(3));

	if (!ss->r)
		return luaL_error(L, "attempt to use a closed snapshot file");
	for (; i < ss->v.n; i++) {
		if (filter) {
			int want = lua_rawgeti(L, lua_upvalueindex(3), ps_psnap_record(ss->r, i)->region) != LUA_TNIL;

			lua_pop(L, 1);
			if (!want)
				continue;
		}
		lua_pushinteger(L, (lua_Integer)i + 1);
		lua_replace(L, lua_upvalueindex(2));
		ps_l_push_record(L, &ss->v, i);
		ps_psnap_release(ss->r, i); /* one pass in order: the pages behind can go */
		return 1;
	}
	lua_pushinteger(L, (lua_Integer)i);
	lua_replace(L, lua_upvalueindex(2));
	return 0;
}

/* ss:hits([ids]) -> an iterator over the records in file order, each a table as ss:record(i)
   gives it; with @ids, only those of the regions whose ids are its keys. One record at a time,
   and the file's pages let go behind: the memory does not grow with the records. */
static int l_hits(lua_State *L)
{
	check(L);
	if (!lua_isnoneornil(L, 2))
		luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	lua_pushinteger(L, 0);
	lua_insert(L, 2);
	lua_pushcclosure(L, hits_next, 3);
	return 1;
}

/* ss:info() -> {events = {...}, regions = {...}, meta = {...}, records, truncated, ignored_bytes,
   lost, skipped, events_from = "block" | "copy" | "unknown", complete,
   warning = "one line on what was lost" | nil} */
static int l_info(lua_State *L)
{
	static const char *const from[] = {"block", "copy", "unknown"};
	struct lsnapset *ss = check(L);
	size_t nreg = ps_psnap_nregions(ss->r), nmeta = ps_psnap_nmeta(ss->r);

	lua_createtable(L, 0, 12);
	lua_createtable(L, ss->v.nev, 0);
	for (int k = 0; k < ss->v.nev; k++) {
		lua_pushstring(L, ss->v.names[k]);
		lua_rawseti(L, -2, k + 1);
	}
	lua_setfield(L, -2, "events");
	lua_createtable(L, (int)nreg, 0); /* regions[id + 1] = name */
	for (size_t i = 0; i < nreg; i++) {
		const char *name = ps_psnap_region(ss->r, i);
		if (name)
			lua_pushstring(L, name);
		else /* its name was in a damaged block */
			lua_pushfstring(L, "region %d", (int)i);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "regions");
	lua_createtable(L, 0, (int)nmeta);
	for (size_t i = 0; i < nmeta; i++) {
		lua_pushstring(L, ps_psnap_meta_value(ss->r, i));
		lua_setfield(L, -2, ps_psnap_meta_key(ss->r, i));
	}
	lua_setfield(L, -2, "meta");
	lua_pushinteger(L, (lua_Integer)ss->v.n);
	lua_setfield(L, -2, "records");
	lua_pushboolean(L, ps_psnap_truncated(ss->r));
	lua_setfield(L, -2, "truncated");
	lua_pushboolean(L, ps_psnap_complete(ss->r));
	lua_setfield(L, -2, "complete");
	lua_pushinteger(L, (lua_Integer)ps_psnap_ignored_bytes(ss->r));
	lua_setfield(L, -2, "ignored_bytes");
	lua_pushinteger(L, (lua_Integer)ps_psnap_lost(ss->r));
	lua_setfield(L, -2, "lost");
	lua_pushinteger(L, (lua_Integer)ps_psnap_skipped(ss->r));
	lua_setfield(L, -2, "skipped");
	lua_pushstring(L, from[ps_psnap_events_from(ss->r)]);
	lua_setfield(L, -2, "events_from");
	lua_pushstring(L, ps_psnap_warning(ss->r)); /* nil when intact */
	lua_setfield(L, -2, "warning");
	return 1;
}

static int l_close(lua_State *L)
{
	struct lsnapset *ss = luaL_checkudata(L, 1, SNAPSET_MT);
	ps_psnap_reader_close(ss->r);
	ss->r = NULL;
	return 0;
}

static int l_tostring(lua_State *L)
{
	struct lsnapset *ss = luaL_checkudata(L, 1, SNAPSET_MT);
	if (!ss->r)
		lua_pushliteral(L, "perfsh.snapset(closed)");
	else
		lua_pushfstring(L, "perfsh.snapset(%d records)", (int)ss->v.n);
	return 1;
}

static const luaL_Reg methods[] = {{"count", l_count}, {"record", l_record}, {"stats", l_stats}, {"series", l_series},
				   {"hits", l_hits},   {"info", l_info},     {"close", l_close}, {NULL, NULL}};

static const luaL_Reg metamethods[] = {
    {"__gc", l_close}, {"__close", l_close}, {"__tostring", l_tostring}, {"__index", NULL}, {NULL, NULL}};

void ps_l_open_snapset(lua_State *L)
{
	luaL_newmetatable(L, SNAPSET_MT);
	luaL_setfuncs(L, metamethods, 0);
	luaL_newlib(L, methods);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	lua_pushcfunction(L, l_load);
	lua_setfield(L, -2, "load");
}
