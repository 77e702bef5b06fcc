/* core/binary/sdt.h - the USDT/SDT probes of an ELF file (<sys/sdt.h>, the .note.stapsdt notes): where
 * each probe's NOP site and semaphore are, in the file as a uprobe takes them, and what its
 * arguments are. Reads the file only; never a process. */
#ifndef PS_SDT_H
#define PS_SDT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PS_SDT_MAX_ARGS 12 /* <sys/sdt.h> writes at most 12 */
#define PS_SDT_NAME_MAX 64

enum ps_sdt_arg_kind {
	PS_SDT_ARG_REG = 1, /* "-4@%edi": a register's value */
	PS_SDT_ARG_MEM = 2, /* "8@-16(%rbp)", "4@sym+8(%rip)", "4@(%rax,%rbx,4)": a value in memory */
	PS_SDT_ARG_IMM = 3  /* "4@$5": a constant */
};

/**
 * struct ps_sdt_arg - one argument of a probe, as the assembler operand gives it.
 * @size:      bytes (1, 2, 4 or 8; 0 when the note gives no size).
 * @is_signed: a negative size ("-4@...") marks a signed value.
 * @kind:      register, memory or constant.
 * @reg:       the register (PS_SDT_ARG_REG), or the base register of a memory operand ("" if none).
 * @index, @scale: a memory operand's index register ("" if none) and scale (1 if none).
 * @sym:       a memory operand's symbol ("" if none), e.g. "counter" in "4@counter+8(%rip)".
 * @disp:      a memory operand's displacement, or the constant (PS_SDT_ARG_IMM).
 * @text:      the argument as written.
 */
struct ps_sdt_arg {
	int size, is_signed;
	enum ps_sdt_arg_kind kind;
	char reg[16], index[16];
	int scale;
	char sym[64];
	int64_t disp;
	char text[96];
};

/**
 * struct ps_sdt_probe - one probe site.
 * @provider, @name: "provider:name" names the probe (the same pair may have several sites).
 * @addr:       the site's link-time address (corrected by .stapsdt.base where prelink moved it).
 * @offset:     the site's offset in the file (what a uprobe takes).
 * @sema:       the semaphore's link-time address, 0 when the probe has none.
 * @sema_offset: the semaphore's offset in the file (a uprobe's ref_ctr_offset), 0 when none.
 * @base:       the .stapsdt.base address the note was written for (0 in old notes).
 * @nargs, @args: the arguments taken apart.
 * @argstr:     the argument string as the note holds it.
 */
struct ps_sdt_probe {
	char provider[PS_SDT_NAME_MAX], name[PS_SDT_NAME_MAX];
	uint64_t addr, offset, sema, sema_offset, base;
	int nargs;
	struct ps_sdt_arg args[PS_SDT_MAX_ARGS];
	char argstr[512];
};

/* struct ps_sdt_set - every probe of one file, in note order. */
struct ps_sdt_set {
	struct ps_sdt_probe *probes;
	size_t n;
};

/**
 * ps_sdt_read() - read the SDT probes of the ELF file at @path into @out.
 *
 * A file without a .note.stapsdt section gives 0 probes. Every read is bounded by the note's
 * and the section's sizes.
 * Return: 0, or -1 with @err set: the file cannot be opened (errno), is not ELF (PS_EUSAGE), or
 * a note is malformed (PS_EUSAGE, one line naming the note and what is wrong with it).
 */
int ps_sdt_read(const char *path, struct ps_sdt_set *out, struct ps_error *err);

/* ps_sdt_read_mem() - the same for an ELF image of @size bytes at @data (@what names it in errors). */
int ps_sdt_read_mem(const void *data, size_t size, const char *what, struct ps_sdt_set *out, struct ps_error *err);

/* Release what ps_sdt_read() filled in (@s is then empty; safe to call twice). */
void ps_sdt_free(struct ps_sdt_set *s);

/**
 * ps_sdt_parse_args() - take an argument string ("-4@%edi 8@-16(%rbp) 4@$5") apart.
 * Return: the number of arguments, or -1 with @err set (PS_EUSAGE) naming the bad argument.
 */
int ps_sdt_parse_args(const char *text, struct ps_sdt_arg *args, int max, struct ps_error *err);

/**
 * ps_sdt_find() - the first site of probe @provider:@name in @s.
 * Return: the probe, or NULL with @err set (PS_ENOTFOUND) saying which probes are close
 * ("did you mean ...?") or that the file @path has none.
 */
const struct ps_sdt_probe *ps_sdt_find(const struct ps_sdt_set *s, const char *provider, const char *name,
				       const char *path, struct ps_error *err);

/* ps_sdt_count() - how many sites probe @provider:@name has in @s. */
size_t ps_sdt_count(const struct ps_sdt_set *s, const char *provider, const char *name);

/**
 * struct ps_sdt_spec - an SDT region as a command line names it.
 * "sdt:P:N" is one probe, a point event (@npoints 1); "sdt:P:A,sdt:P:B" (or "sdt:P:A,B", the
 * same provider) a start/end pair (@npoints 2).
 */
struct ps_sdt_spec {
	int npoints;
	char provider[2][PS_SDT_NAME_MAX], name[2][PS_SDT_NAME_MAX];
};

/* ps_sdt_spec_parse() (regionspec.h, the parser of every region spec) fills it. */

#endif
