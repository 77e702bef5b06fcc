/* core/records/stats.h - exact statistics of a series of numbers. */
#ifndef PS_STATS_H
#define PS_STATS_H

#include <stddef.h>

/**
 * struct ps_stats - count, sum, mean, standard deviation, min, max and exact quantiles
 * (nearest rank: the smallest value with at least q*n values at or below it).
 */
struct ps_stats {
	size_t n;
	double sum, mean, stddev, min, max, p50, p90, p99;
};

/* Sort @v (in place) and fill @out. n == 0 gives all zeros. */
void ps_stats_of(double *v, size_t n, struct ps_stats *out);

/**
 * ps_nearest_rank() - the nearest rank of quantile @q of @n values: ceil(q * n), clamped to
 * 1..n (0 when @n is 0). Every quantile of the project picks its value at this rank.
 * @n: how many values.
 * @q: the quantile, 0 <= q <= 1.
 */
size_t ps_nearest_rank(size_t n, double q);

/* Nearest-rank quantile of sorted @v; 0 < q <= 1. */
double ps_quantile_sorted(const double *v, size_t n, double q);

/**
 * ps_median_of() - sort @v (in place) and return its median as the regression gate takes it:
 * the middle value, or the mean of the two middle values of an even count (not the nearest rank).
 * @v: the values.
 * @n: how many; 0 gives NaN.
 */
double ps_median_of(double *v, size_t n);

/**
 * ps_stddev_of() - the sample standard deviation of @n values whose squared deviations from
 * their mean sum to @sq: sqrt(sq / (n - 1)), 0 for one value, NaN for none.
 * @sq: the sum of the squared deviations from the mean.
 * @n: how many values.
 */
double ps_stddev_of(double sq, size_t n);

#endif
