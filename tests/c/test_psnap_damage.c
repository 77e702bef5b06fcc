/* tests/c/test_psnap_damage.c - cut and damaged .psnap files: every prefix reads back up to its
 * last whole record, a damaged block costs that block only, 2,000 mutated copies never crash
 * nor give a record that was not written. */
#include "ctest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psnap_util.h"

/* Each kept record is one that was written (its seq says which), in order, none twice. */
static int records_sound(const struct ps_psnap_reader *r, uint64_t nwritten, uint64_t *total)
{
	uint64_t prev = 0;

	*total = 0;
	for (uint64_t i = 0; i < ps_psnap_count(r); i++) {
		const struct ps_snap *s = ps_psnap_record(r, i);

		if (!s || s->seq >= nwritten || (i && s->seq <= prev) || !psnap_same(s, s->seq) ||
		    s->region >= ps_psnap_nregions(r))
			return 0;
		prev = s->seq;
		*total += ps_snap_end((struct ps_snap *)s)[0] - ps_snap_start((struct ps_snap *)s)[0];
	}
	return 1;
}

/* File offsets where each record ends, from the blocks of the intact file. */
static uint64_t *record_ends(const unsigned char *p, size_t n, uint64_t nrecs)
{
	uint64_t *end = calloc(nrecs, sizeof *end), k = 0;
	size_t off = 32;

	while (end && off + 32 <= n) {
		uint32_t len, count;

		memcpy(&count, p + off + 4, 4);
		memcpy(&len, p + off + 16, 4);
		if (memcmp(p + off, "RECS", 4) == 0)
			for (uint32_t j = 0; j < count && k < nrecs; j++)
				end[k++] = off + 32 + (j + 1) * RECSIZE;
		off += 32 + len;
	}
	return end;
}

/* A prefix of @len bytes without a whole record: refused in one line that says it was cut and
   what survived, the header's fields and the names wholly inside it (@evnt_end, @regn_end: where
   the first EVNT and REGN blocks end). 0 when the message is as it should be. */
static int refused_as_cut(const char *path, size_t len, const char *msg, size_t evnt_end, size_t regn_end)
{
	char head[160];
	int bad = strncmp(msg, path, strlen(path)) != 0 || strchr(msg, '\n') != NULL;

	snprintf(head, sizeof head, "%s: no readable records (", path);
	if (len == 0)
		return bad + !strstr(msg, "not a perfsh snapshot file (empty)");
	bad += strncmp(msg, head, strlen(head)) != 0;
	if (len < 32)
		return bad + !strstr(msg, "inside the 32-byte file header (truncated file)") +
		       (len >= 20 && !strstr(msg, "version 2, 3 values and 2 arguments per record (unchecked"));
	bad += !strstr(msg, "; what survived: the file header (version 2, 3 values and 2 arguments per record)");
	bad += (len >= evnt_end) != (strstr(msg, "; events instructions,cycles,cache-misses") != NULL);
	bad += (len >= regn_end) != (strstr(msg, "; regions sum,main") != NULL);
	return bad + (!strstr(msg, "(truncated file)") && !strstr(msg, "no END block"));
}

/* Every prefix of a file, from 0 bytes to the whole (a writer killed at any instant, a copy cut
   anywhere), gives exactly the records wholly inside it, the names first, with a warning; or,
   when it holds no whole record, is refused in one line with what survived of the header and
   the names: the same error at every length. */
