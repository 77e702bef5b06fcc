/* core/binary/lines_cfg.h - a line range through the control flow of the functions that hold its
 * code (lines_cfg.c), for the readings of lines_range.c. Not for use outside the core. */
#ifndef PS_LINES_CFG_H
#define PS_LINES_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lines_graph.h"
#include "lines_priv.h"

/* The functions of a range FILE:L1-L2, decoded, each instruction placed (insn.at). */
struct cfg {
	const char *file; /* as in the line tables */
	int l1, l2;
	struct fn fn[MAX_FUNCS];
	int nf;
};

/* Find, decode and place the functions holding code of lines [c->l1, c->l2] of c->file.
   1 when done; 0 when the code cannot be analysed (no functions, an unknown instruction, no
   memory). */
int ps__cfg_build(struct ps_lines *l, struct cfg *c);
void ps__cfg_free(struct cfg *c);

/* The first instruction at both sides (the table does not tell a start from an end there),
   or NULL; *fn receives its function. */
const struct insn *ps__cfg_shared(const struct cfg *c, const struct fn **fn);

/* The first instruction of the end line that straight-line code (no branch out, nothing
   jumping in) takes on into more of the range's code, or NULL; *fn receives its function. */
const struct insn *ps__cfg_interleaved(const struct cfg *c, const struct fn **fn);

/* Where each instruction is (insn.member), by a reading: @start == 0 the range's code and
   the end line's (insn.at); else the two addresses @start and @end only. */
void ps__cfg_place(struct cfg *c, uint64_t start, uint64_t end);

/* The states after each instruction, to a fixed point over every function; where a hit may
   return open from a function, @note (@n bytes, if empty) says so, its hits ending at @endname
   ("line 43", "0x1128"). 0, or -1 (no memory). */
int ps__cfg_flow(struct cfg *c, const char *file, const char *endname, char *note, size_t n);

/* The states control comes into instruction @i of @f with. */
uint8_t ps__cfg_ways_in(const struct fn *f, int i);

/* Choose the breakpoints of the flow reading (insn.arm). Whether any edge can end a hit: 1, 0,
   or -1 (no memory). */
int ps__cfg_choose(struct cfg *c);

#endif
