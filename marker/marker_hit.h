/* marker/marker_hit.h - the hit path (marker.c) as the in-process agent (agent/) calls it. */
#ifndef PS_MARKER_HIT_H
#define PS_MARKER_HIT_H

#include <stdint.h>

#include "perfsh/marker.h"

/* ps_marker_begin(@id) with the hit's fields set to @args when it opens one. */
void pm_begin_with(int id, const uint64_t args[PS_MARKER_FIELDS]);

/* An entry of region @id counted, no hit opened (a nested call, measured at its outermost level only). */
void pm_entry_only(int id);

/* ps_marker_end(@id) for a hit an exception unwound: its record is flagged PS_SNAP_UNWOUND. */
void pm_end_unwound(int id);

#endif
