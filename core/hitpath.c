/* core/hitpath.c - the hit path: open measurements per thread, their pairing, the records.
 *
 * See core/hitpath.h. A measurement opened at an entry or a start waits in a slot of its
 * thread; its end turns the slot into one record in the ring, which drains into the store
 * (memory that grows and loses nothing) or into the spill file.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hitpath.h"
#include "ring.h"

#define RING_CAPACITY 4096
#define HP_BUCKETS 256

/* An open measurement: the start of a hit, waiting for its end. */
struct slot {
	int region; /* -1 while free */
	int next_free;
	enum ps_hit_kind kind; /* ENTRY or START */
	uint32_t depth;
	uint16_t flags; /* PS_SNAP_SAMPLED */
	uint64_t args[PS_MAX_ARGS];
	int16_t cpu;
	uint64_t t;
	struct ps_reading r;
};

struct hthr {
	pid_t tid;
	struct hthr *next;
	struct slot *slots;
	int nslots, cap, free_head;
	int32_t active[PS_MAX_REGIONS];	       /* open slot of a region (not every-level entries), -1 */
	uint32_t depth[PS_MAX_REGIONS];	       /* open entries of a function region (recursion level) */
	uint64_t left[PS_HITPATH_MAX_SAMPLED]; /* sampled region k: hits until the next sampled one */
};

/* How a sampled region's hits are chosen. */
struct policy {
	int region;
	uint64_t every;
	double p;
	int windowed;
};

struct ps_hitpath {
	struct ps_region_info *reg;
	const int *nreg;
	struct hthr *threads[HP_BUCKETS];
	unsigned nvals, nargs;
	struct ps_ring *ring;
	unsigned char *store;
	uint64_t nstore, capstore;
	size_t recsize;
	uint64_t seq, dropped;
	struct ps_psnap_writer *spill; /* records go to this file instead of memory */
	int spilling;		       /* records went to a file (it may be closed now) */
	int spill_nreg;		       /* region names already in the file */
	uint64_t spilled;
	struct ps_error fail; /* why the last drain failed */
	struct policy pol[PS_HITPATH_MAX_SAMPLED];
	int npol;
	int in_window; /* windowed sampling: inside a window now */
	uint64_t rng;  /* xorshift64 state for sampling gaps */
};

struct ps_hitpath *ps_hitpath_new(struct ps_region_info *reg, const int *nreg, struct ps_error *err)
{
	struct ps_hitpath *hp = calloc(1, sizeof *hp);

	if (!hp) {
		ps_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	hp->reg = reg;
	hp->nreg = nreg;
	return hp;
}

/* ---- sampling draws ---- */

void ps_hitpath_seed(struct ps_hitpath *hp, uint64_t seed)
{
	if (!hp->rng)
		hp->rng = seed;
}

static uint64_t rng_next(struct ps_hitpath *hp)
{
	uint64_t x = hp->rng ? hp->rng : 0x9e3779b97f4a7c15ULL;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	hp->rng = x;
	return x;
}

uint64_t ps_hitpath_gap(struct ps_hitpath *hp, double p)
{
	double u = ((double)(rng_next(hp) >> 11) + 0.5) / 9007199254740992.0; /* (0,1) */
	if (p >= 1)
		return 1;
	double g = floor(log(u) / log1p(-p)) + 1;
	return g < 1 ? 1 : g > 1e15 ? (uint64_t)1e15 : (uint64_t)g;
}

/* Hits until the next sampled one, drawn anew. */
static uint64_t next_left(struct ps_hitpath *hp, const struct policy *pol)
{
	return pol->every ? pol->every : pol->p > 0 ? ps_hitpath_gap(hp, pol->p) : 0;
}

static int policy_of(const struct ps_hitpath *hp, int id)
{
	for (int k = 0; k < hp->npol; k++)
		if (hp->pol[k].region == id)
			return k;
	return -1;
}

void ps_hitpath_window(struct ps_hitpath *hp, int open)
{
	hp->in_window = open;
}

int ps_hitpath_in_window(const struct ps_hitpath *hp)
{
	return hp->in_window;
}

/* ---- threads and slots ---- */

static struct hthr *thr_find(const struct ps_hitpath *hp, pid_t tid)
{
	for (struct hthr *th = hp->threads[(unsigned)tid % HP_BUCKETS]; th; th = th->next)
		if (th->tid == tid)
			return th;
	return NULL;
}

static struct hthr *thr_get(struct ps_hitpath *hp, pid_t tid)
{
	struct hthr *th = thr_find(hp, tid);

