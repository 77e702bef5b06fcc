/* core/records/psnap.h - .psnap files: snapshot records spilled to disk.
 *
 * The records room (core/records/): records once they are made: .psnap files written, read,
 * scanned and checked here; their meaning (analysis.h: group layout, multiplex scaling), exact
 * statistics (stats.h: the one nearest rank, standard deviation and median), histograms and
 * least squares. It calls only core/base/, core/binary/ and core/events/.
 *
 * Format version 2. Every integer is little-endian; a "str" is a u32 byte length
 * followed by that many bytes (no NUL). CRC32 is zlib's crc32() (IEEE 802.3,
 * the one of gzip and PNG).
 *
 * A file is a fixed header, then blocks, back to back. Nothing is ever patched:
 * the writer only appends, names before the records that use them, so every
 * prefix of a file (a run killed, a disk full, a copy cut short) reads back up
 * to its last whole record (one cut before its first record is refused, with
 * what survived), and a damaged block costs that block only.
 *
 *   file header, 32 bytes, at offset 0:
 *        0  8  magic "PSNAP\0\0\1" (PS_PSNAP_MAGIC)
 *        8  4  version (PS_PSNAP_VERSION = 2)
 *       12  4  sizeof(struct ps_snap) of the writer (88): the record layout
 *       16  2  nvals: counter values in each of start and end (<= 16)
 *       18  2  nargs: argument words per record (<= 6)
 *       20  4  record size = ps_snap_size(nvals, nargs)
 *       24  4  0
 *       28  4  CRC32 of bytes 0 .. 27
 *
 *   block: a 32-byte block header at an offset that is a multiple of 8, then its payload:
 *        0  4  kind: "EVNT", "REGN", "META", "RECS" or "END." (PS_PSNAP_K_*)
 *        4  4  count: entries in the payload
 *        8  8  first: RECS: file index of its first record (0, then the previous
 *                     RECS block's first + count); REGN: id of its first region;
 *                     END: records in the file; EVNT, META: 0
 *       16  4  payload bytes, a multiple of 8 (at most PS_PSNAP_MAX_BLOCK)
 *       20  4  CRC32 of the payload
 *       24  4  0
 *       28  4  CRC32 of bytes 0 .. 27 of this block header
 *
 *   payloads (names are zero-padded to a multiple of 8):
 *     EVNT  count x str: event names, one per counter value (count <= nvals; the
 *           values after them are later groups' times, see snapshot.h); first block
 *     REGN  count x str: names of regions first .. first + count - 1
 *     META  count x (str key, str value): free-form metadata (command, groups, host ...);
 *           the writer adds a copy of the event names, event.0 = name of value 0, event.1 ...
 *           (PS_PSNAP_EVENT_KEY), for a reader whose EVNT block is damaged
 *     RECS  count records, back to back: struct ps_snap, args[nargs], start[nvals],
 *           end[nvals] (native x86-64 layout of core/hitpath/snapshot.h)
 *     END   empty, count = regions named; written by ps_psnap_close(), last block
 *
 * How a reader reads (ps_psnap_open): it checks the header and block CRCs. It takes every
 * name first, wherever its block is, then the records by their file index (a RECS block's
 * first): a gap is records lost in a damaged block, a block that repeats one already taken
 * (the same first, count and CRC: a copy) is ignored, one that overlaps it is damage. A block
 * whose header is damaged is skipped by looking for the next valid block header (8-byte
 * steps). A block cut by the end of the file yields its whole records (checked one by one;
 * the cut payload has no CRC to check). A file without END was not closed.
 *
 * What a record can be (a record that is not is skipped and counted, by reason): the header's
 * nvals and nargs, a region some REGN block names, known flags, a thread id in
 * 1 .. PS_PSNAP_MAX_TID, CPUs in -1 .. PS_PSNAP_MAX_CPU - 1, and clocks, group times and
 * counter values that do not run backwards from start to end (a thread that exited inside the
 * region may leave an end value unread: 0).
 *
 * A file is refused, in one line saying what was lost and what survived of its header and
 * names, when it has no record left and is not complete (cut, damaged or never closed). A
 * complete file without records reads as one without hits.
 */
