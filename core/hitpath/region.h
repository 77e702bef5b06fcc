/* core/hitpath/region.h - a region as the hit path and the catchers know it: what it is, how it
 * is sampled and what was counted for it. The session (core/session/session.h) keeps the table
 * of regions; the hit path counts each record in it and the catchers count entries in it.
 */
#ifndef PS_REGION_H
#define PS_REGION_H

#include <stdint.h>

#include "machine.h"

#define PS_MAX_REGIONS 256

enum ps_region_kind {
	PS_REGION_FUNC = 1,
	PS_REGION_RANGE = 2,
	PS_REGION_SDT = 3,
	PS_REGION_POINT = 4,
	PS_REGION_MARKER = 5 /* a marker of the marker library, measured in the program (marker catcher) */
};

/* The name of region kind @kind, as files (kind.ID) and Lua (t:region_info().kind) give it: "func",
 * "range", "sdt", "point" or "marker"; "" for none. */
static inline const char *ps_region_kind_name(int kind)
{
	static const char *const names[] = {"", "func", "range", "sdt", "point", "marker"};

	return kind > 0 && kind <= PS_REGION_MARKER ? names[kind] : "";
}

/* Options of a region. */
enum {
	PS_REGION_EVERY_LEVEL = 1 << 0, /* record every level of a recursion, not only the outermost */
	PS_REGION_NO_INLINE = 1 << 1,	/* do not add the function's inlined copies as regions */
	PS_REGION_FRAME = 1 << 2,	/* a range in one frame (an inlined copy): an end made deeper in the stack
					   than its start (a recursion's own copy) ends nothing */
	PS_REGION_ONCE = 1 << 3,	/* a PS_REGION_FRAME region whose hit passes its start once: a start at or
					   above the open hit's depth means that hit was left (exception, longjmp) */
};

/**
 * struct ps_region_info - what a region is and how often it was hit.
 * @name:     as given ("sum", "bench.c:19-bench.c:24", "sum@inline#1 in main")
 * @addr:     run-time address of the entry or of the first start point
 * @entries:  times its entry or start was reached (nested calls included)
 * @hits:     records written for it
 * @incomplete: records that ended by unwinding, thread exit or exec (flagged in the record)
 * @dropped:  1 when it could not be re-armed after an exec (@why says why)
 * @reading:  a line range: how it was read (core/binary/lines.h: struct ps_lines_range), "" if not known
 */
struct ps_region_info {
	int id;
	enum ps_region_kind kind;
	unsigned flags;
	char name[256];
	char spec[256]; /* what re-resolves it after exec */
	uint64_t addr;
	uint64_t entries, hits, incomplete;
	int dropped;
	int pending; /* a library region waiting for its library to be mapped (a stopping catcher arms it
			then; one that probes files has it probed, and clears this when it sees the file mapped) */
	char why[1024];
	char reading[300];
	/* sampling (ps_session_region_sample): one of these is set */
	uint64_t sample_every;	       /* every Nth entry */
	double sample_p;	       /* each entry with probability p */
	uint32_t window_ms, period_ms; /* every entry within window_ms of each period_ms */
	uint64_t entries_gone;	       /* entries counted by threads that have ended */
	uint64_t late;		       /* samples whose signal came after the entry (not recorded) */
	enum ps_counter counter;       /* how a sampled region's entries are counted */
};

/* How a sampled region was set up, for ps_session_region_sample(). */
struct ps_sample {
	uint64_t every;
	double p;
	uint32_t window_ms, period_ms;
};

#endif
