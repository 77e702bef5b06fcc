/* core/binary/codeaddr.h - whether an address a user typed is a place for a probe: the first byte of
 * an instruction in the executable code of an ELF file. Read from the file alone (its sections
 * and function symbols; instructions decoded by core/binary/x86/x86insn.c), so it can be asked before a
 * process is started or attached. */
#ifndef PS_CODEADDR_H
#define PS_CODEADDR_H

#include <stdint.h>

#include "error.h"
#include "symbols.h"

/* ps_code_check() flags */
enum {
	PS_CODE_ENTRY = 1 /* a function region's entry: where a symbol covers it, that symbol's start */
};

/**
 * ps_code_check() - may a probe be written at link-time address @addr of ELF file @path?
 * @st:    the file's function symbols (ps_sym_open()), or NULL to read them here
 * @flags: PS_CODE_ENTRY or 0
 * @err:   one line naming the address as given (never a run-time address) and what it is
 *
 * The instructions are decoded from the start of the function that holds @addr, or where no
 * symbol covers it from the nearest function before it in its section, else from the
 * section's start. Refused with PS_EUSAGE: an address inside an instruction ("0x1281 is inside
 * the instruction at 0x1280 in sum (sum+0); boundaries near it: 0x1280, 0x1287"), in a section
 * that is not code ("0x2004 is in .rodata, not in code; ..."), outside every section, where
 * the code before it does not decode, or, with PS_CODE_ENTRY, where the return address is not
 * at the stack pointer (a function region swaps the return address there): inside a function
 * but neither at its entry nor where its .eh_frame puts the return address at the stack
 * pointer (before a ret that keeps it), or, where no symbol covers it, where .eh_frame puts
 * it elsewhere.
 * Return: 0, or -1 with @err set.
 */
int ps_code_check(const char *path, const struct ps_symtab *st, uint64_t addr, unsigned flags, struct ps_error *err);

#endif
