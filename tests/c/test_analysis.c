/* tests/c/test_analysis.c - what records mean: group layout, multiplex scaling, statistics of a
 * region's hits overall, per thread and per CPU (core/records/analysis.c). */
#include "ctest.h"

#include <math.h>
#include <stdlib.h>

#include "analysis.h"

#define NEV 2
#define NV 4 /* event 0 (group 0), event 1 (group 1), then group 1's enabled and running */
#define RS (sizeof(struct ps_snap) + 2 * NV * sizeof(uint64_t))
#define MAXREC 64

struct recs {
	unsigned char buf[MAXREC * RS] __attribute__((aligned(8)));
	struct ps_view v;
};

static struct ps_snap *rec(struct recs *rs, uint64_t i)
{
	return (struct ps_snap *)(rs->buf + i * RS);
}

static void init(struct recs *rs)
{
	memset(rs, 0, sizeof *rs);
	rs->v.base = rs->buf;
	rs->v.recsize = RS;
	rs->v.nev = NEV;
	rs->v.names[0] = "a";
	rs->v.names[1] = "b";
	ps_view_set_groups(&rs->v, "1,1", NV);
}

/* Append a hit: event deltas @a and @b, group 0 enabled/running @en0/@run0 (group 1 never
 * multiplexed), wall time @wall. */
static struct ps_snap *add(struct recs *rs, uint32_t region, uint32_t tid, int cpu0, int cpu1, uint64_t a, uint64_t b,
			   uint64_t en0, uint64_t run0, uint64_t wall)
{
	struct ps_snap *r = rec(rs, rs->v.n);

	r->region = region;
	r->tid = tid;
	r->seq = rs->v.n++;
	r->t_start = 5000;
	r->t_end = 5000 + wall;
	r->enabled_start = 100;
	r->enabled_end = 100 + en0;
	r->running_start = 50;
	r->running_end = 50 + run0;
	r->cpu_start = (int16_t)cpu0;
	r->cpu_end = (int16_t)cpu1;
	r->nvals = NV;
	ps_snap_start(r)[0] = 1000;
	ps_snap_end(r)[0] = 1000 + a;
	ps_snap_start(r)[1] = 7;
	ps_snap_end(r)[1] = 7 + b;
	ps_snap_start(r)[2] = 10;
	ps_snap_end(r)[2] = 10 + en0;
	ps_snap_start(r)[3] = 10;
	ps_snap_end(r)[3] = 10 + en0;
	return r;
}

TEST(analysis_group_layout)
{
	struct ps_view v = {.nev = 3};

	ps_view_set_groups(&v, "2,1", 5);
	CHECK_EQ_INT(v.group[0], 0);
	CHECK_EQ_INT(v.group[1], 0);
	CHECK_EQ_INT(v.group[2], 1);
	ps_view_set_groups(&v, NULL, 5);
	CHECK_EQ_INT(v.group[2], 0);
	/* the records have no room for a second group's times: it counts as the first */
	ps_view_set_groups(&v, "1,2", 3);
	CHECK_EQ_INT(v.group[0], 0);
	CHECK_EQ_INT(v.group[1], 0);
	CHECK_EQ_INT(v.group[2], 0);
}

TEST(analysis_multiplex_scaling)
{
	static struct recs rs;
	double ratio;
	struct ps_snap *r;

	init(&rs);
	/* group 0 ran 1/3 of its enabled time: event a scales by 3, b (group 1) does not */
	r = add(&rs, 0, 1, 0, 0, 100, 40, 3000, 1000, 9000);
	CHECK(ps_view_delta(&rs.v, r, 0, &ratio) == 300.0);
	CHECK(fabs(ratio - 1.0 / 3) < 1e-12);
	CHECK(ps_view_delta(&rs.v, r, 1, &ratio) == 40.0);
	CHECK(ratio == 1.0);
	CHECK(ps_view_value(&rs.v, r, PS_SERIES_TIME, &ratio) == 3000.0);
	CHECK(ps_view_value(&rs.v, r, PS_SERIES_WALL, &ratio) == 9000.0);
	/* a group that never ran: the raw delta, ratio 0 */
	r = add(&rs, 0, 1, 0, 0, 100, 40, 3000, 0, 9000);
	CHECK(ps_view_delta(&rs.v, r, 0, &ratio) == 100.0);
	CHECK(ratio == 0.0);
	/* no counters: the on-CPU time is the wall time */
	r->nvals = 0;
	CHECK(ps_view_cpu_time(r) == 9000.0);
}

