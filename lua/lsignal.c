/* lua/lsignal.c - SIGINT, SIGTERM and SIGHUP while perfsh measures.
 *
 * A handler only notes the signal (two flags) and calls ps_l_interrupt_cb, which stops the
 * C loop running at that moment (a traced run: the tracer's flag; core.run: forward the
 * signal to the command). The host's handlers (lua/host.c) also stop the Lua code; a recipe
 * that calls core.defer_signals() keeps running instead, sees its runs end "interrupted",
 * reads core.signal() and reports what was measured before it exits.
 */
#include <signal.h>
#include <string.h>

#include "lhelp.h"

_Atomic(ps_l_interrupt_fn) ps_l_interrupt_cb;
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "a signal handler reads a pointer: it must be lock-free");

static volatile sig_atomic_t caught; /* the last signal noted, 0: none */
static volatile sig_atomic_t seen;   /* how many were noted (wraps; compared for change) */
static int deferred;

void ps_l_signal_note(int sig, int from_tty)
{
	ps_l_interrupt_fn cb = atomic_load(&ps_l_interrupt_cb);

	caught = sig;
	seen = (seen + 1) & 0x3fffffff;
	if (cb)
		cb(sig, from_tty);
}

int ps_l_signal_caught(void)
{
	return caught;
}

int ps_l_signal_seen(void)
{
	return seen;
}

int ps_l_signal_deferred(void)
{
	return deferred;
}

void ps_l_signal_clear(void)
{
	caught = 0;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	ps_l_signal_note(sig, si && si->si_code == SI_KERNEL);
}

/* core.defer_signals(): from now on SIGINT, SIGTERM and SIGHUP only end the current run
   (t:run returns "interrupted", core.run passes them on to the command); core.signal() tells.
   Whatever perfsh inherited (ignored, blocked: a script's "cmd &", nohup), they are caught. */
static int l_defer_signals(lua_State *L)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: a blocking wait returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&set, sigs[i]);
	}
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	deferred = 1;
	(void)L;
	return 0;
}

/* core.signal() -> "SIGTERM", 15 | nil: the last of SIGINT, SIGTERM, SIGHUP received */
static int l_signal(lua_State *L)
{
	int sig = caught;

	if (!sig) {
		lua_pushnil(L);
		return 1;
	}
	ps_l_push_signame(L, sig);
	lua_pushinteger(L, sig);
	return 2;
}

void ps_l_open_signal(lua_State *L)
{
	static const luaL_Reg funcs[] = {{"defer_signals", l_defer_signals}, {"signal", l_signal}, {NULL, NULL}};
	luaL_setfuncs(L, funcs, 0);
}
