/* core/session/session.h - regions of a measured program, counted per thread, one record per hit.
 *
 * A session joins a catcher (core/catch/catcher.h: ptrace breakpoints, uprobes or the marker
 * library), which sees the regions' hits with the counters of the hitting thread, and the hit
 * path (core/hitpath/hitpath.c), which pairs the hits into records in the snapshot ring
 * (core/hitpath/ring.c). Every hit of a region becomes a struct ps_snap with the raw values at
 * start and at end. The session finds the regions in the program's files and has its catcher
 * arm them; which catcher it holds it never asks, only what the catcher can do.
 */
#ifndef PS_SESSION_H
#define PS_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "events.h"
#include "machine.h"
#include "marker_status.h"
#include "region.h"
#include "snapshot.h"

struct ps_session;
struct ps_psnap_meta;

/* How hits are caught: ptrace breakpoints (the target stops at each), uprobes sampling the
   counters in the kernel (core/catch/uprobe/: root or CAP_PERFMON), or the marker library
   in the program, which measures its own markers into memory shared with perfsh
   (core/catch/marker/: programs perfsh starts, marker regions only). */
enum ps_catcher { PS_CATCH_PTRACE = 0, PS_CATCH_UPROBE = 1, PS_CATCH_MARKER = 2, PS_CATCH_INPROC = 3 };

/**
 * ps_session_region_marker() - the marker called @name (as the program gives it to
 * ps_marker_region or PS_MARK_BEGIN) as a region, with the marker catcher: the program records
 * its hits itself; its records carry the marker's four fields as argument words. A marker the
 * program has not reached yet is armed when it first does. Return: the region id, or -1.
 */
int ps_session_region_marker(struct ps_session *s, const char *name, struct ps_error *err);
/* Set the markers' policy (core/catch/marker/markshm.h: on, sampled, threshold, every, slow_ns), read by
   the program at its next hit: between runs, or from a callback while it runs. */
int ps_session_marker_policy(struct ps_session *s, const struct ps_mshm_policy *p, struct ps_error *err);

/* 0 with @st filled, or -1 when the session is not the marker catcher's. */
int ps_session_marker_status(const struct ps_session *s, struct ps_marker_status *st);

/* ps_session_spawn() and ps_session_attach() with the catcher @how. */
/* ps_session_spawn_by() with the command's stdin, stdout and stderr read from and written to
   the files @stdio[0..2] (NULL @stdio, or a NULL path: perfsh's own). */
int ps_session_spawn_io(struct ps_session **s, char *const argv[], const struct ps_event *ev, int nev,
			enum ps_catcher how, const char *const stdio[3], struct ps_error *err);
int ps_session_spawn_by(struct ps_session **s, char *const argv[], const struct ps_event *ev, int nev,
			enum ps_catcher how, struct ps_error *err);
int ps_session_attach_by(struct ps_session **s, pid_t pid, const struct ps_event *ev, int nev, enum ps_catcher how,
			 struct ps_error *err);
enum ps_catcher ps_session_catcher(const struct ps_session *s);
/* The uprobe catcher's ring per thread, in pages (a power of two; default 256, 1 MiB): a
   larger one loses fewer records in bursts of hits. Before the first run. 0, or -1 with @err. */
int ps_session_uprobe_ring(struct ps_session *s, unsigned pages, struct ps_error *err);
/* Records the uprobe catcher's rings dropped (full): hits never seen; 0 with ptrace. */
uint64_t ps_session_lost(const struct ps_session *s);
/* Of the uprobe catcher's *@nsites probe sites, how many are the 5-byte NOP 0f 1f 44 00 00 the
   kernel turns into a call (no trap); 0 and 0 with ptrace. */
int ps_session_uprobe_fast_sites(const struct ps_session *s, int *nsites);
/* An SDT region (core/binary/sdt.h): "sdt:P:N" is a point event (one record per hit, its start and
   end the values there), "sdt:P:A,sdt:P:B" a start/end pair (every site of each probe), armed
   in the program's own file through the uprobe catcher (the semaphore counted up while it
   runs). @label names the region in messages (NULL: @spec; "marker:NAME" for a marker's pair).
   Return: the region id, or -1 with @err (the ptrace catcher: refused). */
