/* lua/levents.c - event names and machine facts for Lua. */
#include <string.h>

#include "events.h"
#include "group.h"
#include "lhelp.h"
#include "regionspec.h"
#include "tracepoint.h"
#include "uprobe.h"

static const char *source_name(enum ps_event_source s)
{
	return s == PS_SRC_PFM		? "libpfm4"
	       : s == PS_SRC_SYSFS	? "sysfs"
	       : s == PS_SRC_TRACEPOINT ? "tracepoint"
					: "raw";
}

/* core.resolve(name) -> {name=, type=, config=, config1=, config2=, source=, user=, kernel=} | nil, msg */
static int l_resolve(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	struct ps_event ev;
	struct ps_error err;

	if (ps_event_resolve(name, &ev, &err))
		return ps_l_fail(L, &err);
	lua_createtable(L, 0, 8);
	lua_pushstring(L, ev.name);
	lua_setfield(L, -2, "name");
	lua_pushinteger(L, ev.attr.type);
	lua_setfield(L, -2, "type");
	lua_pushinteger(L, (lua_Integer)ev.attr.config);
	lua_setfield(L, -2, "config");
	lua_pushinteger(L, (lua_Integer)ev.attr.config1);
	lua_setfield(L, -2, "config1");
	lua_pushinteger(L, (lua_Integer)ev.attr.config2);
	lua_setfield(L, -2, "config2");
	lua_pushstring(L, source_name(ev.source));
	lua_setfield(L, -2, "source");
	lua_pushboolean(L, !ev.attr.exclude_user);
	lua_setfield(L, -2, "user");
	lua_pushboolean(L, !ev.attr.exclude_kernel);
	lua_setfield(L, -2, "kernel");
	return 1;
}

static unsigned parse_kinds(lua_State *L, int idx)
{
	static const char *const names[] = {"hw", "sw", "cache", "pmu", "tracepoint", "all", NULL};
	static const unsigned bits[] = {
	    PS_KIND_HW,		PS_KIND_SW,
	    PS_KIND_CACHE,	PS_KIND_PMU,
	    PS_KIND_TRACEPOINT, PS_KIND_HW | PS_KIND_SW | PS_KIND_CACHE | PS_KIND_PMU | PS_KIND_TRACEPOINT};
	return bits[luaL_checkoption(L, idx, "all", names)];
}

static int push_info(const struct ps_event_info *e, void *ud)
{
	lua_State *L = ud;
	static const char *kinds[] = {[PS_KIND_HW] = "hw",
				      [PS_KIND_SW] = "sw",
				      [PS_KIND_CACHE] = "cache",
				      [PS_KIND_PMU] = "pmu",
				      [PS_KIND_TRACEPOINT] = "tracepoint"};

	lua_createtable(L, 0, 4);
	lua_pushstring(L, e->name);
	lua_setfield(L, -2, "name");
	lua_pushstring(L, e->desc);
	lua_setfield(L, -2, "desc");
	lua_pushstring(L, kinds[e->kind]);
	lua_setfield(L, -2, "kind");
	lua_pushboolean(L, e->usable);
	lua_setfield(L, -2, "usable");
	lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
	return 0;
}

/* core.events([kind [, filter]]) -> array of {name, desc, kind, usable} */
static int l_events(lua_State *L)
{
	unsigned kinds = parse_kinds(L, 1);
	const char *filter = luaL_optstring(L, 2, NULL);

	lua_newtable(L);
	ps_events_foreach(kinds, filter, push_info, L);
	return 1;
}

