/* tests/c/test_lines_cfg.c - core/lines_cfg.c: where line ranges around loops break, on the
 * examples built by make (examples/sum, examples/loops; gcc -O2 -g). */
#include "ctest.h"
#include "fixtures.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lines.h"

/* The line of @file that holds @text (fixed string), 0 if none. */
static int line_of(const char *file, const char *text)
{
	char cmd[600], buf[32];

	snprintf(cmd, sizeof cmd, "grep -n -F -m1 '%s' %s | cut -d: -f1", text, file);
	return atoi(fixtures_first_line(buf, sizeof buf, cmd));
}

/* How many starts and ends ps_lines_range_arms() gives for @file's lines l1-l2 in @exe. */
static int arms(const char *exe, const char *file, int l1, int l2, int *starts, int *ends, struct ps_error *err)
{
	struct ps_lines *l;
	struct ps_lines_arm a[64];
	char note[300];
	int n;

	*starts = *ends = 0;
	if (ps_lines_open(&l, exe, err))
		return -1;
	n = ps_lines_range_arms(l, file, &l1, &l2, a, 64, note, sizeof note, err);
	for (int i = 0; i < n; i++) {
		*ends += a[i].end;
		*starts += !a[i].end;
		if (i && a[i].end && !a[i - 1].end)
			n = -2; /* ends must come first */
	}
	ps_lines_close(l);
	return n;
}

TEST(lines_cfg_loops)
{
	static const struct {
		const char *exe, *src, *from, *to;
		int from_off, to_off, starts, ends;
	} rows[] = {
	    /* the array-filling loop of sum.c up to the line after it */
	    {"examples/sum", "examples/sum.c", "numbers[i] = (uint32_t)rand();", "printf(\"sum = ", -1, 0, 1, 1},
	    /* the line before it to the loop header (the header as end line) */
	    {"examples/sum", "examples/sum.c", "srand(seed);", "numbers[i] = (uint32_t)rand();", 0, -1, 1, 1},
	    /* the body of that loop to the line after it: started before the loop, never inside it */
	    {"examples/sum", "examples/sum.c", "numbers[i] = (uint32_t)rand();", "printf(\"sum = ", 0, 0, 1, 1},
	    {"examples/loops", "examples/loops.c", "/* FILL-FOR */", "/* FILL-AFTER */", 0, 0, 1, 1},
	    {"examples/loops", "examples/loops.c", "/* FILL-BEFORE */", "/* FILL-FOR */", 0, 0, 1, 1},
	    {"examples/loops", "examples/loops.c", "/* DISPATCH-FIRST */", "/* DISPATCH-AFTER */", 0, 0, 1, 1},
	    /* a line whose code is an inlined call, interleaved with the next line's */
	    {"examples/loops", "examples/loops.c", "/* MAIN-TWICE */", "/* MAIN-PRINT */", 0, 0, 1, 1},
	};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_error err = {0};
		int starts, ends, l1, l2, n;

		if (access(rows[i].exe, R_OK))
			SKIP("%s is not built (make)", rows[i].exe);
		l1 = line_of(rows[i].src, rows[i].from) + rows[i].from_off;
		l2 = line_of(rows[i].src, rows[i].to) + rows[i].to_off;
		n = arms(rows[i].exe, strrchr(rows[i].src, '/') + 1, l1, l2, &starts, &ends, &err);
		if (n != rows[i].starts + rows[i].ends || starts != rows[i].starts || ends != rows[i].ends)
			fprintf(stderr, "  row %zu (%d-%d): %d arms, %d starts, %d ends %s\n", i, l1, l2, n, starts,
				ends, err.msg);
		CHECK_EQ_INT(starts, rows[i].starts);
		CHECK_EQ_INT(ends, rows[i].ends);
		CHECK_EQ_INT(n, rows[i].starts + rows[i].ends);
	}
}

TEST(lines_cfg_ambiguous)
{
	struct ps_error err = {0};
	int starts, ends, l1, l2;

	if (access("examples/sum", R_OK))
		SKIP("examples/sum is not built (make)");
	/* gcc -O2 begins sum()'s first line and its loop's init at one address */
	l1 = line_of("examples/sum.c", "uint64_t __attribute__((noinline)) sum(");
	l2 = line_of("examples/sum.c", "for (int i = 0; i < SIZE; i++)");
	CHECK_EQ_INT(arms("examples/sum", "sum.c", l1, l2, &starts, &ends, &err), -1);
	CHECK(strstr(err.msg, "ambiguous in this build: lines ") != NULL);
	CHECK(strchr(err.msg, '\n') == NULL);
}
