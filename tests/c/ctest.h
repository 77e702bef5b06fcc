/* tests/c/ctest.h - a small unit-test harness for the core (no Lua).
 *
 *   TEST(name) { CHECK(x == 1); CHECK_EQ_INT(a, b); CHECK_STR(s, "x"); SKIP("no PMU"); }
 *
 * Each TEST registers itself; tests/c/main.c runs them all and prints
 * "c: N passed, N failed, N skipped". A test that failed a CHECK counts failed, even when it
 * skipped afterwards (ctest_verdict).
 */
#ifndef CTEST_H
#define CTEST_H

#include <stdio.h>
#include <string.h>

struct ctest {
	const char *name;
	const char *file;
	void (*fn)(struct ctest *t);
	int failed;
	char skipped[256];
	struct ctest *next;
};

void ctest_register(struct ctest *t);

enum ctest_verdict { CTEST_PASSED, CTEST_FAILED, CTEST_SKIPPED };

/* What test @t, once run, counts as: failed if any CHECK failed (skipped or not), else
   skipped if it skipped, else passed. */
enum ctest_verdict ctest_verdict(const struct ctest *t);

#define TEST(tname)                                                        \
	static void tname##_fn(struct ctest *ctest_self);                   \
	static struct ctest tname##_t = {#tname, __FILE__, tname##_fn, 0, "", 0}; \
	__attribute__((constructor)) static void tname##_reg(void)         \
	{                                                                  \
		ctest_register(&tname##_t);                                \
	}                                                                  \
	static void tname##_fn(struct ctest *ctest_self)

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__,   \
				__LINE__, #cond);                                  \
			ctest_self->failed++;                                      \
		}                                                                  \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                          \
	do {                                                                        \
		long long ca_ = (long long)(a), cb_ = (long long)(b);               \
		if (ca_ != cb_) {                                                   \
			fprintf(stderr, "  %s:%d: %s == %s failed: %lld != %lld\n", \
				__FILE__, __LINE__, #a, #b, ca_, cb_);              \
			ctest_self->failed++;                                       \
		}                                                                   \
	} while (0)

#define CHECK_STR(a, b)                                                               \
	do {                                                                          \
		const char *sa_ = (a), *sb_ = (b);                                    \
		if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                          \
			fprintf(stderr, "  %s:%d: %s == %s failed:\n    got  '%s'\n    want '%s'\n", \
				__FILE__, __LINE__, #a, #b, sa_ ? sa_ : "(null)",     \
				sb_ ? sb_ : "(null)");                                \
			ctest_self->failed++;                                         \
		}                                                                     \
	} while (0)

/* Mark the running test skipped with a reason and leave it. */
#define SKIP(...)                                                                   \
	do {                                                                        \
		snprintf(ctest_self->skipped, sizeof ctest_self->skipped, __VA_ARGS__); \
		return;                                                             \
	} while (0)

#endif
