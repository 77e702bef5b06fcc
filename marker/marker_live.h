/* marker/marker_live.h - shared mode: the program was started by perfsh, which passed its
 * control block (core/catch/marker/markshm.h) as PERFSH_CONTROL. */
#ifndef PS_MARKER_LIVE_H
#define PS_MARKER_LIVE_H

#include "marker_thread.h"

/* PERFSH_CONTROL=@path: map perfsh's control block, take it, resolve its events into the
   configuration (marker_config.h) and point the policy at the block's. 0, or -1 after a
   warning (markers off, the reason given back to perfsh when the block could be read). */
int pm_live_init(const char *path);
/* This thread's slot: its ring, counts and entries into @t. 0, or -1 (no free slot: counted). */
int pm_live_slot(struct pm_thread *t);
void pm_live_slot_gone(struct pm_thread *t);
/* Region @id is @name: published in the block, armed when perfsh asked for it. */
void pm_live_region(int id, const char *name);

/* perfsh's control block, mapped (NULL: none; the agent reads its sites there). */
struct ps_mshm_ctl *pm_live_ctl(void);

#endif
