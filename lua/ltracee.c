/* lua/ltracee.c - the perfsh.tracee userdata over core/session/session.c: a traced program and
 * its regions (the records of their hits: lua/lhits.c; the marker catcher's methods:
 * lua/lmarkers.c). */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inproc_site.h"
#include "lhelp.h"
#include "session.h"
#include "uprobe.h"

#define TRACEE_MT "perfsh.tracee"

struct ltracee {
	struct ps_session *s;
};

/* The session inside t:run(), for the signal handler (interrupt_running): a lock-free atomic,
   which a handler may read (C11 7.14.1.1). */
static _Atomic(struct ps_session *) running;
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "a signal handler reads a pointer: it must be lock-free");

static void interrupt_running(int sig, int from_tty)
{
	struct ps_session *s = atomic_load(&running);
	(void)sig;
	(void)from_tty;
	if (s)
		ps_session_interrupt(s);
}

static struct ps_session *check(lua_State *L)
{
	struct ltracee *t = luaL_checkudata(L, 1, TRACEE_MT);
	if (!t->s)
		luaL_error(L, "attempt to use a closed tracee");
	return t->s;
}

struct ps_session *ps_l_tracee_check(lua_State *L)
{
	return check(L);
}

static int opt_events(lua_State *L, int idx, struct ps_event *ev)
{
	if (lua_isnoneornil(L, idx))
		return 0;
	if (lua_type(L, idx) == LUA_TTABLE && luaL_len(L, idx) == 0)
		return 0;
	return ps_l_check_events(L, idx, ev, PS_MAX_EVENTS);
}

static struct ltracee *new_ud(lua_State *L)
{
	struct ltracee *t = lua_newuserdatauv(L, sizeof *t, 0);
	t->s = NULL;
	luaL_setmetatable(L, TRACEE_MT);
	return t;
}

/* opts.group_sizes = {n1, n2, ...}: split the events into groups. */
static int set_groups(lua_State *L, int idx, struct ps_session *s, struct ps_error *err)
{
	int sizes[8], n = 0;

	if (lua_type(L, idx) != LUA_TTABLE || lua_getfield(L, idx, "group_sizes") != LUA_TTABLE) {
		if (lua_type(L, idx) == LUA_TTABLE)
			lua_pop(L, 1);
		return 0;
	}
	n = (int)luaL_len(L, -1);
	if (n > 8)
		n = 8;
	for (int i = 0; i < n; i++) {
		lua_geti(L, -1, i + 1);
		sizes[i] = (int)lua_tointeger(L, -1);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return ps_session_set_groups(s, sizes, n, err);
}

/* The files of {stdin=, stdout=, stderr=} in table @idx, into @path (NULL: perfsh's own);
   the strings stay anchored in that table. Returns @path, or NULL when there is no table. */
static const char *const *stdio_paths(lua_State *L, int idx, const char *path[3])
{
	static const char *const keys[3] = {"stdin", "stdout", "stderr"};

	if (lua_type(L, idx) != LUA_TTABLE)
		return NULL;
	for (int fd = 0; fd < 3; fd++) {
		lua_getfield(L, idx, keys[fd]);
		path[fd] = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
		lua_pop(L, 1);
	}
	return path;
}

static const char *const catchers[] = {"ptrace", "uprobe", "marker", "inproc", NULL};

/* The catcher named by field backend of table @idx: "ptrace" (default), "uprobe", "marker" or "inproc". */
static enum ps_catcher opt_catcher(lua_State *L, int idx)
{
	enum ps_catcher how = PS_CATCH_PTRACE;

	if (lua_istable(L, idx)) {
		lua_getfield(L, idx, "backend");
		if (!lua_isnil(L, -1))
			how = (enum ps_catcher)luaL_checkoption(L, -1, NULL, catchers);
		lua_pop(L, 1);
	}
	return how;
}

/* core.spawn(argv, events [, {stdin=, stdout=, stderr=, group_sizes=, backend=}]) -> tracee | nil, msg, errno */
static int l_spawn(lua_State *L)
{
	struct ps_event ev[PS_MAX_EVENTS];
	struct ps_error err;
	const char *path[3];
	int argc, nev, rc;
	char **argv;
	struct ltracee *t;

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 3); /* the strings below are anchored from index 4 on */
	argc = (int)luaL_len(L, 1);
	luaL_argcheck(L, argc >= 1, 1, "no command given");
	nev = opt_events(L, 2, ev);
	argv = lua_newuserdatauv(L, sizeof(char *) * (size_t)(argc + 1), 0);
	for (int i = 0; i < argc; i++) {
		lua_geti(L, 1, i + 1);
		argv[i] = (char *)luaL_tolstring(L, -1, NULL);
		lua_replace(L, -2);
		lua_insert(L, 4);
	}
	argv[argc] = NULL;
	t = new_ud(L);
	rc = ps_session_spawn_io(&t->s, argv, ev, nev, opt_catcher(L, 3), stdio_paths(L, 3, path), &err);
	if (rc || set_groups(L, 3, t->s, &err))
		return ps_l_fail(L, &err);
	return 1;
}

