/* core/binary/lines.h - DWARF line tables and inlined copies of functions (libdw).
 *
 * Addresses are link-time, like those of core/binary/symbols.h; the caller adds the load bias.
 */
#ifndef PS_LINES_H
#define PS_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct ps_lines; /* the line table and DIEs of one ELF file */

/**
 * ps_lines_open() - read the DWARF line tables of @path.
 * @l:    set to the new object on success.
 * @path: an ELF file; when it has no DWARF, its separate debug file
 *        /usr/lib/debug/.build-id/xx/yyyy.debug is used if present.
 * @err:  "cannot open PATH: ...", "PATH is not an ELF file", or
 *        "PATH has no DWARF line info: rebuild with -g".
 * Return: 0, or -1 with @err set.
 */
int ps_lines_open(struct ps_lines **l, const char *path, struct ps_error *err);

/** ps_lines_close() - free @l (NULL is allowed). */
void ps_lines_close(struct ps_lines *l);

/**
 * ps_lines_source_files() - the source files the line tables of ELF file @path name (none
 * when it has no DWARF or is no ELF file): @fn is called with each, in the order of the
 * tables, until it returns nonzero.
 *
 * Return: 0, or -1 with @err set when @path cannot be opened.
 */
int ps_lines_source_files(const char *path, int (*fn)(void *ud, const char *file), void *ud, struct ps_error *err);

/**
 * ps_lines_addrs() - the addresses where code for FILE:LINE begins.
 * @l:           the tables.
 * @file:        a source file: its basename, a suffix of its path at a '/', or its path.
 * @line:        a line number (from 1).
 * @addrs:       receives up to @max addresses, sorted, without duplicates.
 * @max:         room in @addrs.
 * @actual_line: receives @line, or the next line that has code when @line has none.
 * @err:         unknown file (with the 3 closest file names), a @file that matches
 *               several files, a line past the last line with code.
 *
 * An address is that of an is_stmt row of @file and the line whose previous row
 * (in the same sequence) is not of the same file and line: the start of each block
 * of code for the line (a loop header has two, an inlined header one per copy).
 * Return: the number of addresses written (1..@max), or -1 with @err set.
 */
int ps_lines_addrs(struct ps_lines *l, const char *file, int line, uint64_t *addrs, int max, int *actual_line,
		   struct ps_error *err);

/**
 * ps_lines_parse_range() - parse "FILE:L1-L2" or "FILE1:L1-FILE2:L2".
 * @spec:          the text.
 * @file1, @n1:    receives FILE1 (buffer of @n1 bytes).
 * @l1:            receives L1.
 * @file2, @n2:    receives FILE2 (FILE1 again in the short form).
 * @l2:            receives L2.
 * @err:           "bad line range 'SPEC': expected FILE:L1-L2 or FILE:L1-FILE:L2", or
 *                 a range in one file that ends where or before it starts.
 *
 * The region of a range runs from L1 (inclusive) to L2 (exclusive); where its hits
 * start and end is found by ps_lines_range_arms(). File names may
 * contain '-' and ':'; the split is at the first ":DIGITS-".
 * Return: 0, or -1 with @err set.
 */
int ps_lines_parse_range(const char *spec, char *file1, size_t n1, int *l1, char *file2, size_t n2, int *l2,
			 struct ps_error *err);

/**
 * struct ps_inline - one address range of an inlined copy of a function.
 * @entry:  the copy's entry pc (DW_AT_entry_pc, or its lowest address).
 * @lo:     start of the range.
 * @hi:     end of the range (exclusive).
 * @caller: the function the copy is inlined into (owned by the ps_lines).
 * @copy:   which copy: ranges of one copy share it (0, 1, ... in DIE order).
 */
struct ps_inline {
	uint64_t entry;
	uint64_t lo, hi;
	const char *caller;
	int copy;
};

/**
 * ps_lines_inlined() - the inlined copies of function @name.
 * @l:    the tables.
 * @name: DW_AT_name of the abstract origin, or its demangled linkage name, with or
 *        without the parameter list ("ns::K::f" or "ns::K::f(int)").
 * @out:  receives up to @max entries, one per address range of a copy (a copy split
 *        into hot and cold parts gives two entries with the same @copy).
 * @max:  room in @out.
 * @err:  not filled when there is none (that is 0, not an error).
 *
 * Every DW_TAG_inlined_subroutine whose abstract origin is @name; out-of-line
 * instances are not included.
 * Return: the number of entries written, or -1 with @err set.
 */
int ps_lines_inlined(struct ps_lines *l, const char *name, struct ps_inline *out, int max, struct ps_error *err);

