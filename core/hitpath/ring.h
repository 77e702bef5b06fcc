/* core/hitpath/ring.h - a single-producer, single-consumer ring of fixed-size records.
 *
 * The ring is one contiguous block: a header (struct ps_ring) followed by
 * capacity * recsize bytes of records. It holds no pointers, so the same block
 * can be malloc'd (ps_ring_new) or placed in memory the caller provides
 * (ps_ring_init_at), e.g. a MAP_SHARED mapping that an in-process marker
 * library fills and perfsh drains (ps_ring_attach on the other side).
 *
 * head and tail are free-running 64-bit counters; slot i lives at
 * recs + (i & (capacity - 1)) * recsize. The producer owns head, the consumer
 * owns tail; each publishes its counter with a release store and reads the
 * other's with an acquire load (as uftrace's record_perf_data does), so a
 * record is completely written before the consumer can see it and completely
 * read before the producer can reuse its slot.
 *
 * A full ring never blocks and never overwrites: the NEW record is dropped and
 * counted in @dropped (ps_ring_dropped), so a loss is never silent. A producer
 * that must keep everything checks ps_ring_space() first, or its consumer
 * drains to a file (ps_ring_drain_to).
 *
 * Thread safety: exactly one producer thread and one consumer thread at a time.
 * ps_ring_count / ps_ring_dropped may be called from either side.
 */
#ifndef PS_RING_H
#define PS_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

struct ps_psnap_writer;

/* "PSRING" + layout version 1, as a little-endian u64 at the start of the block */
#define PS_RING_MAGIC 0x0100474e49525350ull
#define PS_RING_ALIGN 64 /* alignment of the block, the counters and the records */

enum {
	PS_RING_OWNED = 1u << 0, /* allocated by ps_ring_new: ps_ring_free releases it */
};

/**
 * struct ps_ring - header of a ring block (the shared-memory layout).
 * @magic:     PS_RING_MAGIC once initialized.
 * @recsize:   bytes per record, a multiple of 8.
 * @capacity:  records the ring holds, a power of two.
 * @bytes:     size of the whole block, header included (ps_ring_bytes()).
 * @flags:     PS_RING_* flags.
 * @head:      records committed so far (producer's cache line).
 * @dropped:   records refused because the ring was full (producer-written).
 * @tail_seen: producer's last view of @tail (avoids touching the consumer's line).
 * @tail:      records consumed so far (consumer's cache line).
 * @head_seen: consumer's last view of @head.
 * @recs:      the records.
 *
 * Use the functions below rather than the fields.
 */
struct ps_ring {
	uint64_t magic;
	uint64_t recsize;
	uint64_t capacity;
	uint64_t bytes;
	uint32_t flags;
	uint32_t pad0;
	_Alignas(PS_RING_ALIGN) uint64_t head;
	uint64_t dropped;
	uint64_t tail_seen;
	_Alignas(PS_RING_ALIGN) uint64_t tail;
	uint64_t head_seen;
	_Alignas(PS_RING_ALIGN) unsigned char recs[];
};

/**
 * ps_ring_bytes - size of a ring block.
 * @recsize:  bytes per record.
 * @capacity: number of records.
 *
 * Return: sizeof(struct ps_ring) + capacity * recsize, or 0 on overflow.
 */
size_t ps_ring_bytes(size_t recsize, size_t capacity);

/**
 * ps_ring_init_at - build an empty ring in caller-provided memory.
 * @mem:      the block, aligned to PS_RING_ALIGN (64) bytes (mmap'd memory is).
 * @bytes:    its size; at least ps_ring_bytes(@recsize, @capacity).
 * @recsize:  bytes per record: a non-zero multiple of 8 (ps_snap_size() is).
 * @capacity: records, a power of two; 0 means as many as fit in @bytes.
 * @err:      filled on failure.
 *
 * The caller keeps ownership of @mem; ps_ring_free() on the result does nothing.
 *
 * Return: the ring (== @mem), or NULL with @err set (PS_EUSAGE).
 */
struct ps_ring *ps_ring_init_at(void *mem, size_t bytes, size_t recsize, size_t capacity, struct ps_error *err);

/**
 * ps_ring_attach - use a ring another party built with ps_ring_init_at().
 * @mem:   the block (e.g. a shared mapping), PS_RING_ALIGN-aligned.
 * @bytes: the size of the mapping, checked against the header.
 * @err:   filled on failure.
 *
 * Return: the ring, or NULL with @err set when the header is not a valid ring.
 */
