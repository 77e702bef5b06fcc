/* lua/host.c - how the perfsh executable runs a chunk (after lua.c's docall): under a
 * traceback handler, with SIGINT, SIGTERM and SIGHUP stopping it; and how it reports an error.
 * main.c and repl.c call it; it calls neither.
 *
 * The handler (laction) does only async-signal-safe things: it reads lock-free atomics and
 * volatile sig_atomic_t flags, notes the signal (ps_l_signal_note: two such flags, then
 * ps_l_interrupt_cb, whose callbacks only set a flag) and sets a Lua hook, as lua.c does
 * (lua_sethook may be called from a signal handler).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "host.h"
#include "lhelp.h"

/* The state the handler hooks: set before the handler is installed (as lua.c's globalL). */
static lua_State *globalL;

volatile sig_atomic_t ps_host_repl_mode;

static void lstop(lua_State *L, lua_Debug *ar)
{
	int sig = ps_l_signal_caught();
	(void)ar;
	lua_sethook(L, NULL, 0, 0);
	if (sig && sig != SIGINT)
		luaL_error(L, "terminated by SIG%s", sigabbrev_np(sig));
	luaL_error(L, "interrupted!");
}

/* SIGINT, SIGTERM, SIGHUP while a chunk runs: stop the C loop running (a traced run: it only
   sets a flag) and the Lua code, except Ctrl-C in the REPL during t:run(), which pauses it. */
static void laction(int sig, siginfo_t *si, void *uc)
{
	int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
	int in_run = atomic_load(&ps_l_interrupt_cb) != NULL;
	(void)uc;
	ps_l_signal_note(sig, si && si->si_code == SI_KERNEL);
	if (sig == SIGINT && in_run && ps_host_repl_mode)
		return;
	lua_sethook(globalL, lstop, flag, 1);
}

static int msghandler(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);
	if (msg == NULL) {
		if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
			return 1;
		msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	}
	luaL_traceback(L, L, msg, 1);
	return 1;
}

int ps_host_docall(lua_State *L, int narg, int nres)
{
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	int base = lua_gettop(L) - narg, status;
	struct sigaction sa = {0}, old[3];

	lua_pushcfunction(L, msghandler);
	lua_insert(L, base);
	globalL = L;
	sa.sa_sigaction = laction;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: blocking waits return EINTR */
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	status = lua_pcall(L, narg, nres, base);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	lua_remove(L, base);
	return status;
}

void ps_host_report(lua_State *L)
{
	const char *msg = lua_tostring(L, -1);
	fprintf(stderr, "perfsh: %s\n", msg ? msg : "(error object is not a string)");
	fflush(stderr);
	lua_pop(L, 1);
}
