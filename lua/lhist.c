/* lua/lhist.c - the perfsh.hist userdata over core/records/hist.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hist.h"
#include "lhelp.h"

#define HIST_MT "perfsh.hist"

/* The userdata holds a pointer: NULL until created and after close. */
struct lhist {
	struct ps_hist *h;
};

static struct ps_hist *check_hist(lua_State *L, int idx)
{
	struct lhist *u = luaL_checkudata(L, idx, HIST_MT);
	if (!u->h)
		luaL_error(L, "attempt to use a closed histogram");
	return u->h;
}

/* core.hist() -> an empty perfsh.hist */
static int l_hist(lua_State *L)
{
	struct lhist *u;

	lua_settop(L, 0);
	u = lua_newuserdatauv(L, sizeof *u, 0);
	u->h = NULL;
	luaL_setmetatable(L, HIST_MT);
	u->h = ps_hist_new();
	if (!u->h)
		return luaL_error(L, "hist: out of memory");
	return 1;
}

static double check_value(lua_State *L, int idx)
{
	double v = luaL_checknumber(L, idx);
	if (!isfinite(v))
		luaL_argerror(L, idx, isnan(v) ? "value is NaN" : "value is infinite");
	return v;
}

/* Add or raise: the only failures left after check_value() are allocation failures. */
static void add_n(lua_State *L, struct ps_hist *h, double v, uint64_t n)
{
	if (ps_hist_add_n(h, v, n))
		luaL_error(L, "hist: cannot add %f: %s", v, strerror(errno));
}

/* h:add(v [, n]) -> h.  Counts v once, or n >= 0 times. */
static int l_add(lua_State *L)
{
	struct ps_hist *h = check_hist(L, 1);
	double v = check_value(L, 2);
	lua_Integer n = luaL_optinteger(L, 3, 1);

	luaL_argcheck(L, n >= 0, 3, "count must not be negative");
	add_n(L, h, v, (uint64_t)n);
	lua_settop(L, 1);
	return 1;
}

/* h:add_all({v...}) -> h.  On a non-number element the ones before it are already added. */
static int l_add_all(lua_State *L)
{
	struct ps_hist *h = check_hist(L, 1);
	lua_Integer n;

	luaL_checktype(L, 2, LUA_TTABLE);
	n = luaL_len(L, 2);
	for (lua_Integer i = 1; i <= n; i++) {
		int isnum;
		double v;

		lua_geti(L, 2, i);
		v = lua_tonumberx(L, -1, &isnum);
		if (!isnum)
			return luaL_argerror(
			    L, 2, lua_pushfstring(L, "element %I is a %s, not a number", i, luaL_typename(L, -1)));
		if (!isfinite(v))
			return luaL_argerror(L, 2,
					     lua_pushfstring(L, "element %I is %s", i, isnan(v) ? "NaN" : "infinite"));
		lua_pop(L, 1);
		add_n(L, h, v, 1);
	}
	lua_settop(L, 1);
	return 1;
}

/* Push @v, or nil for NaN (an empty histogram's min, max, mean and quantiles). */
static int push_or_nil(lua_State *L, double v)
{
	if (isnan(v))
		lua_pushnil(L);
	else
		lua_pushnumber(L, v);
	return 1;
}

/* h:quantile(q) -> the nearest-rank quantile within 1%, or nil when empty */
static int l_quantile(lua_State *L)
{
	struct ps_hist *h = check_hist(L, 1);
	double q = luaL_checknumber(L, 2);

	luaL_argcheck(L, q >= 0 && q <= 1, 2, "quantile must be between 0 and 1");
	return push_or_nil(L, ps_hist_quantile(h, q));
}

static int l_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)ps_hist_count(check_hist(L, 1)));
	return 1;
}

static int l_sum(lua_State *L)
{
	lua_pushnumber(L, ps_hist_sum(check_hist(L, 1)));
	return 1;
}

static int l_min(lua_State *L)
{
	return push_or_nil(L, ps_hist_min(check_hist(L, 1)));
}

static int l_max(lua_State *L)
{
	return push_or_nil(L, ps_hist_max(check_hist(L, 1)));
}

static int l_mean(lua_State *L)
{
	return push_or_nil(L, ps_hist_mean(check_hist(L, 1)));
}

static int l_stddev(lua_State *L)
{
	return push_or_nil(L, ps_hist_stddev(check_hist(L, 1)));
}

/* h:merge(other) -> h */
static int l_merge(lua_State *L)
{
	struct ps_hist *h = check_hist(L, 1), *o = check_hist(L, 2);

	if (ps_hist_merge(h, o))
		return luaL_error(L, "hist: cannot merge: %s", strerror(errno));
	lua_settop(L, 1);
	return 1;
}

struct bucket_walk {
	lua_State *L;
	lua_Integer i;
};

/* Append {lo=, hi=, count=} to the table on top of the stack. */
static int push_bucket(double lo, double hi, uint64_t count, void *ud)
{
	struct bucket_walk *w = ud;
	lua_State *L = w->L;

	lua_createtable(L, 0, 3);
	lua_pushnumber(L, lo);
	lua_setfield(L, -2, "lo");
	lua_pushnumber(L, hi);
	lua_setfield(L, -2, "hi");
	lua_pushinteger(L, (lua_Integer)count);
	lua_setfield(L, -2, "count");
	lua_rawseti(L, -2, ++w->i);
	return 0;
}

/* h:buckets() -> {{lo=, hi=, count=}, ...} in increasing order; the zero bucket has lo = hi = 0 */
static int l_buckets(lua_State *L)
{
	struct ps_hist *h = check_hist(L, 1);
	struct bucket_walk w = {L, 0};

	lua_newtable(L);
	ps_hist_buckets(h, push_bucket, &w);
	return 1;
}

static int l_close(lua_State *L)
{
	struct lhist *u = luaL_checkudata(L, 1, HIST_MT);

	ps_hist_free(u->h);
	u->h = NULL;
	return 0;
}

static int l_tostring(lua_State *L)
{
	struct lhist *u = luaL_checkudata(L, 1, HIST_MT);
	struct ps_hist *h = u->h;
	char buf[200];

	if (!h)
		lua_pushliteral(L, "perfsh.hist(closed)");
	else if (ps_hist_count(h) == 0)
		lua_pushliteral(L, "perfsh.hist(empty)");
	else {
		snprintf(buf, sizeof buf, "perfsh.hist(n=%llu, min=%.6g, p50=%.6g, p99=%.6g, max=%.6g)",
			 (unsigned long long)ps_hist_count(h), ps_hist_min(h), ps_hist_quantile(h, 0.5),
			 ps_hist_quantile(h, 0.99), ps_hist_max(h));
		lua_pushstring(L, buf);
	}
	return 1;
}

static const luaL_Reg methods[] = {{"add", l_add},     {"add_all", l_add_all}, {"quantile", l_quantile},
				   {"count", l_count}, {"sum", l_sum},	       {"min", l_min},
				   {"max", l_max},     {"mean", l_mean},       {"stddev", l_stddev},
				   {"merge", l_merge}, {"buckets", l_buckets}, {"close", l_close},
				   {NULL, NULL}};

static const luaL_Reg metamethods[] = {
    {"__gc", l_close}, {"__close", l_close}, {"__tostring", l_tostring}, {"__index", NULL}, {NULL, NULL}};

void ps_l_open_hist(lua_State *L)
{
	luaL_newmetatable(L, HIST_MT);
	luaL_setfuncs(L, metamethods, 0);
	luaL_newlib(L, methods);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	lua_pushcfunction(L, l_hist);
	lua_setfield(L, -2, "hist");
}
