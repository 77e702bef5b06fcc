/* tests/c/fixtures.h - where the C tests find tests/fixtures/. */
#ifndef CTEST_FIXTURES_H
#define CTEST_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

/* The fixtures directory: $PS_FIXTURES, or tests/fixtures found from this source file's path
   (the tests run from the top directory) or above the test executable; @probe is a file that
   must be in it. */
const char *fixtures_dir(const char *probe);

/* A temporary directory for what the tests build, made once and removed at exit; NULL if it
   cannot be made. */
const char *fixtures_tmpdir(void);

/* The first line of what shell command @cmd prints, without its newline ("" if none). */
char *fixtures_first_line(char *buf, size_t n, const char *cmd);

/* tests/fixtures/@src built with `cc @flags` as @name in the temporary directory (once per
   name): its path, or NULL when it cannot be built. */
const char *fixtures_cc(const char *src, const char *name, const char *flags);

/* The link-time address of function @fn of ELF file @prog, or 0 when it has none. */
uint64_t fixtures_addr_of(const char *prog, const char *fn);

/* Why a test of the uprobe catcher on program @prog cannot run here (the uprobe PMU does not
   open, @prog is not built), in @why; NULL when it can. */
const char *fixtures_uprobe_skip(const char *prog, char *why, size_t n);

/* Skip the running test where fixtures_uprobe_skip() says so. */
#define NEEDS_UPROBES(prog)                                                                                            \
	do {                                                                                                           \
		char why_[256];                                                                                        \
		if (fixtures_uprobe_skip(prog, why_, sizeof why_))                                                     \
			SKIP("%s", why_);                                                                              \
	} while (0)

#endif
