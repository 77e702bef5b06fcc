/* core/catch/marker/markshm.h - the memory perfsh shares with the marker library of a program it started.
 *
 * perfsh (core/catch/marker/session_marker.c) creates it as a memfd, lays it out, and starts the program
 * with PERFSH_CONTROL=/proc/PERFSH_PID/fd/N in its environment; the library (marker/) opens
 * that path before main(), checks the magic and the version, and from then on:
 *   - reads its configuration from the control block, live: on/off, the sampling draw, every
 *     Nth hit, the slow-hit threshold, which markers are armed. perfsh may change them while
 *     the program runs; a hit reads them with relaxed loads (no lock, no system call).
 *   - publishes the names of its regions (the table below; nregions last, with release);
 *   - gives each thread a slot: its counts (begins per region, ends without a begin, hits
 *     under the threshold) and a single-producer ring (core/hitpath/ring.h) of its records, which
 *     perfsh drains while the program runs. A full ring drops the record and counts it.
 * The events are perfsh's (the list in @events, resolved by the library with the same
 * resolver), fixed for the run, as every catcher's are: every record has the same layout,
 * ps_snap_size(nvals, PS_MSHM_FIELDS), the size of the rings' records.
 *
 * The agent (agent/, --backend inproc) finds in @sites the function entries and the points of
 * line ranges to patch; each function or range becomes a region of the library named as the
 * site is, armed by perfsh like a marker. With the agent, @events may hold several groups
 * ("a,b;c"), and a record's values are every event's, then each later group's enabled and
 * running times (nvals counts them).
 *
 * Slots: FREE -> USED (a thread's first hit, by compare-and-swap) -> GONE (the thread ended;
 * its last records are in the ring) -> FREE again once perfsh has drained it and added its
 * counts to its totals. A thread that finds no FREE slot records nothing (counted in
 * @no_slot).
 */
#ifndef PS_MARKSHM_H
#define PS_MARKSHM_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

#define PS_MSHM_MAGIC 0x314c544348534d50ull /* "PMSHCTL1", little-endian */
#define PS_MSHM_VERSION 2
#define PS_MSHM_REGIONS 1024 /* == PS_MARKER_REGIONS */
#define PS_MSHM_NAME 128
#define PS_MSHM_FIELDS 4 /* == PS_MARKER_FIELDS */
#define PS_MSHM_SLOTS 64
#define PS_MSHM_RING_RECORDS 16384 /* a thread's records perfsh may fall behind by */
#define PS_MSHM_DEPTH 64	   /* == PS_MARKER_DEPTH */
#define PS_MSHM_VALUES 16	   /* == PS_MAX_EVENTS */

enum { PS_MSHM_FREE = 0, PS_MSHM_USED = 1, PS_MSHM_GONE = 2 };

/* The agent (agent/, --backend inproc) patches up to this many function entries and points. */
#define PS_MSHM_SITES 64

/* A site's state, as the agent leaves it. */
enum { PS_MSHM_SITE_WAITING = 0, PS_MSHM_SITE_PATCHED = 1, PS_MSHM_SITE_REFUSED = 2 };
/* A site's flags: EVERY_LEVEL for an entry; START and END (one or both) make it a point of a
   range region, where a hit of it starts or ends: where both are, in the order they were
   armed, the end first unless START_FIRST. LIB: a function of a shared library, given by its
   link-time address in the file of device @dev and inode @ino, which the agent finds mapped
   and turns into the run-time one. */
enum {
	PS_MSHM_SITE_EVERY_LEVEL = 1,
	PS_MSHM_SITE_START = 2,
	PS_MSHM_SITE_END = 4,
	PS_MSHM_SITE_START_FIRST = 8,
	PS_MSHM_SITE_LIB = 16
};

/* A function entry or a range's point the agent patches: perfsh writes it before the program
   runs (@addr, @size, @fn, @name: the region's marker name, @patch and @len), the agent @state
   and, when refused, @why. */
struct ps_mshm_site {
	uint64_t addr,
	    size;	   /* run-time address of the entry or point (a library's: link-time); bytes of the function */
	uint64_t dev, ino; /* a library's file (PS_MSHM_SITE_LIB), else 0 */
	uint32_t state;
	uint32_t flags; /* PS_MSHM_SITE_* */
	char name[PS_MSHM_NAME];
	char why[256];
	uint64_t fn;	/* a point: the run-time address of the function that holds it; 0: @addr is its entry */
	uint64_t patch; /* the bytes the jmp displaces, as perfsh checked them: [@patch, @patch + @len) */
	uint32_t len;
};

/* An attach (-p): perfsh and the agent it injected (agent/agent_attach.c) meet here. perfsh
   writes @perfsh before the agent is called; at each try of the patch, with every thread held,
   the threads' instruction pointers (@held, @nheld; @last on the last try). The agent's watcher
   thread restores every patched site when @detach is set or perfsh ends, then sets @restored. */
