/* tests/c/test_catchers.c - what every catcher owes the session, tested through the session's
 * interface alone (core/session/session.h), one row per catcher: a new catcher gets a row and
 * inherits the tests. Each row names a program and a region of it that runs REPS hits, for
 * long enough (0.1 s and more) that a run can pause before the program ends.
 *   - the run to the end: every hit recorded once, in order, on the program's thread, depth 0,
 *     times and counters that never run backwards, nothing lost or dropped;
 *   - max_records: a run pauses with at least that many records, the program held, and the next
 *     run ends it with every hit recorded. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctest.h"
#include "fixtures.h"
#include "session.h"

#define REPS 200

static const struct row {
	enum ps_catcher how;
	const char *name;
	char *argv[6];
	const char *func, *marker; /* the region: a function, or a marker */
} rows[] = {
    {PS_CATCH_PTRACE, "ptrace", {"examples/loop", "1000000", "200", NULL}, "spin", NULL},
    {PS_CATCH_UPROBE, "uprobe", {"examples/loop", "1000000", "200", NULL}, "spin", NULL},
    /* every 10th rep sleeps 30 ms in its region: the run lasts longer than a drain of the rings */
    {PS_CATCH_MARKER, "marker", {"examples/marker_loop", "100000", "200", "1", "10", NULL}, NULL, "loop"},
};

/* The session of row @r, its region armed; NULL (the reason printed, or a SKIP) when not. */
static struct ps_session *start(struct ctest *ctest_self, const struct row *r, int *skip)
{
	static const char *const io[3] = {NULL, "/dev/null", NULL};
	struct ps_session *s = NULL;
	struct ps_event ev;
	struct ps_error err;
	char why[256];

	*skip = 0;
	if (access(r->argv[0], X_OK)) {
		printf("  %s: %s is not built (make): skipped\n", r->name, r->argv[0]);
		*skip = 1;
		return NULL;
	}
	if (r->how == PS_CATCH_UPROBE && fixtures_uprobe_skip(r->argv[0], why, sizeof why)) {
		printf("  %s: %s: skipped\n", r->name, why);
		*skip = 1;
		return NULL;
	}
	CHECK(ps_event_resolve("task-clock", &ev, &err) == 0);
	if (ps_session_spawn_io(&s, r->argv, &ev, 1, r->how, io, &err)) {
		printf("  %s: %s\n", r->name, err.msg);
		CHECK(!"spawn");
		return NULL;
	}
	CHECK_EQ_INT(ps_session_catcher(s), r->how);
	if ((r->func ? ps_session_region_func(s, r->func, 0, &err) : ps_session_region_marker(s, r->marker, &err))) {
		printf("  %s: %s\n", r->name, err.msg);
		CHECK(!"region");
		ps_session_free(s);
		return NULL;
	}
	return s;
}

/* Every record of @s is one hit of region 0 of the program's thread, in order. */
static void check_records(struct ctest *ctest_self, struct ps_session *s, const char *name)
{
	uint64_t n = ps_session_nrecords(s), prev_end = 0;

	printf("  %s: %llu records\n", name, (unsigned long long)n);
	CHECK_EQ_INT(n, REPS);
	for (uint64_t i = 0; i < n; i++) {
		const struct ps_snap *r = ps_session_record(s, i);

		CHECK_EQ_INT(r->region, 0);
		CHECK_EQ_INT(r->tid, ps_session_pid(s));
		CHECK_EQ_INT(r->hit, i);
		CHECK_EQ_INT(r->depth, 0);
		CHECK(r->t_end >= r->t_start);
		CHECK(r->t_start >= prev_end);
		CHECK(ps_snap_end((struct ps_snap *)r)[0] >= ps_snap_start((struct ps_snap *)r)[0]);
		prev_end = r->t_end;
	}
	CHECK_EQ_INT(ps_session_lost(s), 0);
	CHECK_EQ_INT(ps_session_dropped(s), 0);
}

TEST(catchers_record_every_hit_once_in_order)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_error err;
		struct ps_session *s;
		int skip;

		if (!(s = start(ctest_self, &rows[i], &skip)))
			continue;
		CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
		check_records(ctest_self, s, rows[i].name);
		ps_session_free(s);
	}
}

TEST(catchers_pause_after_max_records_and_go_on)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_error err;
		struct ps_session *s;
		int skip, rc;
		uint64_t first;

		if (!(s = start(ctest_self, &rows[i], &skip)))
			continue;
		rc = ps_session_run(s, 50, 0, &err);
		first = ps_session_nrecords(s);
		printf("  %s: paused at %llu records\n", rows[i].name, (unsigned long long)first);
		CHECK_EQ_INT(rc, 0);
		CHECK(first >= 50 && first < REPS); /* at least the records asked for, the program held */
		CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
		check_records(ctest_self, s, rows[i].name);
		ps_session_free(s);
	}
}
