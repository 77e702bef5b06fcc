/* examples/sdt.c - USDT/SDT probes (<sys/sdt.h>, package systemtap-sdt-dev) of known counts.
 *
 *   demo:work_start, demo:work_end  a pair around each of REPS loop bodies; each body runs
 *                                   spin(N): 3N + 6 instructions (as examples/loop.c)
 *   demo:tick                       a point probe, fired TICKS times (arguments i and its square)
 *   demo:traced                     guarded by a semaphore (demo_traced_semaphore): it fires,
 *                                   and its argument is computed, only while a tracer has armed it
 *
 *   perfsh --list sdt ./examples/sdt
 *
 *   usage: sdt [N] [REPS] [TICKS]   defaults N = 100000, REPS = 10, TICKS = 1000
 *   prints: reps REPS ticks TICKS traced T (T: how often demo:traced was armed and fired)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

static volatile uint64_t sink;

uint64_t __attribute__((noinline)) spin(uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		__asm__ volatile("");
	return i;
}

static void __attribute__((noinline)) work(uint64_t n, int reps)
{
	for (int r = 0; r < reps; r++) {
		DTRACE_PROBE2(demo, work_start, r, n);
		sink = spin(n);
		DTRACE_PROBE1(demo, work_end, r);
	}
}

static void __attribute__((noinline)) ticks(long count)
{
	for (long i = 0; i < count; i++) {
		long sq = i * i;
		DTRACE_PROBE2(demo, tick, i, sq);
	}
}

/* <sys/sdt.h> decides per translation unit whether probes carry a semaphore; from here on
   they do (only demo:traced follows). */
#undef _SDT_NOTE_SEMAPHORE_USE
#define _SDT_NOTE_SEMAPHORE_USE(provider, name) __asm__ __volatile__("" ::"m"(provider##_##name##_semaphore));
#undef _SDT_SEMAPHORE
#define _SDT_SEMAPHORE(p, n) _SDT_ASM_1(_SDT_ASM_ADDR p##_##n##_semaphore)

/* The semaphore a tracer increments while demo:traced is armed (in .probes, as dtrace -G puts it). */
__extension__ unsigned short demo_traced_semaphore __attribute__((unused, section(".probes")));

static long __attribute__((noinline)) traced(long count)
{
	long fired = 0;

	for (long i = 0; i < count; i++)
		if (demo_traced_semaphore) { /* the argument costs only while someone listens */
			fired++;
			DTRACE_PROBE1(demo, traced, i * 3);
		}
	return fired;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	int reps = argc > 2 ? atoi(argv[2]) : 10;
	long count = argc > 3 ? atol(argv[3]) : 1000;

	work(n, reps);
	ticks(count);
	printf("reps %d ticks %ld traced %ld\n", reps, count, traced(count));
	return 0;
}
