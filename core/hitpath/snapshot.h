/* core/hitpath/snapshot.h - the snapshot record: one per region hit, whatever caught it.
 *
 * Raw counter values at start and at end are kept (not differences), so any interval
 * can be computed afterwards. A record is fixed-size for a given ring: the header below,
 * then nargs argument words, then nvals start values, then nvals end values. Use
 * ps_snap_size() for the size and the accessors for the arrays.
 *
 * enabled_* and running_* are the times of the first counter group. When a thread reads
 * several groups, the values of every event come first, then (enabled, running) of the
 * second group, of the third, ...: nvals counts those words too.
 */
#ifndef PS_SNAPSHOT_H
#define PS_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PS_MAX_EVENTS 16 /* counters in one group, software ones included */
#define PS_MAX_ARGS 6	 /* x86-64 SysV integer argument registers */

/* flags of a record */
enum {
	PS_SNAP_UNWOUND = 1u << 0, /* the frame was unwound (longjmp, exception): no real end */
	PS_SNAP_EXITED = 1u << 1,  /* the thread or process ended inside the region */
	PS_SNAP_SAMPLED = 1u << 2, /* taken by a sampling policy (not every hit is recorded) */
	PS_SNAP_NESTED = 1u << 3,  /* an inner level of a recursion */
};

struct ps_snap {
	uint32_t region;		       /* region id */
	uint32_t tid;			       /* thread id */
	uint64_t seq;			       /* per-ring sequence number, from 0 */
	uint64_t hit;			       /* 0-based index of this hit among its region's hits */
	uint64_t t_start;		       /* ns at the start: CLOCK_MONOTONIC less the pauses before (holds.h) */
	uint64_t t_end;			       /* ns at the end, the same clock */
	uint64_t enabled_start, running_start; /* group times at start, ns */
	uint64_t enabled_end, running_end;     /* group times at end, ns */
	int16_t cpu_start, cpu_end;	       /* CPU the thread last ran on; -1 if unknown */
	uint16_t flags;
	uint8_t nvals;	/* counter values in each of start and end */
	uint8_t nargs;	/* argument words recorded at entry */
	uint32_t depth; /* recursion depth of this hit (0 = outermost) */
	uint32_t pad;
	/* followed by: uint64_t args[nargs]; uint64_t start[nvals]; uint64_t end[nvals]; */
};

static inline size_t ps_snap_size(unsigned nvals, unsigned nargs)
{
	return sizeof(struct ps_snap) + (size_t)(nargs + 2 * nvals) * sizeof(uint64_t);
}

static inline uint64_t *ps_snap_args(struct ps_snap *s)
{
	return (uint64_t *)(s + 1);
}

static inline uint64_t *ps_snap_start(struct ps_snap *s)
{
	return ps_snap_args(s) + s->nargs;
}

static inline uint64_t *ps_snap_end(struct ps_snap *s)
{
	return ps_snap_start(s) + s->nvals;
}

/* Whose a record is: what ps_snap_fill() writes beside the two ends of the measurement. */
struct ps_snap_key {
	uint32_t region, tid;
	uint64_t seq, hit;
	uint32_t depth;
	uint16_t flags;
	uint8_t nvals, nargs;
};

/* One end of a measurement: the clock, the group's times, the CPU and the nvals counter values. */
struct ps_snap_point {
	uint64_t t, enabled, running;
	int16_t cpu;
	const uint64_t *val;
};

/**
 * ps_snap_fill - write one record (of ps_snap_size(@k->nvals, @k->nargs) bytes) at @s: the
 * one way a record is made, whichever catcher caught the hit (the hit path's, the marker
 * library's), so that every record is made alike.
 * @s:     where the record goes (a ring slot).
 * @k:     its region, thread, sequence number, hit, depth, flags and layout.
 * @args:  @k->nargs argument words taken at the start.
 * @start: the start of the measurement.
 * @end:   its end.
 */
static inline void ps_snap_fill(struct ps_snap *s, const struct ps_snap_key *k, const uint64_t *args,
				const struct ps_snap_point *start, const struct ps_snap_point *end)
{
	s->region = k->region;
	s->tid = k->tid;
	s->seq = k->seq;
	s->hit = k->hit;
	s->t_start = start->t;
	s->t_end = end->t;
	s->enabled_start = start->enabled;
	s->running_start = start->running;
	s->enabled_end = end->enabled;
	s->running_end = end->running;
	s->cpu_start = start->cpu;
	s->cpu_end = end->cpu;
	s->flags = k->flags;
	s->nvals = k->nvals;
	s->nargs = k->nargs;
	s->depth = k->depth;
	s->pad = 0;
	memcpy(ps_snap_args(s), args, (size_t)k->nargs * sizeof(uint64_t));
	memcpy(ps_snap_start(s), start->val, (size_t)k->nvals * sizeof(uint64_t));
	memcpy(ps_snap_end(s), end->val, (size_t)k->nvals * sizeof(uint64_t));
}

#endif
