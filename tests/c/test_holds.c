/* tests/c/test_holds.c - the program's clock (core/hitpath/holds.c): times less the time perfsh held the
 * program, and records of the hit path on it, whether a time arrives before or after the hold. */
#include <stdlib.h>

#include "ctest.h"
#include "hitpath.h"
#include "holds.h"

TEST(holds_map_leaves_out_the_time_held)
{
	/* held 100..200 and 500..800: 400 ns in all */
	static const struct {
		uint64_t t, want;
	} rows[] = {
	    {0, 0},	{99, 99},      /* before any hold */
	    {100, 100}, {150, 100},    /* inside the first: its start */
	    {200, 100}, {300, 200},    /* after it: less 100 */
	    {499, 399}, {500, 400},    /* the second starts */
	    {700, 400}, {800, 400},    /* inside it, and its end */
	    {801, 401}, {10000, 9600}, /* after both: less 400 */
	};
	struct ps_holds h = {0};

	CHECK_EQ_INT(ps_holds_map(&h, 12345), 12345); /* no hold: unchanged */
	CHECK(ps_holds_add(&h, 100, 200) == 0);
	CHECK(ps_holds_add(&h, 500, 800) == 0);
	CHECK(ps_holds_add(&h, 700, 900) == 0); /* overlaps the last: ignored */
	CHECK(ps_holds_add(&h, 900, 900) == 0); /* empty: ignored */
	CHECK_EQ_INT(ps_holds_total(&h), 400);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		CHECK_EQ_INT(ps_holds_map(&h, rows[i].t), rows[i].want);
	/* many holds: each time still mapped by when it was taken */
	for (uint64_t k = 1; k <= 1000; k++)
		CHECK(ps_holds_add(&h, 1000 * k, 1000 * k + 10) == 0);
	CHECK_EQ_INT(ps_holds_total(&h), 400 + 10000);
	CHECK_EQ_INT(ps_holds_map(&h, 1000 * 500 + 5), 1000 * 500 - 400 - 499 * 10);
	CHECK_EQ_INT(ps_holds_map(&h, 1000 * 500 + 20), 1000 * 500 + 20 - 400 - 500 * 10);
	ps_holds_free(&h);
}

static void hit(struct ps_hitpath *hp, pid_t tid, enum ps_hit_kind kind, uint64_t t)
{
	struct ps_reading r = {.n = 1, .time_enabled = t, .time_running = t};
	struct ps_hit h = {.tid = tid, .region = 0, .kind = kind, .t = t, .cpu = 0, .r = &r};

	ps_hitpath_hit(hp, &h);
}

TEST(hitpath_times_of_a_hit_spanning_a_hold_leave_it_out)
{
	struct ps_region_info reg[1] = {{.id = 0, .kind = PS_REGION_RANGE, .name = "r"}};
	int nreg = 1;
	struct ps_error err;
	struct ps_psnap_info info = {0};
	struct ps_hitpath *hp = ps_hitpath_new(reg, &nreg, &err);
	struct ps_reading r = {.n = 1};

	CHECK(hp != NULL);
	if (!hp)
		return;
	CHECK(ps_hitpath_record(hp, 1, 0, NULL, &info, &err) == 0);
	hit(hp, 1, PS_HIT_START, 100);		    /* a catcher that stops the program: */
	CHECK(ps_hitpath_hold(hp, 200, 1200) == 0); /* held 1000 ns between its start */
	hit(hp, 1, PS_HIT_END, 1300);		    /* and its end */
	hit(hp, 2, PS_HIT_START, 150);		    /* a record the program wrote before the hold, */
	hit(hp, 2, PS_HIT_END, 1250);		    /* read after it (the marker catcher's) */
	hit(hp, 3, PS_HIT_START, 1400);
	ps_hitpath_thread_exit(hp, 3, &r, 1450); /* cut short after the hold */
	CHECK(ps_hitpath_drain(hp, &err) == 0);
	CHECK_EQ_INT(ps_hitpath_nrecords(hp), 3);
	if (ps_hitpath_nrecords(hp) == 3) {
		const struct ps_snap *a = ps_hitpath_record_at(hp, 0), *b = ps_hitpath_record_at(hp, 1),
				     *c = ps_hitpath_record_at(hp, 2);
		CHECK_EQ_INT(a->t_start, 100);
		CHECK_EQ_INT(a->t_end, 300);
		CHECK_EQ_INT(b->t_start, 150);
		CHECK_EQ_INT(b->t_end, 250);
		CHECK_EQ_INT(c->t_start, 400);
		CHECK_EQ_INT(c->t_end, 450);
		CHECK_EQ_INT(c->flags & PS_SNAP_EXITED, PS_SNAP_EXITED);
	}
	ps_hitpath_free(hp);
}
