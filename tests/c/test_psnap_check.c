/* tests/c/test_psnap_check.c - what a .psnap reader believes: records with sound checksums and
 * impossible values are skipped with a count and a reason, event names survive the loss of
 * their block, and blocks of records out of place cost nothing that is still in the file. */
#include "ctest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psnap_util.h"

enum { N = 10, BAD = 3 };

/* Rewrite record @i of the file (in its only RECS block) with @edit applied, CRCs recomputed. */
static void edit_record(const char *path, uint64_t i, void (*edit)(struct ps_snap *))
{
	uint64_t buf[64];
	struct ps_snap *s = (struct ps_snap *)buf;
	off_t at = psnap_block_at(path, "RECS", 0);

	psnap_fill(s, i);
	edit(s);
	psnap_patch(path, at + 32 + (off_t)(i * RECSIZE), s, RECSIZE);
	psnap_fix_block_crcs(path, at);
}

static void end_below_start(struct ps_snap *s)
{
	ps_snap_end(s)[1] = ps_snap_start(s)[1] - 1;
}
static void group_time_back(struct ps_snap *s)
{
	s->enabled_end = s->enabled_start - 1;
}
static void running_back(struct ps_snap *s)
{
	s->running_end = s->running_start - 5;
}
static void clock_back(struct ps_snap *s)
{
	s->t_end = s->t_start - 1;
}
static void tid_zero(struct ps_snap *s)
{
	s->tid = 0;
}
static void tid_huge(struct ps_snap *s)
{
	s->tid = PS_PSNAP_MAX_TID + 1;
}
static void cpu_huge(struct ps_snap *s)
{
	s->cpu_end = PS_PSNAP_MAX_CPU;
}
static void cpu_below(struct ps_snap *s)
{
	s->cpu_start = -2;
}
static void region_unnamed(struct ps_snap *s)
{
	s->region = 7;
}
static void flags_unknown(struct ps_snap *s)
{
	s->flags |= 0x100;
}
/* A thread that exited inside the region, its end unread: all zero. Possible, kept. */
static void exited_unread(struct ps_snap *s)
{
	s->flags = PS_SNAP_EXITED;
	s->enabled_end = s->running_end = 0;
	memset(ps_snap_end(s), 0, NVALS * sizeof(uint64_t));
}

/* One row per impossible value: the edit, and the reason the warning gives (NULL: kept). */
TEST(psnap_record_with_impossible_values_is_skipped_with_its_reason)
{
	static const struct {
		void (*edit)(struct ps_snap *);
		const char *why;
	} rows[] = {
	    {end_below_start, "a counter running backwards"},
	    {group_time_back, "a time running backwards"},
	    {running_back, "a time running backwards"},
	    {clock_back, "a time running backwards"},
	    {tid_zero, "a thread id out of range"},
	    {tid_huge, "a thread id out of range"},
	    {cpu_huge, "a CPU out of range"},
	    {cpu_below, "a CPU out of range"},
	    {region_unnamed, "a region no block names"},
	    {flags_unknown, "unknown flags"},
	    {exited_unread, NULL},
	};
	char path[64], want[400];
	struct ps_error err = {0};

	psnap_tmp_path(path);
	for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
		struct ps_psnap_reader *r = NULL;
		int skip = rows[k].why != NULL;

		CHECK_EQ_INT(psnap_write_file(path, N, 0, 0, &err), 0);
		edit_record(path, BAD, rows[k].edit);
		CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
		if (!r)
			continue;
		CHECK_EQ_INT(ps_psnap_count(r), N - skip);
		CHECK_EQ_INT(ps_psnap_skipped(r), skip);
		CHECK_EQ_INT(ps_psnap_lost(r), 0);
		CHECK_EQ_INT(ps_psnap_record(r, BAD)->seq, BAD + skip); /* the one after it */
		if (skip) {
			snprintf(want, sizeof want, "%s: 1 record skipped as impossible (1 with %s); %d records kept",
				 path, rows[k].why, N - 1);
			CHECK_STR(ps_psnap_warning(r), want);
		} else {
			CHECK(ps_psnap_warning(r) == NULL);
		}
		ps_psnap_reader_close(r);
	}
	unlink(path);
}

