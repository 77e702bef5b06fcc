/* core/records/stats.c - exact statistics: a sort, then nearest-rank quantiles. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

size_t ps_nearest_rank(size_t n, double q)
{
	double r;

	if (n == 0)
		return 0;
	r = ceil(q * (double)n);
	if (!(r >= 1))
		return 1;
	return r > (double)n ? n : (size_t)r;
}

double ps_quantile_sorted(const double *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	return v[ps_nearest_rank(n, q) - 1];
}

double ps_median_of(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	if (n % 2)
		return v[n / 2];
	return (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ps_stddev_of(double sq, size_t n)
{
	if (n == 0)
		return NAN;
	return n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
}

void ps_stats_of(double *v, size_t n, struct ps_stats *out)
{
	double sum = 0, sq = 0;

	memset(out, 0, sizeof *out);
	if (n == 0)
		return;
	qsort(v, n, sizeof *v, cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	out->n = n;
	out->sum = sum;
	out->mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += (v[i] - out->mean) * (v[i] - out->mean);
	out->stddev = ps_stddev_of(sq, n);
	out->min = v[0];
	out->max = v[n - 1];
	out->p50 = ps_quantile_sorted(v, n, 0.50);
	out->p90 = ps_quantile_sorted(v, n, 0.90);
	out->p99 = ps_quantile_sorted(v, n, 0.99);
}
