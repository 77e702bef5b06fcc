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
 * With "pages", main calls touch_pages(a, b, c) instead (a, b, c in 1 .. 40): it maps and
 * writes a + 3b + 7c fresh pages, so each call takes exactly a + 3b + 7c page faults, a
 * software event every machine counts:
 *     perfsh attribute -r touch_pages --args A,B,C -e page-faults ./examples/attribute 200 pages
 *
 *   usage: attribute [CALLS] [pages]     default 200 calls of do_work
 *   env:   ATTRIBUTE_VERBOSE=1   print "a b c" of each call to stderr
 *   prints: calls = CALLS, units = sum of a, b, c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

uint64_t __attribute__((noinline)) touch_pages(uint64_t a, uint64_t b, uint64_t c)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = a + 3 * b + 7 * c;
	volatile char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 0;
	madvise((void *)p, n * page, MADV_NOHUGEPAGE); /* one fault per page, not per 2 MiB */
	for (size_t i = 0; i < n; i++)
		p[i * page] = 1;
	munmap((void *)p, n * page);
	return a + b + c;
}

int main(int argc, char **argv)
{
	int calls = argc > 1 ? atoi(argv[1]) : 200;
	int pages = argc > 2 && !strcmp(argv[2], "pages");
	const char *v = getenv("ATTRIBUTE_VERBOSE");
	uint64_t units = 0;

	srand(1);
	for (int k = 0; k < calls; k++) {
		uint64_t range = pages ? 40 : 1000;
		uint64_t a = 1 + (uint64_t)rand() % range;
		uint64_t b = 1 + (uint64_t)rand() % range;
		uint64_t c = 1 + (uint64_t)rand() % range;

		if (v && *v && *v != '0')
			fprintf(stderr, "%llu %llu %llu\n", (unsigned long long)a, (unsigned long long)b,
				(unsigned long long)c);
		units += pages ? touch_pages(a, b, c) : do_work(a, b, c);
	}
	printf("calls = %d, units = %llu\n", calls, (unsigned long long)units);
	return 0;
}
