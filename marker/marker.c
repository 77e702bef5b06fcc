/* marker/marker.c - the marker library's hit path and its API (perfsh/marker.h): per-thread state,
 * sampling, begin/end records into the thread's ring, the regions' names. It calls the parts
 * below it and none calls it: marker_init (set-up, exit, signals), marker_live (shared mode),
 * marker_file (file mode), marker_writer, marker_config, marker_read, marker_lock, marker_say. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "marker_config.h"
#include "marker_file.h"
#include "marker_hit.h"
#include "marker_init.h"
#include "marker_live.h"
#include "marker_lock.h"
#include "marker_say.h"
#include "marker_thread.h"
#include "marker_writer.h"
#include "snapshot.h"

#define RING_BYTES (512u << 10) /* a thread's buffer, about (file mode) */
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* This thread's state: NULL before its first hit; &off_thread when it records nothing. */
static __thread struct pm_thread *self __attribute__((tls_model("initial-exec")));
static struct pm_thread off_thread = {.off = 1};
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* the regions' names, under the lock; nregions is read by every hit */
static int nregions;
static char *names[PS_MARKER_REGIONS];

/* A thread's ring and counts, and its state. */
static void thread_free(struct pm_thread *t)
{
	if (t->slot) {
		pm_live_slot_gone(t);
	} else {
		ps_ring_free(t->ring);
		free(t->entries);
	}
	free(t);
}

static int end_open_at_end; /* pm_end_open_at_thread_end() */

/* A thread ends: its records to the file (or left in its slot for perfsh), its counts to the
   totals, its group closed. */
static void thread_gone(void *p)
{
	struct pm_thread *t = p;

	if (end_open_at_end && self == t)
		pm_end_open();

	if (!t->slot && pm_lock(0) == 0) {
		pm_file_leave(t);
		pm_unlock();
	}
	self = &off_thread;
	pm_counters_close(&t->c);
	thread_free(t);
}

/* In a forked child: the forking thread records nothing (its ring may be perfsh's, shared). */
static void thread_off(void)
{
	self = &off_thread;
}

