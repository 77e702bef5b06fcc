/* marker/marker_writer.c - the background writer: a thread (named perfsh-marker) that moves the
 * threads' buffered records to the file, so that the copy, the checksums and write(2) are not
 * paid by the threads being measured. It wakes when a thread's buffer is half full and every
 * 100 ms; a thread whose buffer fills all the same writes it out itself. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "marker_file.h"
#include "marker_lock.h"
#include "marker_writer.h"

static pthread_t writer;
static int started, stop, wake;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *writer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	while (!stop) {
		struct timespec ts;

		if (!__atomic_exchange_n(&wake, 0, __ATOMIC_ACQ_REL)) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&cv, &mu, &ts);
			if (stop)
				break;
		}
		pthread_mutex_unlock(&mu);
		if (pm_lock(0) == 0) {
			pm_file_drain_all();
			pm_unlock();
		}
		pthread_mutex_lock(&mu);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

void pm_writer_wake(void)
{
	__atomic_store_n(&wake, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&cv);
}

int pm_writer_start(void)
{
	sigset_t all, old;
	int rc;

	/* signals go to the program's threads, never to this one (it may hold the lock) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&writer, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		errno = rc;
		return -1;
	}
	pthread_setname_np(writer, "perfsh-marker");
	started = 1;
	return 0;
}

void pm_writer_stop(void)
{
	if (!started || pthread_equal(pthread_self(), writer))
		return;
	pthread_mutex_lock(&mu);
	stop = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(writer, NULL);
	started = 0;
}

void pm_writer_forget(void)
{
	started = 0;
	stop = 0;
	pthread_mutex_init(&mu, NULL);
	pthread_cond_init(&cv, NULL);
}
