/* tests/c/test_ring.c - the SPSC ring: geometry, overflow, threads, shared memory, spill. */
#include "ctest.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "psnap.h"
#include "ring.h"
#include "snapshot.h"

#define NVALS 3
#define NARGS 2
#define RECSIZE ps_snap_size(NVALS, NARGS)
#define TOTAL 1000000u
#define CAP 1024u

/* A record whose every field is derived from @seq. */
static void fill(struct ps_snap *s, uint64_t seq)
{
	memset(s, 0, RECSIZE);
	s->nvals = NVALS;
	s->nargs = NARGS;
	s->seq = seq;
	s->region = (uint32_t)(seq % 7);
	s->tid = 1000; /* a thread id a reader believes (psnap.h) */
	s->t_start = seq * 3;
	s->t_end = seq * 3 + 1;
	for (unsigned i = 0; i < NARGS; i++)
		ps_snap_args(s)[i] = seq + 100 + i;
	for (unsigned i = 0; i < NVALS; i++) {
		ps_snap_start(s)[i] = seq ^ (0x5555u + i);
		ps_snap_end(s)[i] = ~seq - i;
	}
}

/* 1 when @s is exactly what fill(@seq) makes. */
static int same(const struct ps_snap *s, uint64_t seq)
{
	uint64_t want[64];

	fill((struct ps_snap *)want, seq);
	return memcmp(s, want, RECSIZE) == 0;
}

TEST(ring_geometry_errors)
{
	struct ps_error err = {0};
	_Alignas(PS_RING_ALIGN) uint64_t mem[64];

	CHECK(ps_ring_new(RECSIZE, 1000, &err) == NULL);
	CHECK_STR(err.msg, "ring: capacity 1000 is not a power of two");
	CHECK(ps_ring_new(12, 1024, &err) == NULL);
	CHECK_STR(err.msg, "ring: record size 12 is not a non-zero multiple of 8");
	CHECK(ps_ring_init_at(mem, sizeof mem, RECSIZE, 4, &err) == NULL);
	CHECK(strstr(err.msg, "bytes given") != NULL);
	CHECK(ps_ring_init_at((char *)mem + 8, 256, 8, 4, &err) == NULL);
	CHECK(strstr(err.msg, "not 64-byte aligned") != NULL);
	CHECK_EQ_INT(ps_ring_bytes(SIZE_MAX / 2, 4), 0);
}

TEST(ring_basic)
{
	struct ps_error err = {0};
	struct ps_ring *r = ps_ring_new(RECSIZE, 4, &err);
	uint64_t rec[64];
	const struct ps_snap *p;
	struct ps_snap *s;

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(ps_ring_capacity(r), 4);
	CHECK_EQ_INT(ps_ring_recsize(r), RECSIZE);
	CHECK(ps_ring_peek(r) == NULL);
	CHECK_EQ_INT(ps_ring_read(r, rec, 4), 0);
	s = ps_ring_reserve(r);
	CHECK(s != NULL && (uintptr_t)s % 8 == 0);
	CHECK(ps_ring_reserve(r) == s); /* same slot until commit */
	fill(s, 0);
	CHECK_EQ_INT(ps_ring_count(r), 0);
	ps_ring_commit(r);
	CHECK_EQ_INT(ps_ring_count(r), 1);
	CHECK_EQ_INT(ps_ring_space(r), 3);
	for (uint64_t i = 1; i < 4; i++) {
		fill((struct ps_snap *)rec, i);
		CHECK_EQ_INT(ps_ring_push(r, rec), 0);
	}
	fill((struct ps_snap *)rec, 4);
	CHECK_EQ_INT(ps_ring_push(r, rec), -1);
	CHECK(ps_ring_reserve(r) == NULL);
	CHECK_EQ_INT(ps_ring_dropped(r), 2);
	p = ps_ring_peek(r);
	CHECK(p && same(p, 0));
	ps_ring_pop(r);
	CHECK_EQ_INT(ps_ring_count(r), 3);
	CHECK_EQ_INT(ps_ring_push(r, rec), 0); /* seq 4 now fits, wraps to slot 0 */
	for (uint64_t i = 1; i <= 4; i++) {
		CHECK_EQ_INT(ps_ring_read(r, rec, 1), 1);
		CHECK(same((struct ps_snap *)rec, i));
	}
	CHECK_EQ_INT(ps_ring_count(r), 0);
	CHECK_EQ_INT(ps_ring_dropped(r), 2);
	ps_ring_free(r);
	ps_ring_free(NULL);
}

