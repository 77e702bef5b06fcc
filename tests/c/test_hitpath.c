/* tests/c/test_hitpath.c - the hit path fed synthetic hits: pairing, nesting, recursion,
 * thread exit, exec, arguments, spill; every record checked field by field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctest.h"
#include "hitpath.h"

enum { FUNC, EVERY, RANGE, NREG };

struct fixture {
	struct ps_region_info reg[NREG];
	int nreg;
	struct ps_hitpath *hp;
	struct ps_reading r;
	uint64_t args[PS_MAX_ARGS];
	uint64_t sp; /* the stack pointer of the hits hit() makes */
};

static struct fixture *fixture_new(unsigned nargs, const char *spill)
{
	static const char *names[NREG] = {"func", "every", "file.c:3-file.c:9"};
	struct fixture *f = calloc(1, sizeof *f);
	struct ps_error err;
	struct ps_psnap_info info = {0};
	const char *events[] = {"task-clock", "page-faults"};

	for (int i = 0; i < NREG; i++) {
		f->reg[i].id = i;
		f->reg[i].kind = i == RANGE ? PS_REGION_RANGE : PS_REGION_FUNC;
		f->reg[i].flags = i == EVERY ? PS_REGION_EVERY_LEVEL : 0;
		snprintf(f->reg[i].name, sizeof f->reg[i].name, "%s", names[i]);
	}
	f->nreg = NREG;
	f->hp = ps_hitpath_new(f->reg, &f->nreg, &err);
	info.nevents = 2;
	info.events = events;
	if (!f->hp || ps_hitpath_record(f->hp, 2, nargs, spill, &info, &err)) {
		fprintf(stderr, "  hitpath: %s\n", err.msg);
		ps_hitpath_free(f->hp);
		free(f);
		return NULL;
	}
	return f;
}

static void fixture_free(struct fixture *f)
{
	if (f)
		ps_hitpath_free(f->hp);
	free(f);
}

/* A hit at time @t whose counters read t*10 and t*100 (enabled t, running t-1). */
static int hit(struct fixture *f, pid_t tid, int region, enum ps_hit_kind kind, int handle, uint64_t t)
{
	struct ps_hit h = {
	    .tid = tid, .region = region, .kind = kind, .handle = handle, .t = t, .cpu = (int)t % 4, .sp = f->sp};

	f->r.n = 2;
	f->r.time_enabled = t;
	f->r.time_running = t - 1;
	f->r.val[0] = t * 10;
	f->r.val[1] = t * 100;
	for (int i = 0; i < PS_MAX_ARGS; i++)
		f->args[i] = t + (uint64_t)i;
	h.r = &f->r;
	h.args = kind == PS_HIT_ENTRY ? f->args : NULL;
	if (kind == PS_HIT_RETURN && handle < 0) /* tests: -2 - handle means unwound */
		h.handle = -2 - handle, h.flags = PS_SNAP_UNWOUND;
	return ps_hitpath_hit(f->hp, &h);
}

/* One record as the expected rows below spell it. */
struct want {
	int region, tid;
	uint64_t hit, t_start, t_end;
	int cpu_end;
	unsigned flags, depth;
};

