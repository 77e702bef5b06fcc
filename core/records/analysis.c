/* core/records/analysis.c - the meaning of records: group layout, multiplex scaling, statistics. */
#include "analysis.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

void ps_view_set_groups(struct ps_view *v, const char *groups, unsigned nvals)
{
	const char *g = groups;
	int k = 0, grp = 0;

	memset(v->group, 0, sizeof v->group);
	while (g && *g && k < v->nev && v->nev + 2 * (grp + 1) <= (int)nvals + 2) {
		int n = atoi(g);
		for (int i = 0; i < n && k < v->nev; i++)
			v->group[k++] = grp;
		grp++;
		g = strchr(g, ',');
		if (g)
			g++;
	}
}

double ps_view_delta(const struct ps_view *v, const struct ps_snap *r, int k, double *ratio)
{
	struct ps_snap *rw = (struct ps_snap *)r;
	uint64_t d = ps_snap_end(rw)[k] - ps_snap_start(rw)[k];
	uint64_t en = r->enabled_end - r->enabled_start, run = r->running_end - r->running_start;
	int g = v->group[k];

	if (g > 0 && v->nev + 2 * g <= r->nvals) { /* the later groups' times follow the values */
		int w = v->nev + 2 * (g - 1);
		en = ps_snap_end(rw)[w] - ps_snap_start(rw)[w];
		run = ps_snap_end(rw)[w + 1] - ps_snap_start(rw)[w + 1];
	}
	*ratio = en ? (double)run / (double)en : 1.0;
	if (en && run && run < en)
		return (double)d * (double)en / (double)run;
	return (double)d;
}

double ps_view_cpu_time(const struct ps_snap *r)
{
	if (r->nvals)
		return (double)(r->enabled_end - r->enabled_start);
	return (double)(r->t_end - r->t_start);
}

double ps_view_value(const struct ps_view *v, const struct ps_snap *r, int k, double *ratio)
{
	*ratio = 1.0;
	if (k == PS_SERIES_WALL)
		return (double)(r->t_end - r->t_start);
	if (k == PS_SERIES_TIME)
		return ps_view_cpu_time(r);
	return ps_view_delta(v, r, k, ratio);
}

/* The groups being built: out[] sorted by key. */
struct split {
	enum ps_split how;
	struct ps_hit_stats *out;
	size_t n, cap, last;
};

static int64_t key_of(enum ps_split how, const struct ps_snap *r)
{
	return how == PS_SPLIT_THREAD ? (int64_t)r->tid : how == PS_SPLIT_CPU ? (int64_t)r->cpu_start : 0;
}

/* The group of @key, added when new; -1 on no memory. */
static ptrdiff_t group_of(struct split *s, int64_t key)
{
	size_t lo = 0, hi = s->n;

	if (s->n && s->out[s->last].key == key)
		return (ptrdiff_t)s->last;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->out[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->n || s->out[lo].key != key) {
		struct ps_hit_stats *p = ps_grow(s->out, &s->cap, s->n, sizeof *p, 16);

		if (!p)
			return -1;
		s->out = p;
		memmove(s->out + lo + 1, s->out + lo, (s->n - lo) * sizeof *s->out);
		memset(&s->out[lo], 0, sizeof s->out[lo]);
		s->out[lo].key = key;
		s->out[lo].ratio_min = 1.0;
		s->n++;
	}
	s->last = lo;
	return (ptrdiff_t)lo;
}

/* Pass 1: the groups, their hits, incomplete and migrated counts. */
static int count_pass(const struct ps_view *v, int region, struct split *s)
{
	if (s->how == PS_SPLIT_NONE && group_of(s, 0) < 0)
		return -1;
	for (uint64_t i = 0; i < v->n; i++) {
		const struct ps_snap *r = ps_view_rec(v, i);
		ptrdiff_t g;

		if ((int)r->region != region)
			continue;
		g = group_of(s, key_of(s->how, r));
		if (g < 0)
			return -1;
		if (!ps_snap_complete(r)) {
			s->out[g].incomplete++;
			continue;
		}
		s->out[g].hits++;
		if (r->cpu_end != r->cpu_start)
			s->out[g].migrated++;
	}
	return 0;
}

static struct ps_stats *stats_slot(struct ps_hit_stats *h, int k)
{
	return k == PS_SERIES_WALL ? &h->wall : k == PS_SERIES_TIME ? &h->time : &h->ev[k];
}

