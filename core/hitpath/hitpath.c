/* core/hitpath/hitpath.c - the hit path: open measurements per thread, their pairing, recursion
 * levels and sampling draws (core/hitpath/hitpath.h).
 *
 * A measurement opened at an entry or a start waits in a slot of its thread; its end hands
 * the slot to core/hitpath/hitpath_records.c, which makes it one record.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hitpath_priv.h"

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
			free(th->rets);
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

/* Whether @h, a START of a region whose hit @open is open, shows that the hit's frame was left
   without its end (an exception, a longjmp): a PS_REGION_FRAME region's start made above the
   hit's start in the stack, or at its depth where a hit passes its start once. */
static int left_open(const struct ps_hitpath *hp, const struct hthr *th, const struct ps_hit *h, int open)
{
	unsigned fl = hp->reg[h->region].flags;
	uint64_t sp = th->slots[open].sp;

	return (fl & PS_REGION_FRAME) && h->sp && sp && (h->sp > sp || (h->sp == sp && (fl & PS_REGION_ONCE)));
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
		return open < 0 || left_open(hp, th, h, open);
	case PS_HIT_END:
		return open >= 0 &&
		       !(hp->reg[h->region].flags & PS_REGION_FRAME && h->sp && h->sp < th->slots[open].sp);
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
	if (h->kind == PS_HIT_START && (i = th->active[h->region]) >= 0) { /* left_open(): it ends unwound */
		ps__hp_emit(hp, th, &th->slots[i], h->r, ps_holds_map(&hp->holds, h->t), h->cpu, PS_SNAP_UNWOUND);
		th->active[h->region] = -1;
		slot_free(th, i);
	}
	if ((i = slot_alloc(th)) < 0) {
		hp->dropped++;
		return -1;
	}
	sl = &th->slots[i];
	sl->region = h->region;
	sl->kind = h->kind;
	sl->flags = (uint16_t)((h->flags & PS_SNAP_SAMPLED) | sampled);
	sl->depth = th->depth[h->region];
	sl->t = ps_holds_map(&hp->holds, h->t);
	sl->cpu = (int16_t)h->cpu;
	sl->sp = h->sp;
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
	ps__hp_emit(hp, th, &th->slots[i], h->r, ps_holds_map(&hp->holds, h->t), h->cpu, h->flags & PS_SNAP_UNWOUND);
	if (h->kind == PS_HIT_RETURN && th->depth[id])
		th->depth[id]--;
	if (th->active[id] == i)
		th->active[id] = -1;
	slot_free(th, i);
}

/* ---- returns that carry no handle (ps_hitpath_returns()) ---- */

void ps_hitpath_returns(struct ps_hitpath *hp, int max_depth)
{
	hp->ret_depth = max_depth > 0 ? max_depth : 0;
}

/* The thread's last reading, where ps_hitpath_cut() ends what it has open. */
static void note_last(struct ps_hitpath *hp, const struct ps_hit *h)
{
	struct hthr *th = thr_get(hp, h->tid);

	if (th) {
		th->last = *h->r;
		th->last_t = h->t;
	}
}

/* Entry handle @i (-1: it opened nothing) awaits its return, unless it is too deep for one. */
static void push_return(struct ps_hitpath *hp, pid_t tid, int i)
{
	struct hthr *th = thr_get(hp, tid);

	if (th && !th->rets)
		th->rets = malloc((size_t)hp->ret_depth * sizeof *th->rets);
	if (th && th->rets && th->nrets < hp->ret_depth)
		th->rets[th->nrets++] = i;
}

/* A RETURN with no handle ends the innermost entry awaiting one. */
static void innermost_return(struct ps_hitpath *hp, const struct ps_hit *h)
{
	struct hthr *th = thr_find(hp, h->tid);
	struct ps_hit r = *h;

	if (!th || th->nrets == 0)
		return;
	r.handle = th->rets[--th->nrets];
	if (r.handle >= 0)
		close_hit(hp, &r);
}

void ps_hitpath_cut(struct ps_hitpath *hp, pid_t tid, uint64_t t)
{
	struct hthr *th = thr_find(hp, tid);
	struct ps_reading last;

	if (!th)
		return;
	last = th->last;
	ps_hitpath_thread_exit(hp, tid, &last, t ? t : th->last_t);
}

void ps_hitpath_cut_all(struct ps_hitpath *hp)
{
	for (unsigned b = 0; b < HP_BUCKETS; b++)
		while (hp->threads[b])
			ps_hitpath_cut(hp, hp->threads[b]->tid, 0);
}

int ps_hitpath_hit(struct ps_hitpath *hp, const struct ps_hit *h)
{
	int i;

	if (hp->ret_depth && h->r)
		note_last(hp, h);
	switch (h->kind) {
	case PS_HIT_ENTRY:
		i = open_hit(hp, h);
		if (hp->ret_depth)
			push_return(hp, h->tid, i);
		return i;
	case PS_HIT_START:
		open_hit(hp, h);
		return 0;
	case PS_HIT_RETURN:
		if (h->handle == PS_HIT_INNERMOST)
			innermost_return(hp, h);
		else
			close_hit(hp, h);
		return 0;
	case PS_HIT_END:
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
	t = ps_holds_map(&hp->holds, t);
	/* ranges in region order first, then any entry still open, innermost last */
	for (int id = 0; id < *hp->nreg && id < PS_MAX_REGIONS; id++) {
		int i = th->active[id];
		if (i >= 0 && th->slots[i].kind == PS_HIT_START) {
			ps__hp_emit(hp, th, &th->slots[i], r, t, -1, PS_SNAP_EXITED);
			slot_free(th, i);
			th->active[id] = -1;
		}
	}
	for (int i = 0; i < th->nslots; i++)
		if (th->slots[i].region >= 0) {
			ps__hp_emit(hp, th, &th->slots[i], r, t, -1, PS_SNAP_EXITED);
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
			th->nrets = 0; /* the returns of what was open never come */
			th->nslots = 0;
			th->free_head = -1;
			for (int k = 0; k < hp->npol; k++)
				th->left[k] = next_left(hp, &hp->pol[k]);
		}
}

void ps_hitpath_limit(struct ps_hitpath *hp, uint64_t max)
{
	hp->limit = max;
	hp->limit_from = hp->seq;
}

int ps_hitpath_enough(const struct ps_hitpath *hp)
{
	return hp->limit && hp->seq - hp->limit_from >= hp->limit;
}

int ps_hitpath_hold(struct ps_hitpath *hp, uint64_t from, uint64_t to)
{
	return ps_holds_add(&hp->holds, from, to);
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

void ps_hitpath_free(struct ps_hitpath *hp)
{
	if (!hp)
		return;
	for (unsigned b = 0; b < HP_BUCKETS; b++)
		while (hp->threads[b])
			thr_remove(hp, hp->threads[b]->tid);
	ps__hp_records_free(hp);
	ps_holds_free(&hp->holds);
	free(hp);
}
