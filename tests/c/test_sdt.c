/* tests/c/test_sdt.c - SDT probes (core/binary/sdt.c, core/binary/sdt_args.c): examples/sdt's notes, argument
 * strings and region specs as rows, and malformed notes, each rejected with one message. */
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctest.h"
#include "regionspec.h"
#include "sdt.h"

#define EXAMPLE "examples/sdt"

/* The whole file at @path (NULL when it cannot be read); its size in *n. */
static unsigned char *slurp(const char *path, size_t *n)
{
	struct stat st;
	unsigned char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && (buf = malloc((size_t)st.st_size)) &&
	    read(fd, buf, (size_t)st.st_size) != (ssize_t)st.st_size) {
		free(buf);
		buf = NULL;
	}
	*n = (size_t)st.st_size;
	close(fd);
	return buf;
}

/* The file offset of section @name of the image @buf (0 when there is none). */
static size_t section_offset(unsigned char *buf, size_t n, const char *name)
{
	Elf *elf = elf_version(EV_CURRENT) == EV_NONE ? NULL : elf_memory((char *)buf, n);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx, off = 0;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name))
			off = sh.sh_offset;
out:
	elf_end(elf);
	return off;
}

TEST(sdt_example_probes)
{
	static const struct {
		const char *name, *argstr;
		int nargs, size1, signed1, has_sema;
	} want[] = {
	    {"tick", "-8@%rax -8@%rdx", 2, 8, 1, 0},
	    {"traced", "-8@%rax", 1, 8, 1, 1},
	    {"work_start", "-4@%ecx 8@%rdi", 2, 4, 1, 0},
	    {"work_end", "-4@%ecx", 1, 4, 1, 0},
	};
	struct ps_sdt_set s;
	struct ps_error err = {0};
	unsigned char *img;
	size_t n;

	if (access(EXAMPLE, R_OK))
		SKIP(EXAMPLE " is not built (make)");
	CHECK_EQ_INT(ps_sdt_read(EXAMPLE, &s, &err), 0);
	CHECK_EQ_INT(s.n, 4);
	img = slurp(EXAMPLE, &n);
	CHECK(img != NULL);
	for (size_t i = 0; i < 4 && img; i++) {
		const struct ps_sdt_probe *p = ps_sdt_find(&s, "demo", want[i].name, EXAMPLE, &err);
		if (!p) {
			CHECK_STR(err.msg, "");
			continue;
		}
		CHECK_STR(p->argstr, want[i].argstr);
		/* the registers are gcc 12's choice at -O2 (tests/17-sdt_spec.lua compares with readelf -n) */
		CHECK_STR(p->provider, "demo");
		CHECK_STR(p->name, want[i].name);
		CHECK_EQ_INT(p->nargs, want[i].nargs);
		CHECK_EQ_INT(p->args[0].size, want[i].size1);
		CHECK_EQ_INT(p->args[0].is_signed, want[i].signed1);
		CHECK_EQ_INT(p->args[0].kind, PS_SDT_ARG_REG);
		CHECK_EQ_INT(p->sema != 0, want[i].has_sema);
		CHECK_EQ_INT(p->sema_offset != 0, want[i].has_sema);
		/* the site is <sys/sdt.h>'s one-byte NOP, at its file offset */
		CHECK(p->offset < n);
		if (p->offset < n)
			CHECK_EQ_INT(img[p->offset], 0x90);
		/* the semaphore is in .probes, 0 in the file */
		if (p->sema)
			CHECK(p->sema_offset >= section_offset(img, n, ".probes") && p->sema_offset + 2 <= n &&
			      img[p->sema_offset] == 0 && img[p->sema_offset + 1] == 0);
	}
	if (s.n == 4) {
		const struct ps_sdt_probe *miss;
		CHECK(ps_sdt_find(&s, "demo", "tick", EXAMPLE, &err) != NULL);
		CHECK_EQ_INT(ps_sdt_count(&s, "demo", "tick"), 1);
		miss = ps_sdt_find(&s, "demo", "work_ed", EXAMPLE, &err);
		CHECK(miss == NULL);
		CHECK(strstr(err.msg, "no SDT probe 'demo:work_ed' in examples/sdt; did you mean 'demo:work_end'") ==
		      err.msg);
	}
	free(img);
	ps_sdt_free(&s);
	ps_sdt_free(&s); /* twice: harmless */
}

