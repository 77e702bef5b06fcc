/* lua/lcore.c - the module perfsh.core: shared helpers and luaopen_perfsh_core. */
#include "lhelp.h"

#include <string.h>

#include "group.h"

int ps_l_fail(lua_State *L, const struct ps_error *err)
{
	luaL_pushfail(L);
	lua_pushstring(L, err->msg);
	lua_pushinteger(L, err->code);
	return 3;
}

int ps_l_raise(lua_State *L, const struct ps_error *err)
{
	return luaL_error(L, "%s", err->msg);
}

int ps_l_check_events(lua_State *L, int idx, struct ps_event *ev, int max)
{
	struct ps_error err;
	int n;

	if (lua_type(L, idx) == LUA_TSTRING) {
		if (ps_event_resolve(lua_tostring(L, idx), &ev[0], &err))
			return luaL_argerror(L, idx, err.msg);
		return 1;
	}
	luaL_checktype(L, idx, LUA_TTABLE);
	n = (int)luaL_len(L, idx);
	if (n < 1)
		return luaL_argerror(L, idx, "no events given");
	if (n > max)
		return luaL_argerror(
		    L, idx, lua_pushfstring(L, "a group holds at most %d events (got %d); split them", max, n));
	for (int i = 0; i < n; i++) {
		lua_geti(L, idx, i + 1);
		if (lua_type(L, -1) != LUA_TSTRING)
			return luaL_argerror(
			    L, idx, lua_pushfstring(L, "event #%d is a %s, not a name", i + 1, luaL_typename(L, -1)));
		if (ps_event_resolve(lua_tostring(L, -1), &ev[i], &err))
			return luaL_argerror(L, idx, err.msg);
		lua_pop(L, 1);
		for (int k = 0; k < i; k++)
			if (!strcmp(ev[k].name, ev[i].name))
				return luaL_argerror(
				    L, idx,
				    lua_pushfstring(L, "duplicate event %s in the group; name it once", ev[i].name));
	}
	return n;
}

lua_Integer ps_l_optfield_int(lua_State *L, int idx, const char *k, lua_Integer def)
{
	lua_Integer v = def;
	int isnum;

	if (lua_getfield(L, idx, k) != LUA_TNIL) {
		v = lua_tointegerx(L, -1, &isnum);
		if (!isnum)
			luaL_error(L, "option '%s' must be an integer (got %s)", k, luaL_typename(L, -1));
	}
	lua_pop(L, 1);
	return v;
}

int ps_l_optfield_bool(lua_State *L, int idx, const char *k, int def)
{
	int v = def;
	if (lua_getfield(L, idx, k) != LUA_TNIL)
		v = lua_toboolean(L, -1);
	lua_pop(L, 1);
	return v;
}

/* Push a reading as the table group:read() documents: values by name, raw, scaled, events,
   ratio, time_enabled, time_running. */
void ps_l_push_reading(lua_State *L, const struct ps_event *ev, const struct ps_reading *r)
{
	double ratio;

	lua_createtable(L, 0, 8 + r->n);
	lua_createtable(L, r->n, 0); /* raw */
	lua_createtable(L, r->n, 0); /* scaled */
	lua_createtable(L, r->n, 0); /* events */
	for (int i = 0; i < r->n; i++) {
		double s = ps_scale(r->val[i], r->time_enabled, r->time_running, &ratio);
		lua_pushinteger(L, (lua_Integer)r->val[i]);
		lua_rawseti(L, -4, i + 1);
		lua_pushnumber(L, s);
		lua_rawseti(L, -3, i + 1);
		lua_pushstring(L, ev[i].name);
		lua_rawseti(L, -2, i + 1);
		/* by name: the scaled value, an integer (exactly the raw one when not multiplexed) */
		lua_pushinteger(L, ratio >= 1.0 ? (lua_Integer)r->val[i] : (lua_Integer)(s + 0.5));
		lua_setfield(L, -5, ev[i].name);
	}
	lua_setfield(L, -4, "events");
	lua_setfield(L, -3, "scaled");
	lua_setfield(L, -2, "raw");
	ps_scale(0, r->time_enabled, r->time_running, &ratio);
	lua_pushnumber(L, ratio);
	lua_setfield(L, -2, "ratio");
	lua_pushinteger(L, (lua_Integer)r->time_enabled);
	lua_setfield(L, -2, "time_enabled");
	lua_pushinteger(L, (lua_Integer)r->time_running);
	lua_setfield(L, -2, "time_running");
}

int luaopen_perfsh_core(lua_State *L)
{
	lua_newtable(L);
	lua_pushliteral(L, PS_VERSION);
	lua_setfield(L, -2, "version");
	ps_l_open_group(L);
	ps_l_open_events(L);
	ps_l_open_run(L);
	ps_l_open_tracee(L);
	ps_l_open_stats(L);
	ps_l_open_snapset(L);
	ps_l_open_hist(L);
	ps_l_open_topo(L);
	ps_l_open_lsq(L);
	ps_l_open_signal(L);
	ps_l_open_outfile(L);
	ps_l_open_errors(L);
	ps_l_open_sdt(L);
	ps_l_open_syms(L);
	return 1;
}