#ifndef PS_PSNAP_H
#define PS_PSNAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "snapshot.h"

#define PS_PSNAP_MAGIC "PSNAP\0\0\1" /* 8 bytes, without the string's own NUL */
#define PS_PSNAP_VERSION 2u
#define PS_PSNAP_HEADER 32u	       /* file header bytes */
#define PS_PSNAP_BLOCK_HEADER 32u      /* block header bytes */
#define PS_PSNAP_BUFSIZE (1u << 20)    /* writer's buffer: a RECS block holds at most this */
#define PS_PSNAP_MAX_STR (1u << 20)    /* longest name, key or value accepted */
#define PS_PSNAP_MAX_BLOCK (64u << 20) /* largest payload a reader accepts */
#define PS_PSNAP_MAX_TID 4194304u      /* a record's largest thread id: the kernel's PID_MAX_LIMIT */
#define PS_PSNAP_MAX_CPU 8192	       /* CPUs a record can name: x86-64's largest NR_CPUS */
#define PS_PSNAP_EVENT_KEY "event."    /* metadata key of the copy of event name K: "event.K" */

/* block kinds (4 bytes each, without the string's NUL) */
#define PS_PSNAP_K_EVNT "EVNT"
#define PS_PSNAP_K_REGN "REGN"
#define PS_PSNAP_K_META "META"
#define PS_PSNAP_K_RECS "RECS"
#define PS_PSNAP_K_END "END."

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
 * ps_psnap_create - create (or truncate) a snapshot file and write its header and names.
 * @path: file name (a pipe works too: nothing is patched).
 * @info: the header's contents; copied, need not outlive the call.
 * @err:  filled on failure.
 *
 * The header and the EVNT, REGN and META blocks of @info are on disk when it returns.
 *
 * Return: the writer, or NULL with @err set ("PATH: open: No such file or directory").
 */
struct ps_psnap_writer *ps_psnap_create(const char *path, const struct ps_psnap_info *info, struct ps_error *err);

/**
 * ps_psnap_replace - ps_psnap_create(), written whole or not at all: into a temporary file
 * beside @path (core/base/outfile.h) that ps_psnap_close() renames over @path once everything is
 * written; a failed write removes it, and @path stays as it was. Not for a file read as it
 * grows, nor for ps_psnap_finish() from a signal handler (nothing is renamed then).
 * @path: file name (an existing FIFO or device is written in place).
 * @info: as for ps_psnap_create().
 * @err:  filled on failure.
 *
 * Return: the writer, or NULL with @err set.
 */
struct ps_psnap_writer *ps_psnap_replace(const char *path, const struct ps_psnap_info *info, struct ps_error *err);

/**
 * ps_psnap_add_region - name a region found after creation (a REGN block, before any
 * record written after this call).
 * @w:    the writer.
 * @name: its name.
 * @err:  filled on failure.
 *
 * Return: its id (the header's regions come first), or -1 with @err set.
 */
int ps_psnap_add_region(struct ps_psnap_writer *w, const char *name, struct ps_error *err);

/**
 * ps_psnap_add_meta - add a metadata pair (a META block after the records so far).
 * @w:     the writer.
 * @key:   the key.
 * @value: the value.
 * @err:   filled on failure.
 *
 * Return: 0, or -1 with @err set.
 */
int ps_psnap_add_meta(struct ps_psnap_writer *w, const char *key, const char *value, struct ps_error *err);

/**
 * struct ps_psnap_region_meta - what a file says of one region beside its name, in the metadata
 * pairs kind.ID, entries.ID and sampled.ID (perfsh.load reads them back).
 * @kind:        "func", "range", "sdt", "point" or "marker"; NULL: no kind.ID.
 * @has_entries: write entries.ID.
 * @entries:     the times the region was entered (begins of a marker).
 * @sampled:     1: not every hit was recorded (sampled.ID = "1"); 0: no sampled.ID.
 */
struct ps_psnap_region_meta {
	const char *kind;
	int has_entries;
	uint64_t entries;
	int sampled;
};

#define PS_PSNAP_REGION_PAIRS 3 /* pairs of one region at most */

