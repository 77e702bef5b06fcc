/* tests/c/test_symbols.c - core/binary/symbols.c against nm, readelf and the running process.
 *
 * The fixtures in tests/fixtures/ are compiled at run time into a temporary
 * directory (removed at exit); the truths come from nm and readelf through popen.
 */
#include "ctest.h"
#include "fixtures.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "symbols.h"

#define FIXTURE_PROBE "symbols.c"

static const char *fixtures(void)
{
	return fixtures_dir(FIXTURE_PROBE);
}

/* Build @out (in the temporary directory) with the shell command @fmt; it gets the
 * source path and the output path as its two %s. Return the output path or NULL. */
static const char *build(const char *out, const char *fmt, const char *src)
{
	static char paths[8][600];
	static int used;
	char cmd[2048], srcpath[600];
	char *p;

	const char *tmpdir = fixtures_tmpdir();
	if (!tmpdir)
		return NULL;
	for (int i = 0; i < used; i++)
		if (strcmp(strrchr(paths[i], '/') + 1, out) == 0)
			return paths[i];
	if (used == 8)
		return NULL;
	p = paths[used];
	snprintf(p, sizeof paths[0], "%s/%s", tmpdir, out);
	snprintf(srcpath, sizeof srcpath, "%s/%s", fixtures(), src);
	snprintf(cmd, sizeof cmd, fmt, srcpath, p);
	if (system(cmd) != 0)
		return NULL;
	used++;
	return p;
}

/* First line of the output of a shell command, without its newline. */
static char *run(char *buf, size_t n, const char *fmt, const char *arg)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, fmt, arg);
	return fixtures_first_line(buf, n, cmd);
}

static const char *c_pie(void)
{
	return build("sym-pie", "cc -O2 -g -o %2$s %1$s", "symbols.c");
}

/* "addr size" of function @name according to nm -S. */
static void nm_sym(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[256], buf[128];

	snprintf(cmd, sizeof cmd, "nm -S %%s | awk '$3 ~ /[tT]/ && $4 == \"%s\" {print $1, $2}'", name);
	run(buf, sizeof buf, cmd, path);
	*addr = *size = 0;
	if (sscanf(buf, "%" SCNx64 " %" SCNx64, addr, size) != 2)
		fprintf(stderr, "  nm found no %s in %s\n", name, path);
}

TEST(sym_c_sum_pie)
{
	const char *path = c_pie();
	struct ps_symtab *st;
	struct ps_error err;
	const struct ps_sym *s;
	uint64_t addr, size;
	char buf[128];

	if (!path) {
		CHECK(!"cannot build the C fixture with cc");
		return;
	}
	CHECK_EQ_INT(ps_sym_open(&st, path, &err), 0);
	CHECK_EQ_INT(ps_sym_lookup(st, "sum", &s, &err), 0);
	nm_sym(path, "sum", &addr, &size);
	CHECK(addr != 0 && size != 0);
	CHECK_EQ_INT(s->addr, addr);
	CHECK_EQ_INT(s->size, size);
	CHECK_STR(s->name, "sum");
	CHECK(s->demangled == NULL);
	CHECK(ps_sym_by_addr(st, addr) == s);
	CHECK(ps_sym_by_addr(st, addr + size - 1) == s);
	CHECK(ps_sym_by_addr(st, 1) == NULL);
	run(buf, sizeof buf, "readelf -h %s | awk '/Type:/ {print $2}'", path);
	CHECK_EQ_INT(ps_sym_is_pie(st), strcmp(buf, "DYN") == 0);
	run(buf, sizeof buf, "readelf -h %s | awk '/Entry point/ {print $4}'", path);
	CHECK_EQ_INT(ps_sym_entry(st), strtoull(buf, NULL, 16));
	CHECK(ps_sym_has_symtab(st));
	for (size_t i = 1; i < ps_sym_count(st); i++)
		CHECK(ps_sym_at(st, i - 1)->addr <= ps_sym_at(st, i)->addr);
	CHECK(ps_sym_at(st, ps_sym_count(st)) == NULL);
	ps_sym_close(st);
}

