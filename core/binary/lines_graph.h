/* core/binary/lines_graph.h - the flow graph of one function's machine code, for line ranges
 * (lines_cfg.c) and the ends of inlined copies (lines_inline.c): instructions decoded with
 * Zydis, their edges, jump tables. Not for use outside the core. */
#ifndef PS_LINES_GRAPH_H
#define PS_LINES_GRAPH_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

enum { ST_CLOSED = 1, ST_OPEN = 2 };		       /* the state after an instruction: a set */
enum { M_OUT, M_RANGE, M_END };			       /* where an instruction is */
enum { AT_RANGE = 1, AT_END = 2 };		       /* the sides of the lines it is at: a set */
enum { K_PLAIN, K_JCC, K_JMP, K_IND, K_CALL, K_STOP }; /* how control leaves it */

struct insn {
	uint64_t addr, target; /* target: of a direct jump, jcc or call; of rip-relative lea */
	uint64_t table;	       /* K_IND: its jump table's link-time address (0: none found) */
	uint8_t len, kind, member, st, reached, rowstart;
	uint8_t at;	      /* the sides it is at (AT_RANGE, AT_END; both: the table does not tell) */
	uint8_t woven;	      /* at the end line, and straight-line code goes on into the range */
	uint8_t lea;	      /* a lea of a rip-relative address, into register @reg */
	uint8_t arm;	      /* 1 start, 2 end */
	uint8_t flow;	      /* how control leaves it, as decoded (enum ps_x86_flow) */
	int reg, first, nout; /* nout edges out: f->e[first .. first + nout) */
};

struct edge {
	int from, to;
};

/* An address range of an inlined call, and the line of the call in the range's file. */
struct inl {
	uint64_t lo, hi;
	int line;
};

#define MAX_RANGES 8
#define MAX_FUNCS 16
#define MAX_TABLE 1024

struct fn {
	uint64_t lo[MAX_RANGES], hi[MAX_RANGES], entry;
	int nr;
	const char *name;
	struct insn *in;
	int n;
	struct edge *e;
	int ne, cape;
	uint8_t ind; /* the states after indirect jumps whose targets are unknown (they may go to
			any instruction that begins a row) */
	bool unknown_ind;
	struct inl *inl; /* the function's inlined calls made from the range's file */
	int ninl;
	uint8_t entry_st; /* the state at the entry: closed, or either when a hit may be open
			     as control leaves a function of the range */
};

/* The innermost subprogram of the scopes at link-time address @addr into @sp: 1, or 0 if none.
   In inlined code that is the inlined function's abstract definition (it has no code). */
int ps__graph_subprogram(Dwarf *dw, uint64_t addr, Dwarf_Die *sp);

/* The concrete subprogram whose code holds link-time address @addr (inlined code included)
   into @sp: 1, or 0 if none. */
int ps__graph_holder(Dwarf *dw, uint64_t addr, Dwarf_Die *sp);

/* @f emptied, then the ranges, entry and name of subprogram @sp (at most MAX_RANGES ranges). */
void ps__graph_fn_of(Dwarf_Die *sp, struct fn *f);

/* The index of the instruction at @addr in @f, or -1. */
int ps__graph_find(const struct fn *f, uint64_t addr);

/* Decode every range of @f into f->in, sorted. 0, or -1 (an unknown instruction, no bytes). */
int ps__graph_decode(Elf *elf, struct fn *f);

/* The edges between the instructions of @f (jump tables read from @elf), and which ones the
   entry reaches (insn.rowstart must be set: unknown indirect jumps may go to any row). */
int ps__graph_edges(Elf *elf, struct fn *f);

/* @f emptied, then the graph of the code in ranges [lo[i], hi[i]) (at most MAX_RANGES), entered
   at @entry: decoded and linked as the two above do. 0, or -1 (@f may hold what was made:
   free f->in and f->e either way). */
int ps__graph_of(Elf *elf, const uint64_t *lo, const uint64_t *hi, int nr, uint64_t entry, struct fn *f);

#endif
