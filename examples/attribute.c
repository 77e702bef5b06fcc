/* examples/attribute.c - cost made of known per-unit parts (for the attribute recipe).
 *
 * do_work(a, b, c) runs three loops of a, b and c iterations whose bodies are
 * 7, 22 and 97 nops; with the loop's own add/cmp/jne each iteration is exactly
 *     cost_a = 10, cost_b = 25, cost_c = 100 instructions,
 * so a call with a, b, c >= 1 retires exactly 10a + 25b + 100c + 15 instructions
 * with gcc 12 -O2 (3 x test/je/xor/alignment-nop + add/lea/ret; checked with callgrind).
 * main makes CALLS calls with a, b, c pseudo-random in 1 .. 1000 (srand(1)),
 * which a least-squares fit of instructions on (a, b, c) recovers.
 *
 *   usage: attribute [CALLS]     default 200
 *   env:   ATTRIBUTE_VERBOSE=1   print "a b c" of each call to stderr
 *   prints: calls = CALLS, units = sum of a, b, c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t __attribute__((noinline)) do_work(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t i;

	for (i = 0; i < a; i++)
		__asm__ volatile(".rept 7\n\tnop\n\t.endr" ::: "memory");
	for (i = 0; i < b; i++)
		__asm__ volatile(".rept 22\n\tnop\n\t.endr" ::: "memory");
	for (i = 0; i < c; i++)
		__asm__ volatile(".rept 97\n\tnop\n\t.endr" ::: "memory");
	return a + b + c;
}

int main(int argc, char **argv)
{
	int calls = argc > 1 ? atoi(argv[1]) : 200;
	const char *v = getenv("ATTRIBUTE_VERBOSE");
	uint64_t units = 0;

	srand(1);
	for (int k = 0; k < calls; k++) {
		uint64_t a = 1 + (uint64_t)rand() % 1000;
		uint64_t b = 1 + (uint64_t)rand() % 1000;
		uint64_t c = 1 + (uint64_t)rand() % 1000;

		if (v && *v && *v != '0')
			fprintf(stderr, "%llu %llu %llu\n", (unsigned long long)a, (unsigned long long)b,
				(unsigned long long)c);
		units += do_work(a, b, c);
	}
	printf("calls = %d, units = %llu\n", calls, (unsigned long long)units);
	return 0;
}
