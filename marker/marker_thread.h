/* marker/marker_thread.h - a measured thread's state: made and used by the hit path (marker.c),
 * its ring given by marker_live.c (shared mode) or drained by marker_file.c (file mode). */
#ifndef PS_MARKER_THREAD_H
#define PS_MARKER_THREAD_H

#include <stdint.h>

#include "marker_read.h"
#include "markshm.h"
#include "perfsh/marker.h"
#include "ring.h"

/* One open hit on a thread's stack. */
struct pm_frame {
	int32_t id;
	uint32_t sampled;
	uint64_t hit;
	uint64_t t_start;
	uint64_t enabled, running;
	int16_t cpu;
	uint64_t args[PS_MARKER_FIELDS];
	uint64_t start[PS_MAX_EVENTS];
};

/*
 * A thread's state. Its ring (core/hitpath/ring.h) is single-producer: the thread reserves and
 * commits records. The consumer: whoever holds the lock (marker_lock.h), draining it to the
 * file (marker_file.c); or perfsh, when the ring is in a shared slot.
 * @cnt and @entries are the thread's own (file mode) or its slot's (shared mode).
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
	struct pm_frame stack[PS_MARKER_DEPTH];
};

#endif