TEST(psnap_every_prefix_keeps_its_records_or_says_what_survived)
{
	enum { N = 40 };
	char path[64], cut[80];
	struct ps_error err = {0};
	size_t n, evnt_end, regn_end;
	unsigned char *p;
	uint64_t *end, total;
	int bad = 0;

	psnap_tmp_path(path);
	snprintf(cut, sizeof cut, "%s.cut", path);
	CHECK_EQ_INT(psnap_write_file(path, N, 9, 1, &err), 0);
	evnt_end = (size_t)psnap_block_at(path, "EVNT", 0) + psnap_block_size(path, psnap_block_at(path, "EVNT", 0));
	regn_end = (size_t)psnap_block_at(path, "REGN", 0) + psnap_block_size(path, psnap_block_at(path, "REGN", 0));
	p = psnap_slurp(path, &n);
	end = p ? record_ends(p, n, N) : NULL;
	if (!end) {
		CHECK(end != NULL);
		free(p);
		return;
	}
	CHECK_EQ_INT(end[N - 1] > 0, 1);
	CHECK(evnt_end < regn_end && regn_end < end[0]);
	for (size_t len = 0; len <= n; len++) {
		struct ps_psnap_reader *r = NULL;
		uint64_t want = 0;
		int rc, was = bad;

		while (want < N && end[want] <= len)
			want++;
		psnap_spit(cut, p, len);
		rc = ps_psnap_open(cut, &r, &err);
		if (rc != 0) {
			bad += want != 0 || refused_as_cut(cut, len, err.msg, evnt_end, regn_end);
		} else {
			bad += ps_psnap_count(r) != want || !records_sound(r, N, &total) || want == 0;
			bad += ps_psnap_nevents(r) != 3; /* the names precede the records */
			bad += ps_psnap_nregions(r) < 2 || strcmp(ps_psnap_region(r, 1), "main") != 0;
			bad += (len == n) != (ps_psnap_warning(r) == NULL);
		}
		if (bad > was && was == 0)
			fprintf(stderr, "  prefix of %zu bytes: %llu records, want %llu (%s)\n", len,
				r ? (unsigned long long)ps_psnap_count(r) : 0ull, (unsigned long long)want,
				r ? (ps_psnap_warning(r) ? ps_psnap_warning(r) : "no warning") : err.msg);
		ps_psnap_reader_close(r);
	}
	CHECK_EQ_INT(bad, 0);
	free(end);
	free(p);
	unlink(cut);
	unlink(path);
}

/* The example of the issue: a cut mid-block keeps the whole records and says what was cut. */
TEST(psnap_cut_message)
{
	char path[64], want[240];
	struct ps_error err = {0};
	struct ps_psnap_reader *r = NULL;
	off_t at;

	psnap_tmp_path(path);
	CHECK_EQ_INT(psnap_write_file(path, 1000, 0, 1, &err), 0);
	at = psnap_block_at(path, "RECS", 0);
	CHECK(at > 0);
	CHECK_EQ_INT(truncate(path, at + 32 + 150 * (off_t)RECSIZE + 50), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (!r)
		return;
	CHECK_EQ_INT(ps_psnap_count(r), 150);
	CHECK_EQ_INT(ps_psnap_truncated(r), 1);
	CHECK_EQ_INT(ps_psnap_complete(r), 0);
	CHECK_EQ_INT(ps_psnap_ignored_bytes(r), 50);
	CHECK_EQ_INT(ps_psnap_lost(r), 850);
	CHECK_EQ_INT(ps_psnap_nregions(r), 2); /* "late" came after the records */
	snprintf(want, sizeof want,
		 "%s: cut after record 150 of a block of 1000 (truncated file), 850 records lost; 150 records kept",
		 path);
	CHECK_STR(ps_psnap_warning(r), want);
	CHECK(psnap_same(ps_psnap_record(r, 149), 149));
	CHECK(ps_psnap_record(r, 150) == NULL);
	ps_psnap_reader_close(r);
	unlink(path);
}

/* A damaged block (payload or header) is skipped; the blocks around it are kept, and the
   records lost are counted from the next block's first index. */
TEST(psnap_damaged_block_skipped)
{
	static const struct {
		off_t delta; /* from the second RECS block's header */
		const char *why;
	} rows[] = {{32 + 100, "checksum mismatch"}, {4, "bad block header"}, {16, "bad block header"}};
	char path[64], want[240];
	struct ps_error err = {0};

	psnap_tmp_path(path);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_psnap_reader *r = NULL;
		uint64_t total;
		off_t at;
		unsigned char x = 0x5a;

		CHECK_EQ_INT(psnap_write_file(path, 30, 10, 0, &err), 0);
		at = psnap_block_at(path, "RECS", 1);
		CHECK(at > 0);
		psnap_patch(path, at + rows[i].delta, &x, 1);
		CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
		if (!r)
			continue;
		CHECK_EQ_INT(ps_psnap_count(r), 20);
		CHECK_EQ_INT(ps_psnap_lost(r), 10);
		CHECK(records_sound(r, 30, &total));
		CHECK_EQ_INT(ps_psnap_record(r, 10)->seq, 20);
		snprintf(want, sizeof want,
			 "%s: 1 damaged block skipped (at byte %lld: %s), 10 records lost; 20 records kept", path,
			 (long long)at, rows[i].why);
		CHECK_STR(ps_psnap_warning(r), want);
		ps_psnap_reader_close(r);
	}
	unlink(path);
}

