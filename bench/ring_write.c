/* bench/ring_write.c - snapshot records per second: into the ring, and through the ring into
 * a .psnap file (1 MiB buffered writes). Records of 4 counters, as a region hit writes them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psnap.h"
#include "ring.h"
#include "run.h"
#include "snapshot.h"

#define NVALS 4

static void fill(struct ps_snap *r, uint64_t i)
{
	r->region = (uint32_t)(i & 7);
	r->tid = 1234;
	r->seq = i;
	r->hit = i;
	r->t_start = i * 100;
	r->t_end = i * 100 + 50;
	r->nvals = NVALS;
	r->nargs = 0;
	for (int k = 0; k < NVALS; k++) {
		ps_snap_start(r)[k] = i * k;
		ps_snap_end(r)[k] = i * k + 7;
	}
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000000;
	size_t rs = ps_snap_size(NVALS, 0);
	struct ps_error err;
	struct ps_ring *ring = ps_ring_new(rs, 4096, &err);
	unsigned char *sink = malloc(rs * 4096);
	char path[] = "/tmp/perfsh-bench-XXXXXX";
	const char *events[NVALS] = {"a", "b", "c", "d"};
	const char *regions[8] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"}; /* fill(): i & 7 */
	struct ps_psnap_info info = {
	    .nvals = NVALS, .nevents = NVALS, .events = events, .nregions = 8, .regions = regions};
	uint64_t t0, t;
	int fd;

	if (!ring || !sink)
		return fprintf(stderr, "ring_write: %s\n", ring ? "out of memory" : err.msg), 1;
	/* 1: reserve + fill + commit, drained in batches as the session does */
	t0 = ps_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		if (ps_ring_space(ring) == 0)
			ps_ring_read(ring, sink, 4096);
		struct ps_snap *r = ps_ring_reserve(ring);
		fill(r, i);
		ps_ring_commit(ring);
	}
	ps_ring_read(ring, sink, 4096);
	t = ps_now_ns() - t0;
	printf("ring_write: %zu-byte records: %.1f M records/s into the ring (%.1f ns each)\n", rs, n / (t / 1e3),
	       (double)t / (double)n);
	/* 2: the same, drained into a .psnap file */
	if ((fd = mkstemp(path)) < 0)
		return perror("mkstemp"), 1;
	close(fd);
	struct ps_psnap_writer *w = ps_psnap_create(path, &info, &err);
	if (!w)
		return fprintf(stderr, "ring_write: %s\n", err.msg), 1;
	t0 = ps_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		if (ps_ring_space(ring) == 0 && ps_ring_drain_to(ring, w, &err) < 0)
			return fprintf(stderr, "ring_write: %s\n", err.msg), 1;
		struct ps_snap *r = ps_ring_reserve(ring);
		fill(r, i);
		ps_ring_commit(ring);
	}
	if (ps_ring_drain_to(ring, w, &err) < 0 || ps_psnap_close(w, &err))
		return fprintf(stderr, "ring_write: %s\n", err.msg), 1;
	t = ps_now_ns() - t0;
	printf("ring_write: %.1f M records/s through the ring into %s (%.0f MB/s)\n", n / (t / 1e3), path,
	       (double)n * rs / (t / 1e3));
	printf("ring_write: dropped %llu\n", (unsigned long long)ps_ring_dropped(ring));
	unlink(path);
	ps_ring_free(ring);
	free(sink);
	return 0;
}