TEST(sdt_file_without_probes)
{
	struct ps_sdt_set s;
	struct ps_error err = {0};

	if (access("examples/sum", R_OK))
		SKIP("examples/sum is not built (make)");
	CHECK_EQ_INT(ps_sdt_read("examples/sum", &s, &err), 0);
	CHECK_EQ_INT(s.n, 0);
	CHECK(ps_sdt_find(&s, "a", "b", "examples/sum", &err) == NULL);
	CHECK_STR(err.msg,
		  "examples/sum has no SDT probes (no .note.stapsdt: it was built without <sys/sdt.h> probes)");
	CHECK_EQ_INT(ps_sdt_read("/nonexistent/x", &s, &err), -1);
	CHECK_STR(err.msg, "cannot open /nonexistent/x: No such file or directory");
	CHECK_EQ_INT(ps_sdt_read("tests/c/test_sdt.c", &s, &err), -1);
	CHECK_STR(err.msg, "tests/c/test_sdt.c is not an ELF file");
	CHECK(s.probes == NULL && s.n == 0);
}

/* Offsets into the first note: its header, the owner "stapsdt\0", then the descriptor. */
enum { NOTE_DESCSZ = 4, NOTE_DESC = 20 };

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

TEST(sdt_malformed_notes)
{
	static const struct {
		const char *what, *msg;
	} rows[] = {
	    {"descsz past the end",
	     "img: SDT note #1 in .note.stapsdt is malformed: its sizes run past the section's end"},
	    {"descsz short",
	     "img: SDT note #1 in .note.stapsdt is malformed: shorter than its three addresses and three "
	     "strings"},
	    {"provider unterminated",
	     "img: SDT note #1 in .note.stapsdt is malformed: its provider is empty, unterminated or longer than 63 "
	     "bytes"},
	    {"provider empty", "img: SDT note #1 in .note.stapsdt is malformed: its provider is empty, unterminated or "
			       "longer than 63 bytes"},
	    {"site outside",
	     "img: SDT note #1 (demo:tick) is malformed: its site 0xdead0000 is in no loaded part of the "
	     "file"},
	    {"not ELF", "img is not an ELF file"},
	};
	struct ps_sdt_set s;
	struct ps_error err;
	unsigned char *img, *bad;
	size_t n, note;

	if (!(img = slurp(EXAMPLE, &n)))
		SKIP(EXAMPLE " is not built (make)");
	note = section_offset(img, n, ".note.stapsdt");
	CHECK(note > 0 && note + 64 < n);
	bad = malloc(n);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0] && bad && note; i++) {
		uint32_t descsz;
		memcpy(bad, img, n);
		memcpy(&descsz, bad + note + NOTE_DESCSZ, 4);
		if (i == 0)
			put32(bad + note + NOTE_DESCSZ, 0x7fffff);
		else if (i == 1)
			put32(bad + note + NOTE_DESCSZ, 20);
		else if (i == 2)
			memset(bad + note + NOTE_DESC + 24, 'x', descsz - 24);
		else if (i == 3)
			bad[note + NOTE_DESC + 24] = 0;
		else if (i == 4)
			memcpy(bad + note + NOTE_DESC, &(uint64_t){0xdead0000}, 8);
		else
			memset(bad, 'x', 64);
		memset(&err, 0, sizeof err);
		CHECK_EQ_INT(ps_sdt_read_mem(bad, n, "img", &s, &err), -1);
		CHECK_STR(err.msg, rows[i].msg);
		CHECK(strchr(err.msg, '\n') == NULL);
		CHECK(s.probes == NULL && s.n == 0);
	}
	free(bad);
	free(img);
}

