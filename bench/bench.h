/* bench/bench.h - what the benchmarks share: medians of repeated runs. */
#ifndef PS_BENCH_H
#define PS_BENCH_H

#include <stdint.h>
#include <stdlib.h>

static inline int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The median of @n values (sorts @v). */
static inline uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_u64);
	return v[n / 2];
}

#endif