/* The example: an end one below its start, in a file of one record. Nothing else is
   readable: refused, saying why and what survived. */
TEST(psnap_only_record_impossible_is_refused_saying_why)
{
	char path[64], want[400];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;

	psnap_tmp_path(path);
	CHECK_EQ_INT(psnap_write_file(path, 1, 0, 0, &err), 0);
	edit_record(path, 0, end_below_start);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), -1);
	snprintf(want, sizeof want,
		 "%s: no readable records (1 record skipped as impossible (1 with a counter running backwards)); "
		 "what survived: the file header (version 2, 3 values and 2 arguments per record); events "
		 "instructions,cycles,cache-misses; regions sum,main",
		 path);
	CHECK_STR(err.msg, want);
	unlink(path);
}

/* Damage to the EVNT block: the names come from their copy in the metadata; with the copy
   damaged too, the columns are kept as event1..event3 and the warning says the names are lost.
   One row per damage, each added to the ones before. */
TEST(psnap_event_names_survive_their_block)
{
	static const struct {
		const char *kind; /* the damaged block, the nth of its kind */
		int nth;
		const char *second; /* the second event's name then */
		enum ps_psnap_events_from from;
		const char *what;
	} rows[] = {
	    {"EVNT", 0, "cycles", PS_PSNAP_EVENTS_COPY,
	     "1 damaged block skipped (at byte %lld: checksum mismatch), event names taken from their copy in the "
	     "metadata"},
	    {"META", 1, "event2", PS_PSNAP_EVENTS_UNKNOWN, /* the first META holds the test's own pairs */
	     "2 damaged blocks skipped (at byte %lld: checksum mismatch), event names lost: the 3 event columns are "
	     "named event1..event3"},
	};
	char path[64], what[300], want[400];
	struct ps_error err = {0};
	unsigned char x = 0x20;
	off_t evnt;

	psnap_tmp_path(path);
	CHECK_EQ_INT(psnap_write_file(path, N, 0, 0, &err), 0);
	evnt = psnap_block_at(path, "EVNT", 0);
	for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
		struct ps_psnap_reader *r = NULL;
		off_t at = psnap_block_at(path, rows[k].kind, rows[k].nth);

		CHECK(at >= evnt && evnt > 0);
		psnap_patch(path, at + 32 + 5, &x, 1);
		CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
		if (!r)
			continue;
		CHECK_EQ_INT(ps_psnap_count(r), N);
		CHECK_EQ_INT(ps_psnap_nevents(r), 3); /* without "groups" metadata: one per value */
		CHECK_STR(ps_psnap_event(r, 1), rows[k].second);
		CHECK_EQ_INT(ps_psnap_events_from(r), rows[k].from);
		snprintf(what, sizeof what, rows[k].what, (long long)evnt);
		snprintf(want, sizeof want, "%s: %s; %d records kept", path, what, N);
		CHECK_STR(ps_psnap_warning(r), want);
		ps_psnap_reader_close(r);
	}
	unlink(path);
}

/* Insert @n bytes at @off of the file (a copy of a block elsewhere, as a bad copy tool would). */
static void insert_at(const char *path, size_t off, const unsigned char *bytes, size_t n)
{
	size_t len;
	unsigned char *p = psnap_slurp(path, &len), *q = p ? malloc(len + n) : NULL;

	if (q) {
		memcpy(q, p, off);
		memcpy(q + off, bytes, n);
		memcpy(q + off + n, p + off, len - off);
		psnap_spit(path, q, len + n);
	}
	free(q);
	free(p);
}

/* A block of records copied in front of the regions block, whole: its records are read (the
   names are taken first, from the whole file), the real block is known for a repeat of it, and
   nothing is dropped. With three blocks, a copy of the last one in front loses none of the
   others either. */