static void check_records(struct ctest *ctest_self, struct fixture *f, const struct want *w, int n)
{
	struct ps_error err;

	CHECK(ps_hitpath_drain(f->hp, &err) == 0);
	CHECK_EQ_INT(ps_hitpath_nrecords(f->hp), n);
	for (int i = 0; i < n && i < (int)ps_hitpath_nrecords(f->hp); i++) {
		struct ps_snap *r = (struct ps_snap *)ps_hitpath_record_at(f->hp, (uint64_t)i);
		CHECK_EQ_INT(r->region, w[i].region);
		CHECK_EQ_INT(r->tid, w[i].tid);
		CHECK_EQ_INT(r->seq, i);
		CHECK_EQ_INT(r->hit, w[i].hit);
		CHECK_EQ_INT(r->t_start, w[i].t_start);
		CHECK_EQ_INT(r->t_end, w[i].t_end);
		CHECK_EQ_INT(r->enabled_start, w[i].t_start);
		CHECK_EQ_INT(r->running_start, w[i].t_start - 1);
		CHECK_EQ_INT(r->enabled_end, w[i].t_end);
		CHECK_EQ_INT(r->running_end, w[i].t_end - 1);
		CHECK_EQ_INT(r->cpu_start, (int)w[i].t_start % 4);
		CHECK_EQ_INT(r->cpu_end, w[i].cpu_end);
		CHECK_EQ_INT(r->flags, w[i].flags);
		CHECK_EQ_INT(r->depth, w[i].depth);
		CHECK_EQ_INT(r->nvals, 2);
		CHECK_EQ_INT(ps_snap_start(r)[0], w[i].t_start * 10);
		CHECK_EQ_INT(ps_snap_start(r)[1], w[i].t_start * 100);
		CHECK_EQ_INT(ps_snap_end(r)[0], w[i].t_end * 10);
		CHECK_EQ_INT(ps_snap_end(r)[1], w[i].t_end * 100);
	}
}

TEST(hitpath_nesting_records_the_outermost)
{
	struct fixture *f = fixture_new(0, NULL);
	int h;

	CHECK(f != NULL);
	if (!f)
		return;
	h = hit(f, 7, FUNC, PS_HIT_ENTRY, 0, 10);
	CHECK_EQ_INT(h, 0);
	CHECK_EQ_INT(hit(f, 7, FUNC, PS_HIT_ENTRY, 0, 11), -1); /* nested: not a measurement */
	CHECK_EQ_INT(ps_hitpath_open_calls(f->hp, FUNC), 1);
	CHECK_EQ_INT(hit(f, 7, RANGE, PS_HIT_START, 0, 12), 0);
	CHECK_EQ_INT(hit(f, 7, RANGE, PS_HIT_START, 0, 13), 0); /* open already: ignored */
	CHECK_EQ_INT(hit(f, 8, FUNC, PS_HIT_ENTRY, 0, 14), 0);	/* another thread, its own slots */
	CHECK_EQ_INT(hit(f, 7, RANGE, PS_HIT_END, 0, 15), 0);
	CHECK_EQ_INT(hit(f, 7, FUNC, PS_HIT_RETURN, h, 16), 0);
	CHECK_EQ_INT(hit(f, 8, FUNC, PS_HIT_RETURN, 0, 17), 0);
	CHECK_EQ_INT(hit(f, 7, FUNC, PS_HIT_RETURN, h, 18), 0); /* handle spent: nothing */
	CHECK_EQ_INT(ps_hitpath_open_calls(f->hp, FUNC), 0);
	static const struct want w[] = {
	    {RANGE, 7, 0, 12, 15, 15 % 4, 0, 0},
	    {FUNC, 7, 0, 10, 16, 16 % 4, 0, 0},
	    {FUNC, 8, 1, 14, 17, 17 % 4, 0, 0},
	};
	check_records(ctest_self, f, w, 3);
	CHECK_EQ_INT(f->reg[FUNC].hits, 2);
	CHECK_EQ_INT(f->reg[RANGE].hits, 1);
	CHECK_EQ_INT(ps_hitpath_dropped(f->hp), 0);
	fixture_free(f);
}