TEST(sym_c_nopie)
{
	const char *path = build("sym-nopie", "cc -O2 -g -no-pie -o %2$s %1$s", "symbols.c");
	struct ps_symtab *st;
	struct ps_error err;
	const struct ps_sym *s;
	uint64_t addr, size;

	if (!path) {
		CHECK(!"cannot build the C fixture with cc -no-pie");
		return;
	}
	CHECK_EQ_INT(ps_sym_open(&st, path, &err), 0);
	CHECK_EQ_INT(ps_sym_is_pie(st), 0);
	CHECK_EQ_INT(ps_sym_lookup(st, "sum", &s, &err), 0);
	nm_sym(path, "sum", &addr, &size);
	CHECK_EQ_INT(s->addr, addr);
	CHECK_EQ_INT(s->size, size);
	ps_sym_close(st);
}

TEST(sym_did_you_mean)
{
	const char *path = c_pie();
	struct ps_symtab *st;
	struct ps_error err;
	const struct ps_sym *s;
	char want[700];

	if (!path) {
		CHECK(!"cannot build the C fixture with cc");
		return;
	}
	CHECK_EQ_INT(ps_sym_open(&st, path, &err), 0);
	CHECK_EQ_INT(ps_sym_lookup(st, "scale_adf", &s, &err), -1);
	CHECK(s == NULL);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
	/* ranked by core/base/suggest.c; equally close names in the order of the symbol table */
	snprintf(want, sizeof want,
		 "no function 'scale_adf' in %s; did you mean 'scale_add', 'scale_sub' or "
		 "'scale_mul'?",
		 path);
	CHECK_STR(err.msg, want);
	/* a unique substring is enough */
	CHECK_EQ_INT(ps_sym_lookup(st, "ale_mu", &s, &err), 0);
	CHECK_STR(s->name, "scale_mul");
	CHECK_EQ_INT(ps_sym_lookup(st, "scale_", &s, &err), -1);
	CHECK(strstr(err.msg, "'scale_' is ambiguous: ") == err.msg);
	ps_sym_close(st);
}

TEST(sym_stripped)
{
	const char *path = build("sym-stripped", "cc -O2 -g -o %2$s %1$s && strip %2$s", "symbols.c");
	struct ps_symtab *st;
	struct ps_error err;
	const struct ps_sym *s;
	char want[700];

	if (!path) {
		CHECK(!"cannot build and strip the C fixture");
		return;
	}
	CHECK_EQ_INT(ps_sym_open(&st, path, &err), 0);
	CHECK_EQ_INT(ps_sym_has_symtab(st), 0);
	CHECK_EQ_INT(ps_sym_lookup(st, "sum", &s, &err), -1);
	snprintf(want, sizeof want,
		 "%s is stripped (no .symtab): rebuild it without -s (with -g for line regions), or give "
		 "the function's address, -r 0xADDR (as nm prints it on an unstripped build)",
		 path);
	CHECK_STR(err.msg, want);
	ps_sym_close(st);
}

TEST(sym_open_errors)
{
	struct ps_symtab *st = (struct ps_symtab *)1;
	struct ps_error err;
	char path[700], want[800];

	CHECK_EQ_INT(ps_sym_open(&st, "/nonexistent/prog", &err), -1);
	CHECK(st == NULL);
	CHECK_EQ_INT(err.code, ENOENT);
	CHECK_STR(err.msg, "cannot open /nonexistent/prog: No such file or directory");
	snprintf(path, sizeof path, "%s/symbols.c", fixtures());
	CHECK_EQ_INT(ps_sym_open(&st, path, &err), -1);
	snprintf(want, sizeof want, "%s is not an ELF file", path);
	CHECK_STR(err.msg, want);
	ps_sym_close(NULL);
}

TEST(sym_cxx)
{
	const char *path = build("sym-cxx", "g++ -O2 -g -o %2$s %1$s", "klass.cpp");
	struct ps_symtab *st;
	struct ps_error err;
	const struct ps_sym *s;
	uint64_t addr, size;

	if (!path) {
		CHECK(!"cannot build the C++ fixture with g++");
		return;
	}
	CHECK_EQ_INT(ps_sym_open(&st, path, &err), 0);
	CHECK_EQ_INT(ps_sym_lookup(st, "ns::Klass::method", &s, &err), 0);
	nm_sym(path, "_ZN2ns5Klass6methodEi", &addr, &size);
	CHECK_EQ_INT(s->addr, addr);
	CHECK_STR(s->name, "_ZN2ns5Klass6methodEi");
	CHECK_STR(s->demangled, "ns::Klass::method(int)");
	/* overloads */
	CHECK_EQ_INT(ps_sym_lookup(st, "f", &s, &err), -1);
	CHECK_EQ_INT(err.code, PS_EUSAGE);
	CHECK(strstr(err.msg, "'f' is ambiguous: ") == err.msg);
	CHECK(strstr(err.msg, "f(int)") && strstr(err.msg, "f(double)"));
	CHECK(strstr(err.msg, " (give the full name)") != NULL);
	CHECK_EQ_INT(ps_sym_lookup(st, "f(double)", &s, &err), 0);
	CHECK_STR(s->name, "_Z1fd");
	CHECK_EQ_INT(ps_sym_lookup(st, "_Z1fi", &s, &err), 0);
	CHECK_STR(s->demangled, "f(int)");
	ps_sym_close(st);
}