/**
 * ps_lines_inline_ends() - where the hits of inlined copy @copy end.
 * @l:      the tables.
 * @in, @n: the copies' ranges, as ps_lines_inlined() gave them.
 * @copy:   which copy (struct ps_inline's @copy).
 * @ends:   receives up to @max link-time addresses, sorted: a hit ends before the instruction
 *          there runs.
 * @again:  receives 1 when control can come back to the entry inside a hit (a loop at the
 *          entry), or when the code could not be decoded; 0 when a hit passes its entry once.
 * @err:    no such copy, or more ends than @max.
 *
 * A hit runs from the copy's entry until control leaves its ranges. The function holding it
 * is decoded (Zydis) into its flow graph: the ends are the targets of the edges out of the
 * copy's code that control reaches from the entry (a fall-through past a range, a jump out),
 * and that code's returns, tail jumps and indirect jumps to unknown targets; never an address
 * inside the copy, nor one reached only from code the compiler hoisted before the entry.
 * Where the code cannot be decoded, the ends of its ranges that are not inside it.
 * Return: the number of ends written (0 for a copy that never leaves), or -1 with @err set.
 */
int ps_lines_inline_ends(struct ps_lines *l, const struct ps_inline *in, int n, int copy, uint64_t *ends, int max,
			 int *again, struct ps_error *err);

/**
 * ps_lines_addr2line() - the source line of link-time address @addr.
 * @file: receives the file's path (owned by @l).
 * @line: receives the line.
 * Return: 0, or -1 if @addr has no line info.
 */
int ps_lines_addr2line(struct ps_lines *l, uint64_t addr, const char **file, int *line);

/**
 * struct ps_lines_arm - a breakpoint of a line range: where a hit may start or end.
 * @addr: link-time address.
 * @end:  1 where a hit ends (before the instruction runs), 0 where it starts.
 */
struct ps_lines_arm {
	uint64_t addr;
	int end;
};

#define PS_LINES_MAX_ARMS 64

/**
 * struct ps_lines_range - how a line range is read, and where its hits start and end.
 * @l1, @l2:   in: the start and end lines; out: each moved to the next line with code (any row
 *             of the line table, is_stmt or not) when it has none.
 * @arm:       @narm breakpoints, ends first.
 * @perforator: 1 when the range is read as Perforator reads one (see ps_lines_range_arms()).
 * @start, @end: that reading's two link-time addresses.
 * @end_idle:  an end is armed where control also arrives while no hit can be open (in a loop
 *             after the hit, say): a catcher that cannot disarm it takes a stop there each time.
 * @note:      a remark for the user ("" if none), e.g. paths that return inside the range.
 * @reading:   one line for a report's header: how the range was read, and why.
 */
struct ps_lines_range {
	int l1, l2;
	struct ps_lines_arm arm[PS_LINES_MAX_ARMS];
	int narm;
	int perforator;
	uint64_t start, end;
	int end_idle;
	char note[300];
	char reading[300];
};

/**
 * ps_lines_range_arms() - the breakpoints of the line range FILE:L1-FILE:L2, from the
 * control flow of the functions that hold its code.
 * @l:    the tables.
 * @file: the source file (as for ps_lines_addrs()).
 * @r:    @r->l1 and @r->l2 in; the reading and its breakpoints out.
 * @err:  a range whose lines have no code, or whose end no reading reaches: one line
 *        saying so and what to do.
 *
 * An instruction is at every line with a row at its address (the views there: control
 * passes each of those lines before it runs), else at the line of the last row before it; an
 * inlined call's code is also at the line of the call. The range's code is the instructions
 * at a line in [@l1, @l2) of @file, the end line's those at line @l2.
 *
 * Where no instruction is at both and no code of the end line is interleaved with the
 * range's (straight-line code that goes on into more of the range), the table gives one
 * reading: a hit starts where control enters the range's code while no hit is open and
 * ends at the first instruction of the end line after that. The instructions are decoded
 * (Zydis) into a flow graph, and which edges can start or end a hit is found from it: only
 * their targets (or their sources, when the target is also reached from elsewhere) are
 * returned, so a loop wholly inside or outside the range costs no stop per iteration.
 *
 * Otherwise (or when that reading never reaches the end) the range is read as Perforator
 * reads one: a hit runs from the start line's first address (the lowest of its rows and
 * of its inlined calls) to the end line's first address that is not also that one.
 * Return: the number of breakpoints (1..PS_LINES_MAX_ARMS); 0 when the code cannot be
 * analysed (no functions in the DWARF, an instruction Zydis does not know, too many
 * breakpoints): the caller arms the lines' first addresses instead; -1 with @err set.
 */
int ps_lines_range_arms(struct ps_lines *l, const char *file, struct ps_lines_range *r, struct ps_error *err);

#endif
