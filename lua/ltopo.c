/* lua/ltopo.c - core.topology([root]): the CPU topology from sysfs (core/events/topology.c). */
#include <stdlib.h>

#include "lhelp.h"
#include "topology.h"

#define BOX_MT "perfsh.topology_box"

/* The array from ps_topo_read() lives in a box whose __gc frees it, so a memory error
 * while the table is built leaks nothing. */
struct box {
	struct ps_topo_cpu *t;
};

static int box_gc(lua_State *L)
{
	struct box *b = luaL_checkudata(L, 1, BOX_MT);

	free(b->t);
	b->t = NULL;
	return 0;
}

static void setint(lua_State *L, const char *k, int v)
{
	lua_pushinteger(L, v);
	lua_setfield(L, -2, k);
}

/* core.topology([root]) -> {[cpu] = {cpu=, package=, die=, core=, l3=}, n = online CPUs}
 * | nil, msg, errno.  Keys are the 0-based CPU numbers; unknown fields are -1. */
static int l_topology(lua_State *L)
{
	const char *root = luaL_optstring(L, 1, NULL);
	struct ps_error err;
	struct box *b;
	int n;

	lua_settop(L, 1);
	b = lua_newuserdatauv(L, sizeof *b, 0);
	b->t = NULL;
	luaL_setmetatable(L, BOX_MT);
	if (ps_topo_read(root, &b->t, &n, &err))
		return ps_l_fail(L, &err);
	lua_createtable(L, 0, n + 1);
	for (int i = 0; i < n; i++) {
		const struct ps_topo_cpu *c = &b->t[i];

		lua_createtable(L, 0, 5);
		setint(L, "cpu", c->cpu);
		setint(L, "package", c->package);
		setint(L, "die", c->die);
		setint(L, "core", c->core);
		setint(L, "l3", c->l3);
		lua_rawseti(L, -2, c->cpu);
	}
	setint(L, "n", n);
	free(b->t);
	b->t = NULL;
	return 1;
}

void ps_l_open_topo(lua_State *L)
{
	luaL_newmetatable(L, BOX_MT);
	lua_pushcfunction(L, box_gc);
	lua_setfield(L, -2, "__gc");
	lua_pop(L, 1);
	lua_pushcfunction(L, l_topology);
	lua_setfield(L, -2, "topology");
}
