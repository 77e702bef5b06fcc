/* tests/c/test_psnap.c - .psnap files: round trip, truncation, foreign and corrupt files. */
#include "ctest.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "psnap.h"
#include "snapshot.h"

#define NVALS 3
#define NARGS 2
#define RECSIZE ps_snap_size(NVALS, NARGS)
#define NRECS 100000u
/* header of `info` below: 56 fixed + events 42 + regions 15 + metadata 63 = 176 */
#define HSIZE 176
/* trailer after write_file(..., late_names = 1): 16 + "late" 8 + "end" 7 + "12:00" 9 */
#define TRAILER 40

static const char *const events[] = {"instructions", "cycles", "cache-misses"};
static const char *const regions[] = {"sum", "main"};
static const struct ps_psnap_meta meta[] = {
    {"cmdline", "perfsh stat -f sum ./examples/sum"},
    {"host", "box"},
};
static const struct ps_psnap_info info = {
    .nvals = NVALS,
    .nargs = NARGS,
    .nevents = 3,
    .events = events,
    .nregions = 2,
    .regions = regions,
    .nmeta = 2,
    .meta = meta,
};

/* A record with every field set from @i, each field different. */
static void fill(struct ps_snap *s, uint64_t i)
{
	memset(s, 0, RECSIZE);
	s->region = (uint32_t)(i % 3);
	s->tid = (uint32_t)(1000 + i % 5);
	s->seq = i;
	s->hit = i / 3;
	s->t_start = 1000000000ull + i * 10;
	s->t_end = 1000000000ull + i * 10 + 7;
	s->enabled_start = i * 11;
	s->running_start = i * 11 - (i & 1);
	s->enabled_end = i * 13;
	s->running_end = i * 13 - (i & 3);
	s->cpu_start = (int16_t)(i % 8);
	s->cpu_end = (int16_t)(i % 9) - 1;
	s->flags = (uint16_t)(i % 16);
	s->nvals = NVALS;
	s->nargs = NARGS;
	s->depth = (uint32_t)(i % 4);
	for (unsigned a = 0; a < NARGS; a++)
		ps_snap_args(s)[a] = i * 100 + a;
	for (unsigned v = 0; v < NVALS; v++) {
		ps_snap_start(s)[v] = (i << 8) + v;
		ps_snap_end(s)[v] = (i << 8) + v + 1000 * (v + 1);
	}
}

/* Field-by-field comparison (the round trip is checked on each field, not just bytes). */
static int same(const struct ps_snap *s, uint64_t i)
{
	uint64_t buf[64];
	struct ps_snap *w = (struct ps_snap *)buf;
	int ok = 1;

	fill(w, i);
	ok &= s->region == w->region && s->tid == w->tid && s->seq == w->seq && s->hit == w->hit;
	ok &= s->t_start == w->t_start && s->t_end == w->t_end;
	ok &= s->enabled_start == w->enabled_start && s->running_start == w->running_start;
	ok &= s->enabled_end == w->enabled_end && s->running_end == w->running_end;
	ok &= s->cpu_start == w->cpu_start && s->cpu_end == w->cpu_end && s->flags == w->flags;
	ok &= s->nvals == NVALS && s->nargs == NARGS && s->depth == w->depth;
	for (unsigned a = 0; a < NARGS; a++)
		ok &= ps_snap_args((struct ps_snap *)s)[a] == ps_snap_args(w)[a];
	for (unsigned v = 0; v < NVALS; v++) {
		ok &= ps_snap_start((struct ps_snap *)s)[v] == ps_snap_start(w)[v];
		ok &= ps_snap_end((struct ps_snap *)s)[v] == ps_snap_end(w)[v];
	}
	return ok;
}

static void tmp_path(char *path)
{
	int fd;

	strcpy(path, "/tmp/perfsh-psnap-XXXXXX");
	fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
}

/* Write @n records in batches of varied size (1 .. beyond the 1 MiB buffer). */
static int write_file(const char *path, uint64_t n, int late_names, struct ps_error *err)
{
	static const size_t batches[] = {1, 7, 1000, 9000, 13};
	struct ps_psnap_writer *w = ps_psnap_create(path, &info, err);
	uint64_t *buf;
	uint64_t i = 0;
	int rc = 0;

	if (!w)
		return -1;
	buf = malloc(9000 * RECSIZE);
	for (size_t b = 0; buf && i < n && rc == 0; b = (b + 1) % 5) {
		size_t k = batches[b];

		if (k > n - i)
			k = (size_t)(n - i);
		for (size_t j = 0; j < k; j++)
			fill((struct ps_snap *)((char *)buf + j * RECSIZE), i + j);
		rc = ps_psnap_write(w, buf, k, err);
		i += k;
	}
	free(buf);
	if (late_names && rc == 0) {
		rc |= ps_psnap_add_region(w, "late", err) != 2;
		rc |= ps_psnap_add_meta(w, "end", "12:00", err);
	}
	if (ps_psnap_close(w, err))
		rc = -1;
	return rc;
}

