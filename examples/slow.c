/* examples/slow.c - mostly fast iterations with a few slow ones (for the tail recipe).
 *
 * main calls iteration(i) for i = 0 .. N-1. An ordinary iteration makes FAST_STEPS
 * passes over a small in-cache array; every 100th one (i % 100 == 99) makes
 * 200 * FAST_STEPS random reads in a 64 MiB array, so it is at least 200x slower
 * and cache-missing. With N = 1000: 10 slow iterations, indexes 99, 199, ... 999.
 *
 *   usage: slow [N]              default N = 1000
 *   env:   SLOW_VERBOSE=1        print "slow: I" to stderr for each slow iteration
 *   prints: checksum = ...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAST_STEPS 4096
#define SMALL 1024	/* 4 KiB: stays in L1 */
#define BIG (16u << 20) /* 16 Mi uint32 = 64 MiB: far beyond the caches */

static uint32_t small[SMALL];
static uint32_t *big;
static int verbose;

uint64_t __attribute__((noinline)) iteration(int i)
{
	uint64_t s = 0;

	if (i % 100 == 99) {
		uint32_t x = (uint32_t)i * 2654435761u;

		if (verbose)
			fprintf(stderr, "slow: %d\n", i);
		for (int k = 0; k < 200 * FAST_STEPS; k++) {
			x = x * 1664525u + 1013904223u; /* LCG: a new cache line nearly every read */
			s += big[x % BIG];
		}
	} else {
		for (int k = 0; k < FAST_STEPS; k++)
			s += small[(k + i) % SMALL];
	}
	return s;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	const char *v = getenv("SLOW_VERBOSE");
	uint64_t total = 0;

	verbose = v && *v && *v != '0';
	big = malloc(BIG * sizeof *big);
	if (!big) {
		perror("malloc");
		return 1;
	}
	for (uint32_t k = 0; k < BIG; k++)
		big[k] = k;
	for (int k = 0; k < SMALL; k++)
		small[k] = (uint32_t)k * 3;
	for (int i = 0; i < n; i++)
		total += iteration(i);
	printf("checksum = %llu\n", (unsigned long long)total);
	free(big);
	return 0;
}
