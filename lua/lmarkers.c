/* lua/lmarkers.c - the marker catcher's methods of perfsh.tracee: arming a marker, the live
 * policy of the program's markers, and what its marker library says. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lhelp.h"
#include "session.h"

/* t:region_marker(name) -> id | nil, msg */
static int l_region_marker(lua_State *L)
{
	struct ps_session *s = ps_l_tracee_check(L);
	struct ps_error err;
	int id = ps_session_region_marker(s, luaL_checkstring(L, 2), &err);

	if (id < 0)
		return ps_l_fail(L, &err);
	lua_pushinteger(L, id);
	return 1;
}

/* t:marker_policy{on = bool, p = P, every = N, slow_ns = NS} -> true | nil, msg, code: fields left
   out keep their value; p and every exclude each other (the one given clears the other). A p or
   an every out of range is PS_EUSAGE, its message the reason alone. */
static int l_marker_policy(lua_State *L)
{
	struct ps_session *s = ps_l_tracee_check(L);
	struct ps_marker_status st;
	struct ps_mshm_policy p;
	struct ps_error err;

	luaL_checktype(L, 2, LUA_TTABLE);
	if (ps_session_marker_status(s, &st))
		return luaL_error(L, "the markers' policy is for the marker catcher (backend marker)");
	p = st.pol;
	p.on = (uint32_t)ps_l_optfield_bool(L, 2, "on", (int)p.on);
	lua_getfield(L, 2, "p");
	if (!lua_isnil(L, -1)) {
		double v = luaL_checknumber(L, -1);

		if (!(v > 0 && v <= 1)) {
			ps_error_set(&err, PS_EUSAGE, "p is a probability in (0, 1], not %g", v);
			return ps_l_fail(L, &err);
		}
		p.every = 0;
		p.threshold = v >= 1 ? UINT64_MAX : (uint64_t)ldexp(v, 64);
	}
	lua_pop(L, 1);
	lua_getfield(L, 2, "every");
	if (!lua_isnil(L, -1)) {
		lua_Integer n = luaL_checkinteger(L, -1);

		if (n < 1) {
			ps_error_set(&err, PS_EUSAGE, "every is a count >= 1, not %d", (int)n);
			return ps_l_fail(L, &err);
		}
		p.every = n > 1 ? (uint64_t)n : 0;
		p.threshold = UINT64_MAX;
	}
	lua_pop(L, 1);
	p.slow_ns = (uint64_t)ps_l_optfield_int(L, 2, "slow_ns", (lua_Integer)p.slow_ns);
	p.sampled = p.every > 1 || p.threshold != UINT64_MAX;
	if (ps_session_marker_policy(s, &p, &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* t:marker_status() -> {state, why, read, read_ns, rdpmc_ns, threads, no_slot, lost, unmatched,
   fast, unarmed, on, p, every, slow_ns} | nil (not the marker catcher) */
static int l_marker_status(lua_State *L)
{
	static const char *const states[] = {"waiting", "running", "off"};
	struct ps_session *s = ps_l_tracee_check(L);
	struct ps_marker_status st;

	if (ps_session_marker_status(s, &st))
		return 0;
	lua_createtable(L, 0, 16);
	lua_pushstring(L, states[st.state >= 0 && st.state <= 2 ? st.state : 0]);
	lua_setfield(L, -2, "state");
	lua_pushstring(L, st.why);
	lua_setfield(L, -2, "why");
	lua_pushstring(L, st.read_mode);
	lua_setfield(L, -2, "read");
	lua_pushnumber(L, st.read_ns);
	lua_setfield(L, -2, "read_ns");
	lua_pushnumber(L, st.rdpmc_ns);
	lua_setfield(L, -2, "rdpmc_ns");
#define FIELD_INT(k, v) (lua_pushinteger(L, (lua_Integer)(v)), lua_setfield(L, -2, k))
	FIELD_INT("threads", st.threads);
	FIELD_INT("no_slot", st.no_slot);
	FIELD_INT("lost", st.lost);
	FIELD_INT("unmatched", st.unmatched);
	FIELD_INT("fast", st.fast);
	FIELD_INT("unarmed", st.unarmed);
	FIELD_INT("every", st.pol.every);
	FIELD_INT("slow_ns", st.pol.slow_ns);
#undef FIELD_INT
	lua_pushboolean(L, st.pol.on != 0);
	lua_setfield(L, -2, "on");
	lua_pushnumber(L, st.pol.threshold == UINT64_MAX ? 1.0 : ldexp((double)st.pol.threshold, -64));
	lua_setfield(L, -2, "p");
	return 1;
}

const luaL_Reg ps_l_marker_methods[] = {{"region_marker", l_region_marker},
					{"marker_policy", l_marker_policy},
					{"marker_status", l_marker_status},
					{NULL, NULL}};