static void make_key(void)
{
	if (pthread_key_create(&thread_key, thread_gone))
		thread_key = (pthread_key_t)-1;
	pthread_atfork(NULL, NULL, thread_off);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A buffer of its own for a thread (file mode). 0, or -1 after a warning. */
static int own_ring(struct pm_thread *t)
{
	struct ps_error err;
	uint64_t cap = 1;

	while (cap * 2 * pm_cfg.recsize <= RING_BYTES)
		cap *= 2;
	t->cnt = &t->own;
	if (!(t->ring = ps_ring_new(pm_cfg.recsize, cap, &err)) ||
	    !(t->entries = calloc(PS_MARKER_REGIONS, sizeof *t->entries))) {
		pm_warn("out of memory for a thread's buffer; this thread's markers are off");
		return -1;
	}
	return 0;
}

static int sealed; /* pm_seal() */

void pm_seal(void)
{
	__atomic_store_n(&sealed, 1, __ATOMIC_RELEASE);
}

/* The first hit of a thread: its state, group and ring. */
static struct pm_thread *thread_init(void)
{
	static int said;
	struct pm_thread *t;
	struct ps_error err;

	pm_init();
	self = &off_thread;
	if (!__atomic_load_n(&pm_cfg.on, __ATOMIC_ACQUIRE))
		return self;
	if (__atomic_load_n(&sealed, __ATOMIC_ACQUIRE)) {
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			pm_warn("the program has locked itself with seccomp: the threads that had not hit a region "
				"before are not measured (perf_event_open could be what its filter forbids)");
		return self;
	}
	pthread_once(&key_once, make_key);
	if (!(t = calloc(1, sizeof *t))) {
		pm_warn("out of memory for a thread's state; this thread's markers are off");
		return self;
	}
	t->tid = pm_gettid();
	if (pm_cfg.live ? pm_live_slot(t) : own_ring(t))
		goto fail;
	t->stack = t->slot ? t->slot->stack : t->own_stack;
	t->pub = t->slot ? &t->slot->depth : &t->own_depth;
	t->rng = ((uint64_t)t->tid << 32 | 1u) ^ now_ns();
	if (pm_counters_open(&t->c, pm_cfg.ev, pm_cfg.gsize, pm_cfg.ngroups, pm_cfg.read.mode, &err)) {
		pm_warn("%s; thread %u's markers are off", err.msg, t->tid);
		goto fail;
	}
	if (!t->slot) {
		if (pm_lock(0)) {
			pm_counters_close(&t->c);
			goto fail;
		}
		pm_file_join(t);
		pm_unlock();
	}
	if (thread_key != (pthread_key_t)-1)
		pthread_setspecific(thread_key, t);
	self = t;
	pm_first_hit();
	return t;
fail:
	thread_free(t);
	return self;
}

/* Code the agent's entry hook runs before it has saved the vector registers (pm_quick()). */
#define GPR_ONLY __attribute__((target("general-regs-only")))

/* xorshift64*: the sampling draw. */
GPR_ONLY static inline uint64_t draw(struct pm_thread *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

GPR_ONLY static inline int sampled(struct pm_thread *t)
{
	uint64_t every = __atomic_load_n(&pm_cfg.pol->every, __ATOMIC_RELAXED);

	if (every) {
		if (++t->every < every)
			return 0;
		t->every = 0;
		return 1;
	}
	return !__atomic_load_n(&pm_cfg.pol->sampled, __ATOMIC_RELAXED) ||
	       draw(t) < __atomic_load_n(&pm_cfg.pol->threshold, __ATOMIC_RELAXED);
}

void ps_marker_begin(int id)
{
	struct pm_thread *t = self;
	struct ps_mshm_frame *f;
	uint32_t chosen;

	if (UNLIKELY(!t))
		t = thread_init();
	chosen = t->chosen;
	t->chosen = 0;
	if (UNLIKELY(t->off) || UNLIKELY((unsigned)id >= (unsigned)__atomic_load_n(&nregions, __ATOMIC_RELAXED)))
		return;
	if (UNLIKELY(!__atomic_load_n(&pm_cfg.pol->on, __ATOMIC_RELAXED)) ||
	    UNLIKELY(!__atomic_load_n(&pm_cfg.armed[id], __ATOMIC_RELAXED)))
		return;
	if (UNLIKELY(t->depth >= PS_MARKER_DEPTH)) {
		t->too_deep++;
		return;
	}
	f = &t->stack[t->depth++];
	*t->pub = t->depth;
	f->id = id;
	f->hit = t->entries[id];
	__atomic_store_n(&t->entries[id], f->hit + 1, __ATOMIC_RELAXED);
	f->sampled = chosen || sampled(t);
	if (!f->sampled)
		return;
	memset(f->args, 0, sizeof f->args);
	f->cpu = (int16_t)sched_getcpu();
	f->t_start = now_ns();
	pm_counters_read(&t->c, pm_cfg.read.mode, f->start, &f->enabled, &f->running);
}

void pm_begin_with(int id, const uint64_t args[PS_MARKER_FIELDS])
{
	uint32_t d = self ? self->depth : 0;

	ps_marker_begin(id);
	if (self->depth > d)
		memcpy(self->stack[d].args, args, sizeof self->stack[d].args);
}

GPR_ONLY int pm_quick(int id, int nested)
{
	struct pm_thread *t = self;

	if (UNLIKELY(!t))
		return 0; /* its first hit: set up by the full path */
	if (UNLIKELY(t->off) || UNLIKELY((unsigned)id >= (unsigned)__atomic_load_n(&nregions, __ATOMIC_RELAXED)) ||
	    !__atomic_load_n(&pm_cfg.pol->on, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&pm_cfg.armed[id], __ATOMIC_RELAXED))
		return 1; /* nothing recorded */
	if (!nested) {
		if (!__atomic_load_n(&pm_cfg.pol->sampled, __ATOMIC_RELAXED) &&
		    !__atomic_load_n(&pm_cfg.pol->every, __ATOMIC_RELAXED))
			return 0; /* every hit recorded */
		if (sampled(t)) {
			t->chosen = 1;
			return 0;
		}
	}
	__atomic_store_n(&t->entries[id], t->entries[id] + 1, __ATOMIC_RELAXED);
	return 1;
}

/* Room in the ring of @t, full: its records drained to the file under the lock (file mode). */
static void make_room(struct pm_thread *t)
{
	if (!t->slot && pm_lock(0) == 0) {
		pm_file_drain(t);
		pm_unlock();
	}
}

/* The record of frame @f ending now, into the ring. */
static void record(struct pm_thread *t, struct ps_mshm_frame *f, uint32_t depth, uint32_t flags)
{
	uint64_t end[PS_MAX_EVENTS], enabled, running, t_end, slow;
	struct ps_ring *r = t->ring;
	struct ps_snap_key k;
	struct ps_snap *s;

	pm_counters_read(&t->c, pm_cfg.read.mode, end, &enabled, &running);
	t_end = now_ns();
	slow = __atomic_load_n(&pm_cfg.pol->slow_ns, __ATOMIC_RELAXED);
	if (slow && t_end - f->t_start < slow) {
		__atomic_store_n(&t->cnt->fast, t->cnt->fast + 1, __ATOMIC_RELAXED);
		return;
	}
	if (UNLIKELY(!(s = ps_ring_try_reserve(r))))
		make_room(t);
	if (!s && !(s = ps_ring_reserve(r)))
		return; /* still full: dropped, counted by the ring */
	k = (struct ps_snap_key){.region = (uint32_t)f->id,
				 .tid = t->tid,
				 .seq = t->seq++,
				 .hit = f->hit,
				 .depth = depth,
				 .nvals = (uint8_t)pm_cfg.nvals,
				 .nargs = PS_MARKER_FIELDS};
	k.flags = flags;
	if (__atomic_load_n(&pm_cfg.pol->sampled, __ATOMIC_RELAXED))
		k.flags |= PS_SNAP_SAMPLED;
	ps_snap_fill(s, &k, f->args, &(struct ps_snap_point){f->t_start, f->enabled, f->running, f->cpu, f->start},
		     &(struct ps_snap_point){t_end, enabled, running, (int16_t)sched_getcpu(), end});
	ps_ring_commit(r);
	if (!t->slot && ps_ring_count(r) == ps_ring_capacity(r) / 2)
		pm_writer_wake();
}

/* The hit of region @id ends, its record flagged @flags. */
static void end(int id, uint32_t flags)
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
		/* an end without its begin; not one whose begin was off or not armed */
		if ((unsigned)id < (unsigned)__atomic_load_n(&nregions, __ATOMIC_RELAXED) &&
		    __atomic_load_n(&pm_cfg.pol->on, __ATOMIC_RELAXED) &&
		    __atomic_load_n(&pm_cfg.armed[id], __ATOMIC_RELAXED))
			__atomic_store_n(&t->cnt->unmatched, t->cnt->unmatched + 1, __ATOMIC_RELAXED);
		return;
	}
	if (t->depth > d) /* inner hits left open */
		__atomic_store_n(&t->cnt->unmatched, t->cnt->unmatched + (t->depth - d), __ATOMIC_RELAXED);
	t->depth = d - 1;
	if (t->stack[d - 1].sampled)
		record(t, &t->stack[d - 1], d - 1, flags);
	*t->pub = t->depth; /* after its record: a hit the program dies in the middle of ends exited */
}

