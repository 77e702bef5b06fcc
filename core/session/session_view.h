/* core/session/session_view.h - a session's records as a view (core/records/analysis.h), so
 * the analysis that reads a .psnap file reads a live session's records the same way. */
#ifndef PS_SESSION_VIEW_H
#define PS_SESSION_VIEW_H

#include "analysis.h"
#include "session.h"

/**
 * ps_session_view() - the records of @s in memory, as a view.
 * @s: the session.
 * @v: filled: the records (contiguous, in the session's store), their size, the event names and
 *     the counter group of each event.
 *
 * A session that spills its records to a file keeps none in memory: @v then holds no records
 * (n = 0); the file is read with ps_psnap_open(). The view is valid until the session runs
 * again (its store may grow and move) or is freed.
 */
void ps_session_view(const struct ps_session *s, struct ps_view *v);

#endif
