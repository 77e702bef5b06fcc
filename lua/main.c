/* lua/main.c - the perfsh executable: a Lua 5.4 host with perfsh.core built in.
 *
 *   perfsh                       the REPL
 *   perfsh script.lua args...    run a script (arg[0] = script, arg[1..] = args)
 *   perfsh -e 'code'             run code
 *   perfsh NAME args...          run the recipe NAME (scripts/NAME.lua)
 *   perfsh --list [hw|sw|cache|pmu|tracepoint|all|WORD], --list sdt BINARY, --help, --version
 *
 * Modules and recipes are found beside the executable: in a source tree (lua/, scripts/), in
 * an installed prefix (share/lua/5.4, share/perfsh/scripts) or in a LuaRocks tree (share/lua/5.4,
 * the recipes in share/lua/5.4/perfsh/recipes). No environment variable is needed.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "host.h"
#include "lhelp.h"

static const char usage[] =
    "usage: perfsh [options] [script.lua | recipe] [args...]\n"
    "\n"
    "Hardware counters for exactly the code you care about: a Lua 5.4 shell over perf event\n"
    "groups, uprobes and ptrace breakpoints, and snapshot buffers.\n"
    "\n"
    "  perfsh                      start the REPL (perfsh and perfsh.core are loaded; Tab\n"
    "                              completes, help lists the API, history in ~/.perfsh_history\n"
    "                              or $PERFSH_HISTORY)\n"
    "  perfsh script.lua args...   run a Lua script; arg[1..] are its arguments\n"
    "  perfsh RECIPE args...       run a recipe from the recipe folder:\n"
    "      stat -r FUNC|FILE:L1-L2 CMD    count a function or line range per hit\n"
    "      tail -r FUNC CMD               log the slow hits as they happen\n"
    "      report FILE.psnap              tables from a saved run\n"
    "      attribute -r FUNC --args A,B CMD   cost per unit of each argument\n"
    "      ipc -r FUNC CMD, count CMD     IPC per hit; a whole command like perf stat\n"
    "      check -r FUNC --baseline F CMD   regression gate (exit 1), --save-baseline F\n"
    "      compare -r A -r B CMD              regions (or -- CMD1 -- CMD2) side by side\n"
    "      kinds -r marker:M --field K CMD    a marker's cost per kind of hit, inner markers apart\n"
    "    (perfsh RECIPE --help for each)\n"
    "  perfsh recipes              list the recipes\n"
    "\n"
    "options:\n"
    "  -e CODE          run CODE (may be given more than once; before any script)\n"
    "  -i               enter the REPL after running -e code or the script\n"
    "  --list [KIND|WORD]  list the events that resolve and open on this machine;\n"
    "                   KIND is hw, sw, cache, pmu, tracepoint, presets or all (default);\n"
    "                   any other WORD lists the names containing it (--list syscalls)\n"
    "  --list sdt BINARY   list the SDT probes (<sys/sdt.h>) of BINARY, one line each\n"
    "  -h, --help       this text\n"
    "  -v, --version    the version\n"
    "\n"
    "Events are named as perf and libpfm4 name them (instructions, cycles, task-clock,\n"
    "perf::cycles:u), as tracepoints (syscalls:sys_enter_write), as sysfs PMU events and terms\n"
    "(msr/tsc/, cpu/event=0xc0,umask=0x0/), or as raw codes (r00c0). Only user space is counted\n"
    "unless an event says :k (tracepoints count wherever they fire; a PMU that cannot count user\n"
    "space alone counts both, and perfsh says so).\n"
    "\n"
    "environment:\n"
    "  PERFSH_SAMPLING  breakpoint, uprobe or int3: how sampled regions count every call\n"
    "                   (default: a hardware breakpoint where one fires, else a uprobe, else\n"
    "                   an int3 stop per call)\n"
    "  PERFSH_BACKEND   auto (default), uprobe or ptrace: how recipes and perfsh.spawn/attach\n"
    "                   catch region hits when --backend or backend = does not say; auto takes,\n"
    "                   for a program perfsh starts, inproc where it measures every region (no\n"
    "                   trap), else uprobe where it works (the program never stops for a hit),\n"
    "                   else ptrace with a note saying why; for -p, uprobe, else ptrace\n"
    "                   (marker:NAME regions of a started program\n"
    "                   take the marker catcher: the program's marker library measures them\n"
    "                   and perfsh drains its records)\n";

/* ---- paths ---- */

static char lua_dir[PATH_MAX + 64], script_dir[PATH_MAX + 128];