static off_t file_size(const char *path)
{
	int fd = open(path, O_RDONLY);
	off_t n = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);

	if (fd >= 0)
		close(fd);
	return n;
}

/* Overwrite @n bytes at @off. */
static void patch(const char *path, off_t off, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (pwrite(fd, p, n, off) != (ssize_t)n)
			perror("pwrite");
		close(fd);
	}
}

TEST(psnap_roundtrip_100k)
{
	char path[64];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	uint64_t *buf = malloc(777 * RECSIZE);
	uint64_t bad = 0, next = 0;
	ssize_t n;

	tmp_path(path);
	CHECK_EQ_INT(write_file(path, NRECS, 1, &err), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (!r || !buf) {
		fprintf(stderr, "  %s\n", err.msg);
		free(buf);
		return;
	}
	CHECK_EQ_INT(ps_psnap_nvals(r), NVALS);
	CHECK_EQ_INT(ps_psnap_nargs(r), NARGS);
	CHECK_EQ_INT(ps_psnap_recsize(r), RECSIZE);
	CHECK_EQ_INT(ps_psnap_nevents(r), 3);
	CHECK_STR(ps_psnap_event(r, 0), "instructions");
	CHECK_STR(ps_psnap_event(r, 1), "cycles");
	CHECK_STR(ps_psnap_event(r, 2), "cache-misses");
	CHECK(ps_psnap_event(r, 3) == NULL);
	CHECK_EQ_INT(ps_psnap_nregions(r), 3);
	CHECK_STR(ps_psnap_region(r, 0), "sum");
	CHECK_STR(ps_psnap_region(r, 1), "main");
	CHECK_STR(ps_psnap_region(r, 2), "late");
	CHECK(ps_psnap_region(r, 3) == NULL);
	CHECK_EQ_INT(ps_psnap_nmeta(r), 3);
	CHECK_STR(ps_psnap_meta_key(r, 0), "cmdline");
	CHECK_STR(ps_psnap_meta_value(r, 0), "perfsh stat -f sum ./examples/sum");
	CHECK_STR(ps_psnap_meta_get(r, "host"), "box");
	CHECK_STR(ps_psnap_meta_get(r, "end"), "12:00");
	CHECK(ps_psnap_meta_get(r, "nope") == NULL);
	CHECK_EQ_INT(ps_psnap_count(r), NRECS);
	CHECK_EQ_INT(ps_psnap_complete(r), 1);
	CHECK_EQ_INT(ps_psnap_truncated(r), 0);
	CHECK_EQ_INT(ps_psnap_ignored_bytes(r), 0);
	for (uint64_t i = 0; i < NRECS; i++) {
		const struct ps_snap *s = ps_psnap_record(r, i);

		bad += !s || !same(s, i);
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(ps_psnap_record(r, NRECS) == NULL);
	while ((n = ps_psnap_read(r, buf, 777, &err)) > 0)
		for (ssize_t j = 0; j < n; j++, next++)
			bad += !same((const struct ps_snap *)((char *)buf + j * RECSIZE), next);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(next, NRECS);
	CHECK_EQ_INT(bad, 0);
	ps_psnap_rewind(r);
	CHECK_EQ_INT(ps_psnap_read(r, buf, 1, &err), 1);
	CHECK(same((const struct ps_snap *)buf, 0));
	ps_psnap_reader_close(r);
	free(buf);
	unlink(path);
}

/* Cut mid-record: N-1 whole records, the flag, and the count of bytes left over. */
TEST(psnap_truncated_mid_record)
{
	char path[64];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	off_t size, hsize;

	tmp_path(path);
	CHECK_EQ_INT(write_file(path, 1000, 1, &err), 0);
	size = file_size(path);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	ps_psnap_reader_close(r);
	hsize = size - 1000 * (off_t)RECSIZE - TRAILER;
	CHECK_EQ_INT(hsize, HSIZE);
	CHECK_EQ_INT(truncate(path, hsize + 999 * (off_t)RECSIZE + 50), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (!r)
		return;
	CHECK_EQ_INT(ps_psnap_count(r), 999);
	CHECK_EQ_INT(ps_psnap_truncated(r), 1);
	CHECK_EQ_INT(ps_psnap_complete(r), 0);
	CHECK_EQ_INT(ps_psnap_ignored_bytes(r), 50);
	CHECK_EQ_INT(ps_psnap_nregions(r), 2); /* "late" was in the lost trailer */
	CHECK(ps_psnap_record(r, 998) && same(ps_psnap_record(r, 998), 998));
	CHECK(ps_psnap_record(r, 999) == NULL);
	ps_psnap_reader_close(r);
	unlink(path);
}

/* Cut inside the trailer: every record, flagged, the partial trailer ignored. */
TEST(psnap_truncated_in_trailer)
{
	char path[64];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	off_t size;

	tmp_path(path);
	CHECK_EQ_INT(write_file(path, 10, 1, &err), 0);
	size = file_size(path);
	CHECK_EQ_INT(truncate(path, size - 3), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (!r)
		return;
	CHECK_EQ_INT(ps_psnap_count(r), 10);
	CHECK_EQ_INT(ps_psnap_truncated(r), 1);
	CHECK_EQ_INT(ps_psnap_ignored_bytes(r), TRAILER - 3);
	ps_psnap_reader_close(r);
	unlink(path);
}

/* A writer that has not closed (or died): records up to the last flush, not truncated. */
TEST(psnap_read_while_writing)
{
	char path[64];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	struct ps_psnap_writer *w;
	uint64_t buf[64];

	tmp_path(path);
	w = ps_psnap_create(path, &info, &err);
	CHECK(w != NULL);
	if (!w)
		return;
	for (uint64_t i = 0; i < 5; i++) {
		fill((struct ps_snap *)buf, i);
		CHECK_EQ_INT(ps_psnap_write(w, buf, 1, &err), 0);
	}
	CHECK_EQ_INT(ps_psnap_writer_count(w), 5);
	CHECK_EQ_INT(ps_psnap_flush(w, &err), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (r) {
		CHECK_EQ_INT(ps_psnap_count(r), 5);
		CHECK_EQ_INT(ps_psnap_complete(r), 0);
		CHECK_EQ_INT(ps_psnap_truncated(r), 0);
		CHECK_EQ_INT(ps_psnap_nregions(r), 2);
		CHECK(same(ps_psnap_record(r, 4), 4));
		ps_psnap_reader_close(r);
	}
	CHECK_EQ_INT(ps_psnap_close(w, &err), 0);
	unlink(path);
}

static void open_fails(struct ctest *ctest_self, const char *path, const char *want)
{
	struct ps_error err = {0};
	struct ps_psnap_reader *r = (struct ps_psnap_reader *)&err;

	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), -1);
	CHECK(r == NULL);
	CHECK_STR(err.msg, want);
}

TEST(psnap_foreign_files)
{
	char path[64], want[160];
	static const char text[] = "#!/bin/sh\necho not a snapshot\n";

	tmp_path(path);
	snprintf(want, sizeof want, "%s: not a perfsh snapshot file (empty)", path);
	open_fails(ctest_self, path, want);
	patch(path, 0, text, sizeof text - 1);
	snprintf(want, sizeof want, "%s: not a perfsh snapshot file (bad magic)", path);
	open_fails(ctest_self, path, want);
	patch(path, 0, "PSNAP\0\0\1", 8);
	snprintf(want, sizeof want, "%s: corrupt header (file ends at byte 30)", path);
	open_fails(ctest_self, path, want);
	unlink(path);
	snprintf(want, sizeof want, "%s: No such file or directory", path);
	open_fails(ctest_self, path, want);
	open_fails(ctest_self, "/tmp", "/tmp: not a regular file");
}

/* One row per corruption: the header field patched, the value, the message's tail. */
TEST(psnap_corrupt_headers)
{
	static const struct {
		off_t off;
		uint32_t value;
		size_t n;
		const char *msg;
	} rows[] = {
	    {8, 7, 4, "snapshot version 7 is not supported (this perfsh reads 1)"},
	    {16, 160, 4, "corrupt header (record size 160, expected 152 for 3 values and 2 arguments)"},
	    {20, 17, 2, "corrupt header (17 values and 2 arguments, at most 16 and 6)"},
	    {52, 80, 4, "corrupt header (record header of 80 bytes, expected 88)"},
	    {12, 12, 4, "corrupt header (header size 12, file size 1736)"},
	    {40, 1000, 4, "corrupt header (names run past its end)"},
	    {48, 3, 4, "corrupt header (names run past its end)"},
	    {32, 11, 4, "corrupt header (trailer at byte 1696 does not follow 11 records)"},
	    {24, 1704, 4, "corrupt header (trailer at byte 1704 does not follow 10 records)"},
	};
	char path[64], want[200];
	struct ps_error err = {0};

	tmp_path(path);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CHECK_EQ_INT(write_file(path, 10, 1, &err), 0);
		CHECK_EQ_INT(file_size(path), HSIZE + 10 * RECSIZE + TRAILER);
		patch(path, rows[i].off, &rows[i].value, rows[i].n);
		snprintf(want, sizeof want, "%s: %s", path, rows[i].msg);
		open_fails(ctest_self, path, want);
	}
	/* the trailer's own magic */
	CHECK_EQ_INT(write_file(path, 10, 1, &err), 0);
	patch(path, HSIZE + 10 * RECSIZE, "XX", 2);
	snprintf(want, sizeof want, "%s: corrupt trailer (bad magic at byte 1696)", path);
	open_fails(ctest_self, path, want);
	/* bytes after the trailer */
	CHECK_EQ_INT(write_file(path, 10, 1, &err), 0);
	patch(path, HSIZE + 10 * RECSIZE + TRAILER, "junk", 4);
	snprintf(want, sizeof want, "%s: corrupt trailer (4 bytes after its end)", path);
	open_fails(ctest_self, path, want);
	unlink(path);
}

/* A record whose nvals disagrees with the header is refused, not trusted. */
TEST(psnap_corrupt_record)
{
	char path[64], want[200];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	uint64_t buf[10 * 64];
	uint8_t nine = 9;

	tmp_path(path);
	CHECK_EQ_INT(write_file(path, 10, 0, &err), 0);
	/* record 4's nvals: header, 4 records, offset of nvals in struct ps_snap */
	patch(path, HSIZE + 4 * (off_t)RECSIZE + (off_t)offsetof(struct ps_snap, nvals), &nine, 1);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (!r)
		return;
	CHECK(ps_psnap_record(r, 3) != NULL);
	CHECK(ps_psnap_record(r, 4) == NULL);
	CHECK_EQ_INT(ps_psnap_read(r, buf, 10, &err), -1);
	snprintf(want, sizeof want, "%s: corrupt record 4 (9 values and 2 arguments, header says 3 and 2)", path);
	CHECK_STR(err.msg, want);
	ps_psnap_reader_close(r);
	unlink(path);
}

/* A failed flush is reported, by write and again by close. */
TEST(psnap_write_errors)
{
	struct ps_error err = {0};
	struct ps_psnap_writer *w;
	uint64_t *buf = calloc(8000, RECSIZE);

	w = ps_psnap_create("/nonexistent-dir/x.psnap", &info, &err);
	CHECK(w == NULL);
	CHECK_STR(err.msg, "/nonexistent-dir/x.psnap: open: No such file or directory");
	if (access("/dev/full", W_OK) != 0 || !buf) {
		free(buf);
		SKIP("no /dev/full");
	}
	w = ps_psnap_create("/dev/full", &info, &err);
	CHECK(w != NULL);
	if (!w) {
		fprintf(stderr, "  %s\n", err.msg);
		free(buf);
		return;
	}
	/* 8000 records (1.2 MB) overflow the buffer: the flush hits ENOSPC */
	CHECK_EQ_INT(ps_psnap_write(w, buf, 8000, &err), -1);
	CHECK_STR(err.msg, "/dev/full: write: No space left on device");
	err.msg[0] = '\0';
	CHECK_EQ_INT(ps_psnap_write(w, buf, 1, &err), -1);
	CHECK_STR(err.msg, "/dev/full: write: No space left on device");
	err.msg[0] = '\0';
	CHECK_EQ_INT(ps_psnap_close(w, &err), -1);
	CHECK_STR(err.msg, "/dev/full: write: No space left on device");
	/* nothing written yet: close itself must report the failed flush */
	w = ps_psnap_create("/dev/full", &info, &err);
	CHECK(w != NULL);
	CHECK_EQ_INT(ps_psnap_write(w, buf, 3, &err), 0);
	CHECK_EQ_INT(ps_psnap_close(w, &err), -1);
	CHECK_STR(err.msg, "/dev/full: write: No space left on device");
	CHECK_EQ_INT(ps_psnap_close(NULL, &err), 0);
	free(buf);
}

TEST(psnap_create_errors)
{
	struct ps_error err = {0};
	struct ps_psnap_info bad = info;
	const char *const nul_events[] = {"a", NULL, "c"};

	bad.nvals = 17;
	CHECK(ps_psnap_create("/tmp/unused.psnap", &bad, &err) == NULL);
	CHECK_STR(err.msg, "psnap: 17 values, at most 16");
	bad = info;
	bad.nargs = 7;
	CHECK(ps_psnap_create("/tmp/unused.psnap", &bad, &err) == NULL);
	CHECK_STR(err.msg, "psnap: 7 arguments, at most 6");
	bad = info;
	bad.events = nul_events;
	CHECK(ps_psnap_create("/tmp/unused.psnap", &bad, &err) == NULL);
	CHECK_STR(err.msg, "psnap: an event name is NULL");
	CHECK(access("/tmp/unused.psnap", F_OK) != 0);
}