static void check_rust(struct ctest *ctest_self, const char *path, int legacy)
{
	struct ps_symtab *st;
	struct ps_error err;
	const struct ps_sym *s;
	char buf[256];

	CHECK_EQ_INT(ps_sym_open(&st, path, &err), 0);
	CHECK_EQ_INT(ps_sym_lookup(st, "rsum::checksum", &s, &err), 0);
	if (s) {
		run(buf, sizeof buf, "nm %s | awk '/checksum/ {print $1; exit}'", path);
		CHECK_EQ_INT(s->addr, strtoull(buf, NULL, 16));
		if (legacy)
			CHECK(s->demangled && strncmp(s->demangled, "rsum::checksum::h", 17) == 0);
		else
			CHECK_STR(s->demangled, "rsum::checksum");
		/* the full legacy name, hash included, works too */
		if (legacy)
			CHECK(ps_sym_lookup(st, s->demangled, &s, &err) == 0);
	}
	ps_sym_close(st);
}

TEST(sym_rust)
{
	char buf[128];
	const char *legacy, *v0;

	if (!run(buf, sizeof buf, "%s", "rustc --version 2>/dev/null")[0])
		SKIP("rustc is not installed");
	legacy = build("sym-rust", "rustc -C opt-level=2 -g -o %2$s %1$s 2>/dev/null", "rsum.rs");
	v0 = build("sym-rust-v0", "rustc -C opt-level=2 -g -C symbol-mangling-version=v0 -o %2$s %1$s 2>/dev/null",
		   "rsum.rs");
	if (!legacy) {
		CHECK(!"rustc cannot build the Rust fixture");
		return;
	}
	run(buf, sizeof buf, "nm %s | awk '/checksum/ {print $NF; exit}'", legacy);
	check_rust(ctest_self, legacy, strncmp(buf, "_ZN", 3) == 0);
	if (v0)
		check_rust(ctest_self, v0, 0);
}

TEST(sym_demangle_base)
{
	static const struct {
		const char *name;
		size_t base;
	} rows[] = {
	    {"sum", 3},
	    {"f()", 1},
	    {"ns::K::m(int) const", 8},
	    {"Foo::operator()(int)", 15},
	    {"f(int) [clone .constprop.0]", 1},
	    {"(anonymous namespace)::g(char const*)", 24},
	    {"rsum::checksum::h0123456789abcdef", 33},
	};
	char *d;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		CHECK_EQ_INT(ps_sym_base_len(rows[i].name), rows[i].base);
	CHECK(ps_sym_demangle("sum") == NULL);
	d = ps_sym_demangle("_ZN2ns5Klass6methodEi");
	CHECK_STR(d, "ns::Klass::method(int)");
	free(d);
	d = ps_sym_demangle("_ZN4core3fmt5write17h0123456789abcdefE");
	CHECK_STR(d, "core::fmt::write::h0123456789abcdef");
	free(d);
	d = ps_sym_demangle("_RNvCs15kBYyAo9fc_7mycrate4main");
	CHECK_STR(d, "mycrate::main");
	free(d);
}

TEST(sym_lib_split)
{
	static const struct {
		const char *spec;
		int rc;
		const char *lib, *fn;
	} rows[] = {
	    {"libc.so.6:memcpy", 1, "libc.so.6", "memcpy"},
	    {"sum", 0, "", "sum"},
	    {"file.c:12", 0, "", "file.c:12"},
	    {"ns::Klass::method", 0, "", "ns::Klass::method"},
	    {"libfoo.so:ns::K::m", 1, "libfoo.so", "ns::K::m"},
	    {"/lib/x86_64-linux-gnu/libm.so.6:cos", 1, "/lib/x86_64-linux-gnu/libm.so.6", "cos"},
	    {"libbar.so.1.2.3:f", 1, "libbar.so.1.2.3", "f"},
	    {"my.song:3", 0, "", "my.song:3"},
	    {"foo.so.x:bar", 0, "", "foo.so.x:bar"},
	    {".so:f", 0, "", ".so:f"},
	    {"libm.so:", -1, "", ""},
	};
	char lib[64], fn[64];

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int rc = ps_sym_lib_split(rows[i].spec, lib, sizeof lib, fn, sizeof fn);
		CHECK_EQ_INT(rc, rows[i].rc);
		if (rc < 0 || rc != rows[i].rc) {
			if (rc != rows[i].rc)
				fprintf(stderr, "    for '%s'\n", rows[i].spec);
			continue;
		}
		CHECK_STR(lib, rows[i].lib);
		CHECK_STR(fn, rows[i].fn);
	}
	CHECK_EQ_INT(ps_sym_lib_split("libc.so.6:memcpy", lib, 4, fn, sizeof fn), -1);
	CHECK_EQ_INT(errno, ENAMETOOLONG);
}

