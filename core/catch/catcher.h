/* core/catch/catcher.h - a catcher: the part that sees a program's hits and hands them to the hit
 * path, behind one interface.
 *
 * The session (core/session/) starts one catcher with ps_catch_new() and from then on only calls
 * its ops, through c->ops: it never asks which catcher it holds. What a catcher can do is in
 * the flags it declares (enum ps_catch_caps). A catcher owns its own state; what it shares with
 * the session is struct ps_catch_env, which the session keeps and lends it: the events, the
 * region table, the hit path, the limits of the run, the notices. A catcher calls down (hit
 * path, process control, binary, events) and into env's callbacks, never into the session.
 *
 * The catchers, each a folder of its own that calls no other:
 *   ptrace/  breakpoints: the program stops at each hit (core/proc/tracer.h)
 *   uprobe/  uprobes: the kernel samples the counters at each hit, the program never stops
 *   marker/  the marker library in the program measures its own markers into shared memory;
 *            with --backend inproc (ps_catch_inproc_ops) that library is the agent, preloaded
 *            (or loaded into a running process, -p), which patches function entries and line
 *            ranges' points to measure them the same way
 */
#ifndef PS_CATCHER_H
#define PS_CATCHER_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "events.h"
#include "hitpath.h"
#include "markshm.h"
#include "region.h"

struct ps_tracer;
struct ps_sample;
struct ps_marker_status;

#define PS_MAX_GROUPS 4

/**
 * struct ps_catch_env - what the session lends its catcher. The session writes the events,
 * groups, regions and limits; a catcher reads them, counts entries in the regions, writes its
 * notices and its failure here, and calls the session back through the two callbacks.
 * @ev, @nev, @ngroups, @gsize: the events per thread, in @ngroups groups of @gsize[g] each
 * @nargs:   argument words in every record (a catcher may set it at its start)
 * @reg:     the region table (PS_MAX_REGIONS), *@nreg of them in use
 * @hp:      the hit path every hit goes to
 * @pid:     the program's process id, once started
 * @started: the first run has begun
 * @deadline, @intr: when a run pauses, besides the records the hit path was allowed to write
 *           (ps_hitpath_limit(); ps_catch_pause_due())
 * @holds:   the run holds the program when it pauses (ps_session_run, not ps_session_run_on): a
 *           catcher that cannot stop the program at once may keep what comes past the limit
 *           for the next run
 * @fail, @failed: an error met inside a callback of the catcher, for the run to return
 * @notice:  messages worth showing once, joined by newlines (ps_catch_notice())
 * @libs_mapped: a stopping catcher reached main() (@final = 1) or saw the dynamic loader change
 *           the link map (0): the session arms what it could not before (libraries' regions);
 *           0, or -1 to abort the run
 * @unwinds: the program can unwind exceptions (C++, Rust): 1, 0, or -1 not known; set before a
 *           function region is armed (a catcher that would move a return address refuses it)
 * @exec:    a stopping catcher saw the program exec (its breakpoints are gone): the session
 *           arms every region again in the new image; 0, or -1 to abort
 * @owner:   passed to the callbacks
 */
struct ps_catch_env {
	struct ps_event ev[PS_MAX_EVENTS];
	int nev, ngroups, gsize[PS_MAX_GROUPS];
	int nargs;
	struct ps_region_info *reg;
	int nreg;
	struct ps_hitpath *hp;
	pid_t pid;
	int started;
	uint64_t deadline;
	int holds;
	volatile sig_atomic_t intr;
	struct ps_error fail;
	int failed;
	char notice[2048];
	int unwinds;
	int (*libs_mapped)(void *owner, int final);
	int (*exec)(void *owner);
	void *owner;
};

/* What a catcher can do: the flags it declares in its ops. */
enum ps_catch_caps {
	PS_CATCH_STOPS = 1 << 0,       /* stops the program at each hit: main(), the loader and the unwinder are
					  watched, libraries mapped later are armed when they are */
	PS_CATCH_INLINED = 1 << 1,     /* catches the inlined copies of a function (they have no entry) */
	PS_CATCH_CODE = 1 << 2,	       /* arms code: functions, lines, addresses */
	PS_CATCH_FILES = 1 << 3,       /* arms sites in files (SDT probes, libraries not mapped yet) */
	PS_CATCH_MARKERS = 1 << 4,     /* arms the marker library's markers by name */
	PS_CATCH_EVENTS_LATE = 1 << 5, /* events and groups may change after the start (before the first run) */
};

/* What a point of a region means to the catcher that arms it. */
enum ps_catch_role {
	PS_ROLE_ENTRY = 1, /* a function region's entry (its return comes too) */
	PS_ROLE_START,	   /* a range region's start */
	PS_ROLE_END,	   /* a range region's end */
	PS_ROLE_POINT,	   /* start and end at once (a single SDT probe) */
	PS_ROLE_MAIN,	   /* main(): the libraries are mapped (stopping catchers, region -1) */
	PS_ROLE_UNWIND,	   /* the unwinder starts: put real return addresses back (region -1) */
	PS_ROLE_CATCH,	   /* an exception was caught: swap them again (region -1) */
	PS_ROLE_LOAD,	   /* the dynamic loader changed the link map (_dl_debug_state, region -1) */
};

