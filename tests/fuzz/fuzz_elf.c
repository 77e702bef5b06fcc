/* tests/fuzz/fuzz_elf.c - the ELF and DWARF readers (core/binary/symbols.c, core/binary/lines.c) on a
 * mutated executable. The corpus starts from examples/sum, sum-stripped, inlined and cxx.
 *
 * The source files of the line tables (completion) are listed too.
 *
 * The input is written to a memfd and opened by its /proc path, as a file on disk would be;
 * every query a session makes is asked of what opened.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "lines.h"
#include "symbols.h"

static void query_symbols(const char *path)
{
	struct ps_symtab *st;
	const struct ps_sym *sym;
	struct ps_error err;
	size_t n;

	if (ps_sym_open(&st, path, &err))
		return;
	(void)ps_sym_is_pie(st);
	(void)ps_sym_entry(st);
	(void)ps_sym_has_symtab(st);
	n = ps_sym_count(st);
	for (size_t i = 0; i < n; i++) {
		const struct ps_sym *s = ps_sym_at(st, i);
		if (ps_sym_by_addr(st, s->addr) == NULL && s->size)
			__builtin_trap(); /* a symbol's own address lies in some function */
	}
	(void)ps_sym_lookup(st, "sum", &sym, &err);
	(void)ps_sym_lookup(st, "main", &sym, &err);
	(void)ps_sym_lookup(st, "summ", &sym, &err);		 /* near misses are suggested */
	(void)ps_sym_lookup(st, "geo::Shape::area", &sym, &err); /* demangled (examples/cxx) */
	(void)ps_sym_by_addr(st, 0x1140);
	ps_sym_close(st);
}

static void query_lines(const char *path)
{
	struct ps_lines *l;
	struct ps_error err;
	struct ps_inline in[16];
	uint64_t addrs[32];
	const char *file;
	int line, actual;

	if (ps_lines_open(&l, path, &err))
		return;
	for (int ln = 1; ln < 60; ln += 7)
		(void)ps_lines_addrs(l, "sum.c", ln, addrs, 32, &actual, &err);
	(void)ps_lines_addrs(l, "/nonexistent/x.c", 3, addrs, 32, &actual, &err);
	(void)ps_lines_inlined(l, "sum", in, 16, &err);
	(void)ps_lines_inlined(l, "mix", in, 16, &err); /* examples/inlined */
	(void)ps_lines_inlined(l, "main", in, 16, &err);
	for (uint64_t a = 0x1000; a < 0x1400; a += 0x20)
		(void)ps_lines_addr2line(l, a, &file, &line);
	ps_lines_close(l);
}

static int source_file(void *ud, const char *file)
{
	*(size_t *)ud += strlen(file);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = memfd_create("fuzz_elf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		query_symbols(path);
		query_lines(path);
		size_t chars = 0;
		struct ps_error err;
		(void)ps_lines_source_files(path, source_file, &chars, &err);
	}
	close(fd);
	return 0;
}