TEST(sdt_args_rows)
{
	static const struct {
		const char *text;
		int size, is_signed;
		enum ps_sdt_arg_kind kind;
		const char *reg, *index, *sym;
		int scale;
		long long disp;
	} rows[] = {
	    {"-4@%edi", 4, 1, PS_SDT_ARG_REG, "edi", "", "", 0, 0},
	    {"8@%r14", 8, 0, PS_SDT_ARG_REG, "r14", "", "", 0, 0},
	    {"8@-16(%rbp)", 8, 0, PS_SDT_ARG_MEM, "rbp", "", "", 1, -16},
	    {"-4@112(%rsp)", 4, 1, PS_SDT_ARG_MEM, "rsp", "", "", 1, 112},
	    {"4@$5", 4, 0, PS_SDT_ARG_IMM, "", "", "", 0, 5},
	    {"-2@$-0x10", 2, 1, PS_SDT_ARG_IMM, "", "", "", 0, -16},
	    {"1@(%rax,%rbx,4)", 1, 0, PS_SDT_ARG_MEM, "rax", "rbx", "", 4, 0},
	    {"8@8(,%rcx,8)", 8, 0, PS_SDT_ARG_MEM, "", "rcx", "", 8, 8},
	    {"-4@counter+8(%rip)", 4, 1, PS_SDT_ARG_MEM, "rip", "", "counter", 1, 8},
	    {"8@counter", 8, 0, PS_SDT_ARG_MEM, "", "", "counter", 1, 0},
	    {"%eax", 0, 0, PS_SDT_ARG_REG, "eax", "", "", 0, 0}, /* old notes: no size */
	};
	static const char *bad[] = {"3@%eax",	       "4@",   "4@%",	 "4@$x",    "4@-16(%rbp",
				    "4@(%rax,%rbx,3)", "4@()", "x@%eax", "4@%eax)", "4@16(%rbp)x"};
	struct ps_sdt_arg a[PS_SDT_MAX_ARGS];
	struct ps_error err;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CHECK_EQ_INT(ps_sdt_parse_args(rows[i].text, a, PS_SDT_MAX_ARGS, &err), 1);
		CHECK_EQ_INT(a[0].size, rows[i].size);
		CHECK_EQ_INT(a[0].is_signed, rows[i].is_signed);
		CHECK_EQ_INT(a[0].kind, rows[i].kind);
		CHECK_STR(a[0].reg, rows[i].reg);
		CHECK_STR(a[0].index, rows[i].index);
		CHECK_STR(a[0].sym, rows[i].sym);
		CHECK_EQ_INT(a[0].scale, rows[i].scale);
		CHECK_EQ_INT(a[0].disp, rows[i].disp);
		CHECK_STR(a[0].text, rows[i].text);
	}
	CHECK_EQ_INT(ps_sdt_parse_args("  -4@%ecx   8@%rdi ", a, PS_SDT_MAX_ARGS, &err), 2);
	CHECK_EQ_INT(ps_sdt_parse_args("", a, PS_SDT_MAX_ARGS, &err), 0);
	CHECK_EQ_INT(ps_sdt_parse_args("1@%al 1@%bl 1@%cl", a, 2, &err), -1);
	CHECK_STR(err.msg, "more than 2 SDT arguments in '1@%al 1@%bl 1@%cl'");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char want[256];
		CHECK_EQ_INT(ps_sdt_parse_args(bad[i], a, PS_SDT_MAX_ARGS, &err), -1);
		snprintf(want, sizeof want,
			 "SDT argument #1 '%s' is not SIZE@%%REG, SIZE@$CONST or SIZE@DISP(%%BASE[,%%INDEX,SCALE])",
			 bad[i]);
		CHECK_STR(err.msg, want);
	}
}