TEST(psnap_records_before_their_regions_cost_nothing)
{
	static const int nth[] = {0, 2};
	char path[64], want[400];
	struct ps_error err = {0};

	psnap_tmp_path(path);
	for (size_t k = 0; k < sizeof nth / sizeof nth[0]; k++) {
		struct ps_psnap_reader *r = NULL;
		size_t n, size;
		unsigned char *p;
		off_t at, regn;
		uint64_t total;

		CHECK_EQ_INT(psnap_write_file(path, 3 * N, N, 0, &err), 0); /* blocks of 10 */
		at = psnap_block_at(path, "RECS", nth[k]);
		regn = psnap_block_at(path, "REGN", 0);
		size = psnap_block_size(path, at);
		p = psnap_slurp(path, &n);
		CHECK(p && at > regn && size > 32);
		if (!p)
			continue;
		insert_at(path, (size_t)regn, p + at, size);
		free(p);
		CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
		if (!r)
			continue;
		CHECK_EQ_INT(ps_psnap_count(r), 3 * N);
		CHECK_EQ_INT(ps_psnap_lost(r), 0);
		total = 0;
		for (uint64_t i = 0; i < ps_psnap_count(r); i++)
			total += psnap_same(ps_psnap_record(r, i), i);
		CHECK_EQ_INT(total, 3 * N); /* each record once, in order */
		snprintf(want, sizeof want, "%s: 1 repeated block of records ignored (at byte %lld); %d records kept",
			 path, (long long)(at + (off_t)size), 3 * N);
		CHECK_STR(ps_psnap_warning(r), want);
		ps_psnap_reader_close(r);
	}
	unlink(path);
}

/* Names are the file's bytes: a refusal that prints them stays one line (a name with a newline
   in a file cut before its first record). Found by fuzzing. */
TEST(psnap_refusal_is_one_line_whatever_the_names_hold)
{
	static const char *const events[] = {"ins\ntructions"}, *const regions[] = {"s\num"};
	static const struct ps_psnap_meta meta[] = {{"command", "./prog\r\nx"}};
	struct ps_psnap_info info = {1, 0, 1, events, 1, regions, 1, meta};
	char path[64], want[400];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	struct ps_psnap_writer *w;

	psnap_tmp_path(path);
	w = ps_psnap_create(path, &info, &err);
	CHECK(w != NULL);
	if (!w)
		return;
	CHECK_EQ_INT(ps_psnap_flush(w, &err), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), -1); /* no record, no END: the writer is still on it */
	snprintf(want, sizeof want,
		 "%s: no readable records (no END block (the writer did not close it)); what survived: the file "
		 "header (version 2, 1 value and 0 arguments per record); events ins?tructions; regions s?um; "
		 "command ./prog??x",
		 path);
	CHECK_STR(err.msg, want);
	ps_psnap_close(w, &err);
	unlink(path);
}

/* An EVNT block whose checksums hold and whose names do not parse: the names come from their
   copy, and nothing the failed parse allocated is lost (make SAN=1 check's leak check). Found
   by fuzzing. */
TEST(psnap_unparsable_event_names_taken_from_their_copy)
{
	char path[64];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	uint32_t huge = 1u << 30;
	off_t evnt;

	psnap_tmp_path(path);
	CHECK_EQ_INT(psnap_write_file(path, N, 0, 0, &err), 0);
	evnt = psnap_block_at(path, "EVNT", 0);
	psnap_patch(path, evnt + 32, &huge, 4); /* the first name's length */
	psnap_fix_block_crcs(path, evnt);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (!r)
		return;
	CHECK_EQ_INT(ps_psnap_events_from(r), PS_PSNAP_EVENTS_COPY);
	CHECK_STR(ps_psnap_event(r, 0), "instructions");
	CHECK(strstr(ps_psnap_warning(r), "(at byte 32: bad event names)") != NULL);
	ps_psnap_reader_close(r);
	unlink(path);
}
