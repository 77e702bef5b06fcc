/* perfsh/marker.h - regions marked in the source, measured inside the process.
 *
 *   #include <perfsh/marker.h>          cc prog.c $(pkg-config --cflags --libs perfsh-marker)
 *
 *   PS_MARK_BEGIN(parse);               a region named "parse" starts on this thread
 *   PS_MARK_FIELD(0, nbytes);           context for the innermost open region (slots 0..3)
 *   PS_MARK_END(parse);                 ... and ends: one record with the counters at both ends
 *
 * Standalone, the environment configures it; nothing is measured unless PERFSH_OUT is set:
 *   PERFSH_OUT=run.psnap    write the records there (perfsh's snapshot file format; perfsh report run.psnap);
 *                           "%p" in it stands for the process id
 *   PERFSH_EVENTS=a,b       events of each thread's counter group (default: cycles,instructions with a
 *                           hardware PMU, task-clock,page-faults without)
 *   PERFSH_SAMPLE=0.01      record a hit with this probability (decided before any counter read)
 *   PERFSH_EVERY=N          or record every Nth hit of each thread
 *   PERFSH_SLOW_US=X        keep only hits slower than X microseconds (wall clock)
 *
 * Under perfsh (perfsh stat -r marker:NAME PROG, or perfsh.spawn{..., backend = "marker"}), perfsh
 * sets PERFSH_CONTROL: the library then takes its events and its policy (on/off, sampling, the
 * slow-hit threshold, which markers are armed) from memory perfsh shares with it, changeable
 * while the program runs, and writes each thread's records into a ring there, which perfsh
 * drains (core/catch/marker/markshm.h); the variables above are not read, and PERFSH_CONTROL is removed
 * from the environment so that children do not take it.
 *
 * Each macro site is also an SDT probe (provider "perfsh", names NAME_begin and NAME_end, in
 * .note.stapsdt as <sys/sdt.h> writes them) whose site is the 5-byte NOP 0f 1f 44 00 00, so a
 * uprobe can arm it on the kernel's fast path. With -DPERFSH_MARKER_OFF every macro compiles to
 * nothing: no call, no note, its arguments not evaluated.
 *
 * Thread-safe: each thread has its own counter group (opened at its first hit) and its own
 * buffer; no lock is taken on a hit. Regions nest (up to PS_MARKER_DEPTH open per thread).
 *
 * A record (struct ps_snap of perfsh's snapshot.h, with nargs = PS_MARKER_FIELDS) holds the
 * region, the thread id, seq (the thread's records numbered from 0), hit (the index of this hit
 * among the thread's hits of the region), CLOCK_MONOTONIC and the group's values and times at
 * both ends, the CPU at both ends, the fields as args and the depth (0 = outermost).
 * The file's META says how the counters were read (marker.read: read or rdpmc, with the ns of
 * each measured at start-up) and, at exit, entries.ID (begins of each region), marker.lost,
 * marker.unmatched (ends without their begin), marker.fast (hits under PERFSH_SLOW_US).
 */
#ifndef PERFSH_MARKER_H
#define PERFSH_MARKER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PS_MARKER_FIELDS 4     /* context slots of a record */
#define PS_MARKER_DEPTH 64     /* regions open at once on one thread */
#define PS_MARKER_REGIONS 1024 /* distinct region names in a process */

/**
 * ps_marker_region - the id of the region called @name (created at the first call).
 * @name: 1 to 127 bytes.
 *
 * Takes a lock: call it once per site and keep the id (the macros do).
 * Return: the id (>= 0), or -1 when @name is empty or too long, or PS_MARKER_REGIONS names exist.
 */
int ps_marker_region(const char *name);

/* A hit of region @id starts on this thread. An id that ps_marker_region() did not return is ignored. */
void ps_marker_begin(int id);

/* The hit of region @id ends: the innermost open hit of @id on this thread (inner ones still open
   are dropped, as a longjmp out of them would). An end without its begin is counted and ignored. */
void ps_marker_end(int id);

/* Context word @slot (< PS_MARKER_FIELDS) of the innermost open hit of this thread. */
void ps_marker_field(unsigned slot, uint64_t value);

/* Write what the threads have buffered to the file now (the process goes on). Return: 0, or -1. */
int ps_marker_flush(void);

/* 1 when markers record (PERFSH_OUT set, events opened, file written), 0 when they are off. */
int ps_marker_enabled(void);

#ifdef PERFSH_MARKER_OFF

#define PS_MARK_BEGIN(name)                                                                                            \
	do {                                                                                                           \
	} while (0)
#define PS_MARK_END(name)                                                                                              \
	do {                                                                                                           \
	} while (0)
#define PS_MARK_FIELD(slot, value)                                                                                     \
	do {                                                                                                           \
	} while (0)

#else

/* The SDT note of one site (the layout of <sys/sdt.h>'s _SDT_ASM_BODY, without arguments), at a
   5-byte NOP. */
#define PS_MARKER_SDT_(probe)                                                                                          \
	__asm__ __volatile__("990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"                                               \
			     ".pushsection .note.stapsdt,\"?\",\"note\"\n"                                             \
			     ".balign 4\n"                                                                             \
			     ".4byte 992f-991f, 994f-993f, 3\n"                                                        \
			     "991: .asciz \"stapsdt\"\n"                                                               \
			     "992: .balign 4\n"                                                                        \
			     "993: .8byte 990b\n"                                                                      \
			     ".8byte _.stapsdt.base\n"                                                                 \
			     ".8byte 0\n"                                                                              \
			     ".asciz \"perfsh\"\n"                                                                     \
			     ".asciz \"" probe "\"\n"                                                                  \
			     ".asciz \"\"\n"                                                                           \
			     "994: .balign 4\n"                                                                        \
			     ".popsection\n"                                                                           \
			     ".ifndef _.stapsdt.base\n"                                                                \
			     ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"                   \
			     ".weak _.stapsdt.base\n"                                                                  \
			     ".hidden _.stapsdt.base\n"                                                                \
			     "_.stapsdt.base: .space 1\n"                                                              \
			     ".size _.stapsdt.base, 1\n"                                                               \
			     ".popsection\n"                                                                           \
			     ".endif\n")

/* The region id of this site, resolved at its first pass. */
#define PS_MARKER_ID_(name)                                                                                            \
	__extension__({                                                                                                \
		static int ps_marker_id_ = -1;                                                                         \
		int ps_marker_i_ = __atomic_load_n(&ps_marker_id_, __ATOMIC_RELAXED);                                  \
		if (__builtin_expect(ps_marker_i_ < 0, 0))                                                             \
			__atomic_store_n(&ps_marker_id_, ps_marker_i_ = ps_marker_region(#name), __ATOMIC_RELAXED);    \
		ps_marker_i_;                                                                                          \
	})

#define PS_MARK_BEGIN(name)                                                                                            \
	do {                                                                                                           \
		PS_MARKER_SDT_(#name "_begin");                                                                        \
		ps_marker_begin(PS_MARKER_ID_(name));                                                                  \
	} while (0)
#define PS_MARK_END(name)                                                                                              \
	do {                                                                                                           \
		PS_MARKER_SDT_(#name "_end");                                                                          \
		ps_marker_end(PS_MARKER_ID_(name));                                                                    \
	} while (0)
#define PS_MARK_FIELD(slot, value) ps_marker_field((slot), (uint64_t)(value))

#endif

#ifdef __cplusplus
}
#endif

#endif
