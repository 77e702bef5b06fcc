/* core/hitpath/ring.c - single-producer, single-consumer ring of fixed-size records.
 *
 * See ring.h for the layout and the memory-ordering contract.
 */
#include "ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psnap.h"

static inline unsigned char *slot(const struct ps_ring *r, uint64_t i)
{
	return (unsigned char *)r->recs + (size_t)(i & (r->capacity - 1)) * r->recsize;
}

size_t ps_ring_bytes(size_t recsize, size_t capacity)
{
	if (recsize && capacity > (SIZE_MAX - sizeof(struct ps_ring)) / recsize)
		return 0;
	return sizeof(struct ps_ring) + recsize * capacity;
}

static int is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

static int check_geometry(size_t recsize, size_t capacity, struct ps_error *err)
{
	if (recsize == 0 || recsize % 8)
		return ps_error_set(err, PS_EUSAGE, "ring: record size %zu is not a non-zero multiple of 8", recsize);
	if (!is_pow2(capacity))
		return ps_error_set(err, PS_EUSAGE, "ring: capacity %zu is not a power of two", capacity);
	if (!ps_ring_bytes(recsize, capacity))
		return ps_error_set(err, PS_EUSAGE, "ring: %zu records of %zu bytes is too large", capacity, recsize);
	return 0;
}

struct ps_ring *ps_ring_init_at(void *mem, size_t bytes, size_t recsize, size_t capacity, struct ps_error *err)
{
	struct ps_ring *r = mem;
	size_t need;

	if (!mem || (uintptr_t)mem % PS_RING_ALIGN) {
		ps_error_set(err, PS_EUSAGE, "ring: memory at %p is not %d-byte aligned", mem, PS_RING_ALIGN);
		return NULL;
	}
	if (capacity == 0 && recsize && bytes > sizeof *r) {
		/* largest power of two that fits */
		size_t fit = (bytes - sizeof *r) / recsize;

		capacity = fit;
		while (capacity & (capacity - 1))
			capacity &= capacity - 1;
	}
	if (check_geometry(recsize, capacity, err))
		return NULL;
	need = ps_ring_bytes(recsize, capacity);
	if (bytes < need) {
		ps_error_set(err, PS_EUSAGE, "ring: %zu bytes given, %zu needed for %zu records of %zu bytes", bytes,
			     need, capacity, recsize);
		return NULL;
	}
	memset(r, 0, sizeof *r);
	r->recsize = recsize;
	r->capacity = capacity;
	r->bytes = need;
	/* the magic last, so an attacher never sees a half-built header */
	__atomic_store_n(&r->magic, PS_RING_MAGIC, __ATOMIC_RELEASE);
	return r;
}

struct ps_ring *ps_ring_attach(void *mem, size_t bytes, struct ps_error *err)
{
	struct ps_ring *r = mem;

	if (!mem || (uintptr_t)mem % PS_RING_ALIGN || bytes < sizeof *r) {
		ps_error_set(err, PS_EUSAGE, "ring: %zu bytes at %p cannot hold a ring header", bytes, mem);
		return NULL;
	}
	if (__atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != PS_RING_MAGIC) {
		ps_error_set(err, PS_EUSAGE, "ring: not a perfsh ring (bad magic)");
		return NULL;
	}
	if (check_geometry(r->recsize, r->capacity, err))
		return NULL;
	if (r->bytes != ps_ring_bytes(r->recsize, r->capacity) || r->bytes > bytes) {
		ps_error_set(err, PS_EUSAGE, "ring: header says %llu bytes, mapping has %zu",
			     (unsigned long long)r->bytes, bytes);
		return NULL;
	}
	return r;
}

struct ps_ring *ps_ring_new(size_t recsize, size_t capacity, struct ps_error *err)
{
	size_t bytes;
	void *mem;
	struct ps_ring *r;

	if (check_geometry(recsize, capacity, err))
		return NULL;
	bytes = ps_ring_bytes(recsize, capacity);
	/* aligned_alloc wants a multiple of the alignment */
	bytes = (bytes + PS_RING_ALIGN - 1) & ~(size_t)(PS_RING_ALIGN - 1);
	mem = aligned_alloc(PS_RING_ALIGN, bytes);
	if (!mem) {
		ps_error_set(err, ENOMEM, "ring: cannot allocate %zu bytes", bytes);
		return NULL;
	}
	r = ps_ring_init_at(mem, bytes, recsize, capacity, err);
	if (!r) {
		free(mem);
		return NULL;
	}
	r->flags |= PS_RING_OWNED;
	return r;
}

