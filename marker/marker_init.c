/* marker/marker_init.c - the marker library set up once per process, its file closed at exit and
 * at SIGTERM/SIGINT, forgotten in a forked child (marker_init.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "marker_config.h"
#include "marker_file.h"
#include "marker_init.h"
#include "marker_live.h"
#include "marker_lock.h"
#include "marker_say.h"
#include "marker_writer.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static const int sigs[2] = {SIGTERM, SIGINT};
static struct sigaction prev[2]; /* SIGTERM, SIGINT before ours */

static void at_exit(void)
{
	pm_writer_stop();
	if (pm_lock(0) == 0) {
		__atomic_store_n(&pm_cfg.on, 0, __ATOMIC_RELEASE);
		pm_file_close();
		pm_unlock();
	}
}

/* SIGTERM, SIGINT: what is buffered goes to the file; then the program's own handler runs, or
   the default action (the file closed first) by re-raising. Nothing here allocates or formats. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *p = &prev[sig == SIGINT];
	int saved = errno, dfl = !(p->sa_flags & SA_SIGINFO) && p->sa_handler == SIG_DFL;

	if (pm_lock(1) == 0) {
		if (dfl)
			__atomic_store_n(&pm_cfg.on, 0, __ATOMIC_RELEASE);
		pm_file_at_signal(dfl);
		pm_unlock();
	}
	if (dfl) {
		sigaction(sig, p, NULL);
		raise(sig); /* delivered when this handler returns */
	} else if (p->sa_flags & SA_SIGINFO) {
		p->sa_sigaction(sig, si, uc);
	} else if (p->sa_handler != SIG_IGN) {
		p->sa_handler(sig);
	}
	errno = saved;
}

/* Installed at the first hit rather than before main(): a handler the program set up before
   that is chained to; one it sets up later replaces ours (then its exit path, atexit, closes the file). */
static void install_handlers(void)
{
	for (int i = 0; i < 2; i++) {
		struct sigaction sa;

		if (sigaction(sigs[i], NULL, &prev[i]) || prev[i].sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/* A forked child does not write into its parent's file (the hit path, marker.c, turns off the
   forking thread's markers in its own fork handler). */
static void in_child(void)
{
	__atomic_store_n(&pm_cfg.on, 0, __ATOMIC_RELEASE);
	pm_lock_forget();
	pm_file_forget();
	pm_writer_forget();
}

/* @in with each "%p" replaced by the process id (children that inherit PERFSH_OUT write their own files). */
static int expand_path(const char *in, char *out, size_t n)
{
	size_t k = 0;

	for (; *in; in++) {
		int w = in[0] == '%' && in[1] == 'p' ? snprintf(out + k, n - k, "%d", (int)getpid())
						     : snprintf(out + k, n - k, "%c", *in);

		if (w < 0 || (size_t)w >= n - k)
			return -1;
		k += (size_t)w;
		in += in[0] == '%' && in[1] == 'p';
	}
	out[k] = '\0';
	return 0;
}

/* Shared mode with perfsh's control block at @path: 0, or -1 (markers off, said). */
static int live_on(const char *path)
{
	if (pm_live_init(path))
		return -1;
	pthread_atfork(NULL, NULL, in_child);
	__atomic_store_n(&pm_cfg.on, 1, __ATOMIC_RELEASE);
	return 0;
}

static void init(void)
{
	const char *env = getenv("PERFSH_OUT"), *live = getenv("PERFSH_CONTROL");
	char out[4096];

	pm_config_defaults();
	if (live && *live) {
		/* perfsh started the program: the configuration is its, live; children do not inherit it */
		char path[256];

		snprintf(path, sizeof path, "%s", live);
		unsetenv("PERFSH_CONTROL");
		live_on(path);
		return;
	}
	if (!env || !*env)
		return;
	if (expand_path(env, out, sizeof out)) {
		pm_warn("PERFSH_OUT is too long; markers are off");
		return;
	}
	if (pm_config_from_env())
		return;
	if (pm_lock(0))
		return;
	if (pm_file_open(out) == 0) {
		atexit(at_exit);
		pthread_atfork(NULL, NULL, in_child);
		__atomic_store_n(&pm_cfg.on, 1, __ATOMIC_RELEASE);
	}
	pm_unlock();
}

static void first_hit(void)
{
	if (pm_cfg.live)
		return; /* the records are in shared memory: nothing to flush, no writer */
	install_handlers();
	if (pm_writer_start())
		pm_warn("no background writer thread (%s): threads write their own records", strerror(errno));
}

void pm_first_hit(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, first_hit);
}

void pm_init(void)
{
	pthread_once(&init_once, init);
}

int pm_init_attach(const char *path)
{
	pm_init();
	if (__atomic_load_n(&pm_cfg.on, __ATOMIC_ACQUIRE) || pm_live_ctl())
		return 1;
	return live_on(path);
}

/* Set up before main(): the events resolved and the file created before the first hit. */
__attribute__((constructor)) static void marker_ctor(void)
{
	pm_init();
}