/* core.suggest(name [, n]) -> array of the closest known names */
static int l_suggest(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	int max = (int)luaL_optinteger(L, 2, 3), n;
	char out[8][128];

	luaL_argcheck(L, max >= 1 && max <= 8, 2, "between 1 and 8");
	n = ps_event_suggest(name, out, max);
	lua_createtable(L, n, 0);
	for (int i = 0; i < n; i++) {
		lua_pushstring(L, out[i]);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

static int l_pmu_present(lua_State *L)
{
	lua_pushboolean(L, ps_pmu_present());
	return 1;
}

/* core.tracefs() -> the tracefs events directory in use | nil when tracefs is not mounted */
static int l_tracefs(lua_State *L)
{
	const char *dir = ps_tracepoint_root();
	if (dir)
		lua_pushstring(L, dir);
	else
		lua_pushnil(L);
	return 1;
}

static int l_pmu_counters(lua_State *L)
{
	lua_pushinteger(L, ps_pmu_counters());
	return 1;
}

static int l_paranoid(lua_State *L)
{
	char buf[400];
	ps_paranoid_text(buf, sizeof buf);
	lua_pushstring(L, buf);
	return 1;
}

/* core.scale(value, enabled, running) -> scaled, ratio */
static int l_scale(lua_State *L)
{
	double ratio;
	lua_Integer v = luaL_checkinteger(L, 1), en = luaL_checkinteger(L, 2), run = luaL_checkinteger(L, 3);

	luaL_argcheck(L, v >= 0 && en >= 0 && run >= 0, 1, "values and times are not negative");
	lua_pushnumber(L, ps_scale((uint64_t)v, (uint64_t)en, (uint64_t)run, &ratio));
	lua_pushnumber(L, ratio);
	return 2;
}

/* core.region_spec(text) -> {kind=, func=, lib=, file1=, line1=, file2=, line2=, addr1=, addr2=} | nil, msg
   (kind "func", "libfunc", "addr", "addr_range", "line_range", "sdt" with points = {{provider, name}, ...}
   or "marker" with marker = NAME; only its own fields are set) */
static int l_region_spec(lua_State *L)
{
	static const char *kinds[] = {"", "func", "libfunc", "addr", "addr_range", "line_range", "sdt", "marker"};
	struct ps_region_spec rs;
	struct ps_error err;

	if (ps_region_spec_parse(luaL_checkstring(L, 1), &rs, &err))
		return ps_l_fail(L, &err);
	lua_createtable(L, 0, 5);
	lua_pushstring(L, kinds[rs.kind]);
	lua_setfield(L, -2, "kind");
	if (rs.kind == PS_RSPEC_LIBFUNC) {
		lua_pushstring(L, rs.lib);
		lua_setfield(L, -2, "lib");
	}
	if (rs.kind == PS_RSPEC_FUNC || rs.kind == PS_RSPEC_LIBFUNC) {
		lua_pushstring(L, rs.func);
		lua_setfield(L, -2, "func");
	} else if (rs.kind == PS_RSPEC_SDT) {
		ps_l_push_sdt_spec(L, &rs.sdt);
		lua_setfield(L, -2, "points");
	} else if (rs.kind == PS_RSPEC_MARKER) {
		lua_pushstring(L, rs.marker);
		lua_setfield(L, -2, "marker");
	} else if (rs.kind == PS_RSPEC_LINE_RANGE) {
		lua_pushstring(L, rs.file1);
		lua_setfield(L, -2, "file1");
		lua_pushinteger(L, rs.line1);
		lua_setfield(L, -2, "line1");
		lua_pushstring(L, rs.file2);
		lua_setfield(L, -2, "file2");
		lua_pushinteger(L, rs.line2);
		lua_setfield(L, -2, "line2");
	} else {
		lua_pushinteger(L, (lua_Integer)rs.addr1);
		lua_setfield(L, -2, "addr1");
		if (rs.kind == PS_RSPEC_ADDR_RANGE) {
			lua_pushinteger(L, (lua_Integer)rs.addr2);
			lua_setfield(L, -2, "addr2");
		}
	}
	return 1;
}

/* core.uprobe_check(events [, sizes]) -> true | nil, "msr/tsc/ cannot be read at a uprobe (why)", code:
   whether the uprobe catcher can count events in groups of sizes (nil: one group;
   ps_uprobe_check_groups), and a trial open of them as it opens them (ps_uprobe_check_events) */
static int l_uprobe_check(lua_State *L)
{
	struct ps_event ev[PS_MAX_EVENTS];
	struct ps_error err;
	int n = lua_istable(L, 1) && luaL_len(L, 1) == 0 ? 0 : ps_l_check_events(L, 1, ev, PS_MAX_EVENTS);
	int ngroups = lua_istable(L, 2) ? (int)luaL_len(L, 2) : 1;

	if (ps_uprobe_check_groups(ev, n, ngroups, &err) || ps_uprobe_check_events(ev, n, &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static const luaL_Reg funcs[] = {{"resolve", l_resolve},
				 {"uprobe_check", l_uprobe_check},
				 {"events", l_events},
				 {"suggest", l_suggest},
				 {"pmu_present", l_pmu_present},
				 {"pmu_counters", l_pmu_counters},
				 {"paranoid", l_paranoid},
				 {"scale", l_scale},
				 {"tracefs", l_tracefs},
				 {"region_spec", l_region_spec},
				 {NULL, NULL}};

void ps_l_open_events(lua_State *L)
{
	luaL_setfuncs(L, funcs, 0);
}