/* No consumer: the first CAP records stay, every later one is dropped and counted. */
TEST(ring_overflow_counts_drops)
{
	struct ps_ring *r = ps_ring_new(RECSIZE, CAP, NULL);
	uint64_t rec[64];
	static uint64_t out[CAP * 64];
	unsigned refused = 0;

	CHECK(r != NULL);
	if (!r)
		return;
	for (uint64_t i = 0; i < TOTAL; i++) {
		fill((struct ps_snap *)rec, i);
		refused += ps_ring_push(r, rec) != 0;
	}
	CHECK_EQ_INT(ps_ring_dropped(r), TOTAL - CAP);
	CHECK_EQ_INT(refused, TOTAL - CAP);
	CHECK_EQ_INT(ps_ring_count(r), CAP);
	CHECK_EQ_INT(ps_ring_read(r, out, CAP + 10), CAP);
	for (uint64_t i = 0; i < CAP; i++)
		if (!same((struct ps_snap *)((char *)out + i * RECSIZE), i)) {
			CHECK(!"record kept in a full ring is intact");
			break;
		}
	ps_ring_free(r);
}

struct producer {
	struct ps_ring *r;
	int lossless; /* wait for space instead of dropping */
	uint64_t refused;
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	for (uint64_t i = 0; i < TOTAL; i++) {
		struct ps_snap *s;

		if (p->lossless)
			while (ps_ring_space(p->r) == 0)
				sched_yield();
		s = ps_ring_reserve(p->r);
		if (!s) {
			p->refused++;
			continue;
		}
		fill(s, i);
		ps_ring_commit(p->r);
	}
	return NULL;
}

/* Consume until the producer is done and the ring is empty; batch 0 = peek/pop. */
static void consume(struct ctest *ctest_self, struct producer *p, pthread_t th, size_t batch, uint64_t *received,
		    uint64_t *bad)
{
	static uint64_t buf[256 * 64];
	uint64_t next = 0;
	int done = 0;

	*received = *bad = 0;
	for (;;) {
		size_t n = 0;

		if (batch == 0) {
			const struct ps_snap *s = ps_ring_peek(p->r);

			if (s) {
				if (p->lossless ? !same(s, next) : (s->seq < next || !same(s, s->seq)))
					++*bad;
				next = s->seq + 1;
				ps_ring_pop(p->r);
				n = 1;
			}
		} else {
			n = ps_ring_read(p->r, buf, batch);
			for (size_t i = 0; i < n; i++) {
				const struct ps_snap *s = (const struct ps_snap *)((char *)buf + i * RECSIZE);

				if (p->lossless ? !same(s, next) : (s->seq < next || !same(s, s->seq)))
					++*bad;
				next = s->seq + 1;
			}
		}
		*received += n;
		if (n == 0) {
			if (done)
				break;
			/* the producer's last commit happens before its exit: one more pass after */
			if (*received + ps_ring_dropped(p->r) == TOTAL) {
				pthread_join(th, NULL);
				done = 1;
			}
			sched_yield();
		}
	}
	(void)ctest_self;
}

static void run_spsc(struct ctest *ctest_self, int lossless, size_t batch)
{
	struct producer p = {0};
	pthread_t th;
	uint64_t received, bad;

	p.r = ps_ring_new(RECSIZE, CAP, NULL);
	p.lossless = lossless;
	CHECK(p.r != NULL);
	if (!p.r)
		return;
	CHECK_EQ_INT(pthread_create(&th, NULL, produce, &p), 0);
	consume(ctest_self, &p, th, batch, &received, &bad);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(ps_ring_dropped(p.r), p.refused);
	CHECK_EQ_INT(received + ps_ring_dropped(p.r), TOTAL);
	if (lossless) {
		CHECK_EQ_INT(received, TOTAL);
		CHECK_EQ_INT(ps_ring_dropped(p.r), 0);
	}
	ps_ring_free(p.r);
}

/* 1e6 records through a 1024 ring, consumer keeps up: every seq, in order. */
TEST(ring_spsc_threads_read)
{
	run_spsc(ctest_self, 1, 100);
}