void ps_ring_free(struct ps_ring *r)
{
	if (r && (r->flags & PS_RING_OWNED)) {
		r->magic = 0;
		free(r);
	}
}

size_t ps_ring_recsize(const struct ps_ring *r)
{
	return r->recsize;
}

size_t ps_ring_capacity(const struct ps_ring *r)
{
	return r->capacity;
}

/* Producer side ------------------------------------------------------------ */

void *ps_ring_try_reserve(struct ps_ring *r)
{
	uint64_t head = r->head; /* only we write it */

	if (head - r->tail_seen >= r->capacity) {
		r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (head - r->tail_seen >= r->capacity)
			return NULL;
	}
	return slot(r, head);
}

void *ps_ring_reserve(struct ps_ring *r)
{
	void *s = ps_ring_try_reserve(r);

	if (!s)
		__atomic_store_n(&r->dropped, r->dropped + 1, __ATOMIC_RELAXED);
	return s;
}

void ps_ring_commit(struct ps_ring *r)
{
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
}

int ps_ring_push(struct ps_ring *r, const void *rec)
{
	void *s = ps_ring_reserve(r);

	if (!s)
		return -1;
	memcpy(s, rec, r->recsize);
	ps_ring_commit(r);
	return 0;
}

size_t ps_ring_space(const struct ps_ring *r)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

	return (size_t)(r->capacity - (r->head - tail));
}

/* Consumer side ------------------------------------------------------------ */

/* Records available to the consumer; refreshes head_seen only when needed. */
static uint64_t available(struct ps_ring *r, uint64_t tail)
{
	if (r->head_seen == tail)
		r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	return r->head_seen - tail;
}

const void *ps_ring_peek(struct ps_ring *r)
{
	uint64_t tail = r->tail; /* only we write it */

	if (!available(r, tail))
		return NULL;
	return slot(r, tail);
}

void ps_ring_pop(struct ps_ring *r)
{
	__atomic_store_n(&r->tail, r->tail + 1, __ATOMIC_RELEASE);
}

/* How many of the @n records from @tail lie before the ring's end (the rest wrap to its start). */
static size_t before_wrap(const struct ps_ring *r, uint64_t tail, uint64_t n)
{
	size_t first = r->capacity - (size_t)(tail & (r->capacity - 1));

	return first > n ? (size_t)n : first;
}

size_t ps_ring_read(struct ps_ring *r, void *dst, size_t max)
{
	uint64_t tail = r->tail;
	uint64_t n;
	size_t first;

	r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	n = r->head_seen - tail;
	if (n > max)
		n = max;
	if (!n)
		return 0;
	/* copy in two pieces when the records wrap past the end */
	first = before_wrap(r, tail, n);
	memcpy(dst, slot(r, tail), first * r->recsize);
	if (n > first)
		memcpy((unsigned char *)dst + first * r->recsize, r->recs, ((size_t)n - first) * r->recsize);
	__atomic_store_n(&r->tail, tail + n, __ATOMIC_RELEASE);
	return (size_t)n;
}

ssize_t ps_ring_drain_to(struct ps_ring *r, struct ps_psnap_writer *w, struct ps_error *err)
{
	uint64_t tail = r->tail;
	uint64_t n;
	size_t first;

	if (ps_psnap_writer_recsize(w) != r->recsize)
		return ps_error_set(err, PS_EUSAGE,
				    "ring: records of %llu bytes cannot go to a file of %zu-byte records",
				    (unsigned long long)r->recsize, ps_psnap_writer_recsize(w));
	r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	n = r->head_seen - tail;
	if (!n)
		return 0;
	/* in two pieces when the records wrap past the end, each released once written */
	first = before_wrap(r, tail, n);
	if (ps_psnap_write(w, slot(r, tail), first, err))
		return -1;
	__atomic_store_n(&r->tail, tail + first, __ATOMIC_RELEASE);
	if (n > first && ps_psnap_write(w, r->recs, (size_t)n - first, err))
		return -1;
	__atomic_store_n(&r->tail, tail + n, __ATOMIC_RELEASE);
	return (ssize_t)n;
}

size_t ps_ring_discard(struct ps_ring *r)
{
	uint64_t tail = r->tail;

	r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	__atomic_store_n(&r->tail, r->head_seen, __ATOMIC_RELEASE);
	return (size_t)(r->head_seen - tail);
}

/* Either side ---------------------------------------------------------------- */

size_t ps_ring_count(const struct ps_ring *r)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);

	return (size_t)(head - tail);
}

uint64_t ps_ring_dropped(const struct ps_ring *r)
{
	return __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
}
