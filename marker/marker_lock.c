/* marker/marker_lock.c - the lock on the marker library's file and thread list (marker_lock.h). */
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "marker_lock.h"

static int holder; /* tid of the lock's holder, 0 if free */
static sigset_t pipe_old;
static int pipe_was_pending;

uint32_t pm_gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static void quiet_pipe(void)
{
	sigset_t s, p;

	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s, &pipe_old);
	pipe_was_pending = sigpending(&p) == 0 && sigismember(&p, SIGPIPE);
}

static void loud_pipe(void)
{
	struct timespec zero = {0, 0};
	sigset_t s, p;

	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	if (!pipe_was_pending && sigpending(&p) == 0 && sigismember(&p, SIGPIPE))
		sigtimedwait(&s, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &pipe_old, NULL);
}

int pm_lock(int in_signal)
{
	int me = (int)pm_gettid();
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int free_ = 0;

		if (__atomic_compare_exchange_n(&holder, &free_, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			quiet_pipe();
			return 0;
		}
		if (free_ == me)
			return -1;
		if (in_signal) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec > 2)
				return -1;
		}
		sched_yield();
	}
}

void pm_unlock(void)
{
	loud_pipe();
	__atomic_store_n(&holder, 0, __ATOMIC_RELEASE);
}

void pm_lock_forget(void)
{
	holder = 0;
}
