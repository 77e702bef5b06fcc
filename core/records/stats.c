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

double ps_quantile_sorted(const double *v, size_t n, double q)
{
	size_t rank;

	if (n == 0)
		return 0;
	rank = (size_t)ceil(q * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
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
	out->stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	out->min = v[0];
	out->max = v[n - 1];
	out->p50 = ps_quantile_sorted(v, n, 0.50);
	out->p90 = ps_quantile_sorted(v, n, 0.90);
	out->p99 = ps_quantile_sorted(v, n, 0.99);
}