void ps_marker_end(int id)
{
	end(id, 0);
}

void pm_end_unwound(int id)
{
	end(id, PS_SNAP_UNWOUND);
}

void pm_end_open_at_thread_end(void)
{
	end_open_at_end = 1;
}

void pm_end_open(void)
{
	struct pm_thread *t = self;

	while (t && !t->off && t->depth > 0)
		end(t->stack[t->depth - 1].id, PS_SNAP_UNWOUND);
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
	for (int i = 0; i < nregions; i++)
		if (!strcmp(names[i], name)) {
			id = i;
			break;
		}
	if (id < 0 && nregions < PS_MARKER_REGIONS && (names[nregions] = strdup(name))) {
		id = nregions;
		if (pm_cfg.live)
			pm_live_region(id, name);
		else
			pm_file_name_region(id, name);
		__atomic_store_n(&nregions, id + 1, __ATOMIC_RELEASE);
	}
	pm_unlock();
	return id;
}

int ps_marker_flush(void)
{
	int rc;

	if (!__atomic_load_n(&pm_cfg.on, __ATOMIC_ACQUIRE) || pm_lock(0))
		return -1;
	rc = pm_file_flush();
	pm_unlock();
	return rc;
}

int ps_marker_enabled(void)
{
	pm_init();
	return __atomic_load_n(&pm_cfg.on, __ATOMIC_ACQUIRE) && pm_file_enabled();
}
