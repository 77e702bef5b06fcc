/* bench/bench.h - what the benchmarks share: medians of repeated runs, CPU times. */
#ifndef PS_BENCH_H
#define PS_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/resource.h>

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

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of @n doubles (sorts @v). */
static inline double median_d(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
	return v[n / 2];
}

/* The CPU time (user + system) in @ru, in nanoseconds. */
static inline uint64_t bench_cpu_ns(const struct rusage *ru)
{
	return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000u +
	       (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000u;
}

/* The CPU time a bench target (bench/hit_target and the like) wrote at its end into the file
   $BENCH_TARGET_CPU names, @path, in ns (0: none); the file is removed. */
static inline uint64_t bench_target_cpu(const char *path)
{
	unsigned long long ns = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
		unlink(path);
	}
	return ns;
}

#endif
