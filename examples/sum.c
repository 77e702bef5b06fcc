/* examples/sum.c - the seed benchmark (after the Perforator README example).
 *
 * sum() adds SIZE uint32 pseudo-random numbers; it is called exactly once from
 * main, so `perfsh stat -f sum ./examples/sum` should report one hit. gcc 12 -O2
 * vectorizes it (SSE2, 4 numbers and 9 instructions per iteration): one call
 * retires exactly 4 + 9 * 2,500,000 + 5 = 22,500,009 instructions (callgrind).
 *
 *   usage: sum [SEED]     SEED defaults to 42 (fixed, so the printed sum is
 *                         reproducible); "time" seeds with time(NULL).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIZE 10000000

uint64_t __attribute__((noinline)) sum(uint32_t *numbers)
{
	uint64_t s = 0;

	for (int i = 0; i < SIZE; i++)
		s += numbers[i];
	return s;
}

int main(int argc, char **argv)
{
	unsigned seed = 42;
	uint32_t *numbers;

	if (argc > 1)
		seed = strcmp(argv[1], "time") == 0 ? (unsigned)time(NULL) : (unsigned)atoi(argv[1]);
	numbers = malloc(SIZE * sizeof *numbers);
	if (!numbers) {
		perror("malloc");
		return 1;
	}
	srand(seed);
	for (int i = 0; i < SIZE; i++)
		numbers[i] = (uint32_t)rand();
	printf("sum = %llu\n", (unsigned long long)sum(numbers));
	free(numbers);
	return 0;
}
