/* core/binary/retsites.h - where a function leaves: the return sites of a function in an ELF file, for
 * a probe that catches its exits without touching its return address (the uprobe catcher).
 *
 * A function's code is its symbol's bytes, the ranges of its DWARF subprogram (DW_AT_ranges:
 * the hot and cold parts gcc splits it into) and the parts gcc moved out under symbols of its
 * own ("f.cold", "f.cold.1"), decoded with Zydis (core/binary/x86/x86insn.h) through the line flow
 * graph's decoder (lines_graph.h), whose jump tables tell a switch from a tail call. Its exits are:
 *   - each ret;
 *   - each jmp whose target is outside every part (a tail call): direct, or indirect where no
 *     jump table was found for it (a call through a pointer, through the GOT);
 * At each of them, before it runs, the stack pointer is where it was at the entry (it points
 * at the return address). A call that never returns (abort, __cxa_throw) is no exit: the frame
 * ends by unwinding.
 *
 * An entry inside a function (where its return address is at the stack pointer, as before the
 * ret of an empty hit: core/binary/emptyhit.h) takes the exits of the function that holds it:
 * the one reached with the stack pointer where it was at the entry is its own.
 *
 * Not found (the caller keeps the kernel's return probe, or refuses): a symbol without a size,
 * an address no function symbol holds, code that does not decode, a conditional
 * jump out of the function (a conditional tail call: a probe there cannot tell taken from not),
 * more than PS_RETSITES_MAX exits or PS_RETSITES_MAX_PARTS parts.
 */
#ifndef PS_RETSITES_H
#define PS_RETSITES_H

#include <stdint.h>

#include "error.h"

#define PS_RETSITES_MAX 63	/* exits of one function (with its entry, 64 probes: one counter group) */
#define PS_RETSITES_MAX_PARTS 8 /* address ranges of one function */

enum ps_retsite_kind {
	PS_RETSITE_RET = 1, /* a ret */
	PS_RETSITE_JMP,	    /* a jmp to a place outside the function: a tail call */
	PS_RETSITE_JMP_IND, /* an indirect jmp with no jump table: a tail call through a pointer */
};

/**
 * struct ps_retsite - one exit.
 * @addr:   its link-time address
 * @offset: its file offset (what a uprobe is opened at)
 * @kind:   enum ps_retsite_kind
 */
struct ps_retsite {
	uint64_t addr, offset;
	int kind;
};

/**
 * struct ps_retsites - a function's parts and exits.
 * @entry:          the link-time address of @offset
 * @nparts, @lo, @hi: its address ranges [lo, hi), in address order, the entry's first
 * @cold:           of them, the ones outside the entry's symbol (cold parts)
 * @n, @site:       its exits, in address order
 * @calls:          the call instructions in its parts (0 and only rets for exits: a leaf,
 *                  see ps_retsites_leaf())
 */
struct ps_retsites {
	uint64_t entry;
	int nparts, cold, calls;
	uint64_t lo[PS_RETSITES_MAX_PARTS], hi[PS_RETSITES_MAX_PARTS];
	int n;
	struct ps_retsite site[PS_RETSITES_MAX];
};

/**
 * ps_retsites_find() - the exits of the function entered at file offset @offset of ELF file
 * @path (its first byte, or inside it: see above).
 * @out: filled on success
 * @err: why they cannot be found, one line naming the function ("sum has no symbol size",
 *       "sum: a conditional jump at 0x1234 leaves the function", ...)
 *
 * Return: 0 (@out->n may be 0: the function never returns), or -1 with @err (PS_ENOTFOUND when
 * no function holds @offset, PS_EUSAGE for the other reasons above).
 */
int ps_retsites_find(const char *path, uint64_t offset, struct ps_retsites *out, struct ps_error *err);

/**
 * ps_retsites_leaf() - whether the function of @rs is a leaf: it calls nothing and leaves only by
 * its rets (no tail call), so no exception, unwinder or longjmp passes through its frame (short
 * of a signal handler that unwinds or jumps out of it): its return address may be replaced by a
 * uretprobe's without harm.
 * Return: 1 or 0.
 */
int ps_retsites_leaf(const struct ps_retsites *rs);

struct ps_elf_file;
struct ps_symtab;
struct ps_sym;

/**
 * ps_retsites_parts() - the address ranges of function @s of file @f (symbols @st) into
 * @rs->lo, @rs->hi, @rs->nparts and @rs->cold: its symbol's bytes, the ranges of its DWARF
 * subprogram and its symbols "NAME.cold" and "NAME.cold.N", joined where they overlap.
 *
 * Return: 0, or -1 when there are more than PS_RETSITES_MAX_PARTS.
 */
int ps_retsites_parts(struct ps_elf_file *f, const struct ps_symtab *st, const struct ps_sym *s,
		      struct ps_retsites *rs);

#endif