/* core.attach(pid, events [, {group_sizes = {...}, backend =}]) -> tracee | nil, msg, errno */
static int l_attach(lua_State *L)
{
	struct ps_event ev[PS_MAX_EVENTS];
	struct ps_error err;
	lua_Integer pid = luaL_checkinteger(L, 1);
	int nev = opt_events(L, 2, ev);
	struct ltracee *t;

	luaL_argcheck(L, pid > 0, 1, "a process id");
	lua_settop(L, 3);
	t = new_ud(L);
	if (ps_session_attach_by(&t->s, (pid_t)pid, ev, nev, opt_catcher(L, 3), &err) || set_groups(L, 3, t->s, &err))
		return ps_l_fail(L, &err);
	return 1;
}

/* t:follow_fork(on) */
static int l_follow_fork(lua_State *L)
{
	struct ps_session *s = check(L);
	ps_session_set_follow_fork(s, lua_toboolean(L, 2));
	return 0;
}

/* t:uprobe_ring(pages) -> true | nil, msg */
static int l_uprobe_ring(lua_State *L)
{
	struct ps_session *s = check(L);
	lua_Integer pages = luaL_checkinteger(L, 2);
	struct ps_error err;

	if (pages < 1 || pages > 65536)
		return luaL_argerror(L, 2, "a power of two from 1 to 65536");
	if (ps_session_uprobe_ring(s, (unsigned)pages, &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_add_events(lua_State *L)
{
	struct ps_session *s = check(L);
	struct ps_event ev[PS_MAX_EVENTS];
	struct ps_error err;
	int n = opt_events(L, 2, ev);

	if (ps_session_add_events(s, ev, n, &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* t:region_func(name, every_level, no_inline) -> first id (0-based), count | nil, msg */
static int l_region_func(lua_State *L)
{
	struct ps_session *s = check(L);
	const char *name = luaL_checkstring(L, 2);
	unsigned flags =
	    (lua_toboolean(L, 3) ? PS_REGION_EVERY_LEVEL : 0) | (lua_toboolean(L, 4) ? PS_REGION_NO_INLINE : 0);
	struct ps_error err;
	int before = ps_session_nregions(s);
	int id = ps_session_region_func(s, name, flags, &err);

	if (id < 0)
		return ps_l_fail(L, &err);
	lua_pushinteger(L, id);
	lua_pushinteger(L, id < before ? 1 : ps_session_nregions(s) - before);
	return 2;
}

/* t:region_sample(id, {every = N | p = P | window_ms = W, period_ms = T}) -> true | nil, msg */
static int l_region_sample(lua_State *L)
{
	struct ps_session *s = check(L);
	lua_Integer id = luaL_checkinteger(L, 2);
	struct ps_sample how = {0};
	struct ps_error err;

	luaL_checktype(L, 3, LUA_TTABLE);
	how.every = (uint64_t)ps_l_optfield_int(L, 3, "every", 0);
	lua_getfield(L, 3, "p");
	how.p = luaL_optnumber(L, -1, 0);
	lua_pop(L, 1);
	how.window_ms = (uint32_t)ps_l_optfield_int(L, 3, "window_ms", 0);
	how.period_ms = (uint32_t)ps_l_optfield_int(L, 3, "period_ms", 0);
	if (ps_session_region_sample(s, (int)id, &how, &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* t:region_args(id, n) -> true | nil, msg */
static int l_region_args(lua_State *L)
{
	struct ps_session *s = check(L);
	struct ps_error err;

	if (ps_session_region_args(s, (int)luaL_checkinteger(L, 2), (int)luaL_checkinteger(L, 3), &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* t:region_range(spec, every_level) -> id | nil, msg */
static int l_region_range(lua_State *L)
{
	struct ps_session *s = check(L);
	struct ps_error err;
	int id =
	    ps_session_region_range(s, luaL_checkstring(L, 2), lua_toboolean(L, 3) ? PS_REGION_EVERY_LEVEL : 0, &err);

	if (id < 0)
		return ps_l_fail(L, &err);
	lua_pushinteger(L, id);
	return 1;
}

/* t:region_sdt(spec, every_level [, label]) -> id | nil, msg, code (label: its name in messages) */
static int l_region_sdt(lua_State *L)
{
	struct ps_session *s = check(L);
	struct ps_error err;
	int id = ps_session_region_sdt(s, luaL_checkstring(L, 2), luaL_optstring(L, 4, NULL),
				       lua_toboolean(L, 3) ? PS_REGION_EVERY_LEVEL : 0, &err);

	if (id < 0)
		return ps_l_fail(L, &err);
	lua_pushinteger(L, id);
	return 1;
}

/* t:run([max_records [, deadline_ns [, go_on]]]) -> "exited" | "paused" | "interrupted" (SIGINT,
   SIGTERM or SIGHUP arrived; after core.defer_signals() every later run too) | nil, msg. A pause
   holds the program, or with @go_on leaves it going where the catcher allows (t:hold() holds it). */
static int l_run(lua_State *L)
{
	struct ps_session *s = check(L);
	lua_Integer max = luaL_optinteger(L, 2, 0), deadline = luaL_optinteger(L, 3, 0);
	int go_on = lua_toboolean(L, 4), seen = ps_l_signal_seen();
	struct ps_error err;
	int rc = 0;

	atomic_store(&running, s);
	atomic_store(&ps_l_interrupt_cb, interrupt_running); /* before the check: a signal after it interrupts */
	if (!(ps_l_signal_deferred() && ps_l_signal_caught()))
		rc = (go_on ? ps_session_run_on : ps_session_run)(s, (uint64_t)max, (uint64_t)deadline, &err);
	atomic_store(&ps_l_interrupt_cb, NULL);
	atomic_store(&running, NULL);
	if (rc < 0)
		return ps_l_fail(L, &err);
	if (rc == 0 && (ps_l_signal_seen() != seen || ps_l_signal_deferred()) && ps_l_signal_caught())
		lua_pushliteral(L, "interrupted");
	else
		lua_pushstring(L, rc == 1 ? "exited" : "paused");
	return 1;
}

/* t:hold() -> true | nil, msg: hold the program a run with go_on left going (ps_session_hold). */
static int l_hold(lua_State *L)
{
	struct ps_error err;

	if (ps_session_hold(check(L), &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_status(lua_State *L)
{
	struct ps_session *s = check(L);
	int exited, code, signo;

	if (!ps_session_status(s, &exited, &code, &signo)) {
		lua_pushnil(L);
		return 1;
	}
	lua_createtable(L, 0, 4);
	lua_pushboolean(L, signo == 0);
	lua_setfield(L, -2, "exited");
	lua_pushinteger(L, code);
	lua_setfield(L, -2, "code");
	lua_pushinteger(L, signo);
	lua_setfield(L, -2, "signo");
	if (signo) {
		ps_l_push_signame(L, signo);
		lua_setfield(L, -2, "signal");
	}
	return 1;
}

static int l_detach(lua_State *L)
{
	struct ps_session *s = check(L);
	struct ps_error err;
	if (ps_session_detach(s, &err))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_close(lua_State *L)
{
	struct ltracee *t = luaL_checkudata(L, 1, TRACEE_MT);
	ps_session_free(t->s);
	t->s = NULL;
	return 0;
}

static int l_tostring(lua_State *L)
{
	struct ltracee *t = luaL_checkudata(L, 1, TRACEE_MT);
	if (!t->s)
		lua_pushliteral(L, "perfsh.tracee(closed)");
	else
		lua_pushfstring(L, "perfsh.tracee(pid %d, %d regions, %d records)", (int)ps_session_pid(t->s),
				ps_session_nregions(t->s), (int)ps_session_nrecords(t->s));
	return 1;
}

static int l_info(lua_State *L)
{
	struct ps_session *s = check(L);
	int nsites, fast = ps_session_uprobe_fast_sites(s, &nsites);

	lua_createtable(L, 0, 8);
	lua_pushinteger(L, ps_session_pid(s));
	lua_setfield(L, -2, "pid");
	lua_pushinteger(L, (lua_Integer)ps_session_stops(s));
	lua_setfield(L, -2, "stops");
	lua_pushstring(L, catchers[ps_session_catcher(s)]);
	lua_setfield(L, -2, "catcher");
	lua_pushinteger(L, (lua_Integer)ps_session_lost(s));
	lua_setfield(L, -2, "lost");
	lua_pushinteger(L, fast);
	lua_setfield(L, -2, "fast_sites");
	lua_pushinteger(L, nsites);
	lua_setfield(L, -2, "sites");
	lua_pushinteger(L, (lua_Integer)ps_session_nrecords(s));
	lua_setfield(L, -2, "records");
	lua_pushinteger(L, (lua_Integer)ps_session_dropped(s));
	lua_setfield(L, -2, "dropped");
	lua_pushinteger(L, ps_session_nregions(s));
	lua_setfield(L, -2, "regions");
	lua_createtable(L, ps_session_nevents(s), 0);
	for (int i = 0; i < ps_session_nevents(s); i++) {
		lua_pushstring(L, ps_session_event(s, i)->name);
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "events");
	const char *notice = ps_session_notice(s);
	if (notice[0]) {
		lua_pushstring(L, notice);
		lua_setfield(L, -2, "notice");
	}
	return 1;
}

const struct ps_region_info *ps_l_tracee_region(lua_State *L, struct ps_session *s, int idx)
{
	lua_Integer id = luaL_checkinteger(L, idx);
	const struct ps_region_info *ri = ps_session_region(s, (int)id);
	if (!ri)
		luaL_argerror(L, idx, "no such region");
	return ri;
}

/* t:region_info(id) -> {id, name, kind, addr, entries, running, entry_counter, hits, incomplete, dropped, why, pending,
 * reading} */
static int l_region_info(lua_State *L)
{
	struct ps_session *s = check(L);
	const struct ps_region_info *ri = ps_l_tracee_region(L, s, 2);

	lua_createtable(L, 0, 11);
	lua_pushinteger(L, ri->id);
	lua_setfield(L, -2, "id");
	lua_pushstring(L, ri->name);
	lua_setfield(L, -2, "name");
	lua_pushstring(L, ps_region_kind_name(ri->kind));
	lua_setfield(L, -2, "kind");
	lua_pushinteger(L, (lua_Integer)ri->addr);
	lua_setfield(L, -2, "addr");
	lua_pushinteger(L, (lua_Integer)ps_session_entries(s, ri->id));
	lua_setfield(L, -2, "entries");
	lua_pushinteger(L, (lua_Integer)ps_session_open_calls(s, ri->id));
	lua_setfield(L, -2, "running");
	lua_pushboolean(L, ri->sample_every || ri->sample_p > 0 || ri->period_ms);
	lua_setfield(L, -2, "sampled");
	lua_pushinteger(L, (lua_Integer)ri->late);
	lua_setfield(L, -2, "late_samples");
	lua_pushstring(L, ps_counter_name(ri->counter));
	lua_setfield(L, -2, "entry_counter");
	lua_pushinteger(L, (lua_Integer)ri->hits);
	lua_setfield(L, -2, "hits");
	lua_pushinteger(L, (lua_Integer)ri->incomplete);
	lua_setfield(L, -2, "incomplete");
	lua_pushboolean(L, ri->dropped);
	lua_setfield(L, -2, "dropped");
	lua_pushboolean(L, ri->pending);
	lua_setfield(L, -2, "pending");
	lua_pushboolean(L, ri->flags & PS_REGION_EVERY_LEVEL);
	lua_setfield(L, -2, "every_level");
	if (ri->why[0]) {
		lua_pushstring(L, ri->why);
		lua_setfield(L, -2, "why");
	}
	if (ri->reading[0]) {
		lua_pushstring(L, ri->reading);
		lua_setfield(L, -2, "reading");
	}
	return 1;
}

static const luaL_Reg methods[] = {{"add_events", l_add_events},
				   {"follow_fork", l_follow_fork},
				   {"uprobe_ring", l_uprobe_ring},
				   {"region_func", l_region_func},
				   {"region_range", l_region_range},
				   {"region_sdt", l_region_sdt},
				   {"region_sample", l_region_sample},
				   {"region_args", l_region_args},
				   {"run", l_run},
				   {"hold", l_hold},
				   {"status", l_status},
				   {"detach", l_detach},
				   {"close", l_close},
				   {"info", l_info},
				   {"region_info", l_region_info},
				   {NULL, NULL}};

static const luaL_Reg metamethods[] = {
    {"__gc", l_close}, {"__close", l_close}, {"__tostring", l_tostring}, {"__index", NULL}, {NULL, NULL}};

/* core.uprobe_available() -> true | false, why */
static int l_uprobe_available(lua_State *L)
{
	char why[256];

	lua_pushboolean(L, ps_uprobe_available(why, sizeof why));
	if (lua_toboolean(L, -1))
		return 1;
	lua_pushstring(L, why);
	return 2;
}

/* core.inproc_available() -> true | false, why: the in-process agent can be preloaded */
static int l_inproc_available(lua_State *L)
{
	char why[PATH_MAX + 64];

	lua_pushboolean(L, ps_inproc_available(why, sizeof why));
	if (lua_toboolean(L, -1))
		return 1;
	lua_pushstring(L, why);
	return 2;
}

static const luaL_Reg funcs[] = {{"spawn", l_spawn},
				 {"attach", l_attach},
				 {"uprobe_available", l_uprobe_available},
				 {"inproc_available", l_inproc_available},
				 {NULL, NULL}};

void ps_l_open_tracee(lua_State *L)
{
	luaL_newmetatable(L, TRACEE_MT);
	luaL_setfuncs(L, metamethods, 0);
	luaL_newlib(L, methods);
	luaL_setfuncs(L, ps_l_marker_methods, 0);
	luaL_setfuncs(L, ps_l_hits_methods, 0);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	luaL_setfuncs(L, funcs, 0);
}
