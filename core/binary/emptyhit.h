/* core/binary/emptyhit.h - where an empty hit of a function can be caught in its own code.
 *
 * A hit caught by a breakpoint or a probe pays the catcher's own cost: the end of the trap at
 * its start and the start of the trap at its end. A regression gate takes that cost (the floor)
 * away from a function's hits by catching hits that hold none of the function's work, at
 * instructions of the function itself, so that the traps are those of the function's hits:
 *
 *   - the entry: its first instruction to the next one (the same start as a hit of the function,
 *     ended by a breakpoint on an ordinary instruction);
 *   - a tail: an instruction that falls through to a `ret` without moving the stack pointer, to
 *     that `ret` (the same kind of end as the entry's), and a hit of a function region that
 *     starts at that instruction (the return address is at the stack pointer there, so the
 *     hit ends the way the function's own hits end, at its return).
 *
 * From them: floor = tail function hit + (entry range - tail range), every term a per-hit
 * figure: the entry's own start and the return's own end, nothing of the body.
 */
#ifndef PS_EMPTYHIT_H
#define PS_EMPTYHIT_H

#include <stdint.h>

#include "error.h"

#define PS_EMPTYHIT_MAX_TAILS 8

/**
 * struct ps_empty_hit - the sites of a function's empty hits (link-time addresses).
 * @entry:  the function's first instruction
 * @next:   the instruction the first one falls through to; 0 when the first one branches,
 *          calls, returns or traps (no entry range then)
 * @ntails: how many tails follow (at most PS_EMPTYHIT_MAX_TAILS, in address order)
 * @tail:   each @at falls through to the `ret` at @ret and leaves the stack pointer alone
 */
struct ps_empty_hit {
	uint64_t entry, next;
	int ntails;
	struct {
		uint64_t at, ret;
	} tail[PS_EMPTYHIT_MAX_TAILS];
};

/**
 * ps_empty_hit_sites() - decode the function @func of the ELF file @path.
 * @path: an executable or shared library
 * @func: a name as ps_sym_lookup() takes it, or a link-time address "0x..." (the function that
 *        holds it, from that address on)
 * @out:  filled on success
 * @err:  on failure: the lookup's error, "PATH: FUNC has no size ..." or "cannot decode ..."
 *
 * Return: 0, or -1 with @err set.
 */
int ps_empty_hit_sites(const char *path, const char *func, struct ps_empty_hit *out, struct ps_error *err);

#endif
