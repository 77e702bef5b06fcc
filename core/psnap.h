/* core/psnap.h - .psnap files: snapshot records spilled to disk.
 *
 * Layout (every integer little-endian; a "str" is a u32 byte length followed by
 * that many bytes, no NUL, no padding):
 *
 *   offset  size  header
 *        0     8  magic "PSNAP\0\0\1" (PS_PSNAP_MAGIC)
 *        8     4  version (PS_PSNAP_VERSION = 1)
 *       12     4  header size = offset of the first record, a multiple of 8
 *       16     4  record size = ps_snap_size(nvals, nargs)
 *       20     2  nvals: counter values in each of start and end
 *       22     2  nargs: argument words per record
 *       24     8  trailer offset; 0 until the writer closed the file cleanly
 *       32     8  record count; 0 until the writer closed the file cleanly
 *       40     4  nevents
 *       44     4  nregions known at creation (region ids 0 .. nregions-1)
 *       48     4  nmeta
 *       52     4  sizeof(struct ps_snap) of the writer (88), checks the record layout
 *       56        nevents x str: event names, one per counter value (normally nevents == nvals)
 *                 nregions x str: region names; a region's id is its index
 *                 nmeta x (str key, str value): free-form metadata (cmdline, host, time ...)
 *                 zero bytes up to the header size
 *
 *   header size   records, back to back: struct ps_snap, args[nargs], start[nvals], end[nvals]
 *                 (native x86-64 layout of core/snapshot.h)
 *
 *   trailer offset (= header size + count * record size), written by ps_psnap_close():
 *                 8  magic "PSNAPEND"
 *                 4  regions added after creation (their ids continue the header's)
 *                 4  metadata pairs added after creation
 *                    that many x str region names, then that many x (str key, str value)
 *
 * Region names: those known when the file is created go in the header; regions
 * found later (ps_psnap_add_region) go in the trailer, which close() writes
 * before patching the trailer offset and record count into the header with
 * pwrite(2). So the output must be seekable (a regular file, not a pipe).
 * A file whose writer died has a zero trailer offset: its records are read up
 * to the last whole one and only the header's region names are known.
 */
#ifndef PS_PSNAP_H
#define PS_PSNAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "snapshot.h"

#define PS_PSNAP_MAGIC "PSNAP\0\0\1" /* 8 bytes, without the string's own NUL */
#define PS_PSNAP_TRAILER_MAGIC "PSNAPEND"
#define PS_PSNAP_VERSION 1u
#define PS_PSNAP_BUFSIZE (1u << 20) /* writer's buffer */
#define PS_PSNAP_MAX_STR (1u << 20) /* longest name, key or value accepted */

/* One key=value metadata pair. */
struct ps_psnap_meta {
	const char *key;
	const char *value;
};

/**
 * struct ps_psnap_info - what a new file's header says.
 * @nvals:    counter values per record end (<= PS_MAX_EVENTS).
 * @nargs:    argument words per record (<= PS_MAX_ARGS).
 * @nevents:  entries of @events.
 * @events:   event names.
 * @nregions: entries of @regions (may be 0).
 * @regions:  names of regions 0 .. @nregions - 1.
 * @nmeta:    entries of @meta (may be 0).
 * @meta:     metadata pairs.
 */
struct ps_psnap_info {
	unsigned nvals, nargs;
	size_t nevents;
	const char *const *events;
	size_t nregions;
	const char *const *regions;
	size_t nmeta;
	const struct ps_psnap_meta *meta;
};

struct ps_psnap_writer;
struct ps_psnap_reader;

/* Writing --------------------------------------------------------------------- */

/**
 * ps_psnap_create - create (or truncate) a snapshot file and buffer its header.
 * @path: file name; it must be seekable.
 * @info: the header's contents; copied, need not outlive the call.
 * @err:  filled on failure.
 *
 * Return: the writer, or NULL with @err set ("PATH: open: No such file or directory").
 */
struct ps_psnap_writer *ps_psnap_create(const char *path, const struct ps_psnap_info *info, struct ps_error *err);

/**
 * ps_psnap_add_region - name a region found after creation.
 * @w:    the writer.
 * @name: its name.
 * @err:  filled on failure.
 *
 * Return: its id (the header's regions come first), or -1 with @err set.
 */
int ps_psnap_add_region(struct ps_psnap_writer *w, const char *name, struct ps_error *err);

/**
 * ps_psnap_add_meta - add a metadata pair, stored in the trailer (e.g. end time).
 * @w:     the writer.
 * @key:   the key.
 * @value: the value.
 * @err:   filled on failure.
 *
 * Return: 0, or -1 with @err set.
 */
int ps_psnap_add_meta(struct ps_psnap_writer *w, const char *key, const char *value, struct ps_error *err);

/**
 * ps_psnap_write - append records.
 * @w:    the writer.
 * @recs: @n records of the file's record size, back to back.
 * @n:    how many.
 * @err:  filled on failure.
 *
 * Records go through a PS_PSNAP_BUFSIZE buffer flushed with write(2) (short
 * writes and EINTR handled); a batch larger than the buffer is written directly.
 * After a failure the writer stays failed: later calls and ps_psnap_close()
 * report the same error.
 *
 * Return: 0, or -1 with @err set ("PATH: write: No space left on device").
 */
