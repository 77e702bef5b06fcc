/* core/records/hist.h - a streaming histogram with log-spaced buckets (relative-error quantiles).
 *
 * Values are counted in buckets whose bounds grow geometrically by gamma = (1 + a) / (1 - a),
 * as DDSketch does: bucket i holds (gamma^(i-1), gamma^i] and answers with 2 gamma^i / (gamma + 1),
 * which is within a relative error a of every value in the bucket.  With a = PS_HIST_ALPHA
 * (0.99%, a little under 1% to absorb the rounding of log()) any quantile is within 1% of the
 * true nearest-rank sample quantile.  Values whose magnitude is below PS_HIST_MIN_VALUE
 * (including 0) are counted in a zero bucket and reported as 0.  Negative values go to a
 * mirrored store of their magnitudes, so they have the same relative accuracy.
 *
 * Memory: 8 bytes per bucket between the smallest and largest index seen (per sign), plus up
 * to half that again as growth slack; about 116 buckets per factor of 10, whatever the number
 * of values: 1 ns .. 1000 s (1e12) is ~1400 buckets, 11-17 KiB.  Count, min and max are exact;
 * sum (compensated), mean and standard deviation (Welford) are computed from every value,
 * not from the buckets.
 */
#ifndef PS_HIST_H
#define PS_HIST_H

#include <stdint.h>

#define PS_HIST_ALPHA 0.0099   /* relative accuracy of a bucket's representative value */
#define PS_HIST_MIN_VALUE 1e-9 /* magnitudes below this are counted as 0 */

struct ps_hist;

/**
 * ps_hist_new() - an empty histogram.
 *
 * Return: the histogram, or NULL (errno ENOMEM).  Free it with ps_hist_free().
 */
struct ps_hist *ps_hist_new(void);

/**
 * ps_hist_free() - release a histogram.
 * @h: the histogram, or NULL.
 */
void ps_hist_free(struct ps_hist *h);

/**
 * ps_hist_add_n() - count @n occurrences of value @v.
 * @h: the histogram.
 * @v: a finite value.
 * @n: how many times (0 does nothing).
 *
 * Return: 0, or -1 with errno EDOM (@v is NaN or infinite) or ENOMEM (the bucket array could
 * not grow); @h is unchanged on failure.
 */
int ps_hist_add_n(struct ps_hist *h, double v, uint64_t n);

/**
 * ps_hist_add() - count value @v once; see ps_hist_add_n().
 * @h: the histogram.
 * @v: a finite value.
 *
 * Return: 0, or -1 with errno EDOM or ENOMEM.
 */
int ps_hist_add(struct ps_hist *h, double v);

/**
 * ps_hist_merge() - add every value counted in @src to @dst (@src may be @dst).
 * @dst: the histogram that grows.
 * @src: the histogram read.
 *
 * The result is the histogram of the union of both series (the statistics by Chan's
 * formula).  Return: 0, or -1 with errno ENOMEM, @dst unchanged.
 */
int ps_hist_merge(struct ps_hist *dst, const struct ps_hist *src);

/**
 * ps_hist_quantile() - estimate the nearest-rank quantile @q.
 * @h: the histogram.
 * @q: 0 <= q <= 1 (0 gives the minimum, 1 the maximum, both exact).
 *
 * Return: a value within PS_HIST_ALPHA relative error of the value of rank ceil(q * count)
 * (for magnitudes of at least PS_HIST_MIN_VALUE), clamped to [min, max]; NaN when @h is
 * empty or @q is out of range.
 */
double ps_hist_quantile(const struct ps_hist *h, double q);

/* Exact statistics.  min, max, mean and stddev are NaN when empty; stddev is the sample
 * standard deviation (n - 1), 0 for a single value, as ps_stats_of() computes it. */
uint64_t ps_hist_count(const struct ps_hist *h);
double ps_hist_sum(const struct ps_hist *h);
double ps_hist_min(const struct ps_hist *h);
double ps_hist_max(const struct ps_hist *h);
double ps_hist_mean(const struct ps_hist *h);
double ps_hist_stddev(const struct ps_hist *h);

/* Called once per non-empty bucket: values in (lo, hi], or lo == hi == 0 for the zero bucket.
 * A non-zero return stops the walk and is returned by ps_hist_buckets(). */
typedef int (*ps_hist_bucket_fn)(double lo, double hi, uint64_t count, void *ud);

/**
 * ps_hist_buckets() - walk the non-empty buckets in increasing order of value.
 * @h: the histogram.
 * @cb: called with each bucket's bounds and count.
 * @ud: passed to @cb.
 *
 * Return: 0, or the first non-zero value @cb returned.
 */
int ps_hist_buckets(const struct ps_hist *h, ps_hist_bucket_fn cb, void *ud);

/**
 * ps_hist_nbuckets() - the number of buckets allocated (a measure of memory use).
 * @h: the histogram.
 *
 * Return: the allocated bucket slots of both stores; each takes 8 bytes.
 */
uint64_t ps_hist_nbuckets(const struct ps_hist *h);

#endif