/**
 * struct ps_catch_point - where a region's point is, in one of three ways.
 * @addr:   a run-time address in the program (when @path and @name are NULL)
 * @path, @offset, @ref_ctr_offset: a site in a file (@ref_ctr_offset: the semaphore, 0 none)
 * @name:   a marker's name (the marker library's)
 * @bp_kind: for an address: PS_BP_FUNC (an entry) or PS_BP_ADDR
 * @region: the region id, or -1 for a point of the catcher's own (main, loader, unwinder)
 * @role:   what the point means
 */
/* The kind of a code address armed: a function's entry (its return can be caught) or any other. */
enum { PS_BP_FUNC = 1, PS_BP_ADDR = 2 };

struct ps_catch_point {
	uint64_t addr;
	const char *path;
	uint64_t offset, ref_ctr_offset;
	const char *name;
	int bp_kind;
	int region;
	enum ps_catch_role role;
};

struct ps_catch;

/**
 * struct ps_catcher_ops - one catcher's implementation. Every op takes the catcher first;
 * the optional ones may be NULL (the session says what is missing).
 * @name:   "ptrace", "uprobe", "marker": the name saved files carry
 * @caps:   enum ps_catch_caps
 * @start:  start @argv held at its first instruction, or attach to @pid (@argv NULL), sharing
 *          @env; *@c receives the catcher. 0, or -1 with @err
 * @run:    one run: 1 the program ended, 0 paused (env's limits or an interrupt), -1 failed
 * @hold:   after a run returned 0: stop the program until the next run, every record drained
 * @interrupt: make the run return 0 soon (async-signal-safe)
 * @detach: let the program go on unharmed, every record drained
 * @free:   a spawned program still running is killed, an attached one let go; @c is freed
 * @status: how the program ended (as ps_tracer_status()): 1 ended, 0 not yet
 * @lost:   records the catcher dropped (full rings)
 * @arm:    arm point @p; 0 (or a point id >= 0), or -1 with @err
 * @disarm: forget the points of region @region armed last (a region that failed to arm)
 * @events: the events or groups in env changed before the first run (optional)
 * @sample: sample region @id as @how says (optional: refused)
 * @entries: a sampled region's entries when the catcher counts them itself: 1 with *@n, else 0
 * @tracer: the tracer that follows the program (its pid, stops, load biases, forks)
 * @ring:   the size of a per-thread ring in pages (optional)
 * @fast_sites: of *@nsites sites, how many the kernel calls without a trap (optional)
 * @policy, @marker_status: the marker library's policy and status (optional)
 */
struct ps_catcher_ops {
	const char *name;
	unsigned caps;
	int (*start)(struct ps_catch **c, struct ps_catch_env *env, char *const argv[], pid_t pid,
		     struct ps_error *err);
	int (*run)(struct ps_catch *c, struct ps_error *err);
	int (*hold)(struct ps_catch *c, struct ps_error *err);
	void (*interrupt)(struct ps_catch *c);
	int (*detach)(struct ps_catch *c, struct ps_error *err);
	void (*free)(struct ps_catch *c);
	int (*status)(const struct ps_catch *c, int *exited, int *code, int *signo);
	uint64_t (*lost)(const struct ps_catch *c);
	int (*arm)(struct ps_catch *c, const struct ps_catch_point *p, struct ps_error *err);
	void (*disarm)(struct ps_catch *c, int region);
	int (*events)(struct ps_catch *c, struct ps_error *err);
	int (*sample)(struct ps_catch *c, int id, const struct ps_sample *how, struct ps_error *err);
	int (*entries)(struct ps_catch *c, int id, uint64_t *n);
	struct ps_tracer *(*tracer)(const struct ps_catch *c);
	int (*ring)(struct ps_catch *c, unsigned pages, struct ps_error *err);
	int (*fast_sites)(const struct ps_catch *c, int *nsites);
	int (*policy)(struct ps_catch *c, const struct ps_mshm_policy *p, struct ps_error *err);
	int (*marker_status)(const struct ps_catch *c, struct ps_marker_status *st);
};

/* What every catcher begins with: its ops. */
struct ps_catch {
	const struct ps_catcher_ops *ops;
};

extern const struct ps_catcher_ops ps_catch_ptrace_ops, ps_catch_uprobe_ops, ps_catch_marker_ops, ps_catch_inproc_ops;

/* Add a line to @env's notices (dropped when they are full). */
void ps_catch_notice(struct ps_catch_env *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether the run should pause now (at CLOCK_MONOTONIC @now): enough records, or the deadline. */
int ps_catch_pause_due(const struct ps_catch_env *env, uint64_t now);

/**
 * ps_catch_window_edge() - whether a pause of a windowed run is a sampling window's edge at
 * @edge (the run goes on), and not one the caller asked for (records, deadline, interrupt).
 */
int ps_catch_window_edge(const struct ps_catch_env *env, uint64_t edge);

#endif