static int is_file(const char *p)
{
	return access(p, R_OK) == 0;
}

/* Find lua/ and scripts/ beside the executable, in a tree or an installed prefix. */
static void find_dirs(void)
{
	char exe[PATH_MAX], dir[PATH_MAX], probe[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n <= 0)
		return;
	exe[n] = '\0';
	snprintf(dir, sizeof dir, "%s", dirname(exe));
	snprintf(probe, sizeof probe, "%s/lua/perfsh/init.lua", dir);
	if (is_file(probe)) {
		snprintf(lua_dir, sizeof lua_dir, "%s/lua", dir);
		snprintf(script_dir, sizeof script_dir, "%s/scripts", dir);
		return;
	}
	snprintf(probe, sizeof probe, "%s/../share/lua/5.4/perfsh/init.lua", dir);
	if (is_file(probe)) {
		snprintf(lua_dir, sizeof lua_dir, "%s/../share/lua/5.4", dir);
		snprintf(script_dir, sizeof script_dir, "%s/../share/perfsh/scripts", dir);
		if (!is_file(script_dir)) /* a LuaRocks tree: the recipes are beside the modules */
			snprintf(script_dir, sizeof script_dir, "%s/perfsh/recipes", lua_dir);
		return;
	}
	/* build/perfsh or build-san/perfsh in a source tree */
	snprintf(probe, sizeof probe, "%s/../lua/perfsh/init.lua", dir);
	if (is_file(probe)) {
		snprintf(lua_dir, sizeof lua_dir, "%s/../lua", dir);
		snprintf(script_dir, sizeof script_dir, "%s/../scripts", dir);
	}
}

static void setup_paths(lua_State *L)
{
	lua_getglobal(L, "package");
	if (lua_dir[0]) {
		lua_getfield(L, -1, "path");
		lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", lua_dir, lua_dir, lua_tostring(L, -1));
		lua_setfield(L, -3, "path");
		lua_pop(L, 1);
	}
	/* perfsh.core is built in: no core.so needed. */
	lua_getfield(L, -1, "preload");
	lua_pushcfunction(L, luaopen_perfsh_core);
	lua_setfield(L, -2, "perfsh.core");
	lua_pop(L, 1);
	/* Where the recipes are, for perfsh itself and for `perfsh recipes`. */
	lua_createtable(L, 0, 2);
	lua_pushstring(L, script_dir);
	lua_setfield(L, -2, "scripts");
	lua_pushstring(L, lua_dir);
	lua_setfield(L, -2, "lua");
	lua_getfield(L, -2, "loaded");
	lua_insert(L, -2);
	lua_setfield(L, -2, "perfsh.host");
	lua_pop(L, 2);
}

/* Make the global 'arg' table: arg[0] = script, arg[1..] = its arguments. */
static void create_arg(lua_State *L, char **argv, int argc, int script)
{
	lua_createtable(L, argc - script - 1, script + 1);
	for (int i = 0; i < argc; i++) {
		lua_pushstring(L, argv[i]);
		lua_rawseti(L, -2, i - script);
	}
	lua_setglobal(L, "arg");
}

static int run_chunk(lua_State *L, int status)
{
	if (status == LUA_OK)
		status = ps_host_docall(L, 0, 0);
	if (status != LUA_OK)
		ps_host_report(L);
	return status;
}

/* Run the script at @path with the arguments after argv[idx]. Returns the exit status. */
static int run_script(lua_State *L, const char *path, char **argv, int argc, int idx)
{
	int status = luaL_loadfile(L, path), n = 0;

	if (status != LUA_OK) {
		ps_host_report(L);
		return 1;
	}
	if (!lua_checkstack(L, argc - idx + LUA_MINSTACK)) { /* the arguments are pushed as the chunk's ... */
		fprintf(stderr, "perfsh: %d arguments are too many for a script; give fewer\n", argc - idx - 1);
		return 1;
	}
	for (int i = idx + 1; i < argc; i++, n++)
		lua_pushstring(L, argv[i]);
	status = ps_host_docall(L, n, 0);
	if (status != LUA_OK) {
		ps_host_report(L);
		return 1;
	}
	return 0;
}

/* A recipe is a bare name with scripts/NAME.lua beside it. */
static int recipe_path(const char *name, char *out, size_t n)
{
	if (!script_dir[0] || strchr(name, '/') || strstr(name, ".lua"))
		return 0;
	snprintf(out, n, "%s/%s.lua", script_dir, name);
	return is_file(out);
}

