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

/* Nearest-rank quantile of sorted @v; 0 < q <= 1. */
double ps_quantile_sorted(const double *v, size_t n, double q);

#endif