int ps_session_region_sdt(struct ps_session *s, const char *spec, const char *label, unsigned flags,
			  struct ps_error *err);

/* Start a command traced, stopped before its first instruction, with @ev counted per thread. */
int ps_session_spawn(struct ps_session **s, char *const argv[], const struct ps_event *ev, int nev,
		     struct ps_error *err);
/* Attach to running process @pid (every thread). */
int ps_session_attach(struct ps_session **s, pid_t pid, const struct ps_event *ev, int nev, struct ps_error *err);

/**
 * ps_session_set_groups() - split the events into @n groups of @sizes[i] events each, in
 * order (default: one group of all). Each group is scheduled on the PMU on its own, so more
 * events than counters can be counted, multiplexed. Only before the first run.
 */
int ps_session_set_groups(struct ps_session *s, const int *sizes, int n, struct ps_error *err);
/* The group of event @i, and the number of counter words of a record (events + group times). */
int ps_session_event_group(const struct ps_session *s, int i);
int ps_session_nvals(const struct ps_session *s);

/**
 * ps_session_region_sample() - record only some hits of function region @id. A hardware
 * execute breakpoint at the entry, one per thread, counts every entry in the kernel without
 * stopping the program and stops it (a TRAP_PERF SIGTRAP) only on the entries that are
 * sampled: every Nth, each with probability p (geometric gaps), or every entry within a
 * window of window_ms in each period_ms. The int3 at the entry is removed. At most 4
 * sampled regions (the CPU's debug registers). Entries stay exact: see ps_session_entries().
 * Where hardware breakpoints do not fire (core/events/machine.c tests it), a uprobe perf event takes
 * their place, or else the int3 stays and perfsh draws at each entry; PERFSH_SAMPLING forces
 * one of them. The region's @counter says which.
 */
int ps_session_region_sample(struct ps_session *s, int id, const struct ps_sample *how, struct ps_error *err);

/**
 * ps_session_region_args() - record the first @n integer arguments of function region @id at
 * each entry (x86-64 System V: rdi, rsi, rdx, rcx, r8, r9). Before the first run; every
 * record then carries max(n) argument words.
 */
int ps_session_region_args(struct ps_session *s, int id, int n, struct ps_error *err);

/**
 * ps_session_spill() - send the records to a .psnap file at @path as the ring fills, instead
 * of keeping them in memory (memory stays bounded by the ring). Before the first run. The
 * file is readable (ps_psnap_open) after each ps_session_spill_flush(), complete after
 * ps_session_spill_close(), which may add metadata pairs first (ps_session_spill_meta), and
 * adds what the session knows at that point: the catcher, the records lost and dropped, the
 * calls still running (core/session/session_priv.h, struct ps_session_facts).
 */
int ps_session_spill(struct ps_session *s, const char *path, struct ps_error *err);
int ps_session_spill_flush(struct ps_session *s, struct ps_error *err);
int ps_session_spill_meta(struct ps_session *s, const char *key, const char *value, struct ps_error *err);
int ps_session_spill_close(struct ps_session *s, struct ps_error *err);

/**
 * ps_session_save() - write every record so far to a new .psnap file at @path: the header the
 * spill file has (events, group layout, argument words), the region names, @nmeta more
 * metadata pairs and what the session knows now (as ps_session_spill_close() adds them).
 * Not for a session that spills (its records are in that file already).
 * Returns 0, or -1 with @err set.
 */
int ps_session_save(const struct ps_session *s, const char *path, const struct ps_psnap_meta *meta, size_t nmeta,
		    struct ps_error *err);

/* Entries of region @id so far (for a sampled region: the hardware count). */
uint64_t ps_session_entries(const struct ps_session *s, int id);

/**
 * ps_session_open_calls() - calls of region @id entered and not yet ended (every level of an
 * every-level region): after a pause or a detach, the calls still running then.
 */
