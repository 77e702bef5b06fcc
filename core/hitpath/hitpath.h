/* core/hitpath/hitpath.h - the hit path: what happens to a region hit, whatever caught it.
 *
 * A catcher (core/catch/: ptrace breakpoints, uprobes, the marker library) turns each event it sees
 * into a struct ps_hit: plain data, the thread, the region, what kind of point was reached,
 * when, on which CPU, with which raw counter values. The hit path keeps, per thread, the
 * measurements opened and not yet ended (with recursion depths), pairs each end with its
 * start and writes one struct ps_snap per pair into the ring, from which the records go to
 * memory (the store) or to a .psnap file (the spill). It never stops, reads or writes the
 * program; nothing is allocated per hit once a thread's slots have grown to its deepest
 * nesting.
 *
 * Pairing rules (those of the regions, core/hitpath/region.h):
 *   ENTRY  opens a measurement of a function region; a nested entry opens another only for
 *          an every-level region (its depth is the recursion level). The returned handle
 *          comes back with the RETURN.
 *   RETURN ends the measurement whose handle it carries (PS_SNAP_UNWOUND in flags when the
 *          frame was skipped).
 *   START  opens a range region unless it is open on the thread already; a PS_REGION_FRAME
 *          region's start made above the open hit's in the stack (or at its depth, for
 *          PS_REGION_ONCE) ends that hit first, flagged PS_SNAP_UNWOUND (its frame was left).
 *   END    ends the range region open on the thread; an end without a start does nothing,
 *          nor does one of a PS_REGION_FRAME region made deeper in the stack than its start.
 * A thread that exits cuts short what it left open (PS_SNAP_EXITED records); exec drops it.
 *
 * A catcher whose hits come paired already (the marker library's records) hands each whole
 * pair to ps_hitpath_pair(): it is recorded as it was made, never paired again.
 *
 * Sampling decided per hit (ps_hitpath_sample()): every ENTRY or START of a sampled region,
 * nested or not, measured or only seen, takes part in the draw; the chosen ones open a
 * measurement flagged PS_SNAP_SAMPLED, the others open nothing.
 */
#ifndef PS_HITPATH_H
#define PS_HITPATH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "group.h"
#include "psnap.h"
#include "region.h"
#include "snapshot.h"

struct ps_hitpath;

enum ps_hit_kind { PS_HIT_ENTRY = 1, PS_HIT_RETURN, PS_HIT_START, PS_HIT_END };

#define PS_HIT_INNERMOST (-2) /* a RETURN's handle: the innermost entry of its thread awaiting one */

/**
 * struct ps_hit - one hit, as a catcher saw it.
 * @tid:    the thread
 * @region: region id (an index into the region table given to ps_hitpath_new())
 * @kind:   which point was reached
 * @flags:  PS_SNAP_SAMPLED on an ENTRY or START a sampling policy chose; PS_SNAP_UNWOUND on
 *          a RETURN that is a skipped frame reported late
 * @handle: RETURN: what ps_hitpath_hit() returned for its ENTRY, or PS_HIT_INNERMOST where the
 *          hit path keeps the entries awaiting their returns (ps_hitpath_returns())
 * @t:      CLOCK_MONOTONIC ns when the hit was made (recorded on the program's clock: less
 *          the time the program was held before it, ps_hitpath_hold())
 * @cpu:    the CPU the thread ran on, -1 if unknown
 * @r:      the raw counter values (record order: events, then the later groups' times), with
 *          the first group's time enabled and running; NULL for a hit seen and not measured
 *          (ps_hitpath_measures() said 0): it only takes part in the sampling draw
 * @args:   PS_MAX_ARGS argument registers at an ENTRY, or NULL (recorded as zeros)
 * @sp:     the stack pointer at a START or END, 0 if unknown (a PS_REGION_FRAME region's end
 *          pairs only with a start made at the same depth or deeper)
 */
struct ps_hit {
	pid_t tid;
	int region;
	enum ps_hit_kind kind;
	unsigned flags;
	int handle;
	uint64_t t;
	int cpu;
	const struct ps_reading *r;
	const uint64_t *args;
	uint64_t sp;
};

/**
 * ps_hitpath_new() - a hit path for the regions of @reg, of which there are *@nreg (both
 * owned by the caller; more may be added later). The hit path counts each record in the
 * region's @hits (and @incomplete) and reads its @flags (PS_REGION_EVERY_LEVEL) and @name.
 * Return: the hit path, or NULL with @err set.
 */
struct ps_hitpath *ps_hitpath_new(struct ps_region_info *reg, const int *nreg, struct ps_error *err);
void ps_hitpath_free(struct ps_hitpath *hp);

/**
 * ps_hitpath_record() - start recording: records carry @nvals counter words and @nargs
 * argument words. With @spill_path, records go to that .psnap file, whose header is @info
 * (its nvals and nargs are set here). Once; before the first hit.
 */
int ps_hitpath_record(struct ps_hitpath *hp, unsigned nvals, unsigned nargs, const char *spill_path,
		      struct ps_psnap_info *info, struct ps_error *err);
int ps_hitpath_recording(const struct ps_hitpath *hp); /* ps_hitpath_record() was called */

/**
 * ps_hitpath_measures() - whether hit @h (its @r may be NULL) would open or end a
 * measurement: a catcher asks before it reads the counters, which most nested entries and
 * unmatched ends do not need. No system call.
 */
