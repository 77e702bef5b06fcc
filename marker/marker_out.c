/* marker/marker_out.c - configuration from the environment, the snapshot file (written with the
 * core's psnap writer), the lock that guards it, and the flushes at exit and on SIGTERM/SIGINT. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "marker_priv.h"

struct pm_global pm_g;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static const int sigs[2] = {SIGTERM, SIGINT};

void pm_warn(const char *fmt, ...)
{
	char line[640];
	va_list ap;
	int n;

	n = snprintf(line, sizeof line, "perfsh marker: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	if (write(2, line, strlen(line)) < 0) {
		/* nowhere else to say it */
	}
}

uint32_t pm_gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* While the lock is held, SIGPIPE is blocked on its holder's thread and one raised meanwhile
   dropped: a PERFSH_OUT that is a pipe whose reader has gone fails with EPIPE (counted as lost
   records), it does not kill the program. */
static sigset_t pipe_old;
static int pipe_was_pending;

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

/*
 * The lock on the file and the thread list: a spinlock holding its owner's tid, so that a
 * signal handler can tell that it interrupted the holder (then it gives up rather than
 * deadlock), and waits at most 2 s for another thread.
 */
int pm_lock(int in_signal)
{
	int me = (int)pm_gettid();
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int free_ = 0;

		if (__atomic_compare_exchange_n(&pm_g.lock, &free_, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
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
	__atomic_store_n(&pm_g.lock, 0, __ATOMIC_RELEASE);
}

/* The writer failed: say so once; records from now on are counted as lost. */
static void writer_failed(const struct ps_error *err)
{
	if (!pm_g.failed)
		pm_warn("%s; records from now on are lost (counted)", err->msg);
	pm_g.failed = 1;
}

void pm_drain(struct pm_thread *t)
{
	struct ps_ring *r = t->ring;
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), tail = r->tail;
	struct ps_error err;

	while (tail != head) {
		uint64_t at = tail & (r->capacity - 1), n = head - tail;

		if (n > r->capacity - at)
			n = r->capacity - at;
		if (!pm_g.w || pm_g.closed || pm_g.failed)
			t->lost += n;
		else if (ps_psnap_write(pm_g.w, r->recs + at * pm_g.recsize, n, &err)) {
			writer_failed(&err);
			t->lost += n;
		}
		tail += n;
	}
	__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
}

void pm_ring_full(struct pm_thread *t)
{
	if (pm_lock(0) == 0) {
		pm_drain(t);
		pm_unlock();
	}
}

void pm_drain_all(void)
{
	for (struct pm_thread *t = pm_g.threads; t; t = t->next)
		pm_drain(t);
}

int ps_marker_flush(void)
{
	struct ps_error err;
	int rc = -1;

	if (!__atomic_load_n(&pm_g.on, __ATOMIC_ACQUIRE) || pm_lock(0))
		return -1;
	pm_drain_all();
	if (pm_g.w && !pm_g.closed && !pm_g.failed) {
		if (ps_psnap_flush(pm_g.w, &err))
			writer_failed(&err);
		else
			rc = 0;
	}
	pm_unlock();
	return rc;
}

int ps_marker_enabled(void)
{
	pm_init();
	return __atomic_load_n(&pm_g.on, __ATOMIC_ACQUIRE) && !pm_g.failed;
}

void pm_name_region(int id, const char *name)
{
	struct ps_error err;
	char k[48];
	int rc;

	if (!pm_g.w || pm_g.closed || pm_g.failed)
		return;
	rc = ps_psnap_add_region(pm_g.w, name, &err) != id;
	snprintf(k, sizeof k, "kind.%d", id);
	rc = rc || ps_psnap_add_meta(pm_g.w, k, "marker", &err);
	snprintf(k, sizeof k, "sampled.%d", id);
	rc = rc || ps_psnap_add_meta(pm_g.w, k, pm_g.own_pol.sampled ? "1" : "0", &err);
	if (rc)
		writer_failed(&err);
}

/* The counts of the run as META pairs, then END (the lock held). */
static void close_file(void)
{
	uint64_t entries[PS_MARKER_REGIONS], lost = pm_g.lost, unmatched = pm_g.unmatched, fast = pm_g.fast;
	struct ps_error err;
	char k[48], v[48];
	int rc = 0;

	if (!pm_g.w || pm_g.closed)
		return;
	__atomic_store_n(&pm_g.on, 0, __ATOMIC_RELEASE);
	pm_drain_all();
	memcpy(entries, pm_g.entries, sizeof entries);
	for (struct pm_thread *t = pm_g.threads; t; t = t->next) {
		for (int i = 0; i < pm_g.nregions; i++)
			entries[i] += t->entries[i];
		lost += t->lost + ps_ring_dropped(t->ring);
		unmatched += t->cnt->unmatched;
		fast += t->cnt->fast;
	}
	for (int i = 0; i < pm_g.nregions && rc == 0 && !pm_g.failed; i++) {
		/* every begin, unless the slow-hit threshold hid the fast ones (marker.fast counts them) */
		snprintf(k, sizeof k, pm_g.own_pol.slow_ns ? "marker.entries.%d" : "entries.%d", i);
		snprintf(v, sizeof v, "%llu", (unsigned long long)entries[i]);
		rc = ps_psnap_add_meta(pm_g.w, k, v, &err);
	}
#define META_U64(key, val)                                                                                             \
	(snprintf(v, sizeof v, "%llu", (unsigned long long)(val)), ps_psnap_add_meta(pm_g.w, key, v, &err))
	if (rc == 0 && !pm_g.failed)
		rc = META_U64("marker.lost", lost) || META_U64("marker.unmatched", unmatched) ||
		     META_U64("marker.fast", fast) || META_U64("marker.threads", pm_g.nthreads);
	if (rc)
		writer_failed(&err);
	if (ps_psnap_close(pm_g.w, &err) && !pm_g.failed)
		pm_warn("%s; the file is incomplete", err.msg);
	else if (lost)
		pm_warn("%llu records lost (counted in the file as marker.lost)", (unsigned long long)lost);
	pm_g.w = NULL;
	pm_g.closed = 1;
}

static void at_exit(void)
{
	pm_writer_stop();
	if (pm_lock(0) == 0) {
		close_file();
		pm_unlock();
	}
}

/* SIGTERM, SIGINT: what is buffered goes to the file; then the program's own handler runs, or
   the default action (the file closed first) by re-raising. Nothing here allocates. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *prev = &pm_g.prev[sig == SIGINT];
	int saved = errno, dfl = !(prev->sa_flags & SA_SIGINFO) && prev->sa_handler == SIG_DFL;
	struct ps_error err;

	if (pm_lock(1) == 0) {
		if (pm_g.w && !pm_g.closed && !pm_g.failed) {
			__atomic_store_n(&pm_g.on, dfl ? 0 : 1, __ATOMIC_RELEASE);
			pm_drain_all();
			if ((dfl ? ps_psnap_finish(pm_g.w, &err) : ps_psnap_flush(pm_g.w, &err)) == 0 && dfl)
				pm_g.closed = 1;
		}
		pm_unlock();
	}
	if (dfl) {
		sigaction(sig, prev, NULL);
		raise(sig); /* delivered when this handler returns */
	} else if (prev->sa_flags & SA_SIGINFO) {
		prev->sa_sigaction(sig, si, uc);
	} else if (prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
	}
	errno = saved;
}