TEST(ring_spsc_threads_peek_pop)
{
	run_spsc(ctest_self, 1, 0);
}

/* A producer that never waits: what arrives is intact and in order, the rest counted. */
TEST(ring_spsc_threads_lossy)
{
	run_spsc(ctest_self, 0, 37);
}

/* A ring in MAP_SHARED memory filled by a forked child, drained by the parent. */
TEST(ring_shared_memory_fork)
{
	size_t bytes = ps_ring_bytes(RECSIZE, 64);
	struct ps_error err = {0};
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct ps_ring *r;
	uint64_t rec[64], next = 0;
	int status = 0;
	pid_t pid;

	CHECK(mem != MAP_FAILED);
	if (mem == MAP_FAILED)
		return;
	r = ps_ring_init_at(mem, bytes, RECSIZE, 0, &err); /* 0: as many as fit */
	CHECK(r == mem);
	CHECK_EQ_INT(ps_ring_capacity(r), 64);
	pid = fork();
	if (pid == 0) {
		struct ps_ring *c = ps_ring_attach(mem, bytes, NULL);

		for (uint64_t i = 0; c && i < 10000; i++) {
			while (ps_ring_space(c) == 0)
				sched_yield();
			fill((struct ps_snap *)rec, i);
			ps_ring_push(c, rec);
		}
		_exit(c ? 0 : 1);
	}
	CHECK(pid > 0);
	while (pid > 0 && next < 10000) {
		if (ps_ring_read(r, rec, 1) == 1) {
			if (!same((struct ps_snap *)rec, next)) {
				CHECK(!"record from the child intact and in order");
				break;
			}
			next++;
		} else {
			sched_yield();
		}
	}
	CHECK_EQ_INT(next, 10000);
	if (pid > 0) {
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK_EQ_INT(ps_ring_dropped(r), 0);
	ps_ring_free(r); /* caller's memory: a no-op */
	munmap(mem, bytes);
}

TEST(ring_attach_errors)
{
	struct ps_error err = {0};
	static _Alignas(PS_RING_ALIGN) uint64_t mem[1024];
	struct ps_ring *r;

	CHECK(ps_ring_attach(mem, sizeof mem, &err) == NULL);
	CHECK_STR(err.msg, "ring: not a perfsh ring (bad magic)");
	r = ps_ring_init_at(mem, sizeof mem, 8, 16, &err);
	CHECK(r != NULL);
	CHECK(ps_ring_attach(mem, sizeof mem, &err) == r);
	CHECK(ps_ring_attach(mem, 300, &err) == NULL);
	CHECK(strstr(err.msg, "header says") != NULL);
}

/* Spill: a wrapped ring drained to a file, read back in order. */
TEST(ring_drain_to_file)
{
	char path[] = "/tmp/perfsh-ring-XXXXXX";
	int fd = mkstemp(path);
	struct ps_error err = {0};
	const char *events[] = {"a", "b", "c"};
	const char *regions[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6"}; /* fill() uses seq % 7 */
	struct ps_psnap_info info = {
	    .nvals = NVALS, .nargs = NARGS, .nevents = 3, .events = events, .nregions = 7, .regions = regions};
	struct ps_ring *r = ps_ring_new(RECSIZE, 16, &err);
	struct ps_ring *wrong = ps_ring_new(8, 16, &err);
	struct ps_psnap_writer *w;
	struct ps_psnap_reader *rd = NULL;
	uint64_t rec[64], seq = 0;

	CHECK(fd >= 0 && r && wrong);
	if (fd < 0 || !r || !wrong)
		return;
	close(fd);
	w = ps_psnap_create(path, &info, &err);
	CHECK(w != NULL);
	CHECK_EQ_INT(ps_ring_drain_to(wrong, w, &err), -1);
	CHECK_STR(err.msg, "ring: records of 8 bytes cannot go to a file of 152-byte records");
	/* 5 rounds of 11 records: the drains wrap around the end of the ring */
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 11; i++) {
			fill((struct ps_snap *)rec, seq++);
			CHECK_EQ_INT(ps_ring_push(r, rec), 0);
		}
		CHECK_EQ_INT(ps_ring_drain_to(r, w, &err), 11);
	}
	CHECK_EQ_INT(ps_ring_drain_to(r, w, &err), 0);
	CHECK_EQ_INT(ps_psnap_close(w, &err), 0);
	CHECK_EQ_INT(ps_psnap_open(path, &rd, &err), 0);
	if (rd) {
		CHECK_EQ_INT(ps_psnap_count(rd), 55);
		for (uint64_t i = 0; i < 55; i++)
			CHECK(ps_psnap_record(rd, i) && same(ps_psnap_record(rd, i), i));
		ps_psnap_reader_close(rd);
	}
	ps_ring_free(r);
	ps_ring_free(wrong);
	unlink(path);
}

