/* tests/c/test_upframes.c - core/catch/uprobe/upframes.c: frames matched by stack pointer, the ones an
 * exception or a longjmp left found unwound, a tail call under a uretprobe kept. */
#include "ctest.h"

#include "upframes.h"

TEST(upframes_an_exit_ends_the_innermost_frame_entered_at_its_stack_pointer)
{
	struct ps_upframes *f = ps_upframes_new();
	int region = -1, handle = -1;

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(ps_upframes_push(f, 10, 0x7000, 1, 5, 0), 0); /* outer, region 1 */
	CHECK_EQ_INT(ps_upframes_push(f, 10, 0x6f00, 1, 6, 0), 0); /* recursion, region 1 */
	CHECK_EQ_INT(ps_upframes_push(f, 11, 0x9000, 1, 7, 0), 0); /* another thread */
	/* a nested call's exit (its entry opened nothing): below every frame, ends none */
	CHECK_EQ_INT(ps_upframes_pop(f, 10, 0x6e00, 1, &handle), 0);
	CHECK_EQ_INT(ps_upframes_left(f, 10, 0x6e00, 0, &region, &handle), 0);
	/* another region's exit at the frame's place ends nothing */
	CHECK_EQ_INT(ps_upframes_pop(f, 10, 0x6f00, 2, &handle), 0);
	CHECK_EQ_INT(ps_upframes_pop(f, 10, 0x6f00, 1, &handle), 1);
	CHECK_EQ_INT(handle, 6);
	CHECK_EQ_INT(ps_upframes_pop(f, 10, 0x7000, 1, &handle), 1);
	CHECK_EQ_INT(handle, 5);
	CHECK_EQ_INT(ps_upframes_depth(f, 10), 0);
	CHECK_EQ_INT(ps_upframes_depth(f, 11), 1);
	ps_upframes_free(f);
}

TEST(upframes_a_probe_above_open_frames_finds_them_left_innermost_first)
{
	struct ps_upframes *f = ps_upframes_new();
	int region = -1, handle = -1;

	CHECK(f != NULL);
	if (!f)
		return;
	ps_upframes_push(f, 10, 0x7000, 1, 1, 0);
	ps_upframes_push(f, 10, 0x6000, 2, 2, 0);
	ps_upframes_push(f, 10, 0x5000, 3, 3, 0);
	/* a probe at 0x6800 (a catch handler in the outer frame's callee): the two inner ones were left */
	CHECK_EQ_INT(ps_upframes_left(f, 10, 0x6800, 0, &region, &handle), 1);
	CHECK_EQ_INT(region, 3);
	CHECK_EQ_INT(handle, 3);
	CHECK_EQ_INT(ps_upframes_left(f, 10, 0x6800, 0, &region, &handle), 1);
	CHECK_EQ_INT(region, 2);
	CHECK_EQ_INT(ps_upframes_left(f, 10, 0x6800, 0, &region, &handle), 0);
	/* a probe at the outer frame's own stack pointer leaves it open, unless it is a new entry there */
	CHECK_EQ_INT(ps_upframes_left(f, 10, 0x7000, 0, &region, &handle), 0);
	CHECK_EQ_INT(ps_upframes_left(f, 10, 0x7000, 1, &region, &handle), 1);
	CHECK_EQ_INT(handle, 1);
	CHECK_EQ_INT(ps_upframes_depth(f, 10), 0);
	ps_upframes_free(f);
}

TEST(upframes_a_tail_call_from_a_frame_a_uretprobe_ends_keeps_it_open)
{
	struct ps_upframes *f = ps_upframes_new();
	int region = -1, handle = -1;

	CHECK(f != NULL);
	if (!f)
		return;
	ps_upframes_push(f, 10, 0x7000, 1, 1, 1); /* its return comes through a uretprobe */
	/* the function it jumps to enters at the same stack pointer: the caller is not left */
	CHECK_EQ_INT(ps_upframes_left(f, 10, 0x7000, 1, &region, &handle), 0);
	ps_upframes_push(f, 10, 0x7000, 2, 2, 0);
	CHECK_EQ_INT(ps_upframes_pop(f, 10, 0x7000, 2, &handle), 1); /* the callee's ret */
	CHECK_EQ_INT(handle, 2);
	CHECK_EQ_INT(ps_upframes_pop(f, 10, 0x7000, 1, &handle), 1); /* then the uretprobe's */
	CHECK_EQ_INT(handle, 1);
	ps_upframes_push(f, 10, 0x7000, 1, 3, 1);
	ps_upframes_forget(f, 10);
	CHECK_EQ_INT(ps_upframes_depth(f, 10), 0);
	ps_upframes_push(f, 12, 0x7000, 1, 3, 0);
	ps_upframes_forget_all(f);
	CHECK_EQ_INT(ps_upframes_depth(f, 12), 0);
	ps_upframes_free(f);
}
