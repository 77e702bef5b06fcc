/* core/records/hist.c - streaming log-bucket histogram: DDSketch-style buckets, Welford statistics. */
#include "hist.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#define MIN_SLOTS 64

/* The counts of one sign: c[k] is bucket lo + k; [min_i, max_i] are the non-empty ends. */
struct store {
	uint64_t *c;
	int lo, cap;
	int min_i, max_i;
	uint64_t total;
};

struct ps_hist {
	struct store pos, neg;
	uint64_t zero; /* magnitudes below PS_HIST_MIN_VALUE */
	uint64_t n;
	double sum, sum_c;	   /* Neumaier-compensated sum: sum + sum_c */
	double mean, m2, min, max; /* Welford */
	double lg, inv_lg;	   /* log(gamma), 1 / log(gamma) */
};

#define GAMMA ((1 + PS_HIST_ALPHA) / (1 - PS_HIST_ALPHA))

/* Bucket of magnitude @v >= PS_HIST_MIN_VALUE: gamma^(i-1) < v <= gamma^i. */
static int bucket_of(const struct ps_hist *h, double v)
{
	return (int)ceil(log(v) * h->inv_lg);
}

/* The upper bound gamma^i of bucket @i. */
static double upper(const struct ps_hist *h, int i)
{
	return exp((double)i * h->lg);
}

/* The value that answers for bucket @i: 2 gamma^i / (gamma + 1), within PS_HIST_ALPHA of both
 * ends of the bucket. */
static double represent(const struct ps_hist *h, int i)
{
	return 2 * upper(h, i) / (GAMMA + 1);
}

/* Make the store cover buckets [a, b]; contents unchanged on failure. */
static int store_cover(struct store *s, int a, int b)
{
	int nlo, nhi, ncap;
	uint64_t *nc;

	if (s->c && a >= s->lo && b < s->lo + s->cap)
		return 0;
	if (!s->c) {
		nlo = a - MIN_SLOTS / 4;
		nhi = b + MIN_SLOTS / 4;
	} else {
		int span;
		nlo = a < s->lo ? a : s->lo;
		nhi = b > s->lo + s->cap - 1 ? b : s->lo + s->cap - 1;
		span = nhi - nlo + 1;
		/* slack on the side that grew, half the span: amortised O(1) growth */
		if (a < s->lo)
			nlo -= span / 2;
		if (b > s->lo + s->cap - 1)
			nhi += span / 2;
	}
	ncap = nhi - nlo + 1;
	if (ncap < MIN_SLOTS) {
		nhi += MIN_SLOTS - ncap;
		ncap = MIN_SLOTS;
	}
	nc = calloc((size_t)ncap, sizeof *nc);
	if (!nc) {
		errno = ENOMEM;
		return -1;
	}
	if (s->c) {
		memcpy(nc + (s->lo - nlo), s->c, (size_t)s->cap * sizeof *nc);
		free(s->c);
	}
	s->c = nc;
	s->lo = nlo;
	s->cap = ncap;
	return 0;
}

/* Count @n in bucket @i, which the store already covers. */
static void store_put(struct store *s, int i, uint64_t n)
{
	if (s->total == 0) {
		s->min_i = s->max_i = i;
	} else {
		if (i < s->min_i)
			s->min_i = i;
		if (i > s->max_i)
			s->max_i = i;
	}
	s->c[i - s->lo] += n;
	s->total += n;
}

struct ps_hist *ps_hist_new(void)
{
	struct ps_hist *h = calloc(1, sizeof *h);

	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	h->min = h->max = NAN;
	h->lg = log(GAMMA);
	h->inv_lg = 1 / h->lg;
	return h;
}

void ps_hist_free(struct ps_hist *h)
{
	if (!h)
		return;
	free(h->pos.c);
	free(h->neg.c);
	free(h);
}

/* sum += x, compensated (Neumaier). */
static void sum_add(struct ps_hist *h, double x)
{
	double t = h->sum + x;

	if (fabs(h->sum) >= fabs(x))
		h->sum_c += (h->sum - t) + x;
	else
		h->sum_c += (x - t) + h->sum;
	h->sum = t;
}

int ps_hist_add_n(struct ps_hist *h, double v, uint64_t n)
{
	double mag = fabs(v), delta;
	struct store *s = v < 0 ? &h->neg : &h->pos;
	int i = 0;

	if (!isfinite(v)) {
		errno = EDOM;
		return -1;
	}
	if (n == 0)
		return 0;
	if (mag >= PS_HIST_MIN_VALUE) {
		i = bucket_of(h, mag);
		if (store_cover(s, i, i))
			return -1;
		store_put(s, i, n);
	} else {
		h->zero += n;
	}
	if (h->n == 0 || v < h->min)
		h->min = v;
	if (h->n == 0 || v > h->max)
		h->max = v;
	h->n += n;
	delta = v - h->mean;
	h->mean += delta * ((double)n / (double)h->n);
	h->m2 += delta * (v - h->mean) * (double)n;
	sum_add(h, v * (double)n);
	return 0;
}

