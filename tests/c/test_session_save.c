/* tests/c/test_session_save.c - ps_session_save(): the session's own header, its records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctest.h"
#include "psnap.h"
#include "session.h"

static char *walk_argv[] = {"examples/recursive", "2", "3", NULL};

/* Two groups (task-clock | page-faults, context-switches), a region with arguments, one never hit. */
static int start(struct ps_session **s, struct ps_error *err)
{
	const char *names[3] = {"task-clock", "page-faults", "context-switches"};
	struct ps_event ev[3];
	int sizes[2] = {1, 2};

	for (int k = 0; k < 3; k++)
		if (ps_event_resolve(names[k], &ev[k], err))
			return -1;
	if (ps_session_spawn(s, walk_argv, ev, 3, err))
		return -1;
	if (ps_session_set_groups(*s, sizes, 2, err) || ps_session_region_func(*s, "walk", 0, err) != 0 ||
	    ps_session_region_args(*s, 0, 2, err) ||
	    ps_session_region_func(*s, "main", PS_REGION_NO_INLINE, err) != 1) {
		ps_session_free(*s);
		return -1;
	}
	return 0;
}

static void tmp_path(char *path)
{
	int fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
}

TEST(session_save_header_and_records)
{
	struct ps_session *s;
	struct ps_error err;
	struct ps_psnap_reader *r;
	struct ps_psnap_meta meta[2] = {{"command", "examples/recursive 2 3"}, {"k", "v"}};
	char path[] = "/tmp/perfsh-save-XXXXXX";

	if (access("examples/recursive", X_OK))
		SKIP("examples/recursive is not built (make)");
	tmp_path(path);
	CHECK(start(&s, &err) == 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT(ps_session_nrecords(s), 3); /* walk twice (outermost calls), main once */
	CHECK(ps_session_save(s, path, meta, 2, &err) == 0);
	CHECK(ps_psnap_open(path, &r, &err) == 0);
	CHECK(ps_psnap_complete(r));
	CHECK_EQ_INT(ps_psnap_count(r), 3);
	CHECK_EQ_INT(ps_psnap_nvals(r), ps_session_nvals(s)); /* 3 events and the second group's 2 times */
	CHECK_EQ_INT(ps_psnap_nargs(r), ps_session_record(s, 0)->nargs);
	CHECK_EQ_INT(ps_psnap_recsize(r), ps_session_recsize(s));
	CHECK_EQ_INT(ps_psnap_nevents(r), 3);
	CHECK_STR(ps_psnap_event(r, 2), "context-switches");
	CHECK_STR(ps_psnap_region(r, 0), "walk");
	CHECK_STR(ps_psnap_region(r, 1), "main");
	CHECK_STR(ps_psnap_meta_key(r, 0), "groups");
	CHECK_STR(ps_psnap_meta_get(r, "groups"), "1,2");
	CHECK_STR(ps_psnap_meta_get(r, "command"), "examples/recursive 2 3");
	CHECK_STR(ps_psnap_meta_get(r, "k"), "v");
	/* what each region is, said by the session (ps_psnap_region_pairs) */
	CHECK_STR(ps_psnap_meta_get(r, "kind.0"), "func");
	CHECK_EQ_INT(ps_session_entries(s, 0), 8); /* walk's calls, nested ones too */
	CHECK_STR(ps_psnap_meta_get(r, "entries.0"), "8");
	CHECK_STR(ps_psnap_meta_get(r, "kind.1"), "func");
	CHECK_STR(ps_psnap_meta_get(r, "entries.1"), "1");
	CHECK(ps_psnap_meta_get(r, "sampled.0") == NULL);
	for (uint64_t i = 0; i < 3; i++)
		CHECK(!memcmp(ps_psnap_record(r, i), ps_session_record(s, i), ps_session_recsize(s)));
	ps_psnap_reader_close(r);
	ps_session_free(s);
	unlink(path);
}

/* Nothing recorded yet: the header still says the session's argument words (none guessed). */
TEST(session_save_before_any_hit)
{
	struct ps_session *s;
	struct ps_error err;
	struct ps_psnap_reader *r;
	char path[] = "/tmp/perfsh-save-XXXXXX";

	if (access("examples/recursive", X_OK))
		SKIP("examples/recursive is not built (make)");
	tmp_path(path);
	CHECK(start(&s, &err) == 0);
	CHECK(ps_session_save(s, path, NULL, 0, &err) == 0);
	CHECK(ps_psnap_open(path, &r, &err) == 0);
	CHECK_EQ_INT(ps_psnap_count(r), 0);
	CHECK_EQ_INT(ps_psnap_nvals(r), 5);
	CHECK_EQ_INT(ps_psnap_nargs(r), PS_MAX_ARGS);
	CHECK_EQ_INT(ps_psnap_recsize(r), ps_session_recsize(s));
	CHECK_STR(ps_psnap_meta_get(r, "groups"), "1,2");
	ps_psnap_reader_close(r);
	ps_session_free(s);
	unlink(path);
}

TEST(session_save_refuses_a_spilling_session)
{
	struct ps_session *s;
	struct ps_error err;
	char path[] = "/tmp/perfsh-save-XXXXXX";

	if (access("examples/recursive", X_OK))
		SKIP("examples/recursive is not built (make)");
	tmp_path(path);
	CHECK(start(&s, &err) == 0);
	CHECK(ps_session_spill(s, path, &err) == 0);
	CHECK(ps_session_save(s, "/tmp/perfsh-save-never", NULL, 0, &err) == -1);
	CHECK(strstr(err.msg, "in the spill file") != NULL);
	CHECK(access("/tmp/perfsh-save-never", F_OK) != 0);
	ps_session_free(s);
	unlink(path);
}
