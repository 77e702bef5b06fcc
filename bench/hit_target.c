/* bench/hit_target.c - the program bench/ptrace_hit traces: hit() called N times.
 * Built with -fcf-protection=full so hit() starts with endbr64, which both tracers
 * can step over without running anything out of line. */
#include <stdint.h>
#include <stdlib.h>

uint64_t __attribute__((noinline)) hit(uint64_t x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000, s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += hit(i);
	return s == 42;
}
