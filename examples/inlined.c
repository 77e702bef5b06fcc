/* examples/inlined.c - a function that exists only as inlined copies.
 *
 * mix() is always inlined, into two loops of main: the first runs it A times, the second B
 * times (argv, defaults 30 and 50). A region on mix is one region per inlined copy:
 *   perfsh stat -r mix ./examples/inlined
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

static inline __attribute__((always_inline)) unsigned mix(unsigned x)
{
	unsigned h = x * 2654435761u;
	for (int k = 0; k < 64; k++)
		h = (h ^ (h >> 13)) * 1274126177u + (unsigned)k;
	sink = h;
	return h;
}

int main(int argc, char **argv)
{
	int a = argc > 1 ? atoi(argv[1]) : 30, b = argc > 2 ? atoi(argv[2]) : 50;
	unsigned s = 0;

	for (int i = 0; i < a; i++)
		s += mix((unsigned)i);
	for (int i = 0; i < b; i++)
		s ^= mix((unsigned)i + 7u);
	printf("mixed = %u\n", s);
	return 0;
}
