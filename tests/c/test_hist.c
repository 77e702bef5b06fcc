/* tests/c/test_hist.c - the log-bucket histogram against exact sorted-array statistics. */
#include "ctest.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "hist.h"
#include "stats.h"

#define N 1000000

static uint64_t rng_state;

/* splitmix64: deterministic, so a failure can be replayed. */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static double unif(void)
{
	return ((double)(rnd() >> 11) + 1) / 9007199254740992.0;
}

static double normal(void)
{
	return sqrt(-2 * log(unif())) * cos(2 * M_PI * unif());
}

enum dist { UNIFORM, LOGNORMAL, BIMODAL, CONSTANT, WIDE, SIGNED, NDIST };

static const char *const dist_name[] = {"uniform", "lognormal", "bimodal", "constant", "1..1e12", "signed"};

static double draw(enum dist d)
{
	double v;

	switch (d) {
	case UNIFORM: /* integers 1 .. 1e6 */
		return (double)(rnd() % 1000000 + 1);
	case LOGNORMAL: /* median ~22000, sigma 2: p999 is ~500x the median */
		return exp(10 + 2 * normal());
	case BIMODAL: /* a fast path at ~1 us and a slow one at ~1 ms */
		v = rnd() & 1 ? 1000 + 50 * normal() : 1e6 + 1e4 * normal();
		return v < 1 ? 1 : v;
	case CONSTANT:
		return 12345;
	case WIDE: /* log-uniform integers over 12 decades */
		return floor(exp(unif() * log(1e12))) + 1;
	case SIGNED: /* negative, zero and positive, of every size */
		v = rnd() % 10 == 0 ? 0 : exp(8 * normal());
		return rnd() & 1 ? -v : v;
	default:
		return 0;
	}
}

/* Fill @v with N values of @d and a histogram of them. */
static struct ps_hist *make(enum dist d, double *v)
{
	struct ps_hist *h = ps_hist_new();

	rng_state = 42 + (uint64_t)d;
	for (size_t i = 0; i < N && h; i++) {
		v[i] = draw(d);
		if (ps_hist_add(h, v[i])) {
			ps_hist_free(h);
			return NULL;
		}
	}
	return h;
}

static double relerr(double got, double want)
{
	if (got == want)
		return 0;
	return fabs(got - want) / fabs(want);
}

TEST(hist_quantiles_within_1pct)
{
	static const double qs[] = {0.5, 0.9, 0.99, 0.999};
	double *v = malloc(N * sizeof *v);

	CHECK(v != NULL);
	for (int d = 0; v && d < NDIST; d++) {
		struct ps_hist *h = make(d, v);
		double worst = 0, sum = 0;
		long double lsum = 0;
		struct ps_stats st;

		CHECK(h != NULL);
		if (!h)
			break;
		for (size_t i = 0; i < N; i++)
			lsum += v[i];
		sum = (double)lsum;
		ps_stats_of(v, N, &st); /* sorts v */
		for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
			double want = ps_quantile_sorted(v, N, qs[k]), got = ps_hist_quantile(h, qs[k]);
			if (!(relerr(got, want) <= 0.01))
				fprintf(stderr, "  %s p%g: got %.17g, want %.17g\n", dist_name[d], qs[k] * 100, got, want);
			CHECK(relerr(got, want) <= 0.01);
		}
		/* every permille, and the extremes exactly (values below 1e-9 are 0 in SIGNED only) */
		for (int k = 1; k <= 1000; k++) {
			double want = ps_quantile_sorted(v, N, k / 1000.0), got = ps_hist_quantile(h, k / 1000.0);
			double e = fabs(want) < PS_HIST_MIN_VALUE ? fabs(got - want) : relerr(got, want);
			if (e > worst)
				worst = e;
		}
		if (worst > 0.01 || getenv("PS_HIST_VERBOSE"))
			fprintf(stderr, "  %s: worst permille error %g\n", dist_name[d], worst);
		CHECK(worst <= 0.01);
		CHECK(ps_hist_quantile(h, 0) == v[0]);
		CHECK(ps_hist_quantile(h, 1) == v[N - 1]);
		CHECK_EQ_INT(ps_hist_count(h), N);
		CHECK(ps_hist_min(h) == v[0]);
		CHECK(ps_hist_max(h) == v[N - 1]);
		if (d == UNIFORM || d == CONSTANT) /* integer sums below 2^53: exact */
			CHECK(ps_hist_sum(h) == sum);
		CHECK(relerr(ps_hist_sum(h), sum) <= 1e-12);
		CHECK(relerr(ps_hist_mean(h), st.mean) <= 1e-9 || fabs(ps_hist_mean(h) - st.mean) < 1e-9 * st.stddev);
		CHECK(relerr(ps_hist_stddev(h), st.stddev) <= 1e-9 || (st.stddev == 0 && ps_hist_stddev(h) < 1e-9));
		ps_hist_free(h);
	}
	free(v);
}

