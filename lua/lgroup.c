/* lua/lgroup.c - the perfsh.group userdata over core/events/group.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "group.h"
#include "lhelp.h"

#define GROUP_MT "perfsh.group"

static struct ps_group *check_open(lua_State *L)
{
	struct ps_group *g = luaL_checkudata(L, 1, GROUP_MT);
	if (g->n < 1)
		luaL_error(L, "attempt to use a closed group");
	return g;
}

/* core.group(events [, opts]) -> group | nil, msg, errno.  opts: pid, cpu, inherit, enable. */
static int l_group(lua_State *L)
{
	struct ps_event ev[PS_MAX_EVENTS];
	struct ps_error err;
	struct ps_group *g;
	unsigned flags = 0;
	int n = ps_l_check_events(L, 1, ev, PS_MAX_EVENTS);
	lua_Integer pid = 0, cpu = -1;

	if (!lua_isnoneornil(L, 2)) {
		luaL_checktype(L, 2, LUA_TTABLE);
		pid = ps_l_optfield_int(L, 2, "pid", 0);
		cpu = ps_l_optfield_int(L, 2, "cpu", -1);
		if (ps_l_optfield_bool(L, 2, "inherit", 0))
			flags |= PS_GROUP_INHERIT;
		if (ps_l_optfield_bool(L, 2, "enable", 0))
			flags |= PS_GROUP_ENABLED;
	}
	/* Safe from here on: closed until the open succeeds, so __gc never sees garbage. */
	g = lua_newuserdatauv(L, sizeof *g, 0);
	memset(g, 0, sizeof *g);
	luaL_setmetatable(L, GROUP_MT);
	if (ps_group_open(g, ev, n, (pid_t)pid, (int)cpu, flags, &err))
		return ps_l_fail(L, &err);
	return 1;
}

static int simple(lua_State *L, int (*op)(struct ps_group *, struct ps_error *))
{
	struct ps_group *g = check_open(L);
	struct ps_error err;
	if (op(g, &err))
		return ps_l_fail(L, &err);
	lua_settop(L, 1);
	return 1;
}

static int l_enable(lua_State *L)
{
	return simple(L, ps_group_enable);
}

static int l_disable(lua_State *L)
{
	return simple(L, ps_group_disable);
}

static int l_reset(lua_State *L)
{
	return simple(L, ps_group_reset);
}

static int l_read(lua_State *L)
{
	struct ps_group *g = check_open(L);
	struct ps_reading r;
	struct ps_error err;

	if (ps_group_read(g, &r, &err))
		return ps_l_fail(L, &err);
	ps_l_push_reading(L, g->ev, &r);
	return 1;
}

static int l_events(lua_State *L)
{
	struct ps_group *g = check_open(L);
	lua_createtable(L, g->n, 0);
	for (int i = 0; i < g->n; i++) {
		lua_pushstring(L, g->ev[i].name);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

/* group:notes() -> {"msr/tsc/: counting kernel and user (...)", ...}: what the open had to change */
static int l_notes(lua_State *L)
{
	struct ps_group *g = check_open(L);
	ps_l_push_notes(L, g->ev, g->n);
	return 1;
}

static int l_close(lua_State *L)
{
	struct ps_group *g = luaL_checkudata(L, 1, GROUP_MT);
	ps_group_close(g);
	return 0;
}

static int l_tostring(lua_State *L)
{
	struct ps_group *g = luaL_checkudata(L, 1, GROUP_MT);
	luaL_Buffer b;

	luaL_buffinit(L, &b);
	luaL_addstring(&b, "perfsh.group(");
	if (g->n < 1) {
		luaL_addstring(&b, "closed)");
	} else {
		for (int i = 0; i < g->n; i++) {
			if (i)
				luaL_addchar(&b, ',');
			luaL_addstring(&b, g->ev[i].name);
		}
		lua_pushfstring(L, "; pid %d, cpu %d)", (int)g->pid, g->cpu);
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
	return 1;
}

static const luaL_Reg methods[] = {{"enable", l_enable}, {"disable", l_disable}, {"reset", l_reset}, {"read", l_read},
				   {"events", l_events}, {"notes", l_notes},	 {"close", l_close}, {NULL, NULL}};

static const luaL_Reg metamethods[] = {
    {"__gc", l_close}, {"__close", l_close}, {"__tostring", l_tostring}, {"__index", NULL}, {NULL, NULL}};

void ps_l_open_group(lua_State *L)
{
	luaL_newmetatable(L, GROUP_MT);
	luaL_setfuncs(L, metamethods, 0);
	luaL_newlib(L, methods);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	lua_pushcfunction(L, l_group);
	lua_setfield(L, -2, "group");
}
