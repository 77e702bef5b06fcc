/* lua/host.h - the perfsh executable: running a chunk and reporting its error (lua/host.c,
 * called by main.c and repl.c) and the REPL (lua/repl.c, called by main.c). */
#ifndef PS_HOST_H
#define PS_HOST_H

#include <signal.h>

#include <lua.h>

/* Run the function on top of the stack (with @narg arguments below it... as lua.c's docall):
   under a traceback handler, with SIGINT interrupting it. Returns the lua_pcall status. */
int ps_host_docall(lua_State *L, int narg, int nres);

/* Print the error message on top of the stack to stderr (prefixed "perfsh: ") and pop it. */
void ps_host_report(lua_State *L);

/* Set while the REPL runs: Ctrl-C during t:run() pauses it instead of raising an error. Read
   by the signal handler, hence a volatile sig_atomic_t. */
extern volatile sig_atomic_t ps_host_repl_mode;

/* The interactive loop. Returns the exit status. */
int ps_host_repl(lua_State *L);

#endif