TEST(sym_mapping_libc)
{
	char path[512];
	uint64_t bias = 0;
	struct ps_error err;
	struct ps_symtab *st;
	const struct ps_sym *s;
	void *fp = dlsym(RTLD_DEFAULT, "getpid");

	CHECK(fp != NULL);
	CHECK_EQ_INT(ps_sym_find_mapping(getpid(), "libc.so.6", path, sizeof path, &bias, &err), 0);
	CHECK_STR(strrchr(path, '/'), "/libc.so.6");
	CHECK_EQ_INT(ps_sym_open(&st, path, &err), 0);
	CHECK_EQ_INT(ps_sym_lookup(st, "getpid", &s, &err), 0);
	if (s)
		CHECK_EQ_INT(bias + s->addr, (uintptr_t)fp);
	ps_sym_close(st);
	/* a prefix works when unique */
	CHECK_EQ_INT(ps_sym_find_mapping(getpid(), "libc", path, sizeof path, &bias, &err), 0);
	CHECK_EQ_INT(ps_sym_find_mapping(getpid(), "libnothere.so", path, sizeof path, &bias, &err), -1);
	CHECK(strstr(err.msg, "'libnothere.so' is not mapped in process ") == err.msg);
	CHECK(strstr(err.msg, "libc.so.6") != NULL);
}

TEST(sym_mapping_exe)
{
	char path[512];
	uint64_t bias = 0;
	struct ps_error err;
	struct ps_symtab *st;
	const struct ps_sym *s;

	CHECK_EQ_INT(ps_sym_find_mapping(getpid(), NULL, path, sizeof path, &bias, &err), 0);
	CHECK_EQ_INT(ps_sym_open(&st, path, &err), 0);
	CHECK_EQ_INT(ps_sym_lookup(st, "ps_sym_open", &s, &err), 0);
	if (s) {
		int (*fn)(struct ps_symtab **, const char *, struct ps_error *) = ps_sym_open;
		CHECK_EQ_INT(bias + s->addr, (uintptr_t)fn);
	}
	ps_sym_close(st);
}

/* Function names are ranked like event names: by core/base/suggest.c. */
TEST(sym_near_ranks_like_suggest)
{
	static const char *names[] = {"sum", "summary", "main", "xsumm", "SUMM_", "_fini"};
	char out[3][128], list[300], text[400], want[420];
	struct ps_sym_near near = {0};
	struct ps_suggest s;
	char long_name[200];

	ps_suggest_init(&s, "summ", out, 3);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		ps_sym_near_add(&near, "summ", names[i], strlen(names[i]));
		ps_suggest_add(&s, names[i]);
	}
	CHECK_EQ_INT(ps_sym_near_format(&near, list, sizeof list), 3);
	ps_suggest_text(&s, text, sizeof text);
	snprintf(want, sizeof want, "; did you mean %s?", list);
	CHECK_STR(text, want);
	CHECK_STR(list, "'xsumm', 'SUMM_' or 'summary'");
	/* @len bytes of the candidate (a demangled name without its parameters) */
	struct ps_sym_near one = {0};
	ps_sym_near_add(&one, "fo", "foo(int)", 3);
	CHECK_EQ_INT(ps_sym_near_format(&one, list, sizeof list), 1);
	CHECK_STR(list, "'foo'");
	/* names of 128 bytes or more are not offered */
	struct ps_sym_near none = {0};
	memset(long_name, 'a', sizeof long_name);
	ps_sym_near_add(&none, "a", long_name, sizeof long_name);
	CHECK_EQ_INT(ps_sym_near_format(&none, list, sizeof list), 0);
	CHECK_STR(list, "");
}