TEST(hitpath_recursion_every_level)
{
	struct fixture *f = fixture_new(0, NULL);
	int h[3];

	CHECK(f != NULL);
	if (!f)
		return;
	for (int i = 0; i < 3; i++)
		h[i] = hit(f, 5, EVERY, PS_HIT_ENTRY, 0, 20 + (uint64_t)i);
	CHECK(h[0] >= 0 && h[1] >= 0 && h[2] >= 0 && h[0] != h[1] && h[1] != h[2]);
	CHECK_EQ_INT(ps_hitpath_open_calls(f->hp, EVERY), 3);
	hit(f, 5, EVERY, PS_HIT_RETURN, h[2], 30);
	hit(f, 5, EVERY, PS_HIT_RETURN, -2 - h[1], 31); /* unwound */
	h[1] = hit(f, 5, EVERY, PS_HIT_ENTRY, 0, 32);	/* level 1 again */
	hit(f, 5, EVERY, PS_HIT_RETURN, h[1], 33);
	hit(f, 5, EVERY, PS_HIT_RETURN, h[0], 34);
	static const struct want w[] = {
	    {EVERY, 5, 0, 22, 30, 30 % 4, PS_SNAP_NESTED, 2},
	    {EVERY, 5, 1, 21, 31, 31 % 4, PS_SNAP_NESTED | PS_SNAP_UNWOUND, 1},
	    {EVERY, 5, 2, 32, 33, 33 % 4, PS_SNAP_NESTED, 1},
	    {EVERY, 5, 3, 20, 34, 34 % 4, 0, 0},
	};
	check_records(ctest_self, f, w, 4);
	CHECK_EQ_INT(f->reg[EVERY].incomplete, 1);
	CHECK_EQ_INT(ps_hitpath_open_calls(f->hp, EVERY), 0);
	fixture_free(f);
}

TEST(hitpath_thread_exit_cuts_short)
{
	struct fixture *f = fixture_new(0, NULL);
	struct ps_reading end = {.n = 2, .time_enabled = 50, .time_running = 49, .val = {500, 5000}};

	CHECK(f != NULL);
	if (!f)
		return;
	hit(f, 9, EVERY, PS_HIT_ENTRY, 0, 40);
	hit(f, 9, RANGE, PS_HIT_START, 0, 41);
	hit(f, 9, EVERY, PS_HIT_ENTRY, 0, 42);
	hit(f, 3, RANGE, PS_HIT_START, 0, 43); /* another thread: stays open */
	ps_hitpath_thread_exit(f->hp, 9, &end, 50);
	ps_hitpath_thread_exit(f->hp, 4, &end, 50); /* never seen: nothing */
	static const struct want w[] = {
	    {RANGE, 9, 0, 41, 50, -1, PS_SNAP_EXITED, 0},
	    {EVERY, 9, 0, 40, 50, -1, PS_SNAP_EXITED, 0},
	    {EVERY, 9, 1, 42, 50, -1, PS_SNAP_EXITED | PS_SNAP_NESTED, 1},
	};
	check_records(ctest_self, f, w, 3);
	CHECK_EQ_INT(f->reg[RANGE].incomplete, 1);
	CHECK_EQ_INT(f->reg[EVERY].incomplete, 2);
	CHECK_EQ_INT(ps_hitpath_open_calls(f->hp, EVERY), 0);
	CHECK_EQ_INT(ps_hitpath_open_calls(f->hp, RANGE), 1);
	fixture_free(f);
}

TEST(hitpath_ends_without_a_start)
{
	struct fixture *f = fixture_new(0, NULL);
	struct ps_hit probe = {.tid = 2, .region = RANGE, .kind = PS_HIT_END};

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(ps_hitpath_measures(f->hp, &probe), 0);
	CHECK_EQ_INT(hit(f, 2, RANGE, PS_HIT_END, 0, 60), 0);
	CHECK_EQ_INT(hit(f, 2, FUNC, PS_HIT_RETURN, 3, 61), 0); /* no such handle */
	CHECK_EQ_INT(hit(f, 2, NREG, PS_HIT_ENTRY, 0, 62), -1); /* no such region */
	CHECK_EQ_INT(hit(f, 2, RANGE, PS_HIT_START, 0, 63), 0);
	CHECK_EQ_INT(ps_hitpath_measures(f->hp, &probe), 1);
	ps_hitpath_exec(f->hp); /* open measurements end nowhere */
	CHECK_EQ_INT(ps_hitpath_measures(f->hp, &probe), 0);
	CHECK_EQ_INT(hit(f, 2, RANGE, PS_HIT_END, 0, 64), 0);
	check_records(ctest_self, f, NULL, 0);
	CHECK_EQ_INT(ps_hitpath_dropped(f->hp), 0);
	fixture_free(f);
}

