/* core/catch/uprobe/catch_uprobe.h - the uprobe catcher's process side: region hits caught in the kernel
 * (core/catch/uprobe/uprobe.c), with ptrace kept only to see threads come and go.
 *
 * The target (spawned, or attached by pid) runs under core/proc/tracer.c with no breakpoint at
 * all, so its only ptrace stops are the births of threads (the parent's clone event and the
 * new thread's first stop), exec, and signals, never a hit. At each thread's first stop
 * (for the threads present at spawn/attach: at the first ps_catch_uprobe_run()) a
 * ps_uprobe is opened on it with the caller's counters and sites, before it runs an
 * instruction of its own. The rings are drained every drain_us microseconds (the wait's
 * timeout) and when a thread ends (its events outlive it: its last records and counts are
 * read after its exit, with no exit stop); each hit goes to on_hit() in the order the
 * thread made them. An ended thread's probes are closed once no probed thread is left (or
 * 16 ended threads wait): a close waits for the kernel's RCU grace periods, and the other
 * threads' rings would fill meanwhile.
 *
 * A spawned program is held at its exec stop until the first run: its main thread's probes
 * are open before its first instruction. Forked children are not followed (a uprobe event
 * is per thread, never inherited): the hits of a child process are not caught.
 *
 * Losses: a ring the kernel finds full drops records. For a thread that ended (or at
 * detach), lost counts them exactly (every probe's own count against the hits decoded,
 * ps_uprobe_missing()); for a running thread, what the kernel reported so far
 * (PERF_RECORD_LOST).
 *
 * Not thread-safe: one thread drives one catcher. Callbacks run on that thread, inside
 * ps_catch_uprobe_run(), ps_catch_uprobe_drain() and ps_catch_uprobe_detach().
 */
#ifndef PS_CATCH_UPROBE_H
#define PS_CATCH_UPROBE_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "tracer.h"
#include "uprobe.h"

struct ps_catch_uprobe;

/**
 * struct ps_catch_uprobe_opts - what the catcher opens on each thread, and where hits go.
 * @probe:    the counters, sites, groups, ring size and registers of every thread's
 *            ps_uprobe (struct ps_uprobe_opts); @probe.enabled = 0 opens them disabled
 *            until ps_catch_uprobe_enable(). A function region is its entry and its exits
 *            (plain sites, in one group), or one site with ret = 1 (entry and uretprobe); a
 *            line range two sites with ret = 0 (start and end points).
 *            Its arrays and paths must stay valid until ps_catch_uprobe_free().
 * @drain_us: how often the rings are drained while the target runs; 0 means 2000.
 * @on_hit:   called for each hit (NULL to count them only), and with @probe.maps for each file
 *            a thread maps (a record of kind PS_UPROBE_MAP, not counted as a hit).
 * @on_thread: optional: a thread's probes were opened (@born = 1), or the thread ended and
 *            its last hits were delivered (@born = 0).
 * @on_loss:  optional: records of thread @tid were lost (its ring was full) just before the
 *            hit delivered next: an entry before this point may have no return after it, or
 *            a return after it no entry.
 * @on_exec:  optional: process @pid exec'd (the hits before it were delivered); the probes stay
 *            open and catch the new image where it maps the sites' files, but the returns
 *            of the calls open before it never come.
 * @ctx:      passed to the callbacks.
 */
struct ps_catch_uprobe_opts {
	struct ps_uprobe_opts probe;
	unsigned drain_us;
	void (*on_hit)(void *ctx, const struct ps_uprobe_hit *h);
	void (*on_thread)(void *ctx, pid_t tid, int born);
	void (*on_loss)(void *ctx, pid_t tid);
	void (*on_exec)(void *ctx, pid_t pid);
	void *ctx;
};

/**
 * struct ps_catch_uprobe_stats - what the catcher did so far.
 * @hits:          hits delivered.
 * @lost:          records dropped (exact for the threads that ended, see above).
 * @lost_reported: of those, the ones the kernel reported (PERF_RECORD_LOST).
 * @stops:         ptrace stops and exit notices handled (ps_tracer_stops()): a few per
 *                 thread, none per hit.
 * @threads:       threads probed so far; @live: of them, probed now.
 * @drains:        drain rounds.
 */
struct ps_catch_uprobe_stats {
	uint64_t hits, lost, lost_reported, stops, drains;
	int threads, live;
};

/**
 * ps_catch_uprobe_spawn() - start @argv[0] (searched in PATH) under the catcher.
 * @c:    receives the catcher.
 * @argv: NULL-terminated argument vector.
 * @o:    what to open and where hits go (copied; see the lifetime of its arrays).
 * @err:  filled on failure.
 *
 * The program is held at its first instruction until ps_catch_uprobe_run(); it dies with
 * the caller (as with ps_tracer_spawn()). Return: 0 or -1.
 */