	if (th)
		return th;
	th = calloc(1, sizeof *th);
	if (!th)
		return NULL;
	th->tid = tid;
	th->free_head = -1;
	for (int i = 0; i < PS_MAX_REGIONS; i++)
		th->active[i] = -1;
	for (int k = 0; k < hp->npol; k++)
		th->left[k] = next_left(hp, &hp->pol[k]);
	th->next = hp->threads[(unsigned)tid % HP_BUCKETS];
	hp->threads[(unsigned)tid % HP_BUCKETS] = th;
	return th;
}

static void thr_remove(struct ps_hitpath *hp, pid_t tid)
{
	for (struct hthr **pp = &hp->threads[(unsigned)tid % HP_BUCKETS]; *pp; pp = &(*pp)->next)
		if ((*pp)->tid == tid) {
			struct hthr *th = *pp;
			*pp = th->next;
			free(th->slots);
			free(th);
			return;
		}
}

static int slot_alloc(struct hthr *th)
{
	if (th->free_head >= 0) {
		int i = th->free_head;
		th->free_head = th->slots[i].next_free;
		return i;
	}
	if (th->nslots == th->cap) {
		int cap = th->cap ? 2 * th->cap : 16;
		struct slot *n = realloc(th->slots, (size_t)cap * sizeof *n);
		if (!n)
			return -1;
		th->slots = n;
		th->cap = cap;
	}
	return th->nslots++;
}

static void slot_free(struct hthr *th, int i)
{
	th->slots[i].region = -1;
	th->slots[i].next_free = th->free_head;
	th->free_head = i;
}

/* ---- records ---- */

/* Region names the spill file does not have yet (a record's region is named before it). */
static int spill_names(struct ps_hitpath *hp, struct ps_error *err)
{
	while (hp->spill_nreg < *hp->nreg) {
		if (ps_psnap_add_region(hp->spill, hp->reg[hp->spill_nreg].name, err) < 0)
			return -1;
		hp->spill_nreg++;
	}
	return 0;
}

/* Move what the ring holds into the store or to the spill file; -1 with hp->fail set. */
static int drain(struct ps_hitpath *hp)
{
	size_t n = hp->ring ? ps_ring_count(hp->ring) : 0;

	if (n == 0)
		return 0;
	if (hp->spill) {
		ssize_t w;

		if (spill_names(hp, &hp->fail))
			return -1;
		w = ps_ring_drain_to(hp->ring, hp->spill, &hp->fail);
		if (w < 0)
			return -1;
		hp->spilled += (uint64_t)w;
		return 0;
	}
	if (hp->nstore + n > hp->capstore) {
		uint64_t cap = hp->capstore ? hp->capstore : 4096;
		while (cap < hp->nstore + n)
			cap *= 2;
		unsigned char *p = realloc(hp->store, cap * hp->recsize);
		if (!p)
			return ps_error_set(&hp->fail, ENOMEM, "out of memory for %llu records",
					    (unsigned long long)hp->seq);
		hp->store = p;
		hp->capstore = cap;
	}
	hp->nstore += ps_ring_read(hp->ring, hp->store + hp->nstore * hp->recsize, n);
	return 0;
}

int ps_hitpath_drain(struct ps_hitpath *hp, struct ps_error *err)
{
	if (drain(hp)) {
		if (err)
			*err = hp->fail;
		return -1;
	}
	return 0;
}

/* Slot @sl of thread @th ends at @end, @t_end, @cpu_end: one record. */
static void emit(struct ps_hitpath *hp, const struct hthr *th, const struct slot *sl, const struct ps_reading *end,
		 uint64_t t_end, int cpu_end, unsigned flags)
{
	struct ps_region_info *ri = &hp->reg[sl->region];
	struct ps_snap *rec;

	if (!hp->ring || (ps_ring_space(hp->ring) == 0 && drain(hp))) {
		hp->dropped++;
		return;
	}
	rec = ps_ring_reserve(hp->ring);
	if (!rec) {
		hp->dropped++;
		return;
	}
	rec->region = (uint32_t)sl->region;
	rec->tid = (uint32_t)th->tid;
	rec->seq = hp->seq++;
	rec->hit = ri->hits++;
	rec->t_start = sl->t;
	rec->t_end = t_end;
	rec->enabled_start = sl->r.time_enabled;
	rec->running_start = sl->r.time_running;
	rec->enabled_end = end->time_enabled;
	rec->running_end = end->time_running;
	rec->cpu_start = sl->cpu;
	rec->cpu_end = (int16_t)cpu_end;
	rec->flags = (uint16_t)(flags | sl->flags | (sl->depth ? PS_SNAP_NESTED : 0));
	rec->nvals = (uint8_t)hp->nvals;
	rec->nargs = (uint8_t)hp->nargs;
	rec->depth = sl->depth;
	rec->pad = 0;
	memcpy(ps_snap_args(rec), sl->args, (size_t)hp->nargs * sizeof(uint64_t));
	memcpy(ps_snap_start(rec), sl->r.val, (size_t)hp->nvals * sizeof(uint64_t));
	memcpy(ps_snap_end(rec), end->val, (size_t)hp->nvals * sizeof(uint64_t));
	if (flags & (PS_SNAP_UNWOUND | PS_SNAP_EXITED))
		ri->incomplete++;
	ps_ring_commit(hp->ring);
}

int ps_hitpath_record(struct ps_hitpath *hp, unsigned nvals, unsigned nargs, const char *spill_path,
		      struct ps_psnap_info *info, struct ps_error *err)
{
	if (hp->ring)
		return 0;
	if (nvals > PS_MAX_EVENTS || nargs > PS_MAX_ARGS)
		return ps_error_set(err, PS_EUSAGE, "at most %d counter words and %d arguments in a record",
				    PS_MAX_EVENTS, PS_MAX_ARGS);
	hp->nvals = nvals;
	hp->nargs = nargs;
	hp->recsize = ps_snap_size(nvals, nargs);
	hp->ring = ps_ring_new(hp->recsize, RING_CAPACITY, err);
	if (!hp->ring)
		return -1;
	if (!spill_path)
		return 0;
	info->nvals = nvals;
	info->nargs = nargs;
	hp->spill = ps_psnap_create(spill_path, info, err);
	if (!hp->spill)
		return -1;
	hp->spilling = 1;
	hp->spill_nreg = 0;
	return spill_names(hp, err);
}

int ps_hitpath_recording(const struct ps_hitpath *hp)
{
	return hp->ring != NULL;
}

/* ---- hits ---- */

int ps_hitpath_sample(struct ps_hitpath *hp, int id, uint64_t every, double p, int windowed, struct ps_error *err)
{
	struct policy *pol;

	if (id < 0 || id >= *hp->nreg || id >= PS_MAX_REGIONS)
		return ps_error_set(err, PS_EUSAGE, "no region %d", id);
	if (policy_of(hp, id) >= 0)
		return ps_error_set(err, PS_EUSAGE, "region '%s' is sampled already", hp->reg[id].name);
	if (hp->npol == PS_HITPATH_MAX_SAMPLED)
		return ps_error_set(err, PS_EUSAGE, "at most %d sampled regions", PS_HITPATH_MAX_SAMPLED);
	if ((every > 0) + (p > 0) + (windowed != 0) != 1 || p > 1)
		return ps_error_set(err, PS_EUSAGE, "region '%s': sample every Nth, with a probability, or in windows",
				    hp->reg[id].name);
	pol = &hp->pol[hp->npol];
	pol->region = id;
	pol->every = every;
	pol->p = p;
	pol->windowed = windowed;
	for (unsigned b = 0; b < HP_BUCKETS; b++)
		for (struct hthr *th = hp->threads[b]; th; th = th->next)
			th->left[hp->npol] = next_left(hp, pol);
	hp->npol++;
	return 0;
}

/* Whether the next hit of policy @k on @th will not be sampled. */
static int draw_skips(const struct ps_hitpath *hp, const struct hthr *th, int k)
{
	return hp->pol[k].windowed ? !hp->in_window : th->left[k] > 1;
}

/* The draw at a hit of policy @k's region on @th: 1 if it is sampled. */
static int draw(struct ps_hitpath *hp, struct hthr *th, int k)
{
	if (hp->pol[k].windowed)
		return hp->in_window;
	if (th->left[k] > 1) {
		th->left[k]--;
		return 0;
	}
	th->left[k] = next_left(hp, &hp->pol[k]);
	return 1;
}

/* Whether @h opens or ends a measurement, sampling aside. */
static int pairs(const struct ps_hitpath *hp, const struct hthr *th, const struct ps_hit *h)
{
	int open;

	if (h->kind == PS_HIT_RETURN)
		return th && h->handle >= 0 && h->handle < th->nslots && th->slots[h->handle].region >= 0;
	if (h->region < 0 || h->region >= *hp->nreg || h->region >= PS_MAX_REGIONS)
		return 0;
	open = th ? th->active[h->region] : -1;
	switch (h->kind) {
	case PS_HIT_ENTRY:
		return open < 0 || (hp->reg[h->region].flags & PS_REGION_EVERY_LEVEL);
	case PS_HIT_START:
		return open < 0;
	case PS_HIT_END:
		return open >= 0;
	default:
		return 0;
	}
}

int ps_hitpath_measures(const struct ps_hitpath *hp, const struct ps_hit *h)
{
	const struct hthr *th = thr_find(hp, h->tid);
	int k;

	if ((h->kind == PS_HIT_ENTRY || h->kind == PS_HIT_START) && th && (k = policy_of(hp, h->region)) >= 0 &&
	    draw_skips(hp, th, k))
		return 0; /* not sampled */
	return pairs(hp, th, h);
}

/* An ENTRY or a START: its slot if it opens a measurement, or -1. */
static int open_hit(struct ps_hitpath *hp, const struct ps_hit *h)
{
	struct hthr *th;
	struct slot *sl;
	unsigned sampled = 0;
	int i, k, every = h->kind == PS_HIT_ENTRY && hp->reg[h->region].flags & PS_REGION_EVERY_LEVEL;

	if (h->region < 0 || h->region >= *hp->nreg || h->region >= PS_MAX_REGIONS)
		return -1;
	th = thr_get(hp, h->tid);
	if (!th) {
		hp->dropped += h->r != NULL;
		return -1;
	}
	if ((k = policy_of(hp, h->region)) >= 0) {
		if (!draw(hp, th, k))
			return -1; /* counted, not sampled */
		sampled = PS_SNAP_SAMPLED;
	}
	if (!h->r || !pairs(hp, th, h))
		return -1; /* seen only, or already inside: nested calls count only in every-level mode */
	if ((i = slot_alloc(th)) < 0) {
		hp->dropped++;
		return -1;
	}
	sl = &th->slots[i];
	sl->region = h->region;
	sl->kind = h->kind;
	sl->flags = (uint16_t)((h->flags & PS_SNAP_SAMPLED) | sampled);
	sl->depth = th->depth[h->region];
	sl->t = h->t;
	sl->cpu = (int16_t)h->cpu;
	sl->r = *h->r;
	if (h->args)
		memcpy(sl->args, h->args, sizeof sl->args);
	else
		memset(sl->args, 0, sizeof sl->args);
	if (h->kind == PS_HIT_ENTRY)
		th->depth[h->region]++;
	if (!every)
		th->active[h->region] = i;
	return i;
}

/* An END or a RETURN that ends a measurement. */
static void close_hit(struct ps_hitpath *hp, const struct ps_hit *h)
{
	struct hthr *th = thr_find(hp, h->tid);
	int i, id;

	if (!pairs(hp, th, h))
		return; /* an end without a start, a return not caught */
	i = h->kind == PS_HIT_END ? th->active[h->region] : h->handle;
	id = th->slots[i].region;
	emit(hp, th, &th->slots[i], h->r, h->t, h->cpu, h->flags & PS_SNAP_UNWOUND);
	if (h->kind == PS_HIT_RETURN && th->depth[id])
		th->depth[id]--;
	if (th->active[id] == i)
		th->active[id] = -1;
	slot_free(th, i);
}

int ps_hitpath_hit(struct ps_hitpath *hp, const struct ps_hit *h)
{
	switch (h->kind) {
	case PS_HIT_ENTRY:
		return open_hit(hp, h);
	case PS_HIT_START:
		open_hit(hp, h);
		return 0;
	case PS_HIT_END:
	case PS_HIT_RETURN:
		close_hit(hp, h);
		return 0;
	}
	return -1;
}

void ps_hitpath_thread_exit(struct ps_hitpath *hp, pid_t tid, const struct ps_reading *r, uint64_t t)
{
	struct hthr *th = thr_find(hp, tid);

	if (!th)
		return;
	/* ranges in region order first, then any entry still open, innermost last */
	for (int id = 0; id < *hp->nreg && id < PS_MAX_REGIONS; id++) {
		int i = th->active[id];
		if (i >= 0 && th->slots[i].kind == PS_HIT_START) {
			emit(hp, th, &th->slots[i], r, t, -1, PS_SNAP_EXITED);
			slot_free(th, i);
			th->active[id] = -1;
		}
	}
	for (int i = 0; i < th->nslots; i++)
		if (th->slots[i].region >= 0) {
			emit(hp, th, &th->slots[i], r, t, -1, PS_SNAP_EXITED);
			slot_free(th, i);
		}
	thr_remove(hp, tid);
}

void ps_hitpath_exec(struct ps_hitpath *hp)
{
	for (unsigned b = 0; b < HP_BUCKETS; b++)
		for (struct hthr *th = hp->threads[b]; th; th = th->next) {
			for (int i = 0; i < PS_MAX_REGIONS; i++)
				th->active[i] = -1;
			memset(th->depth, 0, sizeof th->depth);
			th->nslots = 0;
			th->free_head = -1;
			for (int k = 0; k < hp->npol; k++)
				th->left[k] = next_left(hp, &hp->pol[k]);
		}
}

uint64_t ps_hitpath_open_calls(const struct ps_hitpath *hp, int id)
{
	uint64_t n = 0;

	if (id < 0 || id >= PS_MAX_REGIONS)
		return 0;
	for (unsigned b = 0; b < HP_BUCKETS; b++)
		for (const struct hthr *th = hp->threads[b]; th; th = th->next)
			n += th->depth[id] ? th->depth[id] : th->active[id] >= 0;
	return n;
}

/* ---- results ---- */

uint64_t ps_hitpath_seq(const struct ps_hitpath *hp)
{
	return hp->seq;
}

uint64_t ps_hitpath_nrecords(const struct ps_hitpath *hp)
{
	if (hp->spilling)
		return hp->spilled + (hp->ring ? ps_ring_count(hp->ring) : 0);
	return hp->nstore;
}

const struct ps_snap *ps_hitpath_record_at(const struct ps_hitpath *hp, uint64_t i)
{
	return i < hp->nstore ? (const struct ps_snap *)(hp->store + i * hp->recsize) : NULL;
}

size_t ps_hitpath_recsize(const struct ps_hitpath *hp)
{
	return hp->recsize;
}

uint64_t ps_hitpath_dropped(const struct ps_hitpath *hp)
{
	return hp->dropped + (hp->ring ? ps_ring_dropped(hp->ring) : 0);
}

int ps_hitpath_spill_flush(struct ps_hitpath *hp, struct ps_error *err)
{
	if (!hp->spill)
		return 0;
	if (ps_hitpath_drain(hp, err))
		return -1;
	return spill_names(hp, err) || ps_psnap_flush(hp->spill, err) ? -1 : 0;
}

int ps_hitpath_spill_meta(struct ps_hitpath *hp, const char *key, const char *value, struct ps_error *err)
{
	if (!hp->spill)
		return ps_error_set(err, PS_EUSAGE, "not spilling to a file");
	return ps_psnap_add_meta(hp->spill, key, value, err);
}

int ps_hitpath_spill_close(struct ps_hitpath *hp, struct ps_error *err)
{
	int rc;

	if (!hp->spill)
		return 0;
	rc = ps_hitpath_spill_flush(hp, err);
	if (ps_psnap_close(hp->spill, err))
		rc = -1;
	hp->spill = NULL;
	return rc;
}

void ps_hitpath_free(struct ps_hitpath *hp)
{
	if (!hp)
		return;
	for (unsigned b = 0; b < HP_BUCKETS; b++)
		while (hp->threads[b])
			thr_remove(hp, hp->threads[b]->tid);
	if (hp->spill) {
		struct ps_error e;
		ps_hitpath_spill_close(hp, &e);
	}
	ps_ring_free(hp->ring);
	free(hp->store);
	free(hp);
}