TEST(sdt_spec_rows)
{
	static const struct {
		const char *text;
		int npoints; /* 0: an error */
		const char *p1, *n1, *p2, *n2;
	} rows[] = {
	    {"sdt:demo:tick", 1, "demo", "tick", "", ""},
	    {"sdt:demo:work_start,sdt:demo:work_end", 2, "demo", "work_start", "demo", "work_end"},
	    {"sdt:demo:work_start,work_end", 2, "demo", "work_start", "demo", "work_end"},
	    {"sdt:a:x,sdt:b:y", 2, "a", "x", "b", "y"},
	    {"sdt:demo", 0, NULL, NULL, NULL, NULL},
	    {"sdt:", 0, NULL, NULL, NULL, NULL},
	    {"sdt::tick", 0, NULL, NULL, NULL, NULL},
	    {"sdt:demo:", 0, NULL, NULL, NULL, NULL},
	    {"sdt:a:b:c", 0, NULL, NULL, NULL, NULL},
	    {"sdt:a:b,", 0, NULL, NULL, NULL, NULL},
	    {"sdt:a:b,c:d", 0, NULL, NULL, NULL, NULL},
	    {"sdt:a:b,c,d", 0, NULL, NULL, NULL, NULL},
	};
	struct ps_sdt_spec sp;
	struct ps_error err;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int rc = ps_sdt_spec_parse(rows[i].text, &sp, &err);
		if (!rows[i].npoints) {
			char want[300];
			snprintf(want, sizeof want,
				 "bad SDT region '%s': expected sdt:PROVIDER:NAME (one probe, a point event) or "
				 "sdt:PROVIDER:START,sdt:PROVIDER:END (a pair)",
				 rows[i].text);
			CHECK_EQ_INT(rc, -1);
			CHECK_STR(err.msg, want);
			continue;
		}
		CHECK_EQ_INT(rc, 0);
		CHECK_EQ_INT(sp.npoints, rows[i].npoints);
		CHECK_STR(sp.provider[0], rows[i].p1);
		CHECK_STR(sp.name[0], rows[i].n1);
		CHECK_STR(sp.provider[1], rows[i].p2);
		CHECK_STR(sp.name[1], rows[i].n2);
	}
	CHECK_EQ_INT(ps_sdt_spec_parse("sdt:demo:tick,tick", &sp, &err), -1);
	CHECK_STR(err.msg, "SDT region 'sdt:demo:tick,tick' starts and ends at the same probe; name it once "
			   "(sdt:demo:tick) to count it as a point event");
}

TEST(sdt_region_spec)
{
	struct ps_region_spec rs;
	struct ps_error err;

	CHECK_EQ_INT(ps_region_spec_parse("sdt:demo:work_start,work_end", &rs, &err), 0);
	CHECK_EQ_INT(rs.kind, PS_RSPEC_SDT);
	CHECK_EQ_INT(rs.sdt.npoints, 2);
	CHECK_STR(rs.sdt.name[1], "work_end");
	CHECK_EQ_INT(ps_region_spec_parse("sdt:demo", &rs, &err), -1);
}

/* A note written against another .stapsdt.base (prelink moved the file) is moved as far; an argument
   string perfsh does not understand keeps the probe, without arguments. */
TEST(sdt_base_moved_and_odd_arguments)
{
	struct ps_sdt_set s0, s;
	struct ps_error err = {0};
	unsigned char *img;
	uint64_t base;
	size_t n, note;

	if (!(img = slurp(EXAMPLE, &n)))
		SKIP(EXAMPLE " is not built (make)");
	note = section_offset(img, n, ".note.stapsdt");
	CHECK_EQ_INT(ps_sdt_read_mem(img, n, "img", &s0, &err), 0);
	CHECK(s0.n == 4 && note > 0);
	if (s0.n == 4 && note > 0) {
		memcpy(&base, img + note + NOTE_DESC + 8, 8);
		base -= 0x10; /* written when .stapsdt.base was 0x10 lower: everything moved up by 0x10 */
		memcpy(img + note + NOTE_DESC + 8, &base, 8);
		/* the first argument's size "x8" or "x4": not a number */
		img[note + NOTE_DESC + 24 + strlen(s0.probes[0].provider) + 1 + strlen(s0.probes[0].name) + 1] = 'x';
		CHECK_EQ_INT(ps_sdt_read_mem(img, n, "img", &s, &err), 0);
		CHECK_EQ_INT(s.n, 4);
		if (s.n == 4) {
			CHECK_EQ_INT(s.probes[0].addr, s0.probes[0].addr + 0x10);
			CHECK_EQ_INT(s.probes[0].offset, s0.probes[0].offset + 0x10);
			CHECK_EQ_INT(s.probes[0].nargs, -1);
			CHECK_EQ_INT(s.probes[0].argstr[0], 'x');
			CHECK_STR(s.probes[0].argstr + 1, s0.probes[0].argstr + 1);
			CHECK_EQ_INT(s.probes[1].addr, s0.probes[1].addr); /* other notes as they were */
			CHECK_EQ_INT(s.probes[1].sema_offset, s0.probes[1].sema_offset);
		}
		ps_sdt_free(&s);
	}
	ps_sdt_free(&s0);
	free(img);
}
