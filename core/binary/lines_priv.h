/* core/binary/lines_priv.h - the inside of struct ps_lines, shared by lines.c (the tables) and
 * lines_cfg.c (line ranges through a function's control flow). Not for use outside the core. */
#ifndef PS_LINES_PRIV_H
#define PS_LINES_PRIV_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <string.h>

#include "elffile.h"
#include "lines.h"

struct row {
	uint64_t addr;
	const char *file;
	int line;
	bool stmt;
	bool end; /* end of a sequence: its address is past the code */
};

struct ps_lines {
	char *path;
	struct ps_elf_file *file;
	Elf *elf;  /* file->elf */
	Dwarf *dw; /* ps_elf_dwarf(file) */
	struct row *rows;
	size_t nrows, cap;
	char **pool; /* strings made here (demangled callers) */
	size_t npool;
};

static inline bool ps__same_file(const char *a, const char *b)
{
	return a == b || strcmp(a, b) == 0;
}

/* The one file of the line tables that @q names (see ps_lines_addrs()), or NULL with @err set. */
const char *ps__lines_find_file(struct ps_lines *l, const char *q, struct ps_error *err);

#endif