/* Load a library module and call one of its functions with a string argument. */
static int call_lib(lua_State *L, const char *module, const char *fn, const char *argument)
{
	lua_getglobal(L, "require");
	lua_pushstring(L, module);
	if (ps_host_docall(L, 1, 1) != LUA_OK) {
		ps_host_report(L);
		return 1;
	}
	lua_getfield(L, -1, fn);
	lua_remove(L, -2);
	if (argument)
		lua_pushstring(L, argument);
	else
		lua_pushnil(L);
	if (ps_host_docall(L, 1, 1) != LUA_OK) {
		ps_host_report(L);
		return 1;
	}
	int rc = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
	lua_pop(L, 1);
	return rc;
}

/* SIGINT, SIGTERM and SIGHUP reach perfsh even when its launcher blocked them; the handlers
   are perfsh's (ps_host_docall, core.defer_signals), whatever it inherited. */
static void unblock_stop_signals(void)
{
	sigset_t stop;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &stop, NULL);
}

/* What the command line asked for so far: -e code ran, -i given, or perfsh is done (-h, -v,
   --list, a bad option or failed -e code) with the status. */
struct cmdline {
	int ran, interactive, done, status;
};

/* One option at argv[*i] (-e consumes its code too). */
static void option(lua_State *L, int argc, char **argv, int *i, struct cmdline *c)
{
	const char *a = argv[*i];

	c->done = 1;
	if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
		fputs(usage, stdout);
	} else if (!strcmp(a, "-v") || !strcmp(a, "--version")) {
		printf("perfsh %s (%s)\n", PS_VERSION, LUA_RELEASE);
	} else if (!strcmp(a, "--list") && *i + 1 < argc && !strcmp(argv[*i + 1], "sdt")) {
		c->status = call_lib(L, "perfsh", "print_sdt", *i + 2 < argc ? argv[*i + 2] : NULL);
	} else if (!strcmp(a, "--list")) {
		c->status = call_lib(L, "perfsh", "print_events", *i + 1 < argc ? argv[*i + 1] : NULL);
	} else if (!strcmp(a, "-i")) {
		c->interactive = 1;
		c->done = 0;
	} else if (!strcmp(a, "-e")) {
		if (++*i >= argc) {
			fprintf(stderr, "perfsh: -e needs code after it\n");
			c->status = 2;
			return;
		}
		create_arg(L, argv, argc, *i);
		if (run_chunk(L, luaL_loadbuffer(L, argv[*i], strlen(argv[*i]), "=(command line)")) != LUA_OK) {
			c->status = 1;
			return;
		}
		c->ran = 1;
		c->done = 0;
	} else {
		fprintf(stderr, "perfsh: unknown option '%s' (perfsh --help lists them)\n", a);
		c->status = 2;
	}
}

/* Run argv[i]: `recipes`, a recipe's name or a script. Returns the exit status. */
static int run_target(lua_State *L, int argc, char **argv, int i)
{
	const char *target = argv[i];
	char path[2 * PATH_MAX];

	create_arg(L, argv, argc, i);
	if (!strcmp(target, "recipes"))
		return call_lib(L, "perfsh", "print_recipes", NULL);
	if (recipe_path(target, path, sizeof path))
		return run_script(L, path, argv, argc, i);
	if (is_file(target))
		return run_script(L, target, argv, argc, i);
	fprintf(stderr, "perfsh: '%s' is neither a script nor a recipe (perfsh recipes lists the recipes)\n", target);
	return 2;
}

int main(int argc, char **argv)
{
	lua_State *L = luaL_newstate();
	struct cmdline c = {0};
	int i;

	if (!L) {
		fprintf(stderr, "perfsh: cannot create the Lua state: out of memory\n");
		return 1;
	}
	unblock_stop_signals();
	luaL_openlibs(L);
	find_dirs();
	setup_paths(L);
	/* Scripts, -e code and the REPL see the library as the global 'perfsh'. */
	lua_getglobal(L, "require");
	lua_pushliteral(L, "perfsh");
	if (ps_host_docall(L, 1, 1) != LUA_OK) {
		ps_host_report(L);
		lua_close(L);
		return 1;
	}
	lua_setglobal(L, "perfsh");
	for (i = 1; i < argc && !c.done; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (argv[i][0] != '-' || !argv[i][1])
			break;
		option(L, argc, argv, &i, &c);
	}
	if (!c.done && i < argc) {
		c.status = run_target(L, argc, argv, i);
		c.ran = 1;
	}
	if (!c.done && (!c.ran || c.interactive))
		c.status = ps_host_repl(L);
	lua_close(L);
	return c.status;
}
