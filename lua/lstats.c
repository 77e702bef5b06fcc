/* lua/lstats.c - core.stats(array), core.rank(n, q), core.median(array): the statistics of
   core/records/stats.c. */
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

/* The numbers of the array at index 1 in a new buffer (the caller frees it), their count in
   @n; @ints (if not NULL) says whether every one is an integer. Raises for anything else. */
static double *numbers(lua_State *L, lua_Integer *n, int *ints)
{
	double *v;

	luaL_checktype(L, 1, LUA_TTABLE);
	*n = luaL_len(L, 1);
	v = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *v);
	if (!v)
		luaL_error(L, "out of memory for %d values", (int)*n);
	if (ints)
		*ints = 1;
	for (lua_Integer i = 0; i < *n; i++) {
		int isnum;
		lua_geti(L, 1, i + 1);
		if (ints)
			*ints = *ints && lua_isinteger(L, -1);
		v[i] = lua_tonumberx(L, -1, &isnum);
		lua_pop(L, 1);
		if (!isnum) {
			free(v);
			luaL_argerror(L, 1, lua_pushfstring(L, "element %d is not a number", (int)i + 1));
		}
	}
	return v;
}

/* core.stats({numbers}) -> {count, sum, mean, stddev, min, p50, p90, p99, max} */
static int l_stats(lua_State *L)
{
	struct ps_stats st;
	lua_Integer n;
	double *v = numbers(L, &n, NULL);

	ps_stats_of(v, (size_t)n, &st);
	free(v);
	ps_l_push_stats(L, &st);
	return 1;
}

/* core.rank(n, q) -> the nearest rank of quantile q of n values (1..n; 0 for none): the value of
   a sorted Lua array at it is the quantile core.stats computes. */
static int l_rank(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	double q = luaL_checknumber(L, 2);

	luaL_argcheck(L, n >= 0, 1, "a count >= 0 expected");
	luaL_argcheck(L, q >= 0 && q <= 1, 2, "a quantile from 0 to 1 expected");
	lua_pushinteger(L, (lua_Integer)ps_nearest_rank((size_t)n, q));
	return 1;
}

/* core.median({numbers}) -> ps_median_of (NaN for none); the middle value of an odd count of
   integers stays an integer, as the element it is. */
static int l_median(lua_State *L)
{
	lua_Integer n;
	int ints;
	double *v = numbers(L, &n, &ints), m;

	m = ps_median_of(v, (size_t)n);
	free(v);
	if (ints && n % 2)
		lua_pushinteger(L, (lua_Integer)m);
	else
		lua_pushnumber(L, m);
	return 1;
}

void ps_l_open_stats(lua_State *L)
{
	lua_pushcfunction(L, l_stats);
	lua_setfield(L, -2, "stats");
	lua_pushcfunction(L, l_rank);
	lua_setfield(L, -2, "rank");
	lua_pushcfunction(L, l_median);
	lua_setfield(L, -2, "median");
}