TEST(analysis_region_stats)
{
	static struct recs rs;
	struct ps_hit_stats *st;
	size_t n;

	init(&rs);
	add(&rs, 0, 1, 0, 0, 10, 1, 100, 100, 1000);
	add(&rs, 1, 1, 0, 0, 99, 99, 100, 100, 1000); /* another region */
	add(&rs, 0, 1, 0, 1, 30, 3, 300, 150, 3000);  /* multiplexed: a = 60, migrated */
	add(&rs, 0, 2, 1, 1, 20, 2, 200, 200, 2000);
	add(&rs, 0, 2, 1, 1, 5, 5, 5, 5, 5)->flags = PS_SNAP_UNWOUND;
	add(&rs, 0, 3, 1, 1, 5, 5, 5, 5, 5)->flags = PS_SNAP_EXITED;
	CHECK_EQ_INT(ps_view_stats(&rs.v, 0, PS_SPLIT_NONE, &st, &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(st[0].hits, 3);
	CHECK_EQ_INT(st[0].incomplete, 2);
	CHECK_EQ_INT(st[0].migrated, 1);
	CHECK(st[0].ratio_min == 0.5);
	CHECK(st[0].ev[0].sum == 90 && st[0].ev[0].min == 10 && st[0].ev[0].max == 60 && st[0].ev[0].p50 == 20);
	CHECK(st[0].ev[1].sum == 6 && st[0].ev[1].mean == 2);
	CHECK(st[0].time.sum == 600 && st[0].time.p99 == 300);
	CHECK(st[0].wall.sum == 6000 && st[0].wall.n == 3);
	free(st);
	/* a region without hits: one group of zeros */
	CHECK_EQ_INT(ps_view_stats(&rs.v, 7, PS_SPLIT_NONE, &st, &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(st[0].hits, 0);
	CHECK(st[0].ratio_min == 1.0 && st[0].ev[0].sum == 0 && st[0].time.max == 0);
	free(st);
	CHECK_EQ_INT(ps_view_stats(&rs.v, 7, PS_SPLIT_THREAD, &st, &n), 0);
	CHECK_EQ_INT(n, 0);
	free(st);
}

TEST(analysis_split_by_thread_and_cpu)
{
	static struct recs rs;
	struct ps_hit_stats *st;
	size_t n;

	init(&rs);
	/* interleaved threads 30, 10, 20 on CPUs 3, -1 (unknown), 1 */
	for (uint64_t i = 0; i < 30; i++) {
		uint32_t tid = (uint32_t)(30 - 10 * (i % 3));
		int cpu = i % 3 == 0 ? 3 : i % 3 == 1 ? -1 : 1;
		add(&rs, 0, tid, cpu, i % 5 == 0 ? 2 : cpu, i, 1, 100 + i, 100 + i, 1000);
	}
	add(&rs, 0, 40, 2, 2, 1, 1, 1, 1, 1)->flags = PS_SNAP_EXITED; /* incomplete only */
	add(&rs, 1, 50, 9, 9, 1, 1, 1, 1, 1);			      /* another region */
	CHECK_EQ_INT(ps_view_stats(&rs.v, 0, PS_SPLIT_THREAD, &st, &n), 0);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(st[0].key, 10);
	CHECK_EQ_INT(st[1].key, 20);
	CHECK_EQ_INT(st[2].key, 30);
	CHECK_EQ_INT(st[3].key, 40);
	CHECK_EQ_INT(st[3].hits, 0);
	CHECK_EQ_INT(st[3].incomplete, 1);
	for (int g = 0; g < 3; g++) {
		CHECK_EQ_INT(st[g].hits, 10);
		CHECK_EQ_INT(st[g].ev[1].sum, 10);
	}
	/* thread 30 had hits 0, 3, ..., 27: a = i */
	CHECK(st[2].ev[0].sum == 135 && st[2].ev[0].min == 0 && st[2].ev[0].max == 27 && st[2].ev[0].p50 == 12);
	CHECK_EQ_INT(st[2].migrated, 2); /* hits 0 and 15 ended on CPU 2 */
	free(st);
	CHECK_EQ_INT(ps_view_stats(&rs.v, 0, PS_SPLIT_CPU, &st, &n), 0);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(st[0].key, -1);
	CHECK_EQ_INT(st[1].key, 1);
	CHECK_EQ_INT(st[2].key, 2);
	CHECK_EQ_INT(st[3].key, 3);
	CHECK_EQ_INT(st[0].hits + st[1].hits + st[3].hits, 30);
	CHECK(st[0].time.sum + st[1].time.sum + st[3].time.sum == 30 * 100 + 435);
	free(st);
}

static const struct ps_snap *get_rec(const void *ctx, uint64_t i)
{
	return rec((struct recs *)ctx, i);
}

TEST(analysis_series_and_callback_view)
{
	static struct recs rs;
	struct ps_view cb;
	struct ps_hit_stats *a, *b;
	double *val;
	size_t n, na, nb;

	init(&rs);
	add(&rs, 0, 1, 0, 0, 30, 1, 100, 100, 1000);
	add(&rs, 0, 1, 0, 0, 10, 1, 100, 100, 1000)->flags = PS_SNAP_UNWOUND;
	add(&rs, 0, 1, 0, 0, 20, 1, 100, 50, 1000);
	CHECK_EQ_INT(ps_view_series(&rs.v, 0, 0, &val, &n), 0);
	CHECK_EQ_INT(n, 2);
	CHECK(val[0] == 30 && val[1] == 40); /* record order, scaled */
	free(val);
	CHECK_EQ_INT(ps_view_series(&rs.v, 5, PS_SERIES_TIME, &val, &n), 0);
	CHECK_EQ_INT(n, 0);
	free(val);
	/* the same records through a get callback (a file's view) give the same statistics */
	cb = rs.v;
	cb.base = NULL;
	cb.get = get_rec;
	cb.ctx = &rs;
	CHECK_EQ_INT(ps_view_stats(&rs.v, 0, PS_SPLIT_NONE, &a, &na), 0);
	CHECK_EQ_INT(ps_view_stats(&cb, 0, PS_SPLIT_NONE, &b, &nb), 0);
	CHECK_EQ_INT(na, nb);
	CHECK(memcmp(a, b, sizeof *a) == 0);
	free(a);
	free(b);
}

static uint64_t rng_state;

/* xorshift64*: deterministic, so that a failure can be replayed */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* A delta of kind @d: many duplicates, a constant, a long tail, 0 and a wrapped counter. */
static uint64_t draw(int d)
{
	switch (d) {
	case 0:
		return 1500 + rnd() % 1000 + (rnd() % 100 == 0 ? rnd() % 50000 : 0);
	case 1:
		return 3006;
	case 2:
		return rnd() % 3;
	case 3:
		return (uint64_t)exp((double)(rnd() % 40000) / 1000.0);
	default:
		return rnd() % 10 == 0 ? (uint64_t)0 - rnd() % 5 : rnd() % 1000; /* wrapped: ~1.8e19 */
	}
}

#define BIG 40000

/* The quantiles computed in passes (bounded memory) are the ones of the sorted values. */
TEST(analysis_exact_quantiles_in_passes)
{
	size_t rs = ps_snap_size(NV, 0), n;
	unsigned char *buf = calloc(BIG, rs);
	double *val = malloc(BIG * sizeof *val);
	struct ps_view v = {.base = buf, .n = BIG, .recsize = rs, .nev = NEV};

	CHECK(buf && val);
	if (!buf || !val)
		goto out;
	ps_view_set_groups(&v, "1,1", NV);
	for (int d = 0; d < 5; d++) {
		struct ps_hit_stats *st;

		rng_state = 0x9e3779b97f4a7c15ull * ((uint64_t)d + 1);
		for (uint64_t i = 0; i < BIG; i++) {
			struct ps_snap *r = (struct ps_snap *)(buf + i * rs);
			uint64_t en = 1000 + rnd() % 1000, run = rnd() % 4 ? en : en / 3; /* some multiplexed */

			memset(r, 0, rs);
			r->tid = (uint32_t)(rnd() % 3);
			r->nvals = NV;
			r->enabled_end = en;
			r->running_end = run;
			r->t_end = draw(d) % 1000000;
			r->flags = rnd() % 50 == 0 ? PS_SNAP_UNWOUND : 0;
			ps_snap_end(r)[0] = draw(d); /* scaled when multiplexed: not integers */
			ps_snap_end(r)[1] = draw(d);
		}
		CHECK_EQ_INT(ps_view_stats(&v, 0, PS_SPLIT_THREAD, &st, &n), 0);
		CHECK_EQ_INT(n, 3);
		for (size_t g = 0; g < n; g++)
			for (int k = PS_SERIES_WALL; k < NEV; k++) {
				struct ps_stats want, *got = k == PS_SERIES_WALL   ? &st[g].wall
							     : k == PS_SERIES_TIME ? &st[g].time
										   : &st[g].ev[k];
				size_t m = 0;
				double ratio;

				for (uint64_t i = 0; i < BIG; i++) {
					const struct ps_snap *r = ps_view_rec(&v, i);
					if ((int64_t)r->tid == st[g].key && ps_snap_complete(r))
						val[m++] = ps_view_value(&v, r, k, &ratio);
				}
				ps_stats_of(val, m, &want);
				CHECK_EQ_INT(got->n, m);
				CHECK(got->min == want.min && got->max == want.max);
				CHECK(got->p50 == want.p50 && got->p90 == want.p90 && got->p99 == want.p99);
				CHECK(fabs(got->sum - want.sum) <= 1e-12 * fabs(want.sum));
				CHECK(fabs(got->mean - want.mean) <= 1e-12 * fabs(want.mean));
				CHECK(fabs(got->stddev - want.stddev) <= 1e-9 * want.stddev + 1e-9);
				if (got->p50 != want.p50 || got->p99 != want.p99)
					fprintf(stderr,
						"  kind %d group %zu series %d: p50 %g (want %g), p99 %g (want %g)\n",
						d, g, k, got->p50, want.p50, got->p99, want.p99);
			}
		free(st);
	}
out:
	free(buf);
	free(val);
}
