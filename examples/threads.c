/* examples/threads.c - one function hit from several threads at once.
 *
 * THREADS threads wait on a barrier, then each calls work(ITERS) CALLS times, so
 * work is entered THREADS * CALLS times, CALLS from each thread (tids differ).
 * work compiles like spin in examples/loop.c: 3n + 6 instructions for n > 0.
 *
 *   usage: threads [CALLS] [ITERS] [THREADS]    defaults 1000, 1000 and 2 (at most 16)
 *   prints: calls = THREADS * CALLS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t start;
static uint64_t calls_per_thread = 1000, iters = 1000;

uint64_t __attribute__((noinline)) work(uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
	return i;
}

static void *thread_main(void *arg)
{
	uint64_t *calls = arg;

	pthread_barrier_wait(&start);
	for (uint64_t c = 0; c < calls_per_thread; c++) {
		work(iters);
		++*calls;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[16];
	uint64_t calls[16] = {0}, total = 0;
	int n = 2;

	if (argc > 1)
		calls_per_thread = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		iters = strtoull(argv[2], NULL, 0);
	if (argc > 3)
		n = atoi(argv[3]);
	if (n < 1 || n > 16) {
		fprintf(stderr, "threads: THREADS must be 1 to 16\n");
		return 2;
	}
	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (int t = 0; t < n; t++)
		if (pthread_create(&th[t], NULL, thread_main, &calls[t]) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (int t = 0; t < n; t++) {
		pthread_join(th[t], NULL);
		total += calls[t];
	}
	pthread_barrier_destroy(&start);
	printf("calls = %llu\n", (unsigned long long)total);
	return 0;
}
