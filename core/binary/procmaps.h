/* core/binary/procmaps.h - the one reader of /proc/PID/maps and of /proc/PID/status, where a mapped
 * ELF file is loaded, and the one translation of addresses to file offsets.
 *
 * An ELF file's load bias is the address its mapping starts at minus the page-aligned p_vaddr
 * of its lowest PT_LOAD segment: a symbol's address in the file plus the bias is its address in
 * the process. A link-time address becomes a file offset through the segment that holds it
 * (ps_elf_file_offset()), a run-time one through the mapping that holds it
 * (ps_maps_file_offset()): uprobes and SDT probes are placed by file offset. */
#ifndef PS_PROCMAPS_H
#define PS_PROCMAPS_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/**
 * struct ps_map - one line of /proc/PID/maps.
 * @lo:   first address
 * @hi:   address after the last
 * @off:  file offset mapped at @lo
 * @path: the file ("" for an anonymous mapping, "[stack]" and the like for the kernel's)
 */
struct ps_map {
	uint64_t lo, hi, off;
	const char *path;
};

/**
 * ps_map_parse() - read one line of /proc/PID/maps into @m.
 * @line: the line; its trailing newline is cut off and @m->path points into it
 *
 * Return: 0, or -1 when the line is not "LO-HI PERMS OFFSET DEV INODE [PATH]".
 */
int ps_map_parse(char *line, struct ps_map *m);

/* Match files by their path or basename only ("libc.so.6"), or also by a prefix of the basename
 * followed by '.' or '-' ("libc"). */
enum { PS_MAPS_EXACT, PS_MAPS_PREFIX };

/**
 * ps_maps_find() - the file mapped in process @pid that @want names.
 * @want:  a path (has a '/'), a basename, or with @how PS_MAPS_PREFIX a prefix of one;
 *         NULL: the program itself (/proc/PID/exe)
 * @path:  receives the mapped file's path (@n bytes)
 *
 * Return: 0, or -1 with @err set: not mapped (the message lists the mapped libraries), several
 * files match, the path does not fit, /proc unreadable.
 */
int ps_maps_find(pid_t pid, const char *want, int how, char *path, size_t n, struct ps_error *err);

/* How well file @path matches @want (as for ps_maps_find()): 2 exactly, 1 as a prefix, 0 not. */
int ps_lib_name_match(const char *path, const char *want, int how);

/**
 * ps_lib_resolve() - the file the dynamic loader of process @pid (held before its program's
 * first instruction: the loader is mapped, the libraries not yet; or running) will map for
 * library @want of its program: the loader's own answer (`LOADER --list PROGRAM`, what ldd
 * prints), run with the program's environment and directory. A library it does not load at
 * start, for dlopen to load later: an absolute path is that file; a file name ("libm.so.6")
 * is the file the loader finds for it (`LOADER --preload NAME --list PROGRAM`).
 * @path: receives the library's path (@n bytes).
 * Return: 0, or -1 with @err set: no loader mapped (a static program), the loader failed, no
 * library (or several) of the program matches @want and no file is found for it
 * (PS_ENOTFOUND, the message says what to do).
 */
int ps_lib_resolve(pid_t pid, const char *want, char *path, size_t n, struct ps_error *err);

/**
 * ps_lib_linked() - whether the library file at @path is one the dynamic loader of process @pid
 * (held before its program's first instruction) maps before the program's main(): one the
 * program links, or one its environment preloads (`LOADER --list`, run as @pid would), rather
 * than one dlopen loads later.
 *
 * Return: 1 linked, 0 not (or no dynamic loader), -1 with @err set.
 */
int ps_lib_linked(pid_t pid, const char *path, struct ps_error *err);

/**
 * ps_elf_load_base() - where the lowest PT_LOAD segment of ELF file @path lies.
 * @vaddr: its p_vaddr rounded down to a page
 * @off:   its p_offset rounded down to a page (the file offset its mapping starts at)
 *
 * Return: 0, or -1 with @err set (cannot open, not ELF, no PT_LOAD).
 */
int ps_elf_load_base(const char *path, uint64_t *vaddr, uint64_t *off, struct ps_error *err);

/**
 * ps_elf_file_offset() - the file offset of link-time address @vaddr in ELF file @elf: through
 * the PT_LOAD segment whose file part holds it, else (a file without program headers) through
 * an allocated section with contents.
 *
 * Return: 0, or -1 when nothing in the file holds @vaddr.
 */
int ps_elf_file_offset(Elf *elf, uint64_t vaddr, uint64_t *off);

/**
 * ps_maps_file_offset() - the file mapped at run-time address @addr in process @pid (0: this
 * process), and the offset in it that is mapped there.
 * @path: receives the file's path (@n bytes)
 *
 * Return: 0, or -1 with @err set: /proc unreadable, or PS_ENOTFOUND when no file (with a path
 * that fits) is mapped at @addr.
 */
int ps_maps_file_offset(pid_t pid, uint64_t addr, char *path, size_t n, uint64_t *off, struct ps_error *err);

/**
 * ps_maps_bias() - the load bias of file @path (exactly as /proc/PID/maps names it) in process
 * @pid: the lowest address it is mapped at with its lowest PT_LOAD's offset, minus that
 * segment's page-aligned p_vaddr.
 *
 * Return: 0, or -1 with @err set.
 */
int ps_maps_bias(pid_t pid, const char *path, uint64_t *bias, struct ps_error *err);

/**
 * ps_proc_status() - the value of field @key ("Tgid", "SigPnd"...) in /proc/@pid/status (a
 * thread id reads that thread's), its leading blanks and newline cut, into @val (@n bytes).
 *
 * Return: 0, or -1 (no such process or field).
 */
int ps_proc_status(pid_t pid, const char *key, char *val, size_t n);

#endif