/* The pairs ps_psnap_region_pairs() makes, and the text they point at. */
struct ps_psnap_region_pairs {
	size_t n;
	struct ps_psnap_meta meta[PS_PSNAP_REGION_PAIRS];
	char text[PS_PSNAP_REGION_PAIRS][2][24];
};

/**
 * ps_psnap_region_pairs - the metadata pairs that say what region @id is: the one place their
 * keys are made, whoever writes the file (the session's save and spill file, the marker library).
 * @id: the region's id in the file.
 * @m:  what to say of it.
 * @p:  receives the pairs, to give to ps_psnap_add_meta() or in struct ps_psnap_info.
 *
 * Return: the number of pairs (@p->n).
 */
size_t ps_psnap_region_pairs(int id, const struct ps_psnap_region_meta *m, struct ps_psnap_region_pairs *p);

/**
 * ps_psnap_write - append records.
 * @w:    the writer.
 * @recs: @n records of the file's record size, back to back.
 * @n:    how many.
 * @err:  filled on failure.
 *
 * Records go through a PS_PSNAP_BUFSIZE buffer, written as one RECS block with
 * write(2) when it fills (short writes and EINTR handled); a larger batch is
 * written directly, in blocks of at most PS_PSNAP_BUFSIZE bytes. Each record
 * must have the file's nvals and nargs and a region already named. After a
 * write failure the writer stays failed: later calls and ps_psnap_close()
 * report the same error.
 *
 * Return: 0, or -1 with @err set ("PATH: write: No space left on device",
 * "PATH: record 3 has region 5, not named yet").
 */
int ps_psnap_write(struct ps_psnap_writer *w, const void *recs, size_t n, struct ps_error *err);

/**
 * ps_psnap_flush - write out the buffer as whole blocks (the file stays open, without END).
 * @w:   the writer.
 * @err: filled on failure.
 *
 * Async-signal-safe, as ps_psnap_finish() and ps_psnap_write() of records the file takes: a
 * failure of write(2) is kept in the writer as an errno and told in @err ("PATH: write:
 * Broken pipe") by copying strings, without printf or strerror.
 *
 * Return: 0, or -1 with @err set.
 */
int ps_psnap_flush(struct ps_psnap_writer *w, struct ps_error *err);

/**
 * ps_psnap_finish - write the END block and everything buffered, without closing or freeing:
 * for a signal handler (nothing here allocates, and a failure of the file fills @err without
 * formatting, as ps_psnap_flush() does). Later writes fail; ps_psnap_close() still frees.
 * @w:   the writer.
 * @err: filled on failure.
 *
 * Return: 0, or -1 with @err set.
 */
int ps_psnap_finish(struct ps_psnap_writer *w, struct ps_error *err);

/* Record size of the file, and records written so far. */
size_t ps_psnap_writer_recsize(const struct ps_psnap_writer *w);
uint64_t ps_psnap_writer_count(const struct ps_psnap_writer *w);

/**
 * ps_psnap_close - flush, write the END block, close and free.
 * @w:   the writer; freed whatever happens (NULL is a no-op returning 0).
 * @err: filled on failure.
 *
 * Return: 0, or -1 with @err set when any write, pwrite or close(2) failed, now
 * or earlier: the file is then incomplete (of ps_psnap_replace(): left out, the old one kept).
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
 *        "run.psnap: corrupt header (...)", "run.psnap: not a regular file",
 *        "run.psnap: no readable records (...); what survived: ...".
 *
 * A file cut short or damaged is not an error while records remain: the
 * intact records are kept and ps_psnap_warning() says in one line what was
 * lost. It is an error when no record remains and the file is not complete:
 * cut anywhere before its first whole record (even inside its header),
 * damaged, or never closed; the message then ends with what survived
 * ("; what survived: the file header (version 2, ...); events a,b; regions
 * sum; command ./prog").
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

/* Region names by id; NULL for an id whose name was lost with a damaged block. */
size_t ps_psnap_nregions(const struct ps_psnap_reader *r);
const char *ps_psnap_region(const struct ps_psnap_reader *r, size_t id);

