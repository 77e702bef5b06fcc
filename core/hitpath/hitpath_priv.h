/* core/hitpath/hitpath_priv.h - the inside of struct ps_hitpath, shared by hitpath.c (threads,
 * pairing, sampling draws) and hitpath_records.c (records: ring, store, spill file). Not for
 * use outside them. */
#ifndef PS_HITPATH_PRIV_H
#define PS_HITPATH_PRIV_H

#include "hitpath.h"
#include "holds.h"

#define HP_BUCKETS 256

/* An open measurement: the start of a hit, waiting for its end. */
struct slot {
	int region; /* -1 while free */
	int next_free;
	enum ps_hit_kind kind; /* ENTRY or START */
	uint32_t depth;
	uint16_t flags; /* PS_SNAP_SAMPLED */
	uint64_t args[PS_MAX_ARGS];
	int16_t cpu;
	uint64_t t;
	uint64_t sp; /* at a START, 0 if unknown */
	struct ps_reading r;
};

struct hthr {
	pid_t tid;
	struct hthr *next;
	struct slot *slots;
	int nslots, cap, free_head;
	int32_t active[PS_MAX_REGIONS];	       /* open slot of a region (not every-level entries), -1 */
	uint32_t depth[PS_MAX_REGIONS];	       /* open entries of a function region (recursion level) */
	uint64_t left[PS_HITPATH_MAX_SAMPLED]; /* sampled region k: hits until the next sampled one */
	int *rets, nrets;		       /* ps_hitpath_returns(): entries' handles awaiting returns */
	struct ps_reading last;		       /* ps_hitpath_returns(): its last reading, and when */
	uint64_t last_t;
};

/* How a sampled region's hits are chosen. */
struct policy {
	int region;
	uint64_t every;
	double p;
	int windowed;
};

struct ps_hitpath {
	struct ps_region_info *reg;
	const int *nreg;
	struct hthr *threads[HP_BUCKETS];
	unsigned nvals, nargs;
	struct ps_ring *ring;
	unsigned char *store;
	uint64_t nstore, capstore;
	size_t recsize;
	uint64_t seq, dropped;
	struct ps_psnap_writer *spill; /* records go to this file instead of memory */
	int spilling;		       /* records went to a file (it may be closed now) */
	int spill_nreg;		       /* region names already in the file */
	uint64_t spilled;
	struct ps_error fail; /* why the last drain failed */
	struct policy pol[PS_HITPATH_MAX_SAMPLED];
	int npol;
	int in_window;		    /* windowed sampling: inside a window now */
	uint64_t rng;		    /* xorshift64 state for sampling gaps */
	struct ps_holds holds;	    /* when the program was held: records' times leave it out */
	uint64_t limit, limit_from; /* ps_hitpath_limit(): @limit records from seq @limit_from */
	int ret_depth;		    /* ps_hitpath_returns(): returns awaited per thread; 0: they carry handles */
};

/* hitpath_records.c */
void ps__hp_emit(struct ps_hitpath *hp, const struct hthr *th, const struct slot *sl, const struct ps_reading *end,
		 uint64_t t_end, int cpu_end, unsigned flags);
void ps__hp_records_free(struct ps_hitpath *hp);

#endif
