/* lua/lrun.c - core.run (count a child command), core.now, core.spin, and where commands run:
   core.affinity, core.current_cpu. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"
#include "lhelp.h"
#include "run.h"

/* The terminal sends its keys' signals to the command itself (same process group). */
static void forward(int sig, int from_tty)
{
	ps_run_forward(sig, from_tty);
}

/* core.run(argv, events) -> a reading (see group:read) plus exited, code, signo, signal, wall_ns,
   passed (the signal perfsh passed on), killed (perfsh killed it: it ignored that or outlived
   it) | nil, msg, errno. events {}: run it, counting nothing. */
static int l_run(lua_State *L)
{
	struct ps_event ev[PS_MAX_EVENTS];
	struct ps_run_result res;
	struct ps_error err;
	int argc, n, rc;
	char **argv;

	luaL_checktype(L, 1, LUA_TTABLE);
	argc = (int)luaL_len(L, 1);
	luaL_argcheck(L, argc >= 1, 1, "no command given");
	/* no events ({}): only run it, passing signals on */
	n = lua_istable(L, 2) && luaL_len(L, 2) == 0 ? 0 : ps_l_check_events(L, 2, ev, PS_MAX_EVENTS);
	argv = lua_newuserdatauv(L, sizeof(char *) * (size_t)(argc + 1), 0); /* freed by the GC */
	for (int i = 0; i < argc; i++) {
		lua_geti(L, 1, i + 1);
		argv[i] = (char *)luaL_tolstring(L, -1, NULL); /* anchored on the stack until we return */
		lua_replace(L, -2);
		lua_insert(L, 3);
	}
	argv[argc] = NULL;
	atomic_store(&ps_l_interrupt_cb, forward); /* a signal perfsh gets is the command's too */
	rc = ps_run(argv, ev, n, &res, &err);
	atomic_store(&ps_l_interrupt_cb, NULL);
	if (rc)
		return ps_l_fail(L, &err);
	ps_l_push_reading(L, ev, &res.reading);
	lua_pushboolean(L, res.exited);
	lua_setfield(L, -2, "exited");
	lua_pushinteger(L, res.code);
	lua_setfield(L, -2, "code");
	lua_pushinteger(L, res.signo);
	lua_setfield(L, -2, "signo");
	lua_pushinteger(L, (lua_Integer)res.wall_ns);
	lua_setfield(L, -2, "wall_ns");
	if (res.passed) {
		ps_l_push_signame(L, res.passed);
		lua_setfield(L, -2, "passed");
	}
	lua_pushboolean(L, res.killed);
	lua_setfield(L, -2, "killed");
	ps_l_push_notes(L, res.ev, n);
	lua_setfield(L, -2, "notes");
	if (res.signo) {
		ps_l_push_signame(L, res.signo);
		lua_setfield(L, -2, "signal");
	}
	return 1;
}

/* core.signame(n) -> "SIGSEGV" */
static int l_signame(lua_State *L)
{
	ps_l_push_signame(L, (int)luaL_checkinteger(L, 1));
	return 1;
}

static int l_now(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)ps_now_ns());
	return 1;
}

/*
 * core.spin(n): a calibration loop of exactly 2*n + 3 user-space instructions on x86-64
 * (mov, test, jz; then dec + jnz per iteration), for measuring what a probe adds.
 */
static int l_spin(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	luaL_argcheck(L, n >= 0, 1, "not negative");
#if defined(__x86_64__)
	__asm__ volatile("mov %0, %%rcx\n\t"
			 "test %%rcx, %%rcx\n\t"
			 "jz 2f\n"
			 "1:\n\t"
			 "dec %%rcx\n\t"
			 "jnz 1b\n"
			 "2:\n"
			 :
			 : "r"((unsigned long)n)
			 : "rcx", "cc");
#else
	for (volatile lua_Integer i = 0; i < n; i++)
		;
#endif
	return 0;
}

/*
 * core.affinity([cpus]): the CPUs perfsh's thread may run on, as an array; with an array of CPU
 * numbers, first sets them (the programs perfsh starts after that inherit them) and returns the
 * CPUs it had. nil, message, errno when the kernel refuses.
 */
static int l_affinity(lua_State *L)
{
	cpu_set_t old, set;

	if (sched_getaffinity(0, sizeof old, &old) < 0)
		return luaL_fileresult(L, 0, "sched_getaffinity");
	if (!lua_isnoneornil(L, 1)) {
		luaL_checktype(L, 1, LUA_TTABLE);
		CPU_ZERO(&set);
		for (lua_Integer i = 1, n = (lua_Integer)luaL_len(L, 1); i <= n; i++) {
			lua_rawgeti(L, 1, i);
			lua_Integer cpu = luaL_checkinteger(L, -1);
			luaL_argcheck(L, cpu >= 0 && cpu < CPU_SETSIZE, 1, "CPU numbers from 0");
			CPU_SET((int)cpu, &set);
			lua_pop(L, 1);
		}
		if (sched_setaffinity(0, sizeof set, &set) < 0)
			return luaL_fileresult(L, 0, "sched_setaffinity");
	}
	lua_createtable(L, CPU_COUNT(&old), 0);
	for (int cpu = 0, k = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &old)) {
			lua_pushinteger(L, cpu);
			lua_rawseti(L, -2, ++k);
		}
	return 1;
}

/* core.current_cpu(): the CPU perfsh's thread runs on now. */
static int l_current_cpu(lua_State *L)
{
	int cpu = sched_getcpu();

	if (cpu < 0)
		return luaL_fileresult(L, 0, "sched_getcpu");
	lua_pushinteger(L, cpu);
	return 1;
}

static const luaL_Reg funcs[] = {{"run", l_run},
				 {"now", l_now},
				 {"spin", l_spin},
				 {"signame", l_signame},
				 {"affinity", l_affinity},
				 {"current_cpu", l_current_cpu},
				 {NULL, NULL}};

void ps_l_open_run(lua_State *L)
{
	luaL_setfuncs(L, funcs, 0);
}