struct ps_ring *ps_ring_attach(void *mem, size_t bytes, struct ps_error *err);

/**
 * ps_ring_new - allocate an empty ring.
 * @recsize:  bytes per record (a non-zero multiple of 8).
 * @capacity: records, a power of two.
 * @err:      filled on failure.
 *
 * Return: the ring, to be released with ps_ring_free(), or NULL with @err set.
 */
struct ps_ring *ps_ring_new(size_t recsize, size_t capacity, struct ps_error *err);

/**
 * ps_ring_free - release a ring made by ps_ring_new(); no-op for NULL or for a
 * ring in caller-provided memory.
 * @r: the ring.
 */
void ps_ring_free(struct ps_ring *r);

/* Bytes per record, and number of slots. */
size_t ps_ring_recsize(const struct ps_ring *r);
size_t ps_ring_capacity(const struct ps_ring *r);

/**
 * ps_ring_reserve - producer: the slot for the next record.
 * @r: the ring.
 *
 * Write the record into the slot, then ps_ring_commit(). Calling reserve again
 * before commit returns the same slot.
 *
 * Return: the slot (recsize bytes, 8-aligned), or NULL when the ring is full:
 * the record is then dropped and the overflow counter incremented.
 */
void *ps_ring_reserve(struct ps_ring *r);

/**
 * ps_ring_try_reserve - producer: ps_ring_reserve(), but a full ring returns NULL without
 * counting a drop: for a producer that can make room (drain the ring) and try again.
 * @r: the ring.
 *
 * Return: the slot, or NULL when the ring is full.
 */
void *ps_ring_try_reserve(struct ps_ring *r);

/**
 * ps_ring_commit - producer: publish the slot returned by ps_ring_reserve().
 * @r: the ring.
 */
void ps_ring_commit(struct ps_ring *r);

/**
 * ps_ring_push - producer: copy one record in (reserve + memcpy + commit).
 * @r:   the ring.
 * @rec: recsize bytes.
 *
 * Return: 0, or -1 when the ring was full (the record is dropped and counted).
 */
int ps_ring_push(struct ps_ring *r, const void *rec);

/**
 * ps_ring_space - producer: free slots (a lower bound, as the consumer may be
 * freeing more).
 * @r: the ring.
 */
size_t ps_ring_space(const struct ps_ring *r);

/**
 * ps_ring_peek - consumer: the oldest record, left in place.
 * @r: the ring.
 *
 * Return: the record (valid until ps_ring_pop()), or NULL when empty.
 */
const void *ps_ring_peek(struct ps_ring *r);

/**
 * ps_ring_pop - consumer: release the record ps_ring_peek() returned.
 * @r: the ring; must not be empty.
 */
void ps_ring_pop(struct ps_ring *r);

/**
 * ps_ring_read - consumer: copy out and release up to @max records, oldest first.
 * @r:   the ring.
 * @dst: room for @max * recsize bytes.
 * @max: records wanted.
 *
 * Return: the number of records copied (0 when empty).
 */
size_t ps_ring_read(struct ps_ring *r, void *dst, size_t max);

/**
 * ps_ring_drain_to - consumer: write every record in the ring to a snapshot file.
 * @r:   the ring.
 * @w:   an open writer whose record size is the ring's.
 * @err: filled on failure.
 *
 * Records are handed to ps_psnap_write() straight from the ring (in two pieces
 * when they wrap), each piece released once the writer took it. On a write error
 * the records not taken stay in the ring (ps_ring_discard() lets them go) and the
 * writer stays failed (ps_psnap_write reports the same error again). No allocation,
 * and async-signal-safe as ps_psnap_write() is.
 *
 * Return: the number of records written, or -1 with @err set.
 */
ssize_t ps_ring_drain_to(struct ps_ring *r, struct ps_psnap_writer *w, struct ps_error *err);

/**
 * ps_ring_discard - consumer: release every record in the ring unread.
 * @r: the ring.
 *
 * Return: the number of records let go (a consumer with nowhere to put them counts them lost).
 */
size_t ps_ring_discard(struct ps_ring *r);

/* Records committed and not yet consumed; either side may ask. */
size_t ps_ring_count(const struct ps_ring *r);

/* Records dropped because the ring was full, since it was created. */
uint64_t ps_ring_dropped(const struct ps_ring *r);

#endif
