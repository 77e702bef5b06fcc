/* core/events/tracepoint.h - tracepoints (SUBSYS:NAME) resolved from tracefs, listed and suggested. */
#ifndef PS_TRACEPOINT_H
#define PS_TRACEPOINT_H

#include <linux/perf_event.h>

#include "error.h"

/*
 * Where the events directory is looked for: /sys/kernel/tracing/events, then
 * /sys/kernel/debug/tracing/events. Tests (and fuzz targets) may point it at a tree of their
 * own with ps_tracepoint_set_root(dir); NULL restores the search.
 */
void ps_tracepoint_set_root(const char *events_dir);

/* The events directory in use, or NULL when tracefs is not mounted (or not readable). */
const char *ps_tracepoint_root(void);

/*
 * ps_tracepoint_modifier_like() - 1 when @s reads as the modifiers after an event's colon ("u",
 * "uk", "ppp"): "instructions:u" is an event with a modifier, not a tracepoint "u" of a
 * subsystem "instructions" (unless that subsystem exists).
 */
int ps_tracepoint_modifier_like(const char *s);

/**
 * ps_tracepoint_parse() - resolve "SUBSYS:NAME" to PERF_TYPE_TRACEPOINT and the id in
 * EVENTS/SUBSYS/NAME/id. Counts kernel and user (no exclude bits). Opens nothing but the id file.
 * Returns 0; 1 when @name is not of that shape (or reads as an event with a modifier, "x:u") and
 * names no tracepoint subsystem, so other resolvers may try it; -1 with @err: PS_ENOTFOUND and
 * "unknown tracepoint 'syscalls:sys_enter_wrte'; did you mean 'syscalls:sys_enter_write', ...?"
 * (names of the same subsystem) or the subsystem's closest names, or errno when tracefs cannot
 * be read.
 */
int ps_tracepoint_parse(const char *name, struct perf_event_attr *attr, struct ps_error *err);

typedef int (*ps_tracepoint_cb)(const char *subsys, const char *event, void *ud);

/**
 * ps_tracepoint_foreach() - call @cb for every tracepoint whose "subsys:event" name contains
 * @filter (NULL = all), sorted by subsystem then name. Stops when @cb returns nonzero and
 * returns that value; 0 when tracefs is not mounted.
 */
int ps_tracepoint_foreach(const char *filter, ps_tracepoint_cb cb, void *ud);

#endif
