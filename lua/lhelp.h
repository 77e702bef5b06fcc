/* lua/lhelp.h - the bindings of perfsh.core: the helpers they share (lua/lhelp.c, which calls
 * no binding), each binding file's registration function (called by lua/lcore.c) and the
 * few functions one binding offers another. */
#ifndef PS_LHELP_H
#define PS_LHELP_H

#include <stdatomic.h>

#include <lauxlib.h>
#include <lua.h>

#include "error.h"
#include "events.h"
#include "group.h"
#include "stats.h"

/* Push nil, message, code (the luaL_fileresult convention) and return 3. */
int ps_l_fail(lua_State *L, const struct ps_error *err);

/* Raise err's message as a Lua error (for programmers' mistakes). */
int ps_l_raise(lua_State *L, const struct ps_error *err);

/*
 * Resolve the event names in the array part of the table at @idx (or a single string).
 * Unknown names raise "bad argument #idx to 'fn' (unknown event ...)". Returns the count.
 */
int ps_l_check_events(lua_State *L, int idx, struct ps_event *ev, int max);

/* Push a group reading as a table (see group:read() in README.md). */
void ps_l_push_reading(lua_State *L, const struct ps_event *ev, const struct ps_reading *r);

/* Push the notes of events an open had to relax (ps_event_note()), as an array of strings. */
void ps_l_push_notes(lua_State *L, const struct ps_event *ev, int n);

/* Push the name of signal @n ("SIGSEGV"). */
void ps_l_push_signame(lua_State *L, int n);

/* Push statistics as {count, sum, mean, stddev, min, p50, p90, p99, max}. */
void ps_l_push_stats(lua_State *L, const struct ps_stats *st);

/* Optional integer field of the table at @idx. */
lua_Integer ps_l_optfield_int(lua_State *L, int idx, const char *k, lua_Integer def);
int ps_l_optfield_bool(lua_State *L, int idx, const char *k, int def);

/* Registration functions of the binding files, called by luaopen_perfsh_core (lua/lcore.c). */
void ps_l_open_group(lua_State *L);   /* core.group, metatable perfsh.group */
void ps_l_open_events(lua_State *L);  /* core.resolve, core.events, core.pmu_* */
void ps_l_open_run(lua_State *L);     /* core.run, core.now, core.spin */
void ps_l_open_stats(lua_State *L);   /* core.stats, core.rank, core.median */
void ps_l_open_snapset(lua_State *L); /* core.load: .psnap files (lua/lsnapset.c) */
void ps_l_open_hist(lua_State *L);    /* core.hist: streaming log-bucket histograms (lua/lhist.c) */
void ps_l_open_topo(lua_State *L);    /* core.topology (lua/ltopo.c) */
void ps_l_open_lsq(lua_State *L);     /* core.lstsq (lua/llsq.c) */
void ps_l_open_tracee(lua_State *L);  /* core.spawn, core.attach, metatable perfsh.tracee */
/* The session of the perfsh.tracee at index 1 (raises for a closed one); the region whose id
   is at @idx (raises for no such region); and the methods of lua/lmarkers.c and lua/lhits.c
   that perfsh.tracee has too. */
struct ps_session *ps_l_tracee_check(lua_State *L);
struct ps_region_info;
const struct ps_region_info *ps_l_tracee_region(lua_State *L, struct ps_session *s, int idx);
extern const luaL_Reg ps_l_marker_methods[];
extern const luaL_Reg ps_l_hits_methods[];
void ps_l_open_sdt(lua_State *L);  /* core.sdt, core.sdt_check: SDT probes (lua/lsdt.c) */
void ps_l_open_syms(lua_State *L); /* core.symbols, core.source_files, core.code_check (lua/lsyms.c) */

struct ps_sdt_spec;
/* Push an SDT region spec's probes as {{provider =, name =}, ...} (lua/lsdt.c). */
void ps_l_push_sdt_spec(lua_State *L, const struct ps_sdt_spec *sp);

void ps_l_open_signal(lua_State *L);  /* core.defer_signals, core.signal (lua/lsignal.c) */
void ps_l_open_outfile(lua_State *L); /* core.outfile (lua/loutfile.c) */
void ps_l_open_errors(lua_State *L);  /* core.errors: error codes by name (lua/lerrors.c) */

/* Called (if set) from the handlers of SIGINT, SIGTERM and SIGHUP: stops a C loop such as a
   traced run. @from_tty: the terminal sent it (to its whole process group). */
typedef void (*ps_l_interrupt_fn)(int sig, int from_tty);
extern _Atomic(ps_l_interrupt_fn) ps_l_interrupt_cb; /* lock-free: a handler reads it */

/* lua/lsignal.c: what the handlers noted. Async-signal-safe: ps_l_signal_note. */
void ps_l_signal_note(int sig, int from_tty);
int ps_l_signal_caught(void);	/* the last signal noted, 0 if none */
int ps_l_signal_seen(void);	/* changes each time one is noted */
int ps_l_signal_deferred(void); /* core.defer_signals() was called */
void ps_l_signal_clear(void);

int luaopen_perfsh_core(lua_State *L);

#endif
