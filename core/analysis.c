/* core/analysis.c - the meaning of records: group layout, multiplex scaling, statistics. */
#include "analysis.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/* The groups being built: out[] sorted by key, with each one's place in the value array. */
struct split {
	enum ps_split how;
	struct ps_hit_stats *out;
	size_t n, cap, last;
	size_t *off, *pos; /* per group: first value, next value */
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
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			struct ps_hit_stats *p = realloc(s->out, cap * sizeof *p);
			if (!p)
				return -1;
			s->out = p;
			s->cap = cap;
		}
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

/* One pass per series: each group's values side by side in @val, then their statistics. */
static void series_pass(const struct ps_view *v, int region, struct split *s, int k, double *val)
{
	for (size_t g = 0; g < s->n; g++)
		s->pos[g] = s->off[g];
	for (uint64_t i = 0; i < v->n; i++) {
		const struct ps_snap *r = ps_view_rec(v, i);
		double ratio;
		size_t g;

		if ((int)r->region != region || !ps_snap_complete(r))
			continue;
		g = (size_t)group_of(s, key_of(s->how, r)); /* found in pass 1: no allocation */
		val[s->pos[g]++] = ps_view_value(v, r, k, &ratio);
		if (ratio < s->out[g].ratio_min)
			s->out[g].ratio_min = ratio;
	}
	for (size_t g = 0; g < s->n; g++)
		ps_stats_of(val + s->off[g], s->out[g].hits, stats_slot(&s->out[g], k));
}

int ps_view_stats(const struct ps_view *v, int region, enum ps_split split, struct ps_hit_stats **out, size_t *nout)
{
	struct split s = {.how = split};
	double *val = NULL;
	size_t total = 0;
	int rc = -1;

	if (count_pass(v, region, &s))
		goto out;
	s.off = malloc((s.n + 1) * sizeof *s.off);
	s.pos = malloc((s.n + 1) * sizeof *s.pos);
	if (!s.off || !s.pos)
		goto out;
	for (size_t g = 0; g < s.n; g++) {
		s.off[g] = total;
		total += s.out[g].hits;
	}
	val = malloc((total ? total : 1) * sizeof *val);
	if (!val)
		goto out;
	for (int k = PS_SERIES_WALL; k < v->nev; k++)
		series_pass(v, region, &s, k, val);
	*out = s.out;
	*nout = s.n;
	s.out = NULL;
	rc = 0;
out:
	free(val);
	free(s.off);
	free(s.pos);
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