/* Installed at the first hit rather than before main(): a handler the program set up before
   that is chained to; one it sets up later replaces ours (then its exit path, atexit, closes the file). */
static void install_handlers(void)
{
	for (int i = 0; i < 2; i++) {
		struct sigaction sa;

		if (sigaction(sigs[i], NULL, &pm_g.prev[i]) || pm_g.prev[i].sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/* A forked child does not write into its parent's file. */
static void in_child(void)
{
	__atomic_store_n(&pm_g.on, 0, __ATOMIC_RELEASE);
	pm_thread_off();
	pm_g.lock = 0;
	pm_g.w = NULL;
	pm_writer_forget();
	pm_g.closed = 1;
}

/* PERFSH_SAMPLE, PERFSH_EVERY, PERFSH_SLOW_US; -1 after a warning. */
static int read_policy(void)
{
	const char *s;
	char *end;

	if ((s = getenv("PERFSH_SAMPLE")) && *s) {
		double p = strtod(s, &end);

		if (*end || !(p > 0 && p <= 1)) {
			pm_warn("PERFSH_SAMPLE=%s: give a probability in (0, 1], e.g. 0.01; markers are off", s);
			return -1;
		}
		pm_g.own_pol.sampled = p < 1;
		pm_g.own_pol.threshold = p >= 1 ? UINT64_MAX : (uint64_t)ldexp(p, 64);
	}
	if ((s = getenv("PERFSH_EVERY")) && *s) {
		unsigned long long n = strtoull(s, &end, 10);

		if (*end || n == 0 || *s == '-') {
			pm_warn("PERFSH_EVERY=%s: give a count >= 1 (record every Nth hit); markers are off", s);
			return -1;
		}
		if (pm_g.own_pol.sampled) {
			pm_warn("PERFSH_SAMPLE and PERFSH_EVERY are both set: give one; markers are off");
			return -1;
		}
		pm_g.own_pol.every = n > 1 ? n : 0;
		pm_g.own_pol.sampled |= n > 1;
	}
	if ((s = getenv("PERFSH_SLOW_US")) && *s) {
		double us = strtod(s, &end);

		if (*end || !(us >= 0) || us > 1e12) {
			pm_warn("PERFSH_SLOW_US=%s: give microseconds >= 0; markers are off", s);
			return -1;
		}
		pm_g.own_pol.slow_ns = (uint64_t)(us * 1000);
	}
	return 0;
}

int pm_events(const char *list, struct ps_error *err)
{
	char buf[1024], *save = NULL;

	if (strlen(list) >= sizeof buf)
		return ps_error_set(err, PS_EUSAGE, "the event list is too long");
	strcpy(buf, list);
	pm_g.nev = 0;
	for (char *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		if (pm_g.nev == PS_MAX_EVENTS)
			return ps_error_set(err, PS_EUSAGE, "at most %d events", PS_MAX_EVENTS);
		if (ps_event_resolve(e, &pm_g.ev[pm_g.nev], err))
			return -1;
		pm_g.nev++;
	}
	if (pm_g.nev == 0)
		return ps_error_set(err, PS_EUSAGE, "no event named");
	return 0;
}

/* PERFSH_EVENTS (a comma-separated list), or the default events; -1 after a warning. */
static int read_events(void)
{
	const char *s = getenv("PERFSH_EVENTS");
	struct ps_error err;

	if (!s || !*s)
		s = ps_pmu_present() ? "cycles,instructions" : "task-clock,page-faults";
	if (pm_events(s, &err)) {
		pm_warn("PERFSH_EVENTS: %s; markers are off", err.msg);
		return -1;
	}
	return 0;
}

/* The command line, arguments joined by spaces. */
static void command(char *buf, size_t n)
{
	FILE *f = fopen("/proc/self/cmdline", "re");
	size_t k = 0;

	buf[0] = '\0';
	if (!f)
		return;
	k = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[k] = '\0';
	for (size_t i = 0; k > 0 && i + 1 < k; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
}

static int open_file(const char *path)
{
	const char *names[PS_MAX_EVENTS];
	char cmd[512], pid[24], rd[32], rp[128], samp[48], slow[32];
	struct ps_psnap_meta meta[8];
	struct ps_psnap_info info = {0};
	struct ps_error err;

	for (int i = 0; i < pm_g.nev; i++)
		names[i] = pm_g.ev[i].name;
	command(cmd, sizeof cmd);
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	snprintf(rd, sizeof rd, "%.0f", pm_g.read_ns);
	if (pm_g.rdpmc_ns < 0)
		snprintf(rp, sizeof rp, "no: %s", pm_g.rdpmc_why);
	else
		snprintf(rp, sizeof rp, "%.0f", pm_g.rdpmc_ns);
	if (pm_g.own_pol.every)
		snprintf(samp, sizeof samp, "every %llu", (unsigned long long)pm_g.own_pol.every);
	else
		snprintf(samp, sizeof samp, "%s", pm_g.own_pol.sampled ? getenv("PERFSH_SAMPLE") : "all");
	snprintf(slow, sizeof slow, "%llu", (unsigned long long)(pm_g.own_pol.slow_ns / 1000));
	meta[0] = (struct ps_psnap_meta){"command", cmd};
	meta[1] = (struct ps_psnap_meta){"pid", pid};
	meta[2] = (struct ps_psnap_meta){"source", "marker"};
	meta[3] = (struct ps_psnap_meta){"marker.read", pm_g.mode == PM_READ_RDPMC ? "rdpmc" : "read"};
	meta[4] = (struct ps_psnap_meta){"marker.read_ns", rd};
	meta[5] = (struct ps_psnap_meta){"marker.rdpmc_ns", rp};
	meta[6] = (struct ps_psnap_meta){"marker.sample", samp};
	meta[7] = (struct ps_psnap_meta){"marker.slow_us", slow};
	info.nvals = (unsigned)pm_g.nev;
	info.nargs = PS_MARKER_FIELDS;
	info.nevents = (size_t)pm_g.nev;
	info.events = names;
	info.nregions = (size_t)pm_g.nregions;
	info.regions = (const char *const *)pm_g.names;
	info.nmeta = 8;
	info.meta = meta;
	if (!(pm_g.w = ps_psnap_create(path, &info, &err))) {
		pm_warn("PERFSH_OUT: %s; markers are off", err.msg);
		return -1;
	}
	return 0;
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

static void init(void)
{
	const char *env = getenv("PERFSH_OUT"), *live = getenv("PERFSH_CONTROL");
	struct ps_error err;
	char out[4096];

	pm_g.pol = &pm_g.own_pol;
	pm_g.armed = pm_g.own_armed;
	pm_g.own_pol.on = 1;
	pm_g.own_pol.threshold = UINT64_MAX;
	memset(pm_g.own_armed, 1, sizeof pm_g.own_armed);
	if (live && *live) {
		/* perfsh started the program: the configuration is its, live; children do not inherit it */
		char path[256];

		snprintf(path, sizeof path, "%s", live);
		unsetenv("PERFSH_CONTROL");
		if (pm_live_init(path) == 0) {
			pthread_atfork(NULL, NULL, in_child);
			__atomic_store_n(&pm_g.on, 1, __ATOMIC_RELEASE);
		}
		return;
	}
	if (!env || !*env)
		return;
	if (expand_path(env, out, sizeof out)) {
		pm_warn("PERFSH_OUT is too long; markers are off");
		return;
	}
	if (read_policy() || read_events())
		return;
	if (pm_choose_mode(&err)) {
		pm_warn("%s; markers are off", err.msg);
		return;
	}
	pm_g.recsize = ps_snap_size((unsigned)pm_g.nev, PS_MARKER_FIELDS);
	if (pm_lock(0))
		return;
	if (open_file(out) == 0) {
		atexit(at_exit);
		pthread_atfork(NULL, NULL, in_child);
		__atomic_store_n(&pm_g.on, 1, __ATOMIC_RELEASE);
	}
	pm_unlock();
}

static void first_hit(void)
{
	if (pm_g.ctl)
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

/* Set up before main(): the events resolved and the file created before the first hit. */
__attribute__((constructor)) static void marker_ctor(void)
{
	pm_init();
}
