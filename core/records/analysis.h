/* core/records/analysis.h - what records mean, for the live report and the saved-file report alike:
 * the counter group layout, multiplex scaling, complete hits, and statistics of a region's
 * hits overall, per thread or per CPU, exact, computed in passes over the records in memory
 * that does not grow with their number. */
#ifndef PS_ANALYSIS_H
#define PS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"
#include "stats.h"

/**
 * struct ps_view - records and what they mean.
 * @base:    contiguous records (a live session's store), or NULL and then @get gives them.
 * @get:     record @i of @ctx (a .psnap file's kept records are not contiguous).
 * @ctx:     passed to @get.
 * @n:       records.
 * @recsize: bytes per record (with @base).
 * @nev:     named events; every record has at least @nev values (a file's reader checks it).
 * @names:   event names.
 * @group:   the counter group of each event (0 = the one whose times are in the header; see
 *           snapshot.h for where later groups' times are)
 */
struct ps_view {
	const unsigned char *base;
	const struct ps_snap *(*get)(const void *ctx, uint64_t i);
	const void *ctx;
	uint64_t n;
	size_t recsize;
	int nev;
	const char *names[PS_MAX_EVENTS];
	int group[PS_MAX_EVENTS];
};

static inline const struct ps_snap *ps_view_rec(const struct ps_view *v, uint64_t i)
{
	if (v->get)
		return v->get(v->ctx, i);
	return (const struct ps_snap *)(v->base + i * v->recsize);
}

/* A hit with a real end: not unwound (longjmp, exception) and its thread did not exit in it. */
static inline int ps_snap_complete(const struct ps_snap *r)
{
	return !(r->flags & (PS_SNAP_UNWOUND | PS_SNAP_EXITED));
}

/**
 * ps_view_set_groups() - the group of each event from a file's "groups" metadata.
 * @v:      the view (@nev set); its @group is filled.
 * @groups: sizes of consecutive groups, "2,1" (two events, then one), or NULL (one group).
 * @nvals:  counter values per record end.
 *
 * A group whose times the records cannot hold (a damaged "groups") counts as the first.
 */
void ps_view_set_groups(struct ps_view *v, const char *groups, unsigned nvals);

/* Delta of event @k over the record, scaled by its group's running/enabled ratio (*@ratio). */
double ps_view_delta(const struct ps_view *v, const struct ps_snap *r, int k, double *ratio);
/* On-CPU time of the hit (time_enabled of the first group), or wall time without a group. */
double ps_view_cpu_time(const struct ps_snap *r);

/* Series of a record: PS_SERIES_WALL, PS_SERIES_TIME or an event index 0 .. nev - 1. */
#define PS_SERIES_WALL (-2) /* t_end - t_start */
#define PS_SERIES_TIME (-1) /* ps_view_cpu_time() */

/* Value of series @k of the record; *@ratio is the event's group ratio (1 for the times). */
double ps_view_value(const struct ps_view *v, const struct ps_snap *r, int k, double *ratio);

/* How ps_view_stats() splits a region's hits. */
enum ps_split {
	PS_SPLIT_NONE,	 /* one group: the region */
	PS_SPLIT_THREAD, /* by thread id */
	PS_SPLIT_CPU,	 /* by the CPU the hit started on (-1: unknown) */
};

/**
 * struct ps_hit_stats - statistics of one group of a region's hits.
 * @key:        thread id or CPU (0 without a split).
 * @hits:       complete hits (the statistics are over these).
 * @incomplete: hits that were unwound or whose thread exited.
 * @migrated:   complete hits that ended on another CPU than they started on.
 * @ratio_min:  the lowest running/enabled ratio of any event of any complete hit (1: never
 *              multiplexed).
 * @wall:       wall time, ns.
 * @time:       on-CPU time, ns (ps_view_cpu_time()).
 * @ev:         each event's delta, scaled (ps_view_delta()), exact (not rounded).
 */
struct ps_hit_stats {
	int64_t key;
	uint64_t hits, incomplete, migrated;
	double ratio_min;
	struct ps_stats wall, time, ev[PS_MAX_EVENTS];
};

/**
 * ps_view_stats() - statistics of region @region's hits, whole or split.
 * @v:      the records.
 * @region: region id.
 * @split:  PS_SPLIT_NONE (exactly one group, also for a region without hits), _THREAD, _CPU.
 * @out:    receives a malloc'd array, in increasing order of key; free() it.
 * @nout:   receives its length.
 *
 * Exact statistics (nearest-rank quantiles, as ps_stats_of() gives them from the sorted
 * values; the sum is added in record order) in passes over the records: one to count, then
 * per series one for sum, min and max and a few for the spread and the quantiles (each pass
 * narrows the interval that holds a quantile's rank; one collects the last few thousand).
 * Memory: a few KiB per group, whatever the number of records.
 *
 * Return: 0, or -1 with errno ENOMEM.
 */
int ps_view_stats(const struct ps_view *v, int region, enum ps_split split, struct ps_hit_stats **out, size_t *nout);

/**
 * ps_view_series() - one value of series @k per complete hit of @region, in record order.
 * @v:      the records.
 * @region: region id.
 * @k:      PS_SERIES_WALL, PS_SERIES_TIME or an event index.
 * @out:    receives a malloc'd array (free() it); not NULL even when empty.
 * @nout:   receives its length.
 *
 * Return: 0, or -1 with errno ENOMEM.
 */
int ps_view_series(const struct ps_view *v, int region, int k, double **out, size_t *nout);

#endif
