/* tests/c/test_lines_cfg.c - core/binary/lines_cfg.c: where line ranges around loops break, on the
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
	struct ps_lines_range r = {.l1 = l1, .l2 = l2};
	int n;

	*starts = *ends = 0;
	if (ps_lines_open(&l, exe, err))
		return -1;
	n = ps_lines_range_arms(l, file, &r, err);
	for (int i = 0; i < n; i++) {
		*ends += r.arm[i].end;
		*starts += !r.arm[i].end;
		if (i && r.arm[i].end && !r.arm[i - 1].end)
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

/* The lowest address readelf shows a row of @file:@line at in @exe, other than @other; 0 if
   none (readelf is the truth: libdw reads the same table). */
static uint64_t readelf_first(const char *exe, const char *file, int line, uint64_t other)
{
	char cmd[300], buf[400];
	uint64_t best = 0;
	FILE *f;

	snprintf(cmd, sizeof cmd, "readelf -W --debug-dump=decodedline %s", exe);
	if (!(f = popen(cmd, "r")))
		return 0;
	while (fgets(buf, sizeof buf, f)) {
		char name[200];
		int ln;
		unsigned long long addr;
		if (sscanf(buf, "%199s %d 0x%llx", name, &ln, &addr) == 3 && !strcmp(name, file) && ln == line &&
		    addr != other && (!best || addr < best))
			best = addr;
	}
	pclose(f);
	return best;
}

/* A line range of an example: its lines, by the text on them. */
struct range_row {
	const char *exe, *src, *from, *to;
	int from_off, to_off;
};

static int row_lines(const struct range_row *row, int *l1, int *l2)
{
	*l1 = line_of(row->src, row->from) + row->from_off;
	*l2 = line_of(row->src, row->to) + row->to_off;
	return *l1 > 0 && *l2 > 0;
}

/* Lines whose code the table gives to one side each are read by their code through the control
   flow; an end line is reached where it begins, even at the address of a later line's row. */
TEST(lines_range_one_reading_by_the_lines_code)
{
	static const struct range_row rows[] = {
	    /* spin's loop to its return: line 32 begins at the ret, with line 33 (views) */
	    {"examples/loop", "examples/loop.c", "for (i = 0; i < n; i++)", "return i;", 0, 0},
	    /* the README's range: the array-filling loop to the line after it */
	    {"examples/sum", "examples/sum.c", "numbers[i] = (uint32_t)rand();", "printf(\"sum = ", -1, 0},
	    /* the reps loop's body to its last line */
	    {"examples/loop", "examples/loop.c", "/* LOOP-BEGIN */", "/* LOOP-END */", 0, 0},
	};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_error err = {0};
		struct ps_lines *l;
		struct ps_lines_range r;
		int n;

		if (access(rows[i].exe, R_OK))
			SKIP("%s is not built (make)", rows[i].exe);
		CHECK(row_lines(&rows[i], &r.l1, &r.l2));
		CHECK_EQ_INT(ps_lines_open(&l, rows[i].exe, &err), 0);
		n = ps_lines_range_arms(l, strrchr(rows[i].src, '/') + 1, &r, &err);
		if (n <= 0 || r.perforator)
			fprintf(stderr, "  row %zu (%d-%d): %d arms; %s %s\n", i, r.l1, r.l2, n, r.reading, err.msg);
		CHECK(n >= 2);
		CHECK_EQ_INT(r.perforator, 0);
		CHECK(strstr(r.reading, "hits run from entering line") == r.reading);
		ps_lines_close(l);
	}
}

/* Where start and end lines begin at one address, or code of the end line is interleaved with
   the range's, the range is read as Perforator reads one: from the start line's first address
   to the end line's first that is not also that one (readelf's rows say which they are). */
TEST(lines_range_read_as_perforator_where_the_table_allows_more_than_one_reading)
{
	static const struct range_row rows[] = {
	    /* sum.c:41-42: line 42 (rand) interleaved with line 41 (i++, i < SIZE) */
	    {"examples/sum", "examples/sum.c", "numbers[i] = (uint32_t)rand();", "numbers[i] = (uint32_t)rand();", -1,
	     0},
	    /* sum.c:19-23: sum's first lines and its loop begin at one address */
	    {"examples/sum", "examples/sum.c", "uint64_t __attribute__((noinline)) sum(", "s += numbers[i];", 0, -1},
	    /* loop.c:30-31: the loop's body begins where its increment does */
	    {"examples/loop", "examples/loop.c", "for (i = 0; i < n; i++)", "__asm__ volatile", 0, 0},
	    /* loop.c:41-43: lines 42 and 43 begin at one address */
	    {"examples/loop", "examples/loop.c", "for (uint64_t r = 0; r < reps; r++)", "total += spin(n);", 0, 0},
	};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_error err = {0};
		struct ps_lines *l;
		struct ps_lines_range r;
		const char *file = strrchr(rows[i].src, '/') + 1;
		uint64_t a, b;
		int n;

		if (access(rows[i].exe, R_OK))
			SKIP("%s is not built (make)", rows[i].exe);
		CHECK(row_lines(&rows[i], &r.l1, &r.l2));
		CHECK_EQ_INT(ps_lines_open(&l, rows[i].exe, &err), 0);
		n = ps_lines_range_arms(l, file, &r, &err);
		a = readelf_first(rows[i].exe, file, r.l1, 0);
		b = readelf_first(rows[i].exe, file, r.l2, a);
		if (n != 2 || !r.perforator || r.start != a || r.end != b)
			fprintf(stderr,
				"  row %zu (%d-%d): %d arms, %#" PRIx64 "-%#" PRIx64 " (readelf %#" PRIx64 "-%#" PRIx64
				"); %s %s\n",
				i, r.l1, r.l2, n, r.start, r.end, a, b, r.reading, err.msg);
		CHECK(a != 0 && b != 0);
		CHECK_EQ_INT(n, 2);
		CHECK_EQ_INT(r.perforator, 1);
		CHECK(r.start == a && r.end == b);
		CHECK(r.arm[0].end && r.arm[0].addr == b && !r.arm[1].end && r.arm[1].addr == a);
		CHECK(strstr(r.reading, ": read as Perforator does, hits run from 0x") != NULL);
		CHECK(strchr(r.reading, '\n') == NULL);
		ps_lines_close(l);
	}
}

/* Refused, in one line saying what to do, only where no reading ever ends: sum.c:20-21, whose
   end line has no code but at the start line's first address. */
TEST(lines_range_refused_only_where_no_reading_ends)
{
	struct ps_error err = {0};
	struct ps_lines *l;
	struct ps_lines_range r;

	if (access("examples/sum", R_OK))
		SKIP("examples/sum is not built (make)");
	r.l2 = line_of("examples/sum.c", "uint64_t s = 0;");
	r.l1 = r.l2 - 1;
	CHECK_EQ_INT(ps_lines_open(&l, "examples/sum", &err), 0);
	CHECK_EQ_INT(ps_lines_range_arms(l, "sum.c", &r, &err), -1);
	CHECK(strstr(err.msg, "no reading of the range ever ends; choose a later end line") != NULL);
	CHECK(strchr(err.msg, '\n') == NULL);
	ps_lines_close(l);
}
