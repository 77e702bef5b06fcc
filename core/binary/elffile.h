/* core/binary/elffile.h - one ELF file, opened once: its descriptor, its libelf handle, and its DWARF
 * (read when first asked for, from the file or from its /usr/lib/debug/.build-id/ companion).
 *
 * Every reader of a program file in core/binary/ (symbols, lines, SDT notes, build ids, load
 * bases, code checks, empty hits) and the uprobe catcher take it, so a file is opened, checked
 * and given to libelf and libdw in one place.
 */
#ifndef PS_ELFFILE_H
#define PS_ELFFILE_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdint.h>

#include "error.h"

/**
 * struct ps_elf_file - an open ELF file.
 * @fd:   its descriptor
 * @elf:  its libelf handle (an ELF object, ELF_K_ELF)
 * @path: the path it was opened by
 */
struct ps_elf_file {
	int fd;
	Elf *elf;
	char *path;
	/* private: the DWARF (ps_elf_dwarf()), and the debug file it may come from */
	Dwarf *dw;
	int dw_tried, dfd;
	Elf *delf;
};

/**
 * ps_elf_open() - open ELF file @path.
 * @out: receives the file (ps_elf_close() releases it)
 *
 * Return: 0, or -1 with @err set: "cannot open PATH: REASON", "PATH is not an ELF file", out
 * of memory.
 */
int ps_elf_open(struct ps_elf_file **out, const char *path, struct ps_error *err);

/**
 * ps_elf_dwarf() - the DWARF of @f: its own, or that of the file /usr/lib/debug/.build-id/
 * names by its build id; read on the first call.
 *
 * Return: the DWARF (owned by @f), or NULL when there is none (or its string sections are
 * damaged).
 */
Dwarf *ps_elf_dwarf(struct ps_elf_file *f);

/**
 * ps_elf_code() - the @size bytes of code at link-time address @addr of @f, read from the file
 * part of the executable PT_LOAD segment that holds them.
 *
 * Return: a buffer the caller frees, or NULL when no such segment holds them all (or no memory,
 * or the read failed).
 */
uint8_t *ps_elf_code(const struct ps_elf_file *f, uint64_t addr, uint64_t size);

/* ps_elf_close() - release @f (NULL is fine). */
void ps_elf_close(struct ps_elf_file *f);

#endif
