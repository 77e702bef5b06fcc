/* tests/c/test_lsq.c - least squares: known coefficients, exact systems and the errors. */
#include "ctest.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "lsq.h"

static uint64_t seed = 12345;

/* Uniform in [0, 1): a 64-bit LCG's top bits, enough for test designs. */
static double unif(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(seed >> 11) / 9007199254740992.0;
}

/* y = 10 a + 25 b + 100 c + 15 with a, b, c counts of different sizes and noise of +-0.01. */
TEST(lsq_recovers_coefficients)
{
	enum { M = 200, N = 4 };
	static double a[M * N], b[M];
	static const double want[N] = {10, 25, 100, 15};
	double x[N], sv[N];
	struct ps_lsq_info info;
	struct ps_error err = {0};

	for (int i = 0; i < M; i++) {
		double wa = floor(unif() * 1e6), wb = floor(unif() * 1e3), wc = floor(unif() * 50);
		a[i * N + 0] = wa;
		a[i * N + 1] = wb;
		a[i * N + 2] = wc;
		a[i * N + 3] = 1;
		b[i] = 10 * wa + 25 * wb + 100 * wc + 15 + (unif() - 0.5) / 50;
	}
	CHECK(ps_lsq_solve(M, N, a, b, 0, x, sv, &info, &err) == 0);
	for (int j = 0; j < N; j++) {
		if (!(fabs(x[j] - want[j]) <= 1e-3 * want[j]))
			fprintf(stderr, "  x[%d] = %.9g, want %g\n", j, x[j], want[j]);
		CHECK(fabs(x[j] - want[j]) <= 1e-3 * want[j]);
	}
	CHECK_EQ_INT(info.rank, N);
	/* noise uniform in +-0.01 has variance 1/(12 * 2500): the rss is near (M - N) of that */
	CHECK(info.rss > 0.5 * M / 30000.0 && info.rss < 1.5 * M / 30000.0);
	CHECK(sv[0] >= sv[1] && sv[1] >= sv[2] && sv[2] >= sv[3] && sv[3] > 0);
	CHECK(fabs(info.cond - sv[0] / sv[3]) <= 1e-12 * info.cond);
	CHECK(info.cond < 100); /* scaled columns: units do not make it ill-conditioned */
}

TEST(lsq_exact_system)
{
	/* 2x + y = 5, x - y = 1, x + 3y = 5: consistent, so x = 2, y = 1, rss 0 */
	static const double a[] = {2, 1, 1, -1, 1, 3}, b[] = {5, 1, 5};
	static const double sq[] = {1, 0, 0, 1}, bs[] = {-3, 7};
	double x[2];
	struct ps_lsq_info info;
	struct ps_error err = {0};

	CHECK(ps_lsq_solve(3, 2, a, b, 0, x, NULL, &info, &err) == 0);
	CHECK(fabs(x[0] - 2) < 1e-12 && fabs(x[1] - 1) < 1e-12);
	CHECK(info.rss < 1e-24);
	/* square: the identity */
	CHECK(ps_lsq_solve(2, 2, sq, bs, 0, x, NULL, &info, &err) == 0);
	CHECK(fabs(x[0] + 3) < 1e-12 && fabs(x[1] - 7) < 1e-12);
	CHECK(fabs(info.cond - 1) < 1e-12);
}

TEST(lsq_errors)
{
	static const double a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 2};
	static double nan_a[] = {1, 2, 3, 4, 5, 6}, nan_b[] = {1, 2, 3};
	double x[3], sv[3];
	struct ps_lsq_info info;
	struct ps_error err = {0};

	CHECK(ps_lsq_solve(2, 3, a, b, 0, x, sv, &info, &err) == -1);
	CHECK_STR(err.msg, "too few hits: 2 observations for 3 unknowns");
	CHECK_EQ_INT(err.code, PS_EUSAGE);
	CHECK(ps_lsq_solve(2, 0, a, b, 0, x, sv, &info, &err) == -1);
	nan_a[4] = NAN;
	CHECK(ps_lsq_solve(3, 2, nan_a, nan_b, 0, x, sv, &info, &err) == -1);
	CHECK_STR(err.msg, "NaN in row 3, column 1");
	nan_a[4] = 5;
	nan_b[1] = INFINITY;
	CHECK(ps_lsq_solve(3, 2, nan_a, nan_b, 0, x, sv, &info, &err) == -1);
	CHECK_STR(err.msg, "infinite value in the observed value of row 2");
	CHECK(ps_lsq_solve(3, 2, nan_a, nan_b, 0, x, sv, &info, NULL) == -1); /* err may be NULL */
}

TEST(lsq_rank_deficient)
{
	enum { M = 50 };
	static double a[M * 3], a4[M * 4], b[M];
	double x[4], sv[4];
	struct ps_lsq_info info;
	struct ps_error err = {0};

	/* columns 2 and 3 equal */
	for (int i = 0; i < M; i++) {
		a[i * 3 + 0] = 1;
		a[i * 3 + 1] = a[i * 3 + 2] = floor(unif() * 1000);
		b[i] = 3 + 2 * a[i * 3 + 1];
	}
	CHECK(ps_lsq_solve(M, 3, a, b, 0, x, sv, &info, &err) == -1);
	CHECK_STR(err.msg, "rank deficient: rank 2 of 3 columns (column 3 is (nearly) proportional to column 2)");
	CHECK_EQ_INT(info.rank, 2);
	CHECK(sv[2] < 1e-10 * sv[0]);
	/* column 4 = 2 * column 1 + column 3, and column 2 all zeros */
	for (int i = 0; i < M; i++) {
		a4[i * 4 + 0] = floor(unif() * 100);
		a4[i * 4 + 1] = 0;
		a4[i * 4 + 2] = floor(unif() * 1e6);
		a4[i * 4 + 3] = 2 * a4[i * 4 + 0] + a4[i * 4 + 2];
	}
	CHECK(ps_lsq_solve(M, 4, a4, b, 0, x, sv, &info, &err) == -1);
	CHECK_STR(err.msg, "rank deficient: rank 2 of 4 columns (column 2 is (nearly) all zeros; "
			   "column 4 is (nearly) a linear combination of columns 1 and 3)");
}