int ps_catch_uprobe_spawn(struct ps_catch_uprobe **c, char *const argv[], const struct ps_catch_uprobe_opts *o,
			  struct ps_error *err);

/**
 * ps_catch_uprobe_attach() - catch the hits of running process @pid: every thread is
 * stopped once, probed at the first ps_catch_uprobe_run(), and goes on.
 * Return: 0 or -1.
 */
int ps_catch_uprobe_attach(struct ps_catch_uprobe **c, pid_t pid, const struct ps_catch_uprobe_opts *o,
			   struct ps_error *err);

/**
 * ps_catch_uprobe_run() - let the target run, draining the rings as it goes.
 *
 * Return: 1 when the target has ended (every hit delivered, the losses exact), 0 after
 * ps_catch_uprobe_interrupt() or at the deadline, -1 on error (a thread that cannot be
 * probed: @err names it). Callable again after 0.
 */
int ps_catch_uprobe_run(struct ps_catch_uprobe *c, struct ps_error *err);

/**
 * ps_catch_uprobe_hold() - after ps_catch_uprobe_run() returned 0: stop every thread of the
 * target until the next run, detach or free (ps_tracer_hold(): a ptrace stop, which the
 * kernel ends should the caller die), then deliver every record the rings hold: nothing is
 * written, so nothing is lost, while it is held. Return: 0, or -1 with @err.
 */
int ps_catch_uprobe_hold(struct ps_catch_uprobe *c, struct ps_error *err);

/* Make ps_catch_uprobe_run() return 0 soon. Async-signal-safe (see ps_tracer_interrupt()). */
void ps_catch_uprobe_interrupt(struct ps_catch_uprobe *c);

/* From a callback: make ps_catch_uprobe_run() return 0 after the current drain round. */
void ps_catch_uprobe_pause(struct ps_catch_uprobe *c);

/* From on_hit(): make ps_catch_uprobe_run() return 0 after this hit, leaving every record not
   delivered yet in the rings, for the next run (which delivers them first) or the detach;
   ps_catch_uprobe_hold() delivers none of them. For a run whose caller holds the program next:
   while it runs, the rings are not drained. */
void ps_catch_uprobe_pause_here(struct ps_catch_uprobe *c);

/**
 * ps_catch_uprobe_set_probe() - replace the opts' @probe (the sites of regions added after
 * spawn/attach), before the first ps_catch_uprobe_run(). With no site, threads are not probed.
 * Return: 0, or -1 with @err after the first run.
 */
int ps_catch_uprobe_set_probe(struct ps_catch_uprobe *c, const struct ps_uprobe_opts *probe, struct ps_error *err);

/* The tracer that follows the target's threads (for its status, stops and load biases; never
   for breakpoints). */
struct ps_tracer *ps_catch_uprobe_tracer(struct ps_catch_uprobe *c);

/* Make ps_catch_uprobe_run() return 0 once CLOCK_MONOTONIC reaches @deadline_ns (0: none). */
void ps_catch_uprobe_set_deadline(struct ps_catch_uprobe *c, uint64_t deadline_ns);

/**
 * ps_catch_uprobe_enable() - start (@on = 1) or stop counting and probing on every thread,
 * and on the threads to come (time windows; never per hit).
 * Return: 0, or -1 with @err.
 */
int ps_catch_uprobe_enable(struct ps_catch_uprobe *c, int on, struct ps_error *err);

/* Deliver every record waiting in the rings now. Return: the hits delivered. */
long ps_catch_uprobe_drain(struct ps_catch_uprobe *c);

/* What the catcher did so far (see struct ps_catch_uprobe_stats). */
void ps_catch_uprobe_stats(const struct ps_catch_uprobe *c, struct ps_catch_uprobe_stats *s);

/* How the target ended (see ps_tracer_status()). Return: 1 if it ended, 0 if not yet. */
int ps_catch_uprobe_status(const struct ps_catch_uprobe *c, int *exited, int *code, int *signo);

/* The target's process id. */
pid_t ps_catch_uprobe_pid(const struct ps_catch_uprobe *c);

/**
 * ps_catch_uprobe_detach() - stop probing, detach (the target goes on unharmed, its probes
 * disabled), deliver the last hits, count the losses exactly and close every probe: none is
 * left in the target when it returns. After it, the catcher can only be asked for its stats
 * and status, and freed.
 * Return: 0 or -1.
 */
int ps_catch_uprobe_detach(struct ps_catch_uprobe *c, struct ps_error *err);

/* Close every probe; a spawned target still running is killed, an attached one detached.
   NULL is allowed. No callback is called. */
void ps_catch_uprobe_free(struct ps_catch_uprobe *c);

#endif