uint64_t ps_session_open_calls(struct ps_session *s, int id);

/* Trace forked children too (1), or release them with every breakpoint removed (0, default). */
int ps_session_set_follow_fork(struct ps_session *s, int follow);

/* Add events before the first run (per-region events join the one group per thread). */
int ps_session_add_events(struct ps_session *s, const struct ps_event *ev, int nev, struct ps_error *err);

/**
 * ps_session_region_func() - a function region: entry to return. @name is a symbol name
 * (demangled forms match), "lib.so:name" for a shared library, or "0xADDR" (link-time).
 * Each inlined copy of the function becomes a region of its own too, unless
 * PS_REGION_NO_INLINE. Returns the id of the first region added (the others follow), or -1.
 */
int ps_session_region_func(struct ps_session *s, const char *name, unsigned flags, struct ps_error *err);

/**
 * ps_session_region_range() - "file:L1-file:L2" or "file:L1-L2": from the first address of
 * L1 (inclusive) to the first address of L2 (exclusive), as Perforator defines it. Or two
 * link-time addresses "0xA-0xB". Returns the region id or -1.
 */
int ps_session_region_range(struct ps_session *s, const char *spec, unsigned flags, struct ps_error *err);

/**
 * ps_session_run() - run until the program ends (1), or pause (0) once @max_records more
 * records were written (0 = no limit), CLOCK_MONOTONIC passed @deadline_ns (0 = none), or
 * ps_session_interrupt() was called. -1 on error.
 *
 * A pause holds the program under every catcher until the next run, detach or free: every
 * thread ptrace-stopped (core/proc/tracer.h ps_tracer_hold(); the marker catcher's program, which
 * runs untraced, is seized for it), every record it made drained, so that nothing is lost and
 * it uses no CPU time meanwhile. Records' times leave the time it was held out (core/hitpath/holds.h).
 */
int ps_session_run(struct ps_session *s, uint64_t max_records, uint64_t deadline_ns, struct ps_error *err);

/**
 * ps_session_run_on() - ps_session_run(), but a pause leaves the program going where its
 * catcher does not stop it (uprobe, marker): for a caller that looks at the records while the
 * program runs (slow-hit logging in chunks) and holds it with ps_session_hold() when it is done.
 * Records made meanwhile wait in the catcher's rings for the next run.
 */
int ps_session_run_on(struct ps_session *s, uint64_t max_records, uint64_t deadline_ns, struct ps_error *err);

/**
 * ps_session_hold() - hold the program as a pause does, after ps_session_run_on(): every
 * thread stopped, every record drained. Nothing to do for a program held, ended, detached or
 * not started. Return: 0, or -1 with @err set.
 */
int ps_session_hold(struct ps_session *s, struct ps_error *err);
void ps_session_interrupt(struct ps_session *s); /* async-signal-safe */

/* Detach: every breakpoint byte and return address restored; the program continues. */
int ps_session_detach(struct ps_session *s, struct ps_error *err);
/* Free: a spawned program still traced is killed; an attached one detached. */
void ps_session_free(struct ps_session *s);

pid_t ps_session_pid(const struct ps_session *s);
int ps_session_status(const struct ps_session *s, int *exited, int *code, int *signo);
uint64_t ps_session_stops(const struct ps_session *s);
int ps_session_nevents(const struct ps_session *s);
const struct ps_event *ps_session_event(const struct ps_session *s, int i);
int ps_session_nregions(const struct ps_session *s);
const struct ps_region_info *ps_session_region(const struct ps_session *s, int id);
uint64_t ps_session_nrecords(const struct ps_session *s); /* written so far, spilled ones too */
const struct ps_snap *ps_session_record(const struct ps_session *s, uint64_t i);
size_t ps_session_recsize(const struct ps_session *s);
uint64_t ps_session_dropped(const struct ps_session *s); /* records lost (none unless a limit is set) */
/* Messages worth showing once (a region dropped at exec, a library armed late); "" if none. */
const char *ps_session_notice(struct ps_session *s);

#endif