TEST(hitpath_inlined_copy_end_deeper_in_the_stack_ends_nothing)
{
	struct fixture *f = fixture_new(0, NULL);
	struct ps_hit probe = {.tid = 5, .region = RANGE, .kind = PS_HIT_END, .sp = 900};

	CHECK(f != NULL);
	if (!f)
		return;
	f->reg[RANGE].flags = PS_REGION_FRAME; /* an inlined copy: it runs in its caller's frame */
	f->sp = 1000;
	hit(f, 5, RANGE, PS_HIT_START, 0, 70);
	f->sp = 900; /* a recursion runs the copy again, one frame deeper */
	hit(f, 5, RANGE, PS_HIT_START, 0, 71);
	CHECK_EQ_INT(ps_hitpath_measures(f->hp, &probe), 0);
	hit(f, 5, RANGE, PS_HIT_END, 0, 72); /* the inner copy's end: not the open hit's */
	f->sp = 1000;
	hit(f, 5, RANGE, PS_HIT_END, 0, 73);
	hit(f, 5, RANGE, PS_HIT_START, 0, 74);
	f->sp = 0; /* not known: pairs as any range's end */
	hit(f, 5, RANGE, PS_HIT_END, 0, 75);
	f->sp = 1000;
	hit(f, 5, RANGE, PS_HIT_START, 0, 76);
	f->sp = 1100; /* shallower: the frame of the open hit returned */
	hit(f, 5, RANGE, PS_HIT_END, 0, 77);
	static const struct want w[] = {
	    {RANGE, 5, 0, 70, 73, 73 % 4, 0, 0},
	    {RANGE, 5, 1, 74, 75, 75 % 4, 0, 0},
	    {RANGE, 5, 2, 76, 77, 77 % 4, 0, 0},
	};
	check_records(ctest_self, f, w, 3);
	fixture_free(f);
}

TEST(hitpath_inlined_copy_started_again_at_its_depth_was_left_unwound)
{
	struct fixture *f = fixture_new(0, NULL);

	CHECK(f != NULL);
	if (!f)
		return;
	f->reg[RANGE].flags = PS_REGION_FRAME | PS_REGION_ONCE; /* a hit passes its start once */
	f->sp = 1000;
	hit(f, 6, RANGE, PS_HIT_START, 0, 80); /* left by a longjmp: no end */
	hit(f, 6, RANGE, PS_HIT_START, 0, 81); /* the same frame starts it again: the first was left */
	hit(f, 6, RANGE, PS_HIT_END, 0, 82);
	hit(f, 6, RANGE, PS_HIT_START, 0, 83);
	f->sp = 1200; /* above it: its frame is gone (an exception caught further up) */
	hit(f, 6, RANGE, PS_HIT_START, 0, 84);
	hit(f, 6, RANGE, PS_HIT_END, 0, 85);
	f->reg[RANGE].flags = PS_REGION_FRAME; /* a loop at the start: a hit may pass it again */
	hit(f, 6, RANGE, PS_HIT_START, 0, 86);
	hit(f, 6, RANGE, PS_HIT_START, 0, 87);
	hit(f, 6, RANGE, PS_HIT_END, 0, 88);
	static const struct want w[] = {
	    {RANGE, 6, 0, 80, 81, 81 % 4, PS_SNAP_UNWOUND, 0}, {RANGE, 6, 1, 81, 82, 82 % 4, 0, 0},
	    {RANGE, 6, 2, 83, 84, 84 % 4, PS_SNAP_UNWOUND, 0}, {RANGE, 6, 3, 84, 85, 85 % 4, 0, 0},
	    {RANGE, 6, 4, 86, 88, 88 % 4, 0, 0},
	};
	check_records(ctest_self, f, w, 5);
	CHECK_EQ_INT(f->reg[RANGE].incomplete, 2);
	fixture_free(f);
}