/* Memory is bounded by the range of values, not their number. */
TEST(hist_memory_bounded)
{
	struct ps_hist *h = ps_hist_new();

	CHECK(h != NULL);
	if (!h)
		return;
	rng_state = 7;
	for (int i = 0; i < N; i++)
		ps_hist_add(h, draw(WIDE));
	/* ln(1e12) / ln(gamma) = 1396 buckets in use; growth slack stays within 2x */
	CHECK(ps_hist_nbuckets(h) >= 1396);
	CHECK(ps_hist_nbuckets(h) <= 2 * 1400);
	ps_hist_free(h);
}

struct collect {
	double lo[8192], hi[8192];
	uint64_t count[8192];
	int n;
};

static int collect_cb(double lo, double hi, uint64_t count, void *ud)
{
	struct collect *c = ud;

	if (c->n >= 8192)
		return 1;
	c->lo[c->n] = lo;
	c->hi[c->n] = hi;
	c->count[c->n++] = count;
	return 0;
}

static int same_buckets(const struct ps_hist *a, const struct ps_hist *b)
{
	static struct collect ca, cb;
	int ok;

	ca.n = cb.n = 0;
	if (ps_hist_buckets(a, collect_cb, &ca) || ps_hist_buckets(b, collect_cb, &cb))
		return 0;
	ok = ca.n == cb.n;
	for (int i = 0; ok && i < ca.n; i++)
		ok = ca.lo[i] == cb.lo[i] && ca.hi[i] == cb.hi[i] && ca.count[i] == cb.count[i];
	return ok;
}

TEST(hist_merge_equals_adding_all)
{
	for (int d = 0; d < NDIST; d++) {
		struct ps_hist *all = ps_hist_new(), *part[3] = {ps_hist_new(), ps_hist_new(), ps_hist_new()};
		struct ps_hist *m = ps_hist_new();

		CHECK(all && part[0] && part[1] && part[2] && m);
		if (all && part[0] && part[1] && part[2] && m) {
			rng_state = 1000 + (uint64_t)d;
			for (int i = 0; i < N / 10; i++) {
				double x = draw(d);
				/* parts of different sizes and ranges: the first gets the small values */
				int p = i < N / 100 ? 2 : fabs(x) < 2000 ? 0 : 1;
				ps_hist_add(all, x);
				ps_hist_add(part[p], x);
			}
			for (int p = 0; p < 3; p++)
				CHECK(ps_hist_merge(m, part[p]) == 0);
			CHECK_EQ_INT(ps_hist_count(m), ps_hist_count(all));
			CHECK(ps_hist_min(m) == ps_hist_min(all));
			CHECK(ps_hist_max(m) == ps_hist_max(all));
			CHECK(relerr(ps_hist_sum(m), ps_hist_sum(all)) <= 1e-12);
			CHECK(relerr(ps_hist_mean(m), ps_hist_mean(all)) <= 1e-9);
			CHECK(relerr(ps_hist_stddev(m), ps_hist_stddev(all)) <= 1e-9 || ps_hist_stddev(all) == 0);
			CHECK(same_buckets(m, all));
			for (int k = 1; k <= 100; k++)
				CHECK(ps_hist_quantile(m, k / 100.0) == ps_hist_quantile(all, k / 100.0));
			/* merging with itself doubles every count and keeps the shape */
			CHECK(ps_hist_merge(all, all) == 0);
			CHECK_EQ_INT(ps_hist_count(all), 2 * ps_hist_count(m));
			CHECK(relerr(ps_hist_mean(all), ps_hist_mean(m)) <= 1e-9);
			CHECK(ps_hist_quantile(all, 0.5) == ps_hist_quantile(m, 0.5));
			CHECK(relerr(ps_hist_sum(all), 2 * ps_hist_sum(m)) <= 1e-12);
		}
		ps_hist_free(all);
		ps_hist_free(m);
		for (int p = 0; p < 3; p++)
			ps_hist_free(part[p]);
	}
}

