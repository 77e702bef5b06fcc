/* marker/marker_hit.h - the hit path (marker.c) as the in-process agent (agent/) calls it. */
#ifndef PS_MARKER_HIT_H
#define PS_MARKER_HIT_H

#include <stdint.h>

#include "perfsh/marker.h"

/* ps_marker_begin(@id) with the hit's fields set to @args when it opens one. */
void pm_begin_with(int id, const uint64_t args[PS_MARKER_FIELDS]);

/* ps_marker_end(@id) for a hit an exception unwound: its record is flagged PS_SNAP_UNWOUND. */
void pm_end_unwound(int id);

/* Every hit this thread has open ends, innermost first, each flagged PS_SNAP_UNWOUND. */
void pm_end_open(void);

/* From now on a thread that ends with hits open ends them as pm_end_open() does (the agent: as
   the catchers outside the program record them); markers left open are otherwise dropped. */
void pm_end_open_at_thread_end(void);

/*
 * Whether the hit of region @id that begins now can be left at its entry count, before anything
 * is saved or read (it touches no vector register): 1 when nothing is recorded (markers off,
 * @id not armed), when @nested (a call inside the outermost one, which is the hit), or when the
 * policy's draw leaves it out; then the entry is counted. 0: begin it (pm_begin_with()), which
 * then records it if it was drawn here.
 */
int pm_quick(int id, int nested);

/*
 * The process is about to lock itself with seccomp (agent_seccomp.c sees the call): from now on
 * a thread's first hit opens nothing and records nothing, since its perf_event_open(2) could be
 * what the filter kills the process for. Threads that already count go on (a read(2) of their
 * group is a call any filter lets through that lets the program read at all).
 */
void pm_seal(void);

#endif