/* A producer that can make room: try_reserve refuses a full ring without counting a drop;
   discard lets every record go and says how many; reserve then counts what it refuses. */
TEST(ring_try_reserve_and_discard)
{
	struct ps_error err = {0};
	struct ps_ring *r = ps_ring_new(RECSIZE, 4, &err);
	uint64_t rec[64];

	CHECK(r != NULL);
	if (!r)
		return;
	for (uint64_t i = 0; i < 4; i++) {
		struct ps_snap *s = ps_ring_try_reserve(r);

		CHECK(s != NULL);
		if (s)
			fill(s, i);
		ps_ring_commit(r);
	}
	CHECK(ps_ring_try_reserve(r) == NULL);
	CHECK_EQ_INT(ps_ring_dropped(r), 0);
	CHECK_EQ_INT(ps_ring_discard(r), 4);
	CHECK_EQ_INT(ps_ring_count(r), 0);
	CHECK_EQ_INT(ps_ring_discard(r), 0);
	CHECK(ps_ring_try_reserve(r) != NULL);
	for (uint64_t i = 0; i < 5; i++) {
		fill((struct ps_snap *)rec, 10 + i);
		CHECK_EQ_INT(ps_ring_push(r, rec), i < 4 ? 0 : -1);
	}
	CHECK_EQ_INT(ps_ring_dropped(r), 1);
	CHECK_EQ_INT(ps_ring_read(r, rec, 1), 1);
	CHECK(same((struct ps_snap *)rec, 10));
	ps_ring_free(r);
}

/* ps_snap_fill makes the record field by field from its key and its two ends. */
TEST(snap_fill_writes_every_field)
{
	uint64_t mem[64], args[NARGS] = {7, 8}, a[NVALS] = {1, 2, 3}, b[NVALS] = {11, 12, 13};
	struct ps_snap *s = (struct ps_snap *)mem;

	memset(mem, 0xff, sizeof mem);
	ps_snap_fill(s, &(struct ps_snap_key){5, 1000, 42, 9, 2, PS_SNAP_NESTED, NVALS, NARGS}, args,
		     &(struct ps_snap_point){100, 50, 40, 3, a}, &(struct ps_snap_point){200, 60, 45, -1, b});
	CHECK_EQ_INT(s->region, 5);
	CHECK_EQ_INT(s->tid, 1000);
	CHECK_EQ_INT(s->seq, 42);
	CHECK_EQ_INT(s->hit, 9);
	CHECK_EQ_INT(s->depth, 2);
	CHECK_EQ_INT(s->flags, PS_SNAP_NESTED);
	CHECK_EQ_INT(s->nvals, NVALS);
	CHECK_EQ_INT(s->nargs, NARGS);
	CHECK_EQ_INT(s->pad, 0);
	CHECK_EQ_INT(s->t_start, 100);
	CHECK_EQ_INT(s->t_end, 200);
	CHECK_EQ_INT(s->enabled_start, 50);
	CHECK_EQ_INT(s->running_start, 40);
	CHECK_EQ_INT(s->enabled_end, 60);
	CHECK_EQ_INT(s->running_end, 45);
	CHECK_EQ_INT(s->cpu_start, 3);
	CHECK_EQ_INT(s->cpu_end, -1);
	CHECK(memcmp(ps_snap_args(s), args, sizeof args) == 0);
	CHECK(memcmp(ps_snap_start(s), a, sizeof a) == 0);
	CHECK(memcmp(ps_snap_end(s), b, sizeof b) == 0);
	CHECK_EQ_INT(mem[ps_snap_size(NVALS, NARGS) / 8], (uint64_t)-1); /* nothing beyond the record */
}
