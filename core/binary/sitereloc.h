/* core/binary/sitereloc.h - a patch site in a function (its entry, or an instruction boundary
 * inside it, where a line range starts or ends), made ready for a jmp patched over it: the
 * instructions there moved to a trampoline (core/binary/x86/x86reloc.h), with what only its
 * file tells checked too, through the line flow graph (lines_graph.h) of all its code: its cold
 * parts ("f.cold", DWARF ranges) and its jump tables. A branch from any of them into the
 * displaced bytes (after their first) refuses the site, and so does an indirect jump through
 * a register or an indexed address for which no jump table is found (a switch whose targets
 * are unknown: they may be there). A jump through a pointer in memory (a tail call through the
 * GOT) is no such jump. A jump back to the entry from a cold part or a jump table is reported
 * in @again as ps_x86_reloc() reports one from the function's own bytes.
 *
 * Branches from other functions into this one are not looked for (compilers do not write
 * them), nor are exception landing pads (the unwinder goes to one after a call: never to an
 * entry; a site inside a function whose displaced bytes hold one is not refused here).
 */
#ifndef PS_SITERELOC_H
#define PS_SITERELOC_H

#include <stdint.h>

#include "error.h"
#include "x86reloc.h"

/**
 * ps_site_reloc() - move the instructions at link-time address @addr of ELF file @path (a
 * function's entry, or an instruction boundary inside one), for a patch of @patch bytes, to a
 * trampoline at @tramp.
 * @bias:  what the file is loaded at (a run-time address minus its link-time one); @tramp
 *         and @out are in run-time addresses
 * @flags: PS_X86_RELOC_SHADOW_STACK or 0 (the indirect jumps are checked here)
 * @out:   as ps_x86_reloc() fills it
 * @err:   PS_ENOTFOUND when no function holds @addr; PS_EUSAGE and a line naming the
 *         function and the offset for a site that is refused ("sum+0x2: ...", or where the
 *         branch is outside the function's symbol "sum: a branch at 0x1040 (sum.cold) lands
 *         inside the 5 bytes displaced for the patch")
 *
 * Return: 0, or -1 with @err set.
 */
int ps_site_reloc(const char *path, uint64_t addr, uint64_t bias, unsigned patch, uint64_t tramp, unsigned flags,
		  struct ps_x86_reloc *out, struct ps_error *err);

#endif
