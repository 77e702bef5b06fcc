/* core/catch/uprobe/upframes.h - the function frames each thread has open under the uprobe catcher,
 * matched by stack pointer.
 *
 * At a function's entry (the probe fires before its first instruction) the stack pointer points
 * at the return address: that is the frame's sp_entry. At each exit the catcher probes (a ret, a
 * tail-call jmp: core/binary/retsites.h) it points there again, and at a kernel return probe it is
 * 8 above (the ret ran). While the frame is open, everything it runs has a lower stack pointer.
 * So a probe of the thread whose stack pointer is above an open frame's sp_entry shows that the
 * frame was left without an exit: an exception or a longjmp unwound it; so does a function's entry
 * at the sp_entry itself, which takes the frame's place. Frames are kept innermost last; those
 * left are always the innermost ones. A frame whose return a uretprobe catches is the exception:
 * a function entered at its sp_entry was tail-called from it, and returns through it; unless it
 * is a leaf's (PS_UPFRAME_LEAF), which tail-calls nothing: an entry there shows it was left (a
 * signal handler's longjmp out of it).
 *
 * Limits: code that moves a thread to another stack (a signal handler on sigaltstack, coroutines
 * that swap stacks) can make frames look unwound.
 * Not thread-safe: the catcher's thread uses it.
 */
#ifndef PS_UPFRAMES_H
#define PS_UPFRAMES_H

#include <stdint.h>
#include <sys/types.h>

#include "hitpath.h"

struct ps_upframes;

/* How a frame's return comes (the @uret of ps_upframes_push()). */
enum {
	PS_UPFRAME_URET = 1, /* through a uretprobe, from a function that may tail-call */
	PS_UPFRAME_LEAF,     /* through a uretprobe, from a leaf (core/binary/retsites.h) */
};

/* A new, empty set of frames, or NULL when out of memory. */
struct ps_upframes *ps_upframes_new(void);

/* Free @f (NULL is fine). */
void ps_upframes_free(struct ps_upframes *f);

/**
 * ps_upframes_push() - thread @tid entered a frame of region @region at stack pointer @sp; the
 * hit path gave it @handle (what its end carries back); @uret: 0 (its exits are probed), or how
 * its return comes through a uretprobe (PS_UPFRAME_URET or PS_UPFRAME_LEAF).
 * Return: 0, or -1 when out of memory (the frame is not kept: its exit then ends nothing).
 */
int ps_upframes_push(struct ps_upframes *f, pid_t tid, uint64_t sp, int region, int handle, int uret);

/**
 * ps_upframes_left() - pop the innermost frame of @tid that a probe at stack pointer @sp shows
 * was left: its sp_entry is below @sp, or, with @entry (a function's entry), at @sp unless its
 * return comes through a uretprobe and it may tail-call (PS_UPFRAME_URET).
 * Call until it returns 0.
 * Return: 1 with *@region and *@handle of the frame popped, 0 when there is none.
 */
int ps_upframes_left(struct ps_upframes *f, pid_t tid, uint64_t sp, int entry, int *region, int *handle);

/**
 * ps_upframes_pop() - an exit of region @region with the return address at stack pointer @sp:
 * pop the innermost frame of @tid if it is that region's and its sp_entry is @sp.
 * Return: 1 with *@handle, or 0 (an exit whose entry was not seen, or a nested call's that opened
 * nothing).
 */
int ps_upframes_pop(struct ps_upframes *f, pid_t tid, uint64_t sp, int region, int *handle);

/**
 * ps_upframes_entry() - hit @h (an ENTRY of a function region) goes to @hp; the frame it opens,
 * with the return address at @sp (0: unknown, its exit then ends nothing), is kept (@uret: as
 * ps_upframes_push()).
 */
void ps_upframes_entry(struct ps_upframes *f, struct ps_hitpath *hp, struct ps_hit *h, uint64_t sp, int uret);

/**
 * ps_upframes_exit() - hit @h is an exit of its region with the return address at @sp: it ends
 * the frame entered there (a RETURN to @hp with that frame's handle), if it is the innermost.
 */
void ps_upframes_exit(struct ps_upframes *f, struct ps_hitpath *hp, const struct ps_hit *h, uint64_t sp);

/**
 * ps_upframes_unwound() - before any hit @h of a thread with stack pointer @sp: the frames it
 * shows were left (ps_upframes_left(); @entry: @h is a function's entry) end at @h's reading
 * and time, as RETURNs flagged PS_SNAP_UNWOUND.
 */
void ps_upframes_unwound(struct ps_upframes *f, struct ps_hitpath *hp, const struct ps_hit *h, uint64_t sp, int entry);

/* Forget the frames of @tid (its records were lost, it ended), or of every thread. */
void ps_upframes_forget(struct ps_upframes *f, pid_t tid);
void ps_upframes_forget_all(struct ps_upframes *f);

/* The frames @tid has open (for tests). */
int ps_upframes_depth(const struct ps_upframes *f, pid_t tid);

#endif
