/* tests/fuzz/fuzz_psnap.c - libFuzzer target: the .psnap reader on any bytes.
 *
 * The input becomes a file (a memfd, opened by its /proc/self/fd path as perfsh report
 * opens a file) and goes through ps_psnap_open(). Whatever the bytes, the reader must not
 * crash or read out of bounds, must fail with one line naming the file, or keep only
 * records that pass the format's checks (psnap.h: what a record can be); everything it
 * returns is touched.
 *   corpus: tests/fuzz/corpus/psnap/ (valid, cut and damaged files; crash inputs found)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "psnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                                                  \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			fprintf(stderr, "fuzz_psnap: %s:%d: %s\n", __FILE__, __LINE__, #cond);                         \
			abort();                                                                                       \
		}                                                                                                      \
	} while (0)

static volatile uint64_t sink;

/* A value that does not run backwards, or the unread end (0) of a thread that exited. */
static int possible(uint64_t start, uint64_t end, const struct ps_snap *s)
{
	return end >= start || (end == 0 && (s->flags & PS_SNAP_EXITED));
}

/* Touch every name and every byte of every record the reader kept; check the records. */
static void walk(struct ps_psnap_reader *r)
{
	size_t recsize = ps_psnap_recsize(r);
	uint64_t n = ps_psnap_count(r), acc = 0;
	unsigned char buf[4096];
	struct ps_error err;

	REQUIRE(ps_psnap_nevents(r) <= ps_psnap_nvals(r));
	REQUIRE(ps_psnap_events_from(r) == PS_PSNAP_EVENTS_BLOCK || ps_psnap_nevents(r) > 0);
	acc += ps_psnap_skipped(r) + ps_psnap_lost(r);
	for (size_t i = 0; i < ps_psnap_nevents(r); i++)
		acc += strlen(ps_psnap_event(r, i));
	for (size_t i = 0; i < ps_psnap_nregions(r); i++)
		acc += ps_psnap_region(r, i) ? strlen(ps_psnap_region(r, i)) : 0;
	for (size_t i = 0; i < ps_psnap_nmeta(r); i++)
		acc += strlen(ps_psnap_meta_key(r, i)) + strlen(ps_psnap_meta_value(r, i));
	if (ps_psnap_meta_get(r, "groups"))
		acc++;
	for (uint64_t i = 0; i < n; i++) {
		const struct ps_snap *s = ps_psnap_record(r, i);
		struct ps_snap *w = (struct ps_snap *)s;

		REQUIRE(s != NULL);
		REQUIRE(s->nvals == ps_psnap_nvals(r) && s->nargs == ps_psnap_nargs(r));
		REQUIRE(s->region < ps_psnap_nregions(r));
		REQUIRE(s->cpu_start >= -1 && s->cpu_end >= -1);
		REQUIRE(s->cpu_start < PS_PSNAP_MAX_CPU && s->cpu_end < PS_PSNAP_MAX_CPU);
		REQUIRE(s->tid > 0 && s->tid <= PS_PSNAP_MAX_TID);
		REQUIRE(s->t_end >= s->t_start);
		REQUIRE(possible(s->enabled_start, s->enabled_end, s) && possible(s->running_start, s->running_end, s));
		for (unsigned k = 0; k < s->nvals; k++)
			REQUIRE(possible(ps_snap_start(w)[k], ps_snap_end(w)[k], s));
		for (unsigned k = 0; k < s->nargs; k++)
			acc += ps_snap_args(w)[k];
		for (unsigned k = 0; k < s->nvals; k++)
			acc += ps_snap_end(w)[k] - ps_snap_start(w)[k];
	}
	REQUIRE(ps_psnap_record(r, n) == NULL);
	REQUIRE(recsize <= sizeof buf);
	for (uint64_t i = 0; i < n; i++)
		REQUIRE(ps_psnap_read(r, buf, 1, &err) == 1 && memcmp(buf, ps_psnap_record(r, i), recsize) == 0);
	REQUIRE(ps_psnap_read(r, buf, 1, &err) == 0);
	/* a warning unless the file is complete, one line */
	REQUIRE(ps_psnap_complete(r) == (ps_psnap_warning(r) == NULL));
	if (ps_psnap_warning(r))
		REQUIRE(!strchr(ps_psnap_warning(r), '\n'));
	sink = acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_psnap_reader *r = NULL;
	struct ps_error err = {0};
	char path[64];
	int fd = memfd_create("fuzz.psnap", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (ps_psnap_open(path, &r, &err) == 0) {
		walk(r);
		ps_psnap_reader_close(r);
	} else {
		REQUIRE(r == NULL);
		REQUIRE(strncmp(err.msg, path, strlen(path)) == 0 && !strchr(err.msg, '\n'));
	}
	close(fd);
	return 0;
}