/*
 * Exact quantiles in passes, in memory independent of the number of values: each quantile
 * keeps an interval [lo, hi] of values that holds its rank (below: values under lo). A pass
 * counts the values of the interval in NSUB equal slices (with each slice's own min and max),
 * and the slice holding the rank, tightened to its min and max, is the next interval; once
 * at most CAP values are inside, one pass collects and sorts them. A slice whose min is its
 * max is the answer. Values are recomputed from the records each pass (the same bits).
 */
#define NSUB 256
#define CAP 2048
#define NQ 3

static const double quantiles[NQ] = {0.50, 0.90, 0.99};

struct qsel {
	uint64_t rank, below, inside; /* rank (1-based) among the group's values */
	double lo, hi, result;
	int done, collect;
	double *buf; /* collect: the values inside, up to @inside */
	size_t nbuf, cap;
	uint64_t cnt[NSUB];
	double mn[NSUB], mx[NSUB];
};

struct series {
	double sum, sq, mn, mx;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Start quantile @qq of @n values (min and max in @a); the buffer of an earlier series is kept. */
static void qsel_start(struct qsel *q, double qq, uint64_t n, const struct series *a)
{
	double *buf = q->buf;
	size_t cap = q->cap;

	memset(q, 0, offsetof(struct qsel, cnt));
	q->buf = buf;
	q->cap = cap;
	q->rank = n ? ps_nearest_rank((size_t)n, qq) : 1;
	q->inside = n;
	q->lo = a->mn;
	q->hi = a->mx;
	q->done = n == 0 || q->lo == q->hi;
	q->result = n ? q->lo : 0;
}

/* Before a pass: collect when few enough values are left (or slicing stopped narrowing). */
static int qsel_prepare(struct qsel *q)
{
	if (q->done)
		return 0;
	if (q->inside <= CAP || q->collect) {
		double *p = q->cap >= q->inside ? q->buf : realloc(q->buf, q->inside * sizeof *p);
		if (!p)
			return -1;
		q->buf = p;
		q->cap = q->inside > q->cap ? q->inside : q->cap;
		q->collect = 1;
		q->nbuf = 0;
		return 0;
	}
	memset(q->cnt, 0, sizeof q->cnt);
	return 0;
}

static void qsel_add(struct qsel *q, double x)
{
	double t;
	size_t j;

	if (q->done || x < q->lo || x > q->hi)
		return;
	if (q->collect) {
		if (q->nbuf < q->cap)
			q->buf[q->nbuf++] = x;
		return;
	}
	/* scaled first, so that hi - lo cannot overflow */
	t = (x / NSUB - q->lo / NSUB) / (q->hi / NSUB - q->lo / NSUB) * NSUB;
	j = !(t > 0) ? 0 : t >= NSUB ? NSUB - 1 : (size_t)t;
	if (!q->cnt[j] || x < q->mn[j])
		q->mn[j] = x;
	if (!q->cnt[j] || x > q->mx[j])
		q->mx[j] = x;
	q->cnt[j]++;
}

/* After a pass: the answer, or the next interval. */
static void qsel_finish(struct qsel *q)
{
	uint64_t acc = q->below;

	if (q->done)
		return;
	if (q->collect) {
		qsort(q->buf, q->nbuf, sizeof *q->buf, cmp_double);
		q->result = q->buf[q->rank - q->below - 1];
		q->done = 1;
		return;
	}
	for (size_t j = 0; j < NSUB; j++) {
		if (acc + q->cnt[j] < q->rank) {
			acc += q->cnt[j];
			continue;
		}
		if (q->mn[j] == q->lo && q->mx[j] == q->hi)
			q->collect = 1; /* no narrower: collect them all */
		q->below = acc;
		q->inside = q->cnt[j];
		q->lo = q->mn[j];
		q->hi = q->mx[j];
		if (q->lo == q->hi) {
			q->result = q->lo;
			q->done = 1;
		}
		return;
	}
}

/* Value of series @k of record @i when it is a complete hit of @region: its group, else -1. */
static ptrdiff_t value_at(const struct ps_view *v, int region, struct split *s, uint64_t i, int k, double *x,
			  double *ratio)
{
	const struct ps_snap *r = ps_view_rec(v, i);

	if ((int)r->region != region || !ps_snap_complete(r))
		return -1;
	*x = ps_view_value(v, r, k, ratio);
	return group_of(s, key_of(s->how, r)); /* found in pass 1: no allocation */
}

/* Statistics of series @k of every group: sum, min, max in one pass, then the spread and the
 * first slicing of the quantiles in another, and more slicing passes while a quantile needs. */
static int series_stats(const struct ps_view *v, int region, struct split *s, int k, struct series *a, struct qsel *q)
{
	double x, ratio;
	ptrdiff_t g;
	int active, first = 1;

	for (size_t h = 0; h < s->n; h++)
		a[h] = (struct series){0, 0, INFINITY, -INFINITY};
	for (uint64_t i = 0; i < v->n; i++) {
		if ((g = value_at(v, region, s, i, k, &x, &ratio)) < 0)
			continue;
		a[g].mn = x < a[g].mn ? x : a[g].mn;
		a[g].mx = x > a[g].mx ? x : a[g].mx;
		a[g].sum += x;
		if (ratio < s->out[g].ratio_min)
			s->out[g].ratio_min = ratio;
	}
	for (size_t h = 0; h < s->n; h++) {
		for (int j = 0; j < NQ; j++)
			qsel_start(&q[h * NQ + j], quantiles[j], s->out[h].hits, &a[h]);
	}
	do {
		active = 0;
		for (size_t j = 0; j < s->n * NQ; j++) {
			if (qsel_prepare(&q[j]))
				return -1;
			active |= !q[j].done;
		}
		if (!active && !first)
			break;
		for (uint64_t i = 0; i < v->n; i++) {
			if ((g = value_at(v, region, s, i, k, &x, &ratio)) < 0)
				continue;
			if (first) {
				double d = x - a[g].sum / (double)s->out[g].hits;
				a[g].sq += d * d;
			}
			for (int j = 0; j < NQ; j++)
				qsel_add(&q[(size_t)g * NQ + (size_t)j], x);
		}
		for (size_t j = 0; j < s->n * NQ; j++)
			qsel_finish(&q[j]);
		first = 0;
	} while (active);
	for (size_t h = 0; h < s->n; h++) {
		struct ps_stats *st = stats_slot(&s->out[h], k);
		uint64_t n = s->out[h].hits;

		memset(st, 0, sizeof *st);
		if (!n)
			continue;
		st->n = n;
		st->sum = a[h].sum;
		st->mean = a[h].sum / (double)n;
		st->stddev = ps_stddev_of(a[h].sq, (size_t)n);
		st->min = a[h].mn;
		st->max = a[h].mx;
		st->p50 = q[h * NQ].result;
		st->p90 = q[h * NQ + 1].result;
		st->p99 = q[h * NQ + 2].result;
	}
	return 0;
}

int ps_view_stats(const struct ps_view *v, int region, enum ps_split split, struct ps_hit_stats **out, size_t *nout)
{
	struct split s = {.how = split};
	struct series *a = NULL;
	struct qsel *q = NULL;
	int rc = -1;

	if (count_pass(v, region, &s))
		goto out;
	a = malloc((s.n + 1) * sizeof *a);
	q = calloc(s.n * NQ + 1, sizeof *q);
	if (!a || !q)
		goto out;
	for (int k = PS_SERIES_WALL; k < v->nev; k++)
		if (series_stats(v, region, &s, k, a, q))
			goto out;
	*out = s.out;
	*nout = s.n;
	s.out = NULL;
	rc = 0;
out:
	for (size_t j = 0; q && j < s.n * NQ; j++)
		free(q[j].buf);
	free(q);
	free(a);
	free(s.out);
	if (rc)
		errno = ENOMEM;
	return rc;
}

int ps_view_series(const struct ps_view *v, int region, int k, double **out, size_t *nout)
{
	size_t n = 0, j = 0;
	double *val, ratio;

	for (uint64_t i = 0; i < v->n; i++) {
		const struct ps_snap *r = ps_view_rec(v, i);
		n += (int)r->region == region && ps_snap_complete(r);
	}
	val = malloc((n ? n : 1) * sizeof *val);
	if (!val) {
		errno = ENOMEM;
		return -1;
	}
	for (uint64_t i = 0; i < v->n && j < n; i++) {
		const struct ps_snap *r = ps_view_rec(v, i);
		if ((int)r->region == region && ps_snap_complete(r))
			val[j++] = ps_view_value(v, r, k, &ratio);
	}
	*out = val;
	*nout = n;
	return 0;
}
