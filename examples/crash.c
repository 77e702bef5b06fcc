/* examples/crash.c - a target that dies inside a region.
 *
 * main calls step(0), step(1), ...; the 5th call, step(4), writes through a
 * NULL pointer and the process dies of SIGSEGV inside step: 4 calls return,
 * the 5th never does. Each call prints "step I" to stderr (unbuffered) first.
 */
#include <stdio.h>

int __attribute__((noinline)) step(int i)
{
	/* volatile pointer and store: the compiler can neither see the NULL (no ud2)
	 * nor drop the store */
	volatile int *volatile p = NULL;

	fprintf(stderr, "step %d\n", i);
	if (i == 4)
		*p = i;
	return i * 2;
}

int main(void)
{
	int total = 0;

	for (int i = 0; i < 10; i++)
		total += step(i);
	printf("total = %d\n", total); /* never reached */
	return 0;
}
