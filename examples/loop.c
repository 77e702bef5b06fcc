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
 * main runs spin(N) REPS times; each repetition runs from the LOOP-BEGIN line to the
 * LOOP-END line, two volatile stores that keep their place at -O2, so the line range
 * loop.c:BEGIN-loop.c:END (END exclusive) has REPS hits of 3N + 6 instructions of spin
 * plus a few of main (the store, the call, the add):
 *   perfsh stat -r loop.c:42-loop.c:44 ./examples/loop
 *
 *   usage: loop [N] [REPS]     defaults N = 1000000, REPS = 10
 *   prints: total = N * REPS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

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
		sink = r; /* LOOP-BEGIN */
		total += spin(n);
		sink = total; /* LOOP-END */
	}
	printf("total = %llu\n", (unsigned long long)total);
	return 0;
}
