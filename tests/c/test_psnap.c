/* tests/c/test_psnap.c - .psnap files: round trip, foreign and corrupt headers, writer checks.
 * Cut and damaged files: tests/c/test_psnap_damage.c. */
#include "ctest.h"

#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "psnap_util.h"

#define NRECS 100000u

TEST(psnap_roundtrip_100k)
{
	char path[64];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	uint64_t *buf = malloc(777 * RECSIZE);
	uint64_t bad = 0, next = 0;
	ssize_t n;

	psnap_tmp_path(path);
	CHECK_EQ_INT(psnap_write_file(path, NRECS, 0, 1, &err), 0);
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
	CHECK_EQ_INT(ps_psnap_nmeta(r), 6); /* the two pairs, the copy of the 3 event names, "end" */
	CHECK_STR(ps_psnap_meta_key(r, 0), "cmdline");
	CHECK_STR(ps_psnap_meta_get(r, "event.0"), "instructions");
	CHECK_STR(ps_psnap_meta_get(r, "event.2"), "cache-misses");
	CHECK_EQ_INT(ps_psnap_events_from(r), PS_PSNAP_EVENTS_BLOCK);
	CHECK_EQ_INT(ps_psnap_skipped(r), 0);
	CHECK_STR(ps_psnap_meta_value(r, 0), "perfsh stat -f sum ./examples/sum");
	CHECK_STR(ps_psnap_meta_get(r, "host"), "box");
	CHECK_STR(ps_psnap_meta_get(r, "end"), "12:00");
	CHECK(ps_psnap_meta_get(r, "nope") == NULL);
	CHECK_EQ_INT(ps_psnap_count(r), NRECS);
	CHECK_EQ_INT(ps_psnap_complete(r), 1);
	CHECK_EQ_INT(ps_psnap_truncated(r), 0);
	CHECK_EQ_INT(ps_psnap_ignored_bytes(r), 0);
	CHECK_EQ_INT(ps_psnap_lost(r), 0);
	CHECK(ps_psnap_warning(r) == NULL);
	for (uint64_t i = 0; i < NRECS; i++) {
		const struct ps_snap *s = ps_psnap_record(r, i);

		bad += !s || !psnap_same(s, i);
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(ps_psnap_record(r, NRECS) == NULL);
	while ((n = ps_psnap_read(r, buf, 777, &err)) > 0)
		for (ssize_t j = 0; j < n; j++, next++)
			bad += !psnap_same((const struct ps_snap *)((char *)buf + j * RECSIZE), next);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(next, NRECS);
	CHECK_EQ_INT(bad, 0);
	ps_psnap_rewind(r);
	CHECK_EQ_INT(ps_psnap_read(r, buf, 1, &err), 1);
	CHECK(psnap_same((const struct ps_snap *)buf, 0));
	ps_psnap_reader_close(r);
	free(buf);
	unlink(path);
}

/* A writer that has not closed (or died): records up to the last flush, names included. */
TEST(psnap_read_while_writing)
{
	char path[64], want[200];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	struct ps_psnap_writer *w;
	uint64_t buf[64];

	psnap_tmp_path(path);
	w = ps_psnap_create(path, &psnap_test_info, &err);
	CHECK(w != NULL);
	if (!w)
		return;
	for (uint64_t i = 0; i < 5; i++) {
		psnap_fill((struct ps_snap *)buf, i);
		CHECK_EQ_INT(ps_psnap_write(w, buf, 1, &err), 0);
	}
	CHECK_EQ_INT(ps_psnap_add_region(w, "late", &err), 2);
	CHECK_EQ_INT(ps_psnap_writer_count(w), 5);
	CHECK_EQ_INT(ps_psnap_flush(w, &err), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (r) {
		CHECK_EQ_INT(ps_psnap_count(r), 5);
		CHECK_EQ_INT(ps_psnap_complete(r), 0);
		CHECK_EQ_INT(ps_psnap_truncated(r), 0);
		CHECK_EQ_INT(ps_psnap_nregions(r), 3);
		CHECK_STR(ps_psnap_region(r, 2), "late");
		CHECK(psnap_same(ps_psnap_record(r, 4), 4));
		snprintf(want, sizeof want, "%s: no END block (the writer did not close it); 5 records kept", path);
		CHECK_STR(ps_psnap_warning(r), want);
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
	char path[64], want[320];
	static const char text[] = "#!/bin/sh\necho not a snapshot\n";
	struct ps_error err = {0};

	psnap_tmp_path(path);
	snprintf(want, sizeof want, "%s: not a perfsh snapshot file (empty)", path);
	open_fails(ctest_self, path, want);
	psnap_patch(path, 0, text, sizeof text - 1);
	snprintf(want, sizeof want, "%s: not a perfsh snapshot file (bad magic)", path);
	open_fails(ctest_self, path, want);
	CHECK_EQ_INT(psnap_write_file(path, 10, 0, 0, &err), 0);
	CHECK_EQ_INT(truncate(path, 30), 0);
	snprintf(want, sizeof want,
		 "%s: no readable records (cut at byte 30, inside the 32-byte file header (truncated file)); what "
		 "survived: version 2, 3 values and 2 arguments per record (unchecked: the header's checksum was cut "
		 "off)",
		 path);
	open_fails(ctest_self, path, want);
	unlink(path);
	snprintf(want, sizeof want, "%s: No such file or directory", path);
	open_fails(ctest_self, path, want);
	open_fails(ctest_self, "/tmp", "/tmp: not a regular file");
	open_fails(ctest_self, "/proc/self/status", "/proc/self/status: not a regular file");
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0)
		open_fails(ctest_self, "/sys/kernel/mm/transparent_hugepage/enabled",
			   "/sys/kernel/mm/transparent_hugepage/enabled: not a regular file");
}

/* One row per corruption of the file header: field, value, CRC fixed?, the message's tail. */
TEST(psnap_corrupt_headers)
{
	static const struct {
		off_t off;
		uint32_t value;
		size_t n;
		int fix_crc;
		const char *msg;
	} rows[] = {
	    {8, 7, 4, 0, "snapshot version 7 is not supported (this perfsh reads 2)"},
	    {8, 1, 4, 1, "snapshot version 1 is not supported (this perfsh reads 2)"},
	    {20, 160, 4, 1, "corrupt header (record size 160, expected 152 for 3 values and 2 arguments)"},
	    {16, 17, 2, 1, "corrupt header (17 values and 2 arguments, at most 16 and 6)"},
	    {12, 80, 4, 1, "corrupt header (record header of 80 bytes, expected 88)"},
	    {16, 4, 2, 0, "corrupt header (checksum mismatch)"},
	    {24, 1, 1, 0, "corrupt header (checksum mismatch)"},
	};
	char path[64], want[200];
	struct ps_error err = {0};

	psnap_tmp_path(path);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CHECK_EQ_INT(psnap_write_file(path, 10, 0, 1, &err), 0);
		psnap_patch(path, rows[i].off, &rows[i].value, rows[i].n);
		if (rows[i].fix_crc)
			psnap_fix_header_crc(path);
		snprintf(want, sizeof want, "%s: %s", path, rows[i].msg);
		open_fails(ctest_self, path, want);
	}
	unlink(path);
}

/* The writer refuses records the reader would drop, and the file stays good. */
TEST(psnap_writer_checks_records)
{
	char path[64];
	struct ps_error err = {0};
	struct ps_psnap_writer *w;
	struct ps_psnap_reader *r = NULL;
	uint64_t buf[64];
	struct ps_snap *s = (struct ps_snap *)buf;

	psnap_tmp_path(path);
	w = ps_psnap_create(path, &psnap_test_info, &err);
	if (!w) {
		CHECK(w != NULL);
		return;
	}
	psnap_fill(s, 0);
	s->region = 2;
	CHECK_EQ_INT(ps_psnap_write(w, buf, 1, &err), -1);
	CHECK(strstr(err.msg, ": record 0 has region 2, not named yet") != NULL);
	psnap_fill(s, 0);
	s->nvals = 2;
	CHECK_EQ_INT(ps_psnap_write(w, buf, 1, &err), -1);
	CHECK(strstr(err.msg, ": record 0 has 2 values and 2 arguments, the file 3 and 2") != NULL);
	CHECK_EQ_INT(ps_psnap_add_region(w, "late", &err), 2);
	psnap_fill(s, 0);
	s->region = 2;
	CHECK_EQ_INT(ps_psnap_write(w, buf, 1, &err), 0);
	CHECK_EQ_INT(ps_psnap_close(w, &err), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (r) {
		CHECK_EQ_INT(ps_psnap_count(r), 1);
		CHECK_EQ_INT(ps_psnap_record(r, 0)->region, 2);
		CHECK_EQ_INT(ps_psnap_complete(r), 1);
		ps_psnap_reader_close(r);
	}
	unlink(path);
}

/* A failed write is reported, by write and again by close; create writes at once. */
TEST(psnap_write_errors)
{
	struct ps_error err = {0};
	struct ps_psnap_writer *w;

	w = ps_psnap_create("/nonexistent-dir/x.psnap", &psnap_test_info, &err);
	CHECK(w == NULL);
	CHECK_STR(err.msg, "/nonexistent-dir/x.psnap: open: No such file or directory");
	if (access("/dev/full", W_OK) != 0)
		SKIP("no /dev/full");
	w = ps_psnap_create("/dev/full", &psnap_test_info, &err);
	CHECK(w == NULL);
	CHECK_STR(err.msg, "/dev/full: write: No space left on device");
	CHECK_EQ_INT(ps_psnap_close(NULL, &err), 0);
}

/* A write failing mid-run: sticky, reported by later calls and close. */
TEST(psnap_write_errors_sticky)
{
	struct ps_error err = {0};
	struct ps_psnap_writer *w;
	uint64_t *buf = malloc(8000 * RECSIZE);
	int fds[2];
	char path[64];

	if (!buf || pipe(fds) != 0) {
		free(buf);
		SKIP("no memory or pipe");
	}
	for (size_t i = 0; i < 8000; i++)
		psnap_fill((struct ps_snap *)((char *)buf + i * RECSIZE), i);
	snprintf(path, sizeof path, "/dev/fd/%d", fds[1]);
	w = ps_psnap_create(path, &psnap_test_info, &err); /* a pipe works: nothing is patched */
	close(fds[0]);					   /* then the reader goes: EPIPE */
	CHECK(w != NULL);
	if (w) {
		void (*old)(int) = signal(SIGPIPE, SIG_IGN);

		CHECK_EQ_INT(ps_psnap_write(w, buf, 8000, &err), -1);
		CHECK(strstr(err.msg, ": write: Broken pipe") != NULL);
		err.msg[0] = '\0';
		CHECK_EQ_INT(ps_psnap_write(w, buf, 1, &err), -1);
		CHECK(strstr(err.msg, ": write: Broken pipe") != NULL);
		err.msg[0] = '\0';
		CHECK_EQ_INT(ps_psnap_close(w, &err), -1);
		CHECK(strstr(err.msg, ": write: Broken pipe") != NULL);
		signal(SIGPIPE, old);
	}
	close(fds[1]);
	free(buf);
}

TEST(psnap_create_errors)
{
	struct ps_error err = {0};
	struct ps_psnap_info bad = psnap_test_info;
	const char *const nul_events[] = {"a", NULL, "c"};

	bad.nvals = 17;
	CHECK(ps_psnap_create("/tmp/unused.psnap", &bad, &err) == NULL);
	CHECK_STR(err.msg, "psnap: 17 values, at most 16");
	bad = psnap_test_info;
	bad.nargs = 7;
	CHECK(ps_psnap_create("/tmp/unused.psnap", &bad, &err) == NULL);
	CHECK_STR(err.msg, "psnap: 7 arguments, at most 6");
	bad = psnap_test_info;
	bad.events = nul_events;
	CHECK(ps_psnap_create("/tmp/unused.psnap", &bad, &err) == NULL);
	CHECK_STR(err.msg, "psnap: an event name is NULL");
	bad = psnap_test_info;
	bad.nevents = 4;
	CHECK(ps_psnap_create("/tmp/unused.psnap", &bad, &err) == NULL);
	CHECK_STR(err.msg, "psnap: 4 event names for 3 values");
	CHECK(access("/tmp/unused.psnap", F_OK) != 0);
}

/* ps_psnap_finish: END and the buffer written (a signal handler's close); later writes refused,
   close frees without writing again. */
TEST(psnap_finish)
{
	struct ps_error err = {0};
	struct ps_psnap_writer *w;
	struct ps_psnap_reader *r;
	unsigned char rec[512];
	char path[64];

	psnap_tmp_path(path);
	w = ps_psnap_create(path, &psnap_test_info, &err);
	CHECK(w != NULL);
	if (!w)
		return;
	for (uint64_t i = 0; i < 5; i++) {
		psnap_fill((struct ps_snap *)rec, i);
		CHECK_EQ_INT(ps_psnap_write(w, rec, 1, &err), 0);
	}
	CHECK_EQ_INT(ps_psnap_finish(w, &err), 0);
	CHECK_EQ_INT(ps_psnap_write(w, rec, 1, &err), -1);
	CHECK(strstr(err.msg, "the file is finished") != NULL);
	CHECK_EQ_INT(ps_psnap_finish(w, &err), -1);
	CHECK_EQ_INT(ps_psnap_close(w, &err), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (r) {
		CHECK_EQ_INT(ps_psnap_complete(r), 1);
		CHECK_EQ_INT(ps_psnap_count(r), 5);
		CHECK(ps_psnap_warning(r) == NULL);
		ps_psnap_reader_close(r);
	}
	unlink(path);
}

/* The metadata pairs of a region: the one place their keys are made (table-driven). */
TEST(psnap_region_pairs_keys)
{
	static const struct {
		int id;
		struct ps_psnap_region_meta m;
		const char *want; /* "key=value;" each */
	} rows[] = {
	    {0, {"func", 1, 55, 0}, "entries.0=55;kind.0=func;"},
	    {3, {"marker", 0, 0, 1}, "kind.3=marker;sampled.3=1;"},
	    {255, {NULL, 1, 18446744073709551615ull, 0}, "entries.255=18446744073709551615;"},
	    {7, {"range", 1, 0, 1}, "entries.7=0;kind.7=range;sampled.7=1;"},
	    {1, {NULL, 0, 0, 0}, ""},
	};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_psnap_region_pairs p;
		char got[256] = "";
		size_t n = ps_psnap_region_pairs(rows[i].id, &rows[i].m, &p);

		CHECK_EQ_INT(n, p.n);
		for (size_t k = 0; k < p.n; k++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s=%s;", p.meta[k].key, p.meta[k].value);
		CHECK_STR(got, rows[i].want);
	}
}