/* Deterministic PRNG (xorshift64*). */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* One mutation of @p (n bytes) in place; returns the new length. */
static size_t mutate(unsigned char *p, size_t n, uint64_t *s)
{
	uint64_t big[] = {UINT64_MAX, UINT64_MAX - 7, 1ull << 63, 1ull << 32, 0xffffffffull, 0, 1, 88};
	size_t at = (size_t)(rnd(s) % n);

	switch (rnd(s) % 6) {
	case 0: /* a few bit flips */
		for (int k = 1 + (int)(rnd(s) % 3); k > 0; k--, at = (size_t)(rnd(s) % n))
			p[at] ^= (unsigned char)(1u << (rnd(s) % 8));
		return n;
	case 1: /* a random byte */
		p[at] = (unsigned char)rnd(s);
		return n;
	case 2: /* an extreme 64-bit value at an aligned offset */
		at &= ~(size_t)7;
		if (at + 8 <= n)
			memcpy(p + at, &big[rnd(s) % 8], 8);
		return n;
	case 3: /* an extreme 32-bit value */
		at &= ~(size_t)3;
		if (at + 4 <= n)
			memcpy(p + at, &big[rnd(s) % 8], 4);
		return n;
	case 4: /* zeroes, as a lost page would read */
		memset(p + at, 0, (n - at) < 64 ? n - at : 64);
		return n;
	default: /* cut */
		return at;
	}
}

TEST(psnap_mutations_2000)
{
	enum { N = 60 };
	char path[64], copy[80];
	struct ps_error err = {0};
	size_t n;
	unsigned char *orig, *p;
	uint64_t seed = 0x9e3779b97f4a7c15ull, total_orig = 0, total;
	int opened = 0, refused = 0, bad = 0;

	psnap_tmp_path(path);
	snprintf(copy, sizeof copy, "%s.mut", path);
	CHECK_EQ_INT(psnap_write_file(path, N, 20, 1, &err), 0);
	orig = psnap_slurp(path, &n);
	p = orig ? malloc(n) : NULL;
	if (!p) {
		CHECK(p != NULL);
		free(orig);
		return;
	}
	for (uint64_t i = 0; i < N; i++)
		total_orig += 1000; /* end - start of value 0 in psnap_fill */
	for (int m = 0; m < 2000; m++) {
		struct ps_psnap_reader *r = NULL;
		size_t len;

		memcpy(p, orig, n);
		len = mutate(p, n, &seed);
		psnap_spit(copy, p, len);
		err.msg[0] = '\0';
		if (ps_psnap_open(copy, &r, &err) != 0) {
			refused++;
			bad += strncmp(err.msg, copy, strlen(copy)) != 0 || strchr(err.msg, '\n') != NULL;
			continue;
		}
		opened++;
		if (!records_sound(r, N, &total) || total > total_orig ||
		    ps_psnap_count(r) + ps_psnap_lost(r) + ps_psnap_skipped(r) > N ||
		    (ps_psnap_count(r) < N && ps_psnap_warning(r) == NULL)) {
			if (!bad)
				fprintf(stderr, "  mutation %d: %llu records (%s)\n", m,
					(unsigned long long)ps_psnap_count(r),
					ps_psnap_warning(r) ? ps_psnap_warning(r) : "no warning");
			bad++;
		}
		ps_psnap_reader_close(r);
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(opened > 1000 && refused > 10); /* most copies keep records; a damaged header refuses */
	free(p);
	free(orig);
	unlink(copy);
	unlink(path);
}