TEST(hist_small_and_errors)
{
	struct ps_hist *h = ps_hist_new(), *e = ps_hist_new();
	static struct collect c;
	uint64_t total = 0;

	CHECK(h && e);
	if (!h || !e) {
		ps_hist_free(h);
		ps_hist_free(e);
		return;
	}
	/* empty */
	CHECK_EQ_INT(ps_hist_count(h), 0);
	CHECK(isnan(ps_hist_quantile(h, 0.5)));
	CHECK(isnan(ps_hist_min(h)) && isnan(ps_hist_max(h)) && isnan(ps_hist_mean(h)));
	CHECK(ps_hist_sum(h) == 0);
	CHECK(ps_hist_merge(h, e) == 0 && ps_hist_count(h) == 0);
	/* rejected values leave it unchanged */
	errno = 0;
	CHECK(ps_hist_add(h, NAN) == -1 && errno == EDOM);
	CHECK(ps_hist_add(h, INFINITY) == -1 && errno == EDOM);
	CHECK_EQ_INT(ps_hist_count(h), 0);
	/* one value; then with weights */
	CHECK(ps_hist_add(h, 100) == 0);
	CHECK(ps_hist_quantile(h, 0.5) == 100);
	CHECK(ps_hist_stddev(h) == 0);
	CHECK(ps_hist_add_n(h, 300, 3) == 0);
	CHECK(ps_hist_add_n(h, 5, 0) == 0);
	CHECK_EQ_INT(ps_hist_count(h), 4);
	CHECK(ps_hist_sum(h) == 1000);
	CHECK(ps_hist_mean(h) == 250);
	CHECK(relerr(ps_hist_stddev(h), 100) <= 1e-12); /* sample sd of 100,300,300,300 */
	CHECK(relerr(ps_hist_quantile(h, 0.5), 300) <= 0.01);
	CHECK(isnan(ps_hist_quantile(h, 1.5)) && isnan(ps_hist_quantile(h, -0.1)));
	/* zero and negatives */
	CHECK(ps_hist_add(h, 0) == 0 && ps_hist_add(h, 1e-12) == 0 && ps_hist_add(h, -50) == 0);
	CHECK(ps_hist_min(h) == -50);
	CHECK(ps_hist_quantile(h, 0) == -50);
	CHECK(ps_hist_quantile(h, 2 / 7.0) == 0); /* ranks 2 and 3 are 0 and 1e-12, counted as 0 */
	CHECK(ps_hist_quantile(h, 3 / 7.0) == 0);
	CHECK(relerr(ps_hist_quantile(h, 4 / 7.0), 100) <= 0.01);
	/* buckets: increasing, bracketing, counts adding up */
	CHECK(ps_hist_buckets(h, collect_cb, &c) == 0);
	CHECK_EQ_INT(c.n, 4);
	for (int i = 0; i < c.n; i++) {
		total += c.count[i];
		CHECK(c.lo[i] <= c.hi[i]);
		if (i)
			CHECK(c.lo[i] >= c.hi[i - 1]);
	}
	CHECK_EQ_INT(total, 7);
	CHECK(c.lo[0] < -50 && c.hi[0] >= -50 && c.count[0] == 1);
	CHECK(c.lo[1] == 0 && c.hi[1] == 0 && c.count[1] == 2);
	CHECK(c.lo[2] < 100 && c.hi[2] >= 100 && c.count[2] == 1);
	CHECK(c.lo[3] < 300 && c.hi[3] >= 300 && c.count[3] == 3);
	CHECK(relerr(c.hi[3] / c.lo[3], (1 + PS_HIST_ALPHA) / (1 - PS_HIST_ALPHA)) < 1e-12);
	ps_hist_free(h);
	ps_hist_free(e);
	ps_hist_free(NULL);
}