#define PS_MSHM_HELD 1024
/* What perfsh_agent_attach() returns. */
enum {
	PS_MSHM_AT_OK = 0,
	PS_MSHM_AT_TAKEN = 1,  /* the agent measures for a control block already */
	PS_MSHM_AT_OFF = 2,    /* the block refused (its state OFF, @why says) */
	PS_MSHM_AT_NOSYNC = 3, /* no membarrier SYNC_CORE: the bytes could not be put back safely */
	PS_MSHM_AT_THREAD = 4, /* no watcher thread */
};
struct ps_mshm_attach {
	int32_t perfsh;
	uint32_t last;
	uint32_t nheld;
	uint32_t detach;   /* perfsh -> agent: 1, put the sites' bytes back */
	uint32_t restored; /* agent -> perfsh: 1, every patched site has its original bytes */
	uint32_t patched;  /* agent -> perfsh: sites written so far */
	uint64_t held[PS_MSHM_HELD];
};

/* What the library says of itself (state). */
enum { PS_MSHM_WAITING = 0, PS_MSHM_RUNNING = 1, PS_MSHM_OFF = 2 };

/* The live policy: perfsh writes it, each hit reads it (relaxed atomics on both sides). */
struct ps_mshm_policy {
	uint32_t on;	    /* 0: every marker is off (a hit costs a load and a branch) */
	uint32_t sampled;   /* 1: a policy below keeps only some hits (records are flagged) */
	uint64_t threshold; /* a hit is recorded when the thread's draw is below it (UINT64_MAX: all) */
	uint64_t every;	    /* or every Nth hit of each thread (0: off) */
	uint64_t slow_ns;   /* keep only hits slower than this (0: all) */
};

struct ps_mshm_ctl {
	uint64_t magic;
	uint32_t version;
	uint32_t nslots;
	uint64_t bytes;	     /* the whole mapping */
	uint64_t slot_bytes; /* each slot, a multiple of 4096 */
	uint64_t slots_off;  /* offset of slot 0 */
	uint64_t recsize;    /* bytes of a record */
	uint32_t nvals, nargs;
	char events[1024]; /* comma-separated, as perfsh resolved them */
	/* perfsh -> library, live */
	_Alignas(64) struct ps_mshm_policy pol;
	uint32_t arm_all;		/* 1: every marker is armed, whatever @armed says */
	uint8_t armed[PS_MSHM_REGIONS]; /* per region id: recorded (1) or not (0) */
	char arm[PS_MSHM_REGIONS * 8];	/* names to arm as the library creates them, comma-separated */
	/* library -> perfsh */
	_Alignas(64) int32_t pid; /* the process that took it (0: none yet) */
	uint32_t state;		  /* PS_MSHM_* above */
	char why[256];		  /* state OFF: why */
	char read_mode[16];	  /* "read" or "rdpmc" */
	double read_ns, rdpmc_ns; /* measured at start-up; rdpmc_ns < 0: not available */
	uint64_t no_slot;	  /* threads that found no free slot */
	uint64_t threads;	  /* threads that took a slot */
	uint32_t nregions;	  /* names published */
	char names[PS_MSHM_REGIONS][PS_MSHM_NAME];
	/* perfsh -> agent, before the program runs (appended: the marker library reads none of it) */
	uint32_t nsites;
	struct ps_mshm_site sites[PS_MSHM_SITES];
	/* perfsh <-> agent, an attach (-p) */
	struct ps_mshm_attach at;
};

/* A thread's counts: ends without their begin, hits under the slow-hit threshold. */
struct ps_mshm_counts {
	uint64_t unmatched, fast;
};

/* One hit open on a thread (the library's frame): its region, its hit number, whether it is
   recorded, and its start (time, counter times, CPU, values) and arguments. */
struct ps_mshm_frame {
	int32_t id;
	uint32_t sampled;
	uint64_t hit;
	uint64_t t_start;
	uint64_t enabled, running;
	int16_t cpu;
	uint64_t args[PS_MSHM_FIELDS];
	uint64_t start[PS_MSHM_VALUES];
};

/* A thread's slot. Its open hits are kept here, not in the program's own memory, so that
   perfsh sees what a thread had open when the program ended (killed, or exit() inside a
   region): @stack[0 .. @depth - 1], outermost first. */
struct ps_mshm_slot {
	uint32_t state; /* PS_MSHM_FREE, USED, GONE */
	uint32_t tid;
	struct ps_mshm_counts cnt;
	uint64_t entries[PS_MSHM_REGIONS]; /* begins per region id */
	uint32_t depth;
	struct ps_mshm_frame stack[PS_MSHM_DEPTH];
	_Alignas(64) unsigned char ring[]; /* a struct ps_ring of the slot's remaining bytes */
};

static inline struct ps_mshm_slot *ps_mshm_slot(struct ps_mshm_ctl *c, unsigned i)
{
	return (struct ps_mshm_slot *)((unsigned char *)c + c->slots_off + (size_t)i * c->slot_bytes);
}

static inline size_t ps_mshm_ring_bytes(const struct ps_mshm_ctl *c)
{
	return c->slot_bytes - offsetof(struct ps_mshm_slot, ring);
}

#endif