TEST(hitpath_arguments_and_spill)
{
	char path[] = "/tmp/perfsh-hitpath-XXXXXX";
	int fd = mkstemp(path);
	struct fixture *f = fixture_new(PS_MAX_ARGS, path);
	struct ps_psnap_reader *rd;
	struct ps_error err;

	CHECK(fd >= 0 && f != NULL);
	if (fd >= 0)
		close(fd);
	if (!f)
		return;
	for (uint64_t i = 0; i < 5000; i++) { /* more than the ring holds */
		int h = hit(f, 1, FUNC, PS_HIT_ENTRY, 0, 100 + 2 * i);
		hit(f, 1, FUNC, PS_HIT_RETURN, h, 101 + 2 * i);
	}
	hit(f, 1, RANGE, PS_HIT_START, 0, 20000);
	hit(f, 1, RANGE, PS_HIT_END, 0, 20001);
	CHECK_EQ_INT(ps_hitpath_spill_meta(f->hp, "k", "v", &err), 0);
	CHECK_EQ_INT(ps_hitpath_spill_close(f->hp, &err), 0);
	CHECK_EQ_INT(ps_hitpath_nrecords(f->hp), 5001);
	CHECK_EQ_INT(ps_hitpath_dropped(f->hp), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &rd, &err), 0);
	CHECK_EQ_INT(ps_psnap_count(rd), 5001);
	CHECK_EQ_INT(ps_psnap_nargs(rd), PS_MAX_ARGS);
	CHECK_EQ_INT(ps_psnap_nvals(rd), 2);
	CHECK_EQ_INT(ps_psnap_nregions(rd), NREG);
	CHECK_STR(ps_psnap_region(rd, RANGE), "file.c:3-file.c:9");
	CHECK_STR(ps_psnap_meta_get(rd, "k"), "v");
	for (uint64_t i = 0; i < 5001; i++) {
		struct ps_snap *r = (struct ps_snap *)ps_psnap_record(rd, i);
		uint64_t t = i < 5000 ? 100 + 2 * i : 20000;
		CHECK_EQ_INT(r->seq, i);
		CHECK_EQ_INT(r->t_start, t);
		for (int a = 0; a < PS_MAX_ARGS; a++) /* an entry's registers; a start has none */
			CHECK_EQ_INT(ps_snap_args(r)[a], i < 5000 ? t + (uint64_t)a : 0);
		CHECK_EQ_INT(ps_snap_end(r)[1], (t + 1) * 100);
	}
	ps_psnap_reader_close(rd);
	unlink(path);
	fixture_free(f);
}

TEST(hitpath_sampling_draws_at_every_hit)
{
	struct fixture *f = fixture_new(0, NULL);
	struct ps_error err;
	struct ps_hit seen = {.tid = 4, .region = FUNC, .kind = PS_HIT_ENTRY}; /* r NULL: not measured */
	int h;

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(ps_hitpath_sample(f->hp, FUNC, 3, 0, 0, &err), 0);
	CHECK_EQ_INT(ps_hitpath_sample(f->hp, RANGE, 0, 0, 1, &err), 0);
	CHECK_EQ_INT(ps_hitpath_sample(f->hp, FUNC, 2, 0, 0, &err), -1);
	CHECK_STR(err.msg, "region 'func' is sampled already");
	/* every 3rd entry: the 1st and 2nd are drawn and skipped, the 3rd is recorded */
	CHECK_EQ_INT(hit(f, 4, FUNC, PS_HIT_ENTRY, 0, 70), -1);
	CHECK_EQ_INT(ps_hitpath_measures(f->hp, &seen), 0);
	CHECK_EQ_INT(ps_hitpath_hit(f->hp, &seen), -1); /* seen only: drawn all the same */
	CHECK_EQ_INT(ps_hitpath_measures(f->hp, &seen), 1);
	h = hit(f, 4, FUNC, PS_HIT_ENTRY, 0, 71);
	CHECK(h >= 0);
	CHECK_EQ_INT(hit(f, 4, FUNC, PS_HIT_ENTRY, 0, 72), -1); /* nested, drawn: 1 of 3 */
	CHECK_EQ_INT(hit(f, 4, FUNC, PS_HIT_RETURN, h, 73), 0);
	CHECK_EQ_INT(hit(f, 4, FUNC, PS_HIT_ENTRY, 0, 74), -1);
	h = hit(f, 4, FUNC, PS_HIT_ENTRY, 0, 75);
	CHECK(h >= 0);
	CHECK_EQ_INT(hit(f, 4, FUNC, PS_HIT_RETURN, h, 76), 0);
	/* windows: only inside one */
	hit(f, 4, RANGE, PS_HIT_START, 0, 77);
	hit(f, 4, RANGE, PS_HIT_END, 0, 78);
	ps_hitpath_window(f->hp, 1);
	CHECK_EQ_INT(ps_hitpath_in_window(f->hp), 1);
	hit(f, 4, RANGE, PS_HIT_START, 0, 79);
	ps_hitpath_window(f->hp, 0);
	hit(f, 4, RANGE, PS_HIT_END, 0, 80); /* an end is never drawn */
	static const struct want w[] = {
	    {FUNC, 4, 0, 71, 73, 73 % 4, PS_SNAP_SAMPLED, 0},
	    {FUNC, 4, 1, 75, 76, 76 % 4, PS_SNAP_SAMPLED, 0},
	    {RANGE, 4, 0, 79, 80, 80 % 4, PS_SNAP_SAMPLED, 0},
	};
	check_records(ctest_self, f, w, 3);
	fixture_free(f);
}

