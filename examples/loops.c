/* examples/loops.c - line ranges around and inside loops (tests/16-loops_spec.lua).
 *
 * fill() stores N bytes in a counted loop; dispatch() runs a switch in a loop, which gcc
 * -O2 compiles to a jump table (an indirect jmp). main() calls fill() once and dispatch()
 * CALLS times. Each marked line has code of its own at -O2, so these ranges have exact
 * hit counts however many iterations run:
 *   FILL-BEFORE to FILL-FOR        the loop header as end line: 1 hit, before the loop
 *   FILL-FOR to FILL-AFTER         the loop header as start line: 1 hit, the whole loop
 *   DISPATCH-FIRST to DISPATCH-AFTER    a whole loop with a jump table: CALLS hits
 *   MAIN-TWICE to MAIN-PRINT            a line whose code is an inlined call: 1 hit
 *   DISPATCH-CASE to DISPATCH-AFTER     from a case inside the loop to the line after the
 *                                       loop: one hit per call (a stop at each entry to the case)
 *
 *   usage: loops [N] [CALLS]    defaults N = 1000000, CALLS = 3
 *   prints: the checksum, then "ok"
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

static inline unsigned twice(unsigned x)
{
	return x * 2 + sink;
}

void __attribute__((noinline)) fill(unsigned char *ops, int n)
{
	sink = (unsigned)n;	    /* FILL-BEFORE */
	for (int i = 0; i < n; i++) /* FILL-FOR */
		ops[i] = (unsigned char)((i * 7 + sink) % 8);
	sink = 0; /* FILL-AFTER */
}

unsigned __attribute__((noinline)) dispatch(const unsigned char *ops, int n)
{
	unsigned acc = sink; /* DISPATCH-FIRST */

	for (int i = 0; i < n; i++) {
		switch (ops[i]) {
		case 0:
			acc += 3;
			break;
		case 1:
			acc ^= 0x55;
			break;
		case 2:
			acc *= 5;
			break;
		case 3:
			acc -= 11;
			break;
		case 4:
			acc = (acc << 3) | (acc >> 29);
			break;
		case 5:
			acc += sink; /* DISPATCH-CASE */
			break;
		default:
			acc = ~acc;
			break;
		}
	}
	sink = acc; /* DISPATCH-AFTER */
	return acc;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000000, calls = argc > 2 ? atoi(argv[2]) : 3;
	unsigned char *ops = malloc(n > 0 ? (size_t)n : 1);
	unsigned sum = 0;

	if (!ops)
		return 1;
	fill(ops, n);
	for (int c = 0; c < calls; c++)
		sum += dispatch(ops, n);
	sum = twice(sum); /* MAIN-TWICE */
	printf("%u\nok\n", sum); /* MAIN-PRINT */
	free(ops);
	return 0;
}
