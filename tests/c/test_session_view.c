/* tests/c/test_session_view.c - a session's records as a view (ps_session_view): the analysis
 * reads them as it reads a .psnap file's. */
#include <stdlib.h>
#include <unistd.h>

#include "ctest.h"
#include "session_view.h"

static int task_clock_session(struct ps_session **s, char **argv)
{
	struct ps_event ev;
	struct ps_error err;

	if (ps_event_resolve("task-clock", &ev, &err))
		return -1;
	return ps_session_spawn(s, argv, &ev, 1, &err);
}

TEST(session_view_holds_the_records_in_memory)
{
	char *argv[] = {"examples/recursive", "2", "3", NULL};
	struct ps_session *s;
	struct ps_error err;
	struct ps_view v;
	struct ps_hit_stats *st;
	size_t nst;

	if (access("examples/recursive", X_OK))
		SKIP("examples/recursive is not built (make)");
	if (task_clock_session(&s, argv)) {
		CHECK(!"the session starts");
		return;
	}
	CHECK_EQ_INT(ps_session_region_func(s, "walk", PS_REGION_EVERY_LEVEL, &err), 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	ps_session_view(s, &v);
	CHECK_EQ_INT(v.n, 8); /* 2 calls, 4 levels each */
	CHECK_EQ_INT(v.nev, 1);
	CHECK_STR(v.names[0], "task-clock");
	CHECK_EQ_INT(v.group[0], 0);
	CHECK_EQ_INT(v.recsize, ps_session_recsize(s));
	for (uint64_t i = 0; i < v.n; i++)
		CHECK(ps_view_rec(&v, i) == ps_session_record(s, i));
	/* the region's statistics over the view: every one of the 8 hits, each one's time */
	CHECK_EQ_INT(ps_view_stats(&v, 0, PS_SPLIT_NONE, &st, &nst), 0);
	CHECK_EQ_INT(nst, 1);
	CHECK_EQ_INT(st[0].hits, 8);
	CHECK_EQ_INT(st[0].time.n, 8);
	CHECK(st[0].time.min > 0);
	free(st);
	ps_session_free(s);
}

TEST(session_view_of_a_spilling_session_holds_none)
{
	char *argv[] = {"examples/loop", "1", "100", NULL};
	char path[] = "/tmp/perfsh-view-XXXXXX";
	struct ps_session *s;
	struct ps_error err;
	struct ps_view v;
	int fd = mkstemp(path);

	if (access("examples/loop", X_OK))
		SKIP("examples/loop is not built (make)");
	CHECK(fd >= 0);
	close(fd);
	if (task_clock_session(&s, argv)) {
		CHECK(!"the session starts");
		unlink(path);
		return;
	}
	CHECK(ps_session_spill(s, path, &err) == 0);
	CHECK_EQ_INT(ps_session_region_func(s, "spin", 0, &err), 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT(ps_session_nrecords(s), 100);
	ps_session_view(s, &v);
	CHECK_EQ_INT(v.n, 0); /* they are in the file */
	CHECK_EQ_INT(v.nev, 1);
	CHECK(ps_session_spill_close(s, &err) == 0);
	ps_session_free(s);
	unlink(path);
}