TEST(hitpath_probability_gaps)
{
	struct fixture *f = fixture_new(0, NULL);
	struct ps_error err;
	uint64_t n = 0;

	CHECK(f != NULL);
	if (!f)
		return;
	ps_hitpath_seed(f->hp, 12345);
	CHECK_EQ_INT(ps_hitpath_gap(f->hp, 1), 1);
	CHECK_EQ_INT(ps_hitpath_sample(f->hp, FUNC, 0, 0.25, 0, &err), 0);
	for (uint64_t i = 0; i < 40000; i++) {
		int h = hit(f, 6, FUNC, PS_HIT_ENTRY, 0, 100 + 2 * i);
		if (h >= 0)
			hit(f, 6, FUNC, PS_HIT_RETURN, h, 101 + 2 * i);
	}
	CHECK_EQ_INT(ps_hitpath_drain(f->hp, &err), 0);
	n = ps_hitpath_nrecords(f->hp);
	CHECK(n > 9000 && n < 11000); /* 10000 expected, sd 87 */
	fixture_free(f);
}

/* With returns that carry no handle (uretprobes, return-site probes), a sampled entry ends at its
   own return: the unsampled calls nested in it and around it await theirs too, and end nothing.
   Every 2nd entry of an every-level region: of 4 nested calls, the 2nd and the 4th. */
TEST(hitpath_sampled_entry_ends_at_its_own_return_without_handles)
{
	struct fixture *f = fixture_new(0, NULL);
	struct ps_error err;
	struct ps_hit ret = {.tid = 9, .region = EVERY, .kind = PS_HIT_RETURN, .handle = PS_HIT_INNERMOST};

	CHECK(f != NULL);
	if (!f)
		return;
	ps_hitpath_returns(f->hp, 64);
	CHECK_EQ_INT(ps_hitpath_sample(f->hp, EVERY, 2, 0, 0, &err), 0);
	for (uint64_t t = 10; t < 14; t++)
		hit(f, 9, EVERY, PS_HIT_ENTRY, 0, t);
	for (uint64_t t = 14; t < 18; t++) {
		ret.t = t;
		ret.cpu = (int)t % 4;
		f->r.time_enabled = t;
		f->r.time_running = t - 1;
		f->r.val[0] = t * 10;
		f->r.val[1] = t * 100;
		ret.r = &f->r;
		CHECK_EQ_INT(ps_hitpath_hit(f->hp, &ret), 0);
	}
	static const struct want w[] = {
	    {EVERY, 9, 0, 13, 14, 14 % 4, PS_SNAP_SAMPLED | PS_SNAP_NESTED, 1},
	    {EVERY, 9, 1, 11, 16, 16 % 4, PS_SNAP_SAMPLED, 0},
	};
	check_records(ctest_self, f, w, 2);
	CHECK_EQ_INT(ps_hitpath_open_calls(f->hp, EVERY), 0);
	fixture_free(f);
}
