/* examples/loop.c - a function with an exact instruction count.
 *
 * spin(n) runs n iterations of an empty asm statement. With gcc 12 -O2 on
 * x86-64 it compiles to (objdump -d examples/loop):
 *     mov %rdi,%rax ; test %rdi,%rdi ; je out ; xor %edx,%edx ; nopw (alignment, executed)
 *   loop: add $0x1,%rdx ; cmp %rdx,%rax ; jne loop      <- 3 instructions per iteration
 *   out: ret
 * so spin(n) retires exactly 3n + 6 user instructions for n > 0 and 4 for n = 0
 * (checked with valgrind --tool=callgrind: spin(1000) = 3006).
 *
 * main runs spin(N) REPS times between the two LOOP marker comments (a
 * line-range region: REPS hits, each spanning one call of spin).
 *
 *   usage: loop [N] [REPS]     defaults N = 1000000, REPS = 10
 *   prints: total = N * REPS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t __attribute__((noinline)) spin(uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
	return i;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	uint64_t reps = argc > 2 ? strtoull(argv[2], NULL, 0) : 10;
	uint64_t total = 0;

	for (uint64_t r = 0; r < reps; r++) {
		/* LOOP-BEGIN */
		total += spin(n);
		/* LOOP-END */
	}
	printf("total = %llu\n", (unsigned long long)total);
	return 0;
}
