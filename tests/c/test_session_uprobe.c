/* tests/c/test_session_uprobe.c - a session caught by uprobes (core/catch/uprobe/uprobe_catcher.c): the
 * same records as with ptrace for function regions, a few stops per thread and none per hit,
 * and a one-line refusal for what needs the ptrace catcher. Skipped with the reason where the
 * uprobe PMU cannot be opened (not root).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctest.h"
#include "fixtures.h"
#include "session.h"
#include "uprobe.h"

/* A session on @argv by uprobes, its stdout to /dev/null, task-clock counted; NULL on failure. */
static struct ps_session *spawn_uprobe(char *const argv[])
{
	static const char *const io[3] = {NULL, "/dev/null", NULL};
	struct ps_session *s = NULL;
	struct ps_event ev;
	struct ps_error err;

	if (ps_event_resolve("task-clock", &ev, &err))
		return NULL;
	if (ps_session_spawn_io(&s, argv, &ev, 1, PS_CATCH_UPROBE, io, &err))
		fprintf(stderr, "  %s\n", err.msg);
	return s;
}

TEST(session_uprobe_recursion_outermost_with_args)
{
	char *argv[] = {"examples/recursive", "5", "10", NULL};
	struct ps_session *s;
	struct ps_error err;
	int id;

	NEEDS_UPROBES(argv[0]);
	if (!(s = spawn_uprobe(argv))) {
		CHECK(!"spawn");
		return;
	}
	CHECK_EQ_INT(ps_session_catcher(s), PS_CATCH_UPROBE);
	CHECK((id = ps_session_region_func(s, "walk", 0, &err)) == 0);
	CHECK(ps_session_region_args(s, id, 1, &err) == 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT(ps_session_nrecords(s), 5);
	CHECK_EQ_INT(ps_session_region(s, id)->entries, 55);
	for (uint64_t i = 0; i < ps_session_nrecords(s); i++) {
		const struct ps_snap *r = ps_session_record(s, i);
		CHECK_EQ_INT(r->tid, ps_session_pid(s));
		CHECK_EQ_INT(r->depth, 0);
		CHECK_EQ_INT(r->nargs, 6);
		CHECK_EQ_INT(((const uint64_t *)(r + 1))[0], 10); /* walk(10) */
		CHECK(r->t_end >= r->t_start);
		CHECK(ps_snap_end((struct ps_snap *)r)[0] >= ps_snap_start((struct ps_snap *)r)[0]);
	}
	CHECK_EQ_INT(ps_session_lost(s), 0);
	CHECK(ps_session_stops(s) <= 2); /* the exit: no stop per hit */
	ps_session_free(s);
}

TEST(session_uprobe_threads_every_level)
{
	char *argv[] = {"examples/threads", "300", "10", NULL};
	struct ps_session *s;
	struct ps_error err;
	pid_t tid[2] = {0, 0};
	int n[2] = {0, 0};

	NEEDS_UPROBES(argv[0]);
	if (!(s = spawn_uprobe(argv))) {
		CHECK(!"spawn");
		return;
	}
	CHECK(ps_session_region_func(s, "work", PS_REGION_EVERY_LEVEL, &err) == 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT(ps_session_nrecords(s), 600);
	for (uint64_t i = 0; i < ps_session_nrecords(s); i++) {
		const struct ps_snap *r = ps_session_record(s, i);
		int k = tid[0] == 0 || tid[0] == (pid_t)r->tid ? 0 : 1;
		tid[k] = (pid_t)r->tid;
		n[k]++;
		CHECK_EQ_INT(r->flags, 0);
	}
	CHECK(tid[0] != tid[1] && tid[0] != ps_session_pid(s) && tid[1] != ps_session_pid(s));
	CHECK_EQ_INT(n[0], 300);
	CHECK_EQ_INT(n[1], 300);
	CHECK_EQ_INT(ps_session_lost(s), 0);
	CHECK(ps_session_stops(s) <= 7); /* 3 per new thread, 1 for the main thread's exit */
	ps_session_free(s);
}

/* A line range is caught by plain uprobes. */
TEST(session_uprobe_line_range)
{
	char *argv[] = {"examples/sum", NULL};
	struct ps_session *s;
	struct ps_error err;

	NEEDS_UPROBES(argv[0]);
	if (!(s = spawn_uprobe(argv))) {
		CHECK(!"spawn");
		return;
	}
	CHECK_EQ_INT(ps_session_region_range(s, "sum.c:40-sum.c:43", 0, &err), 0);
	CHECK_EQ_INT(ps_session_region_func(s, "sum", 0, &err), 1);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT((int)ps_session_region(s, 0)->hits, 1);
	CHECK_EQ_INT((int)ps_session_region(s, 1)->hits, 1);
	ps_session_free(s);
}

TEST(session_uprobe_small_ring_loses_no_pairing)
{
	char *argv[] = {"examples/threads", "1000", "10", NULL};
	struct ps_session *s;
	struct ps_error err;
	uint64_t complete = 0;

	NEEDS_UPROBES(argv[0]);
	if (!(s = spawn_uprobe(argv))) {
		CHECK(!"spawn");
		return;
	}
	CHECK_EQ_INT(ps_session_uprobe_ring(s, 3, &err), -1);
	CHECK_STR(err.msg, "uprobe ring of 3 pages; give a power of two from 1 to 65536");
	CHECK(ps_session_uprobe_ring(s, 1, &err) == 0);
	CHECK(ps_session_region_func(s, "work", PS_REGION_EVERY_LEVEL, &err) == 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	for (uint64_t i = 0; i < ps_session_nrecords(s); i++) {
		const struct ps_snap *r = ps_session_record(s, i);
		complete += r->flags == 0;
		CHECK(r->t_end >= r->t_start);
	}
	/* each complete record took an entry and a return of the 4000, none of them lost */
	CHECK(2 * complete + ps_session_lost(s) <= 4000);
	CHECK(ps_session_lost(s) > 0 || complete == 2000);
	CHECK_EQ_INT(ps_session_uprobe_ring(s, 2, &err), -1);
	CHECK_STR(err.msg, "set the uprobe ring size before the first run");
	ps_session_free(s);
}

TEST(session_uprobe_exec_cuts_open_calls_short)
{
	char *argv[] = {"examples/reexec", NULL};
	struct ps_session *s;
	struct ps_error err;
	int complete = 0, cut = 0;

	NEEDS_UPROBES(argv[0]);
	if (!(s = spawn_uprobe(argv))) {
		CHECK(!"spawn");
		return;
	}
	CHECK(ps_session_region_func(s, "main", 0, &err) == 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	/* the first image's main() is open at the exec: it ends there, as with ptrace */
	CHECK_EQ_INT(ps_session_nrecords(s), 2);
	for (uint64_t i = 0; i < ps_session_nrecords(s); i++) {
		const struct ps_snap *r = ps_session_record(s, i);
		complete += r->flags == 0;
		cut += r->flags != 0;
	}
	CHECK_EQ_INT(complete, 1);
	CHECK_EQ_INT(cut, 1);
	ps_session_free(s);
}

/* Every-Nth sampling decimates the records per call: each of the 55 entries of walk (5 outer
   calls of walk(10), every level measured) draws on its thread, every 2nd is recorded, and each
   recorded entry ends at its own return, not at that of an unsampled call nested in it or
   around it. Entry j (1-based) is level (j - 1) % 11 of its outer call: walk(10 - level). */
TEST(session_uprobe_sampled_returns_follow_their_entries)
{
	char *argv[] = {"examples/recursive", "5", "10", NULL};
	struct ps_sample every = {.every = 2};
	struct ps_session *s;
	struct ps_error err;
	int want[11] = {0}, got[11] = {0};

	NEEDS_UPROBES(argv[0]);
	if (!(s = spawn_uprobe(argv))) {
		CHECK(!"spawn");
		return;
	}
	CHECK_EQ_INT(ps_session_region_func(s, "walk", PS_REGION_EVERY_LEVEL, &err), 0);
	CHECK_EQ_INT(ps_session_region_args(s, 0, 1, &err), 0);
	CHECK_EQ_INT(ps_session_region_sample(s, 0, &every, &err), 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK_EQ_INT(ps_session_entries(s, 0), 55);
	CHECK_EQ_INT(ps_session_nrecords(s), 27);
	for (int j = 2; j <= 55; j += 2)
		want[10 - (j - 1) % 11]++;
	for (uint64_t i = 0; i < ps_session_nrecords(s); i++) {
		const struct ps_snap *r = ps_session_record(s, i), *in = i ? ps_session_record(s, i - 1) : NULL;
		uint64_t n = ((const uint64_t *)(r + 1))[0], n_in = in ? ((const uint64_t *)(in + 1))[0] : 0;
		CHECK(r->flags & PS_SNAP_SAMPLED);
		CHECK_EQ_INT(r->flags & ~(unsigned)(PS_SNAP_SAMPLED | PS_SNAP_NESTED), 0);
		if (n <= 10)
			got[n]++;
		/* records come out innermost first: a larger n after a smaller is an outer call of the
		   same walk(10), which encloses the one before */
		if (in && n > n_in) {
			CHECK(r->t_start <= in->t_start);
			CHECK(in->t_end <= r->t_end);
			CHECK(r->depth < in->depth);
		}
	}
	for (int n = 0; n <= 10; n++)
		CHECK_EQ_INT(got[n], want[n]);
	CHECK_EQ_INT(ps_session_lost(s), 0);
	CHECK(ps_session_stops(s) <= 2); /* the exit: no stop per hit */
	ps_session_free(s);
}

/* Probability sampling: 20,000 calls at p = 0.05 record 1000 +- 4.5 sigma (sigma 30.8), every
   call counted by its uprobe, no stop per hit. */
TEST(session_uprobe_probability_sampling_counts_every_call)
{
	char *argv[] = {"examples/loop", "1", "20000", NULL};
	struct ps_sample p = {.p = 0.05};
	struct ps_session *s;
	struct ps_error err;
	uint64_t n;

	NEEDS_UPROBES(argv[0]);
	if (!(s = spawn_uprobe(argv))) {
		CHECK(!"spawn");
		return;
	}
	CHECK_EQ_INT(ps_session_uprobe_ring(s, 4096, &err), 0); /* every record fits: none lost under load */
	CHECK_EQ_INT(ps_session_region_func(s, "spin", 0, &err), 0);
	CHECK_EQ_INT(ps_session_region_sample(s, 0, &p, &err), 0);
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	n = ps_session_nrecords(s);
	CHECK_EQ_INT(ps_session_entries(s, 0), 20000);
	CHECK(n >= 862 && n <= 1138);
	CHECK_EQ_INT(ps_session_region(s, 0)->counter, PS_COUNT_UPROBE);
	CHECK_EQ_INT(ps_session_lost(s), 0);
	for (uint64_t i = 0; i < n; i++)
		CHECK_EQ_INT(ps_session_record(s, i)->flags, PS_SNAP_SAMPLED);
	CHECK(ps_session_stops(s) <= 2);
	ps_session_free(s);
}
