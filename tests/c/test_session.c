/* tests/c/test_session.c - regions per hit without Lua: records, recursion, spill, sampling. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctest.h"
#include "machine.h"
#include "psnap.h"
#include "session.h"

static int task_clock(struct ps_event *ev)
{
	struct ps_error err;
	return ps_event_resolve("task-clock", ev, &err);
}

static char *walk_argv[] = {"examples/recursive", "2", "3", NULL};

TEST(session_every_level_records)
{
	struct ps_session *s;
	struct ps_event ev;
	struct ps_error err;
	int depth_count[4] = {0};

	if (access("examples/recursive", X_OK))
		SKIP("examples/recursive is not built (make)");
	CHECK(task_clock(&ev) == 0);
	CHECK(ps_session_spawn(&s, walk_argv, &ev, 1, &err) == 0);
	CHECK_EQ_INT(ps_session_region_func(s, "walk", PS_REGION_EVERY_LEVEL, &err), 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT(ps_session_nrecords(s), 8); /* 2 calls, 4 levels each */
	for (uint64_t i = 0; i < ps_session_nrecords(s); i++) {
		const struct ps_snap *r = ps_session_record(s, i);
		CHECK_EQ_INT(r->region, 0);
		CHECK_EQ_INT(r->tid, ps_session_pid(s));
		CHECK_EQ_INT(r->seq, i);
		CHECK_EQ_INT(r->nvals, 1);
		CHECK(r->t_end >= r->t_start);
		CHECK(r->enabled_end >= r->enabled_start);
		CHECK(ps_snap_end((struct ps_snap *)r)[0] >= ps_snap_start((struct ps_snap *)r)[0]);
		if (r->depth < 4)
			depth_count[r->depth]++;
	}
	for (int d = 0; d < 4; d++)
		CHECK_EQ_INT(depth_count[d], 2);
	int exited, code, signo;
	CHECK(ps_session_status(s, &exited, &code, &signo) == 1);
	CHECK_EQ_INT(code, 0);
	ps_session_free(s);
}

TEST(session_spill_to_file)
{
	struct ps_session *s;
	struct ps_event ev;
	struct ps_error err;
	struct ps_psnap_reader *r;
	char path[] = "/tmp/perfsh-session-XXXXXX";
	int fd = mkstemp(path);
	char *argv[] = {"examples/loop", "1", "9000", NULL};

	if (access("examples/loop", X_OK))
		SKIP("examples/loop is not built (make)");
	CHECK(fd >= 0);
	close(fd);
	CHECK(task_clock(&ev) == 0);
	CHECK(ps_session_spawn(&s, argv, &ev, 1, &err) == 0);
	CHECK(ps_session_spill(s, path, &err) == 0);
	CHECK_EQ_INT(ps_session_region_func(s, "spin", 0, &err), 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT(ps_session_nrecords(s), 9000); /* more than the ring holds */
	CHECK(ps_session_spill_meta(s, "k", "v", &err) == 0);
	CHECK(ps_session_spill_close(s, &err) == 0);
	ps_session_free(s);
	CHECK(ps_psnap_open(path, &r, &err) == 0);
	CHECK_EQ_INT(ps_psnap_count(r), 9000);
	CHECK(ps_psnap_complete(r));
	CHECK_STR(ps_psnap_region(r, 0), "spin");
	CHECK_STR(ps_psnap_meta_get(r, "k"), "v");
	CHECK_STR(ps_psnap_meta_get(r, "groups"), "1");
	for (uint64_t i = 0; i < 9000; i++)
		if (ps_psnap_record(r, i)->seq != i) {
			CHECK(ps_psnap_record(r, i)->seq == i);
			break;
		}
	ps_psnap_reader_close(r);
	unlink(path);
}

/* 700 entries, every 7th recorded: run under PERFSH_SAMPLING as the environment sets it
   (tests/run.sh runs it with each mechanism). 1 if it ran, 0 if the mechanism is unavailable. */
static int sample_700(struct ctest *ctest_self, enum ps_counter *used)
{
	struct ps_session *s;
	struct ps_event ev;
	struct ps_error err;
	struct ps_sample how = {.every = 7};
	char *argv[] = {"examples/loop", "1", "700", NULL};
	enum ps_counter forced;
	int id;

	CHECK(task_clock(&ev) == 0);
	CHECK(ps_session_spawn(&s, argv, &ev, 1, &err) == 0);
	CHECK((id = ps_session_region_func(s, "spin", 0, &err)) == 0);
	if (ps_session_region_sample(s, id, &how, &err)) {
		/* only a mechanism forced by PERFSH_SAMPLING may be missing */
		CHECK(ps_machine_forced(&forced, NULL) == 1);
		snprintf(ctest_self->skipped, sizeof ctest_self->skipped, "%.200s", err.msg);
		ps_session_free(s);
		return 0;
	}
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT(ps_session_entries(s, id), 700);
	CHECK_EQ_INT(ps_session_nrecords(s), 100);
	*used = ps_session_region(s, id)->counter;
	/* two stops per record, and one per entry where int3 counts them */
	CHECK(ps_session_stops(s) <= 2 * 100 + 10 + (*used == PS_COUNT_INT3 ? 700 : 0));
	ps_session_free(s);
	return 1;
}

TEST(session_sampling_counts_every_entry)
{
	enum ps_counter used, forced;

	if (access("examples/loop", X_OK))
		SKIP("examples/loop is not built (make)");
	if (!sample_700(ctest_self, &used))
		return;
	if (ps_machine_forced(&forced, NULL) == 1)
		CHECK_EQ_INT(used, forced);
}

/* Each mechanism forced in turn, whatever the environment says. */
TEST(session_sampling_each_counter)
{
	const char *was = getenv("PERFSH_SAMPLING");
	char *save = was ? strdup(was) : NULL;
	static const char *names[] = {"breakpoint", "uprobe", "int3"};
	char skipped[256] = "";

	if (access("examples/loop", X_OK))
		SKIP("examples/loop is not built (make)");
	for (int i = 0; i < 3; i++) {
		enum ps_counter used = PS_COUNT_INT3;
		setenv("PERFSH_SAMPLING", names[i], 1);
		if (sample_700(ctest_self, &used))
			CHECK_STR(ps_counter_name(used), names[i]);
		else
			snprintf(skipped, sizeof skipped, "%s", ctest_self->skipped);
		ctest_self->skipped[0] = '\0';
	}
	if (save)
		setenv("PERFSH_SAMPLING", save, 1);
	else
		unsetenv("PERFSH_SAMPLING");
	free(save);
	if (skipped[0])
		fprintf(stderr, "  not tested here: %s\n", skipped);
}

TEST(session_bad_names)
{
	struct ps_session *s;
	struct ps_error err;
	char *missing[] = {"examples/no-such-program", NULL};

	CHECK(ps_session_spawn(&s, missing, NULL, 0, &err) == -1);
	CHECK_STR(err.msg, "cannot run 'examples/no-such-program': no such program; give the path of a program");
	if (access("examples/recursive", X_OK))
		SKIP("examples/recursive is not built (make)");
	CHECK(ps_session_spawn(&s, walk_argv, NULL, 0, &err) == 0);
	CHECK(ps_session_region_func(s, "wallk", 0, &err) == -1);
	CHECK(strstr(err.msg, "no function 'wallk' in ") == err.msg);
	CHECK(strstr(err.msg, "did you mean 'walk'") != NULL);
	CHECK(ps_session_region_range(s, "recursive.c:99999-recursive.c:100000", 0, &err) == -1);
	ps_session_free(s); /* kills the spawned program */
}
