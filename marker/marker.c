/* marker/marker.c - the hit path: per-thread state, sampling, begin/end records, regions. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "marker_priv.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* This thread's state: NULL before its first hit; &off_thread when it records nothing. */
static __thread struct pm_thread *self __attribute__((tls_model("initial-exec")));
static struct pm_thread off_thread = {.off = 1};
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* A thread ends: its records to the file, its counts to the totals, its group closed. */
static void thread_gone(void *p)
{
	struct pm_thread *t = p, **pp;

	if (pm_lock(0) == 0) {
		pm_drain(t);
		pm_thread_forget(t);
		for (pp = &pm_g.threads; *pp; pp = &(*pp)->next)
			if (*pp == t) {
				*pp = t->next;
				break;
			}
		pm_unlock();
	}
	self = &off_thread;
	pm_counters_close(&t->c);
	free(t->ring);
	free(t->entries);
	free(t);
}

static void make_key(void)
{
	if (pthread_key_create(&thread_key, thread_gone))
		thread_key = (pthread_key_t)-1;
}

void pm_thread_forget(struct pm_thread *t)
{
	for (int i = 0; i < pm_g.nregions; i++)
		pm_g.entries[i] += t->entries[i];
	pm_g.lost += t->lost;
	pm_g.unmatched += t->unmatched;
	pm_g.fast += t->fast;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The first hit of a thread: its state, group and ring. */
static struct pm_thread *thread_init(void)
{
	struct pm_thread *t;
	struct ps_error err;
	uint64_t cap = 1;

	pm_init();
	self = &off_thread;
	if (!__atomic_load_n(&pm_g.on, __ATOMIC_ACQUIRE))
		return self;
	pthread_once(&key_once, make_key);
	while (cap * 2 * pm_g.recsize <= PM_RING_BYTES)
		cap *= 2;
	t = calloc(1, sizeof *t);
	if (!t || !(t->ring = malloc(cap * pm_g.recsize)) ||
	    !(t->entries = calloc(PS_MARKER_REGIONS, sizeof *t->entries))) {
		pm_warn("out of memory for a thread's buffer; this thread's markers are off");
		goto fail;
	}
	t->cap = cap;
	t->tid = pm_gettid();
	t->rng = ((uint64_t)t->tid << 32 | 1u) ^ now_ns();
	if (pm_counters_open(&t->c, pm_g.ev, pm_g.nev, pm_g.mode, &err)) {
		pm_warn("%s; thread %u's markers are off", err.msg, t->tid);
		goto fail;
	}
	if (pm_lock(0)) {
		pm_counters_close(&t->c);
		goto fail;
	}
	t->next = pm_g.threads;
	pm_g.threads = t;
	pm_g.nthreads++;
	pm_unlock();
	if (thread_key != (pthread_key_t)-1)
		pthread_setspecific(thread_key, t);
	self = t;
	pm_first_hit();
	return t;
fail:
	if (t) {
		free(t->ring);
		free(t->entries);
		free(t);
	}
	return self;
}

/* xorshift64*: the sampling draw. */
static inline uint64_t draw(struct pm_thread *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline int sampled(struct pm_thread *t)
{
	if (pm_g.every) {
		if (++t->every < pm_g.every)
			return 0;
		t->every = 0;
		return 1;
	}
	return !pm_g.sample || draw(t) < pm_g.threshold;
}

void ps_marker_begin(int id)
{
	struct pm_thread *t = self;
	struct pm_frame *f;

	if (UNLIKELY(!t))
		t = thread_init();
	if (UNLIKELY(t->off) || UNLIKELY((unsigned)id >= (unsigned)__atomic_load_n(&pm_g.nregions, __ATOMIC_RELAXED)))
		return;
	if (UNLIKELY(t->depth >= PS_MARKER_DEPTH)) {
		t->too_deep++;
		return;
	}
	f = &t->stack[t->depth++];
	f->id = id;
	f->hit = t->entries[id]++;
	f->sampled = (uint32_t)sampled(t);
	if (!f->sampled)
		return;
	memset(f->args, 0, sizeof f->args);
	f->cpu = (int16_t)sched_getcpu();
	f->t_start = now_ns();
	pm_counters_read(&t->c, pm_g.mode, f->start, &f->enabled, &f->running);
}

/* The record of frame @f ending now, into the ring. */
static void record(struct pm_thread *t, struct pm_frame *f, uint32_t depth)
{
	uint64_t end[PS_MAX_EVENTS], enabled, running, t_end;
	struct ps_snap *s;
	int nev = pm_g.nev;

	pm_counters_read(&t->c, pm_g.mode, end, &enabled, &running);
	t_end = now_ns();
	if (pm_g.slow_ns && t_end - f->t_start < pm_g.slow_ns) {
		t->fast++;
		return;
	}
	if (t->head - __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE) >= t->cap) {
		pm_ring_full(t);
		if (t->head - __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE) >= t->cap) {
			t->lost++;
			return;
		}
	}
	s = (struct ps_snap *)(t->ring + (t->head & (t->cap - 1)) * pm_g.recsize);
	s->region = (uint32_t)f->id;
	s->tid = t->tid;
	s->seq = t->seq++;
	s->hit = f->hit;
	s->t_start = f->t_start;
	s->t_end = t_end;
	s->enabled_start = f->enabled;
	s->running_start = f->running;
	s->enabled_end = enabled;
	s->running_end = running;
	s->cpu_start = f->cpu;
	s->cpu_end = (int16_t)sched_getcpu();
	s->flags = pm_g.sample || pm_g.every ? PS_SNAP_SAMPLED : 0;
	s->nvals = (uint8_t)nev;
	s->nargs = PS_MARKER_FIELDS;
	s->depth = depth;
	s->pad = 0;
	memcpy(ps_snap_args(s), f->args, sizeof f->args);
	memcpy(ps_snap_start(s), f->start, (size_t)nev * sizeof(uint64_t));
	memcpy(ps_snap_end(s), end, (size_t)nev * sizeof(uint64_t));
	__atomic_store_n(&t->head, t->head + 1, __ATOMIC_RELEASE);
	if (t->head - __atomic_load_n(&t->tail, __ATOMIC_RELAXED) == t->cap / 2)
		pm_writer_wake();
}

