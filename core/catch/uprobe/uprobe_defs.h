/* core/catch/uprobe/uprobe_defs.h - uprobe sites defined once in tracefs (uprobe_events), so
 * that every thread's perf events on a site share one kernel trace event.
 *
 * Why: a uprobe-PMU perf event is a trace event of its own, and closing it unregisters that
 * event: the kernel waits for RCU grace periods under its event_mutex, ~50-70 ms a close,
 * one close after another (closes from several threads do not overlap: measured on kernel
 * 6.18, 32 closes took 2.4 s from one thread and 2.1 s from 32). Per-thread entry and return
 * probes thus cost ~120 ms per thread at its end or at detach. A perf event opened on a
 * tracefs uprobe event (PERF_TYPE_TRACEPOINT, config = its id) takes a reference on the
 * shared event instead: only the last close of a site unregisters it, so a run pays that
 * wait once per probe, not once per thread (32 events on 2 sites: the first 30 closes took
 * 0.1 ms together).
 *
 * The probe is still one process's: the kernel installs a uprobe's breakpoint only in the
 * memory of the processes whose threads have a perf event on it (its uprobe filter), as for
 * a uprobe-PMU event. Nothing enables the tracefs event itself.
 *
 * The last close still waits (~100 ms for a site's entry and return). So that perfsh never
 * waits for it, a keeper process (perfsh's grandchild, in a session of its own, holding nothing
 * of perfsh's but a pipe) holds a disabled perf event of its own on each trace event: perfsh's
 * closes are never the last, and when ps_uprobe_defs_free() closes the pipe (or perfsh dies)
 * the keeper closes its events, deletes the trace events and exits, ~100-300 ms later. The
 * keeper's events are on itself: the probes go into its memory only where it maps the probed
 * file (a library), disabled. Where no keeper can be started, ps_uprobe_defs_free() deletes the
 * events itself (the perf events' last closes then wait in perfsh).
 *
 * Where the machine has no tracefs mounted (at /sys/kernel/tracing or /sys/kernel/debug/tracing),
 * the events are defined through a private tracefs mount, detached from the file tree as soon as
 * it is opened (it lives on through a directory fd that the keeper inherits): perfsh leaves the
 * machine's mounts as they were.
 *
 * The events live in group perfsh_PID (the id of the process that defined them), named
 * s<set>_<site><e|r>. Those of a perfsh and keeper that were both killed stay defined
 * (harmless: no perf event, no breakpoint) until the next ps_uprobe_defs_new() deletes those
 * of groups whose process is gone.
 */
#ifndef PS_UPROBE_DEFS_H
#define PS_UPROBE_DEFS_H

#include <stdint.h>

#include "error.h"
#include "uprobe.h"

struct ps_uprobe_defs;

/**
 * ps_uprobe_defs_new() - define the tracefs uprobe events of @sites: an entry event for each
 * site and a return event for each with @ret set.
 * @d:      set to the new set.
 * @sites:  the sites (paths absolute, without white space).
 * @nsites: how many.
 * @err:    filled on failure (tracefs absent or not writable, a site it refuses): the caller
 *          can open uprobe-PMU events instead.
 * Return: 0, or -1 with nothing left defined.
 */
int ps_uprobe_defs_new(struct ps_uprobe_defs **d, const struct ps_uprobe_site *sites, int nsites, struct ps_error *err);

/**
 * ps_uprobe_defs_ids() - the trace event ids, two per site: its entry's, then its return's (0
 * when the site has no return), for struct ps_uprobe_opts @tp_ids.
 */
const uint32_t *ps_uprobe_defs_ids(const struct ps_uprobe_defs *d);

/* Let the events go: the keeper deletes them after its last close, or, without a keeper,
   they are deleted here (every perf event on them must be closed first). NULL is a no-op. */
void ps_uprobe_defs_free(struct ps_uprobe_defs *d);

#endif