int ps_psnap_write(struct ps_psnap_writer *w, const void *recs, size_t n, struct ps_error *err);

/**
 * ps_psnap_flush - write out the buffer (the file stays open and incomplete).
 * @w:   the writer.
 * @err: filled on failure.
 *
 * Return: 0, or -1 with @err set.
 */
int ps_psnap_flush(struct ps_psnap_writer *w, struct ps_error *err);

/* Record size of the file, and records written so far. */
size_t ps_psnap_writer_recsize(const struct ps_psnap_writer *w);
uint64_t ps_psnap_writer_count(const struct ps_psnap_writer *w);

/**
 * ps_psnap_close - flush, write the trailer, patch the header, close and free.
 * @w:   the writer; freed whatever happens (NULL is a no-op returning 0).
 * @err: filled on failure.
 *
 * Return: 0, or -1 with @err set when any write, pwrite or close(2) failed, now
 * or earlier: the file is then incomplete.
 */
int ps_psnap_close(struct ps_psnap_writer *w, struct ps_error *err);

/* Reading --------------------------------------------------------------------- */

/**
 * ps_psnap_open - map a snapshot file and check its header.
 * @path: file name.
 * @rp:   receives the reader, or NULL on failure.
 * @err:  filled on failure, one line naming the file and the problem:
 *        "run.psnap: not a perfsh snapshot file (bad magic)",
 *        "run.psnap: snapshot version 7 is not supported (this perfsh reads 1)",
 *        "run.psnap: corrupt header (...)", "run.psnap: corrupt trailer (...)".
 *
 * A file cut short is not an error: records are read up to the last whole one
 * and ps_psnap_truncated() says so (see also ps_psnap_complete()).
 *
 * Return: 0, or -1 with @err set.
 */
int ps_psnap_open(const char *path, struct ps_psnap_reader **rp, struct ps_error *err);

/* Release a reader (NULL is a no-op). */
void ps_psnap_reader_close(struct ps_psnap_reader *r);

unsigned ps_psnap_nvals(const struct ps_psnap_reader *r);
unsigned ps_psnap_nargs(const struct ps_psnap_reader *r);
size_t ps_psnap_recsize(const struct ps_psnap_reader *r);

/* Event names, i < ps_psnap_nevents(). */
size_t ps_psnap_nevents(const struct ps_psnap_reader *r);
const char *ps_psnap_event(const struct ps_psnap_reader *r, size_t i);

/* Region names by id; NULL for an id with no known name (e.g. file not closed). */
size_t ps_psnap_nregions(const struct ps_psnap_reader *r);
const char *ps_psnap_region(const struct ps_psnap_reader *r, size_t id);

/* Metadata pairs, header's first then trailer's; meta_get returns the last value of @key. */
size_t ps_psnap_nmeta(const struct ps_psnap_reader *r);
const char *ps_psnap_meta_key(const struct ps_psnap_reader *r, size_t i);
const char *ps_psnap_meta_value(const struct ps_psnap_reader *r, size_t i);
const char *ps_psnap_meta_get(const struct ps_psnap_reader *r, const char *key);

/* Whole records in the file. */
uint64_t ps_psnap_count(const struct ps_psnap_reader *r);

/* 1 when the writer closed the file cleanly and its trailer was read. */
int ps_psnap_complete(const struct ps_psnap_reader *r);

/**
 * ps_psnap_truncated - whether the file ends early.
 * @r: the reader.
 *
 * True when a partial record was ignored, or the file was closed cleanly but
 * has since lost its end (the trailer, maybe records). The caller should warn,
 * with ps_psnap_ignored_bytes().
 */
int ps_psnap_truncated(const struct ps_psnap_reader *r);

/* Bytes after the last whole record that were not used (partial record or trailer). */
uint64_t ps_psnap_ignored_bytes(const struct ps_psnap_reader *r);

/**
 * ps_psnap_record - a record in place (in the mapping), by index.
 * @r: the reader.
 * @i: index, < ps_psnap_count().
 *
 * Return: the record, valid until ps_psnap_reader_close(), or NULL when @i is
 * out of range or the record's nvals/nargs disagree with the header.
 */
const struct ps_snap *ps_psnap_record(const struct ps_psnap_reader *r, uint64_t i);

/**
 * ps_psnap_read - copy the next records (sequential reading from a cursor).
 * @r:   the reader.
 * @dst: room for @max records of ps_psnap_recsize() bytes.
 * @max: records wanted.
 * @err: filled on failure.
 *
 * Return: records copied, 0 at the end, or -1 with @err set when a record's
 * nvals/nargs disagree with the header ("run.psnap: corrupt record 12 (...)").
 */
ssize_t ps_psnap_read(struct ps_psnap_reader *r, void *dst, size_t max, struct ps_error *err);

/* Move the read cursor back to the first record. */
void ps_psnap_rewind(struct ps_psnap_reader *r);

#endif
