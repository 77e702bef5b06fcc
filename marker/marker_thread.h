/* marker/marker_thread.h - a measured thread's state: made and used by the hit path (marker.c),
 * its ring given by marker_live.c (shared mode) or drained by marker_file.c (file mode). */
#ifndef PS_MARKER_THREAD_H
#define PS_MARKER_THREAD_H

#include <stdint.h>

#include "marker_read.h"
#include "markshm.h"
#include "perfsh/marker.h"
#include "ring.h"

/*
 * A thread's state. Its ring (core/hitpath/ring.h) is single-producer: the thread reserves and
 * commits records. The consumer: whoever holds the lock (marker_lock.h), draining it to the
 * file (marker_file.c); or perfsh, when the ring is in a shared slot.
 * @cnt, @entries and @stack (with the count of its open hits, @depth, copied to *@pub at each
 * change) are the thread's own (file mode) or its slot's (shared mode: perfsh sees the hits a
 * thread had open when the program ended).
 */
struct pm_thread {
	struct pm_thread *next; /* marker_file.c's list, under the lock */
	uint32_t tid;
	int off; /* its group failed to open: this thread records nothing */
	struct pm_counters c;
	uint64_t rng, every;
	uint32_t depth, too_deep;
	uint32_t chosen; /* pm_quick() drew this thread's next begin: it records */
	uint64_t seq;
	struct ps_ring *ring;
	uint64_t lost; /* records the file could not take (file mode); the ring's drops: full ring */
	struct ps_mshm_counts own, *cnt;
	uint64_t *entries;	   /* begins per region id */
	struct ps_mshm_slot *slot; /* shared mode: the thread's slot */
	struct ps_mshm_frame *stack;
	uint32_t *pub;
	uint32_t own_depth;
	struct ps_mshm_frame own_stack[PS_MARKER_DEPTH];
};

_Static_assert(PS_MSHM_DEPTH == PS_MARKER_DEPTH && PS_MSHM_VALUES == PS_MAX_EVENTS &&
		   PS_MSHM_FIELDS == PS_MARKER_FIELDS,
	       "a slot's frames are the library's");

#endif