int ps_hitpath_measures(const struct ps_hitpath *hp, const struct ps_hit *h);

/**
 * ps_hitpath_hit() - take hit @h.
 * Return: for an ENTRY that opened a measurement, its handle (>= 0), to come back with its
 * RETURN; -1 when the hit opened nothing (nested, already open, out of memory: counted as
 * dropped). 0 for the other kinds.
 */
int ps_hitpath_hit(struct ps_hitpath *hp, const struct ps_hit *h);

/**
 * ps_hitpath_sample() - record only some hits of region @id: every @every-th ENTRY or START
 * on each thread, or each with probability @p (geometric gaps), or, if @windowed, those made
 * while the window is open (ps_hitpath_window()). At most PS_HITPATH_MAX_SAMPLED regions.
 */
#define PS_HITPATH_MAX_SAMPLED 4
int ps_hitpath_sample(struct ps_hitpath *hp, int id, uint64_t every, double p, int windowed, struct ps_error *err);
void ps_hitpath_window(struct ps_hitpath *hp, int open); /* open or close the sampling window */
int ps_hitpath_in_window(const struct ps_hitpath *hp);
/* Seed the draws (once: later seeds are ignored), and draw a gap: entries until the next
   sampled one, geometric with success probability @p, at least 1. */
void ps_hitpath_seed(struct ps_hitpath *hp, uint64_t seed);
uint64_t ps_hitpath_gap(struct ps_hitpath *hp, double p);

/**
 * ps_hitpath_returns() - the catcher's returns carry no handle (uretprobes): the hit path keeps,
 * per thread, the handles of the entries awaiting their returns, innermost last, at most
 * @max_depth (an entry deeper than that gets no return, as the kernel gives none), and ends
 * the innermost at a RETURN whose handle is PS_HIT_INNERMOST. It keeps each thread's last
 * reading and its time too, for ps_hitpath_cut(). Before the first hit.
 */
void ps_hitpath_returns(struct ps_hitpath *hp, int max_depth);

/**
 * ps_hitpath_cut() - records of thread @tid were lost (or its returns will never come: a
 * sampling window closed, the program exec'd): what it has open ends at its last reading
 * (PS_SNAP_EXITED), at @t (0: the time of that reading), and no return is awaited any more.
 * ps_hitpath_cut_all() does it for every thread. With ps_hitpath_returns() only.
 */
void ps_hitpath_cut(struct ps_hitpath *hp, pid_t tid, uint64_t t);
void ps_hitpath_cut_all(struct ps_hitpath *hp);

/**
 * ps_hitpath_pair() - take a hit that its catcher paired already: @rec, a whole record (the
 * marker library's), becomes region @region's record as it was made (its hit, depth, flags,
 * arguments and values; the first @rec->nvals values of this ring's layout, zeros after), with
 * the hit path's sequence number and the program's clock. It has the same number of argument
 * words as the hit path's records. Return: 0, or -1 when it was dropped (counted).
 */
int ps_hitpath_pair(struct ps_hitpath *hp, int region, const struct ps_snap *rec);

/* Thread @tid is gone: what it left open ends at @r, @t (cpu -1, PS_SNAP_EXITED). */
void ps_hitpath_thread_exit(struct ps_hitpath *hp, pid_t tid, const struct ps_reading *r, uint64_t t);
/* The process exec'd: every open measurement is dropped without a record. */
void ps_hitpath_exec(struct ps_hitpath *hp);

/* The program was held (stopped by perfsh) from @from to @to, CLOCK_MONOTONIC ns: the times
   of records leave it out (core/hitpath/holds.h). 0, or -1 when out of memory. */
int ps_hitpath_hold(struct ps_hitpath *hp, uint64_t from, uint64_t to);

/* Calls of region @id opened and not ended on any thread (every level of an every-level one). */
uint64_t ps_hitpath_open_calls(const struct ps_hitpath *hp, int id);

/* The stop test of every catcher: from now on, ps_hitpath_enough() says 1 once @max more
   records were written (0: never). */
void ps_hitpath_limit(struct ps_hitpath *hp, uint64_t max);
int ps_hitpath_enough(const struct ps_hitpath *hp);

/* Records written so far (the next record's seq). */
uint64_t ps_hitpath_seq(const struct ps_hitpath *hp);

/* Move the ring's records to the store or the spill file. 0, or -1 with @err set. */
int ps_hitpath_drain(struct ps_hitpath *hp, struct ps_error *err);

uint64_t ps_hitpath_nrecords(const struct ps_hitpath *hp);			     /* spilled ones too */
const struct ps_snap *ps_hitpath_record_at(const struct ps_hitpath *hp, uint64_t i); /* in the store */
size_t ps_hitpath_recsize(const struct ps_hitpath *hp);				     /* 0 before ps_hitpath_record() */
uint64_t ps_hitpath_dropped(const struct ps_hitpath *hp);

/* The spill file: see ps_session_spill_flush(), _meta() and _close(). */
int ps_hitpath_spill_flush(struct ps_hitpath *hp, struct ps_error *err);
int ps_hitpath_spill_meta(struct ps_hitpath *hp, const char *key, const char *value, struct ps_error *err);
int ps_hitpath_spill_close(struct ps_hitpath *hp, struct ps_error *err);

#endif