void ps_marker_end(int id)
{
	struct pm_thread *t = self;
	uint32_t d;

	if (UNLIKELY(!t) || UNLIKELY(t->off))
		return;
	if (UNLIKELY(t->too_deep)) {
		t->too_deep--;
		return;
	}
	d = t->depth;
	while (d > 0 && t->stack[d - 1].id != id)
		d--;
	if (UNLIKELY(d == 0)) {
		t->unmatched++;
		return;
	}
	t->unmatched += t->depth - d; /* inner hits left open */
	t->depth = d - 1;
	if (t->stack[d - 1].sampled)
		record(t, &t->stack[d - 1], d - 1);
}

void ps_marker_field(unsigned slot, uint64_t value)
{
	struct pm_thread *t = self;

	if (t && t->depth > 0 && slot < PS_MARKER_FIELDS)
		t->stack[t->depth - 1].args[slot] = value;
}

int ps_marker_region(const char *name)
{
	size_t len = name ? strlen(name) : 0;
	int id = -1;

	pm_init();
	if (len == 0 || len > 127)
		return -1;
	if (pm_lock(0))
		return -1;
	for (int i = 0; i < pm_g.nregions; i++)
		if (!strcmp(pm_g.names[i], name)) {
			id = i;
			break;
		}
	if (id < 0 && pm_g.nregions < PS_MARKER_REGIONS && (pm_g.names[pm_g.nregions] = strdup(name))) {
		id = pm_g.nregions;
		pm_name_region(id, name);
		__atomic_store_n(&pm_g.nregions, id + 1, __ATOMIC_RELEASE);
	}
	pm_unlock();
	return id;
}