/* Metadata pairs in file order; meta_get returns the last value of @key. */
size_t ps_psnap_nmeta(const struct ps_psnap_reader *r);
const char *ps_psnap_meta_key(const struct ps_psnap_reader *r, size_t i);
const char *ps_psnap_meta_value(const struct ps_psnap_reader *r, size_t i);
const char *ps_psnap_meta_get(const struct ps_psnap_reader *r, const char *key);

/* Records kept: whole, intact and checked; indexes 0 .. count - 1 skip the lost ones. */
uint64_t ps_psnap_count(const struct ps_psnap_reader *r);

/* 1 when the file ends with its END block (the writer closed it) and nothing was lost. */
int ps_psnap_complete(const struct ps_psnap_reader *r);

/**
 * ps_psnap_truncated - whether the file ends early.
 * @r: the reader.
 *
 * True when the file ends inside a block (a cut write or copy). A file that
 * merely lacks its END block (writer still running, or killed between two
 * blocks) is not truncated, nor complete.
 */
int ps_psnap_truncated(const struct ps_psnap_reader *r);

/* Bytes not used: damaged blocks, a cut block's partial record, bytes after END. */
uint64_t ps_psnap_ignored_bytes(const struct ps_psnap_reader *r);

/* Records known lost (damaged blocks, the cut part of a block). */
uint64_t ps_psnap_lost(const struct ps_psnap_reader *r);

/* Records read whole and skipped for what they hold (see "What a record can be" above); the
   warning says how many for each reason. */
uint64_t ps_psnap_skipped(const struct ps_psnap_reader *r);

/* Where the event names came from. */
enum ps_psnap_events_from {
	PS_PSNAP_EVENTS_BLOCK,	 /* the EVNT block */
	PS_PSNAP_EVENTS_COPY,	 /* the EVNT block was lost: their copy in the metadata */
	PS_PSNAP_EVENTS_UNKNOWN, /* both were lost: event1 .. eventN, as many as the records hold
				    events ("groups" metadata), else one per value */
};
enum ps_psnap_events_from ps_psnap_events_from(const struct ps_psnap_reader *r);

/**
 * ps_psnap_warning - one line on what was lost, or NULL for an intact file.
 * @r: the reader.
 *
 * "run.psnap: cut after record 150 of a block of 6898 (truncated file); 150 records kept",
 * "run.psnap: 2 records skipped as impossible (2 with a counter running backwards); 998 records kept",
 * "run.psnap: 1 damaged block skipped (at byte 4096: checksum mismatch), 6898 records
 * lost; 13796 records kept", "run.psnap: no END block (the writer did not close it);
 * 150 records kept".
 */
const char *ps_psnap_warning(const struct ps_psnap_reader *r);

/**
 * ps_psnap_record - a record in place (in the mapping), by index.
 * @r: the reader.
 * @i: index, < ps_psnap_count().
 *
 * Return: the record, valid until ps_psnap_reader_close(), or NULL when @i is
 * out of range. Every record returned passed the checks above.
 */
const struct ps_snap *ps_psnap_record(const struct ps_psnap_reader *r, uint64_t i);

/**
 * ps_psnap_release - a pass in order over the records has come to record @i: let go
 * of the memory the pages of the mapping before it take, but for a window of a few MiB
 * (they are read again from the file if asked for).
 * @r: the reader.
 * @i: index of the record the pass is at.
 *
 * ps_psnap_open() and ps_psnap_read() do this themselves: a file read once in order
 * costs a window of it in memory, not the whole of it. Cheap to call at every record.
 */
void ps_psnap_release(struct ps_psnap_reader *r, uint64_t i);

/**
 * ps_psnap_read - copy the next records (sequential reading from a cursor).
 * @r:   the reader.
 * @dst: room for @max records of ps_psnap_recsize() bytes.
 * @max: records wanted.
 * @err: filled on failure.
 *
 * Return: records copied, 0 at the end (records are checked at open: no error).
 */
ssize_t ps_psnap_read(struct ps_psnap_reader *r, void *dst, size_t max, struct ps_error *err);

/* Move the read cursor back to the first record. */
void ps_psnap_rewind(struct ps_psnap_reader *r);

#endif
