/* examples/recursive.c - recursion with known call counts.
 *
 * main calls walk(N) K times; walk(n) recurses to walk(n - 1) down to walk(0),
 * so each outer call enters walk N + 1 times, nested N + 1 deep:
 *   walk entered K * (N + 1) times in all, K of them outermost (depth 0),
 *   deepest nesting N + 1 frames of walk.
 *
 *   usage: recursive [K] [N]     defaults K = 5, N = 10 (55 entries of walk)
 *   prints: checksum = K * (N + 1) * (N + 2) / 2
 * With gcc 12 -O2, walk(n) retires 9n + 4 instructions in all (its recursion included).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t __attribute__((noinline)) walk(uint64_t n)
{
	uint64_t r;

	if (n == 0)
		return 1;
	r = walk(n - 1);
	/* keeps the call a real call: no tail-recursion or accumulator rewrite into a loop */
	__asm__ volatile("" : "+r"(r));
	return r + n + 1;
}

int main(int argc, char **argv)
{
	uint64_t k = argc > 1 ? strtoull(argv[1], NULL, 0) : 5;
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 0) : 10;
	uint64_t total = 0;

	for (uint64_t i = 0; i < k; i++)
		total += walk(n);
	printf("checksum = %llu\n", (unsigned long long)total);
	return 0;
}