int ps_hist_add(struct ps_hist *h, double v)
{
	return ps_hist_add_n(h, v, 1);
}

int ps_hist_merge(struct ps_hist *dst, const struct ps_hist *src)
{
	/* Everything read from @src is read before @dst changes, so @src may be @dst. */
	const struct store *sp = &src->pos, *sn = &src->neg;
	uint64_t n = src->n, zero = src->zero;
	double mean = src->mean, m2 = src->m2, sum = src->sum, sum_c = src->sum_c;
	double mn = src->min, mx = src->max, delta;
	uint64_t tot;

	if (n == 0)
		return 0;
	if ((sp->total && store_cover(&dst->pos, sp->min_i, sp->max_i)) ||
	    (sn->total && store_cover(&dst->neg, sn->min_i, sn->max_i)))
		return -1;
	/* After store_cover, sp->c is still valid: when src == dst it is dst's new array. */
	for (int k = 0; k < 2; k++) {
		const struct store *s = k ? sn : sp;
		struct store *d = k ? &dst->neg : &dst->pos;
		int lo = s->min_i, hi = s->max_i;

		if (!s->total)
			continue;
		for (int i = lo; i <= hi; i++)
			if (s->c[i - s->lo])
				store_put(d, i, s->c[i - s->lo]);
	}
	dst->zero += zero;
	if (dst->n == 0 || mn < dst->min)
		dst->min = mn;
	if (dst->n == 0 || mx > dst->max)
		dst->max = mx;
	tot = dst->n + n;
	delta = mean - dst->mean;
	dst->m2 += m2 + delta * delta * ((double)dst->n * (double)n / (double)tot);
	dst->mean += delta * ((double)n / (double)tot);
	dst->n = tot;
	sum_add(dst, sum);
	sum_add(dst, sum_c);
	return 0;
}

static double clamp(const struct ps_hist *h, double v)
{
	return v < h->min ? h->min : v > h->max ? h->max : v;
}

double ps_hist_quantile(const struct ps_hist *h, double q)
{
	uint64_t rank, cum = 0;
	const struct store *s;

	if (h->n == 0 || !(q >= 0 && q <= 1))
		return NAN;
	rank = ps_nearest_rank((size_t)h->n, q);
	if (rank <= 1)
		return h->min;
	if (rank >= h->n)
		return h->max;
	s = &h->neg;
	if (s->total)
		for (int i = s->max_i; i >= s->min_i; i--)
			if ((cum += s->c[i - s->lo]) >= rank)
				return clamp(h, -represent(h, i));
	if ((cum += h->zero) >= rank)
		return clamp(h, 0);
	s = &h->pos;
	if (s->total)
		for (int i = s->min_i; i <= s->max_i; i++)
			if ((cum += s->c[i - s->lo]) >= rank)
				return clamp(h, represent(h, i));
	return h->max; /* not reached: the counts add up to n */
}

uint64_t ps_hist_count(const struct ps_hist *h)
{
	return h->n;
}

double ps_hist_sum(const struct ps_hist *h)
{
	return h->sum + h->sum_c;
}

double ps_hist_min(const struct ps_hist *h)
{
	return h->min;
}

double ps_hist_max(const struct ps_hist *h)
{
	return h->max;
}

double ps_hist_mean(const struct ps_hist *h)
{
	return h->n ? h->mean : NAN;
}

double ps_hist_stddev(const struct ps_hist *h)
{
	return ps_stddev_of(h->m2, (size_t)h->n);
}

int ps_hist_buckets(const struct ps_hist *h, ps_hist_bucket_fn cb, void *ud)
{
	const struct store *s = &h->neg;
	int rc;

	if (s->total)
		for (int i = s->max_i; i >= s->min_i; i--)
			if (s->c[i - s->lo] && (rc = cb(-upper(h, i), -upper(h, i - 1), s->c[i - s->lo], ud)))
				return rc;
	if (h->zero && (rc = cb(0, 0, h->zero, ud)))
		return rc;
	s = &h->pos;
	if (s->total)
		for (int i = s->min_i; i <= s->max_i; i++)
			if (s->c[i - s->lo] && (rc = cb(upper(h, i - 1), upper(h, i), s->c[i - s->lo], ud)))
				return rc;
	return 0;
}

uint64_t ps_hist_nbuckets(const struct ps_hist *h)
{
	return (uint64_t)h->pos.cap + (uint64_t)h->neg.cap;
}
