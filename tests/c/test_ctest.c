/* tests/c/test_ctest.c - the harness counts what it runs: a test that failed a CHECK and then
 * skipped counts failed (it was once reported skipped, which hid the failure). The inner tests
 * below are run by hand, not registered: their failures are theirs, not this file's. */
#include "ctest.h"

static void check_then_skip(struct ctest *ctest_self)
{
	CHECK(!"this CHECK fails on purpose (harness self-test, then SKIP)");
	SKIP("no PMU");
}

static void skip_only(struct ctest *ctest_self)
{
	SKIP("no PMU");
}

static void checks_pass(struct ctest *ctest_self)
{
	CHECK(1 + 1 == 2);
	CHECK_EQ_INT(2 * 3, 6);
}

/* Run @fn as the runner runs a test, and say what it counts as. */
static enum ctest_verdict run_inner(void (*fn)(struct ctest *), struct ctest *t)
{
	*t = (struct ctest){"inner", __FILE__, fn, 0, "", 0};
	t->fn(t);
	return ctest_verdict(t);
}

TEST(harness_check_failed_then_skipped_counts_failed)
{
	struct ctest t;

	CHECK_EQ_INT(run_inner(check_then_skip, &t), CTEST_FAILED);
	CHECK_EQ_INT(t.failed, 1);
	CHECK_STR(t.skipped, "no PMU");
}

TEST(harness_skip_alone_counts_skipped)
{
	struct ctest t;

	CHECK_EQ_INT(run_inner(skip_only, &t), CTEST_SKIPPED);
	CHECK_EQ_INT(t.failed, 0);
}

TEST(harness_checks_passed_counts_passed)
{
	struct ctest t;

	CHECK_EQ_INT(run_inner(checks_pass, &t), CTEST_PASSED);
}
