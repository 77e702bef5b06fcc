/* lua/lstats.c - core.stats(array): exact statistics computed in C. */
#include <stdlib.h>

#include "lhelp.h"
#include "stats.h"

void ps_l_push_stats(lua_State *L, const struct ps_stats *st)
{
	lua_createtable(L, 0, 9);
	lua_pushinteger(L, (lua_Integer)st->n);
	lua_setfield(L, -2, "count");
#define F(k)                                                                                                           \
	lua_pushnumber(L, st->k);                                                                                      \
	lua_setfield(L, -2, #k)
	F(sum);
	F(mean);
	F(stddev);
	F(min);
	F(p50);
	F(p90);
	F(p99);
	F(max);
#undef F
}

/* core.stats({numbers}) -> {count, sum, mean, stddev, min, p50, p90, p99, max} */
static int l_stats(lua_State *L)
{
	struct ps_stats st;
	lua_Integer n;
	double *v;

	luaL_checktype(L, 1, LUA_TTABLE);
	n = luaL_len(L, 1);
	v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
	if (!v)
		return luaL_error(L, "out of memory for %d values", (int)n);
	for (lua_Integer i = 0; i < n; i++) {
		int isnum;
		lua_geti(L, 1, i + 1);
		v[i] = lua_tonumberx(L, -1, &isnum);
		lua_pop(L, 1);
		if (!isnum) {
			free(v);
			return luaL_argerror(L, 1, lua_pushfstring(L, "element %d is not a number", (int)i + 1));
		}
	}
	ps_stats_of(v, (size_t)n, &st);
	free(v);
	ps_l_push_stats(L, &st);
	return 1;
}

void ps_l_open_stats(lua_State *L)
{
	lua_pushcfunction(L, l_stats);
	lua_setfield(L, -2, "stats");
}
