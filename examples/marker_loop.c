/* examples/marker_loop.c - regions marked with the marker library (perfsh/marker.h), of known counts.
 *
 *   each of THREADS threads:  PS_MARK_BEGIN(thread)
 *                               REPS times: PS_MARK_BEGIN(loop) spin(N) PS_MARK_END(loop),
 *                                           field 0 = the rep, field 1 = 1 for a slow rep
 *                             PS_MARK_END(thread)
 *   SLOW > 0: every SLOW-th rep (0, SLOW, 2 SLOW ...) also sleeps 30 ms inside its region.
 *   TERM = "term": a SIGTERM handler of the program's own stops the loops (the library's handler
 *   chains to it), and the program exits normally.
 *
 *   PERFSH_OUT=loop.psnap ./examples/marker_loop 100000 10 4 && perfsh report loop.psnap
 *   perfsh --list sdt ./examples/marker_loop      (perfsh:thread_begin ... perfsh:loop_end)
 *
 *   usage: marker_loop [N] [REPS] [THREADS] [SLOW] [term]   defaults 100000, 10, 1, 0
 *   prints: threads THREADS reps REPS, then "stopped by SIGTERM" when the handler stopped it
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfsh/marker.h>

static uint64_t n_iter = 100000;
static long reps = 10, slow;
static volatile uint64_t sink;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t __attribute__((noinline)) spin(uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		__asm__ volatile("");
	return i;
}

static void *worker(void *arg)
{
	(void)arg;
	PS_MARK_BEGIN(thread);
	for (long r = 0; r < reps && !stop; r++) {
		PS_MARK_BEGIN(loop);
		PS_MARK_FIELD(0, r);
		sink = spin(n_iter);
		if (slow > 0 && r % slow == 0) {
			struct timespec ts = {0, 30 * 1000 * 1000};

			PS_MARK_FIELD(1, 1);
			nanosleep(&ts, NULL);
		}
		PS_MARK_END(loop);
	}
	PS_MARK_END(thread);
	return NULL;
}

int main(int argc, char **argv)
{
	long nthreads = argc > 3 ? atol(argv[3]) : 1;
	pthread_t tids[256];

	n_iter = argc > 1 ? strtoull(argv[1], NULL, 0) : n_iter;
	reps = argc > 2 ? atol(argv[2]) : reps;
	slow = argc > 4 ? atol(argv[4]) : 0;
	if (argc > 5 && !strcmp(argv[5], "term"))
		signal(SIGTERM, on_term);
	if (nthreads < 1 || nthreads > 256 || reps < 0) {
		fprintf(stderr, "usage: marker_loop [N] [REPS] [THREADS (1..256)] [SLOW]\n");
		return 2;
	}
	if (nthreads == 1) {
		worker(NULL);
	} else {
		for (long i = 0; i < nthreads; i++)
			if (pthread_create(&tids[i], NULL, worker, NULL)) {
				fprintf(stderr, "marker_loop: pthread_create failed\n");
				return 1;
			}
		for (long i = 0; i < nthreads; i++)
			pthread_join(tids[i], NULL);
	}
	printf("threads %ld reps %ld\n", nthreads, reps);
	if (stop)
		printf("stopped by SIGTERM\n");
	return 0;
}
