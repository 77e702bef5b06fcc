/* tests/c/test_stats.c - the one nearest rank, median and standard deviation of core/records/stats.c. */
#include <math.h>

#include "ctest.h"
#include "stats.h"

/* One row per input: n values, quantile q, the nearest rank (ceil(q * n) within 1..n). */
TEST(nearest_rank_is_ceil_q_n_within_1_to_n)
{
	static const struct {
		size_t n;
		double q;
		size_t rank;
	} rows[] = {{0, 0.5, 0},     {1, 0, 1},	     {1, 0.5, 1},  {1, 1, 1},	   {10, 0, 1},
		    {10, 0.1, 1},    {10, 0.11, 2},  {10, 0.5, 5}, {10, 0.99, 10}, {10, 1, 10},
		    {100, 0.99, 99}, {101, 0.5, 51}, {3, 0.99, 3}};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		CHECK_EQ_INT(ps_nearest_rank(rows[i].n, rows[i].q), rows[i].rank);
}

TEST(quantile_sorted_takes_the_value_at_the_nearest_rank)
{
	const double v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

	CHECK(ps_quantile_sorted(v, 10, 0.1) == 1);
	CHECK(ps_quantile_sorted(v, 10, 0.5) == 5);
	CHECK(ps_quantile_sorted(v, 10, 0.99) == 10);
	CHECK(ps_quantile_sorted(v, 0, 0.5) == 0);
}

TEST(median_of_an_even_count_is_the_mean_of_the_middle_two)
{
	double odd[] = {9, 1, 5}, even[] = {4, 1, 3, 2}, one[] = {7}, none[1] = {0};

	CHECK(ps_median_of(odd, 3) == 5);
	CHECK(ps_median_of(even, 4) == 2.5);
	CHECK(even[0] == 1 && even[3] == 4); /* sorted in place */
	CHECK(ps_median_of(one, 1) == 7);
	CHECK(isnan(ps_median_of(none, 0)));
}

TEST(stddev_is_the_sample_standard_deviation)
{
	double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
	struct ps_stats st;

	ps_stats_of(v, 8, &st);
	CHECK(fabs(st.stddev - sqrt(32.0 / 7)) < 1e-12); /* squared deviations sum to 32 */
	CHECK(ps_stddev_of(32, 8) == st.stddev);
	CHECK(ps_stddev_of(0, 1) == 0);
	CHECK(isnan(ps_stddev_of(0, 0)));
}
