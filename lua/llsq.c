/* lua/llsq.c - core.lstsq(rows, b [, opts]): least squares by SVD (core/records/lsq.c). */
#include <stdint.h>

#include "lhelp.h"
#include "lsq.h"

/* Copy the array at @idx (of exactly @n numbers) to @dst; @what names it in errors. */
static void check_numbers(lua_State *L, int arg, int idx, double *dst, lua_Integer n, const char *what)
{
	for (lua_Integer j = 1; j <= n; j++) {
		int isnum;

		lua_geti(L, idx, j);
		dst[j - 1] = lua_tonumberx(L, -1, &isnum);
		if (!isnum)
			luaL_argerror(
			    L, arg,
			    lua_pushfstring(L, "%s, element %I is a %s, not a number", what, j, luaL_typename(L, -1)));
		lua_pop(L, 1);
	}
}

static void push_array(lua_State *L, const double *v, int n)
{
	lua_createtable(L, n, 0);
	for (int i = 0; i < n; i++) {
		lua_pushnumber(L, v[i]);
		lua_rawseti(L, -2, i + 1);
	}
}

/*
 * core.lstsq(rows, b [, {rcond = 1e-10}]) -> {x = {...}, rss =, rank =, cond =, singular = {...}}
 * rows: m arrays of n numbers; b: m numbers.  Raises "too few hits: ...", "rank deficient: ...",
 * "NaN in row R, column C".
 */
static int l_lstsq(lua_State *L)
{
	lua_Integer m, n;
	double *a, *b, *x, *sv, rcond = 0;
	struct ps_lsq_info info;
	struct ps_error err;

	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checktype(L, 2, LUA_TTABLE);
	if (!lua_isnoneornil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		if (lua_getfield(L, 3, "rcond") != LUA_TNIL) {
			int isnum;
			rcond = lua_tonumberx(L, -1, &isnum);
			if (!isnum || !(rcond > 0 && rcond < 1))
				return luaL_argerror(L, 3, "rcond must be a number between 0 and 1");
		}
		lua_pop(L, 1);
	}
	lua_settop(L, 2);
	m = luaL_len(L, 1);
	if (m < 1)
		return luaL_argerror(L, 1, "no rows");
	if (lua_geti(L, 1, 1) != LUA_TTABLE)
		return luaL_argerror(L, 1, lua_pushfstring(L, "row 1 is a %s, not an array", luaL_typename(L, -1)));
	n = luaL_len(L, -1);
	lua_pop(L, 1);
	if (n < 1)
		return luaL_argerror(L, 1, "row 1 is empty");
	if (luaL_len(L, 2) != m)
		return luaL_argerror(L, 2, lua_pushfstring(L, "%I values for %I rows", luaL_len(L, 2), m));
	if (m > INT32_MAX / n)
		return luaL_argerror(L, 1, "too many rows");
	/* scratch space the collector frees, whatever raises below */
	a = lua_newuserdatauv(L, (size_t)(m * n + m + 2 * n) * sizeof *a, 0);
	b = a + m * n;
	x = b + m;
	sv = x + n;
	for (lua_Integer i = 1; i <= m; i++) {
		if (lua_geti(L, 1, i) != LUA_TTABLE)
			return luaL_argerror(
			    L, 1, lua_pushfstring(L, "row %I is a %s, not an array", i, luaL_typename(L, -1)));
		if (luaL_len(L, -1) != n)
			return luaL_argerror(
			    L, 1, lua_pushfstring(L, "row %I has %I numbers, row 1 has %I", i, luaL_len(L, -1), n));
		{
			int row = lua_gettop(L);
			const char *what = lua_pushfstring(L, "row %I", i);
			check_numbers(L, 1, row, a + (i - 1) * n, n, what);
			lua_pop(L, 2);
		}
	}
	check_numbers(L, 2, 2, b, m, "b");
	if (ps_lsq_solve((int)m, (int)n, a, b, rcond, x, sv, &info, &err))
		return ps_l_raise(L, &err);
	lua_createtable(L, 0, 5);
	push_array(L, x, (int)n);
	lua_setfield(L, -2, "x");
	push_array(L, sv, (int)n);
	lua_setfield(L, -2, "singular");
	lua_pushnumber(L, info.rss);
	lua_setfield(L, -2, "rss");
	lua_pushinteger(L, info.rank);
	lua_setfield(L, -2, "rank");
	lua_pushnumber(L, info.cond);
	lua_setfield(L, -2, "cond");
	return 1;
}

void ps_l_open_lsq(lua_State *L)
{
	lua_pushcfunction(L, l_lstsq);
	lua_setfield(L, -2, "lstsq");
}
