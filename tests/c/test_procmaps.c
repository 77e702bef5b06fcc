/* tests/c/test_procmaps.c - core/binary/procmaps.c: /proc/PID/maps lines, load bases, load biases
 * checked against the dynamic loader's own (dl_iterate_phdr). */
#include "ctest.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "elffile.h"
#include "procmaps.h"

static const struct {
	const char *line;
	int rc;
	uint64_t lo, hi, off;
	const char *path;
} map_rows[] = {
    {"55d0c8a00000-55d0c8a02000 r--p 00000000 08:01 1234                       /usr/bin/cat\n", 0, 0x55d0c8a00000,
     0x55d0c8a02000, 0, "/usr/bin/cat"},
    {"7f12a0028000-7f12a01bd000 r-xp 00028000 08:01 5678 /usr/lib/libc.so.6\n", 0, 0x7f12a0028000, 0x7f12a01bd000,
     0x28000, "/usr/lib/libc.so.6"},
    {"7ffd1000-7ffd2000 rw-p 00000000 00:00 0                          [stack]\n", 0, 0x7ffd1000, 0x7ffd2000, 0,
     "[stack]"},
    {"7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n", 0, 0x7f0000000000, 0x7f0000001000, 0, ""},
    {"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n", 0, 0x7f0000000000, 0x7f0000001000, 0, ""},
    {"400000-401000 r-xp 00000000 08:01 99 /tmp/a b.so (deleted)\n", 0, 0x400000, 0x401000, 0, "/tmp/a b.so (deleted)"},
    {"garbage\n", -1, 0, 0, 0, NULL},
    {"400000-401000 r-xp\n", -1, 0, 0, 0, NULL},
    {"", -1, 0, 0, 0, NULL},
};

TEST(procmaps_parse_lines)
{
	for (size_t i = 0; i < sizeof map_rows / sizeof map_rows[0]; i++) {
		char line[256];
		struct ps_map m = {0};
		snprintf(line, sizeof line, "%s", map_rows[i].line);
		CHECK_EQ_INT(ps_map_parse(line, &m), map_rows[i].rc);
		if (map_rows[i].rc)
			continue;
		CHECK_EQ_INT(m.lo, map_rows[i].lo);
		CHECK_EQ_INT(m.hi, map_rows[i].hi);
		CHECK_EQ_INT(m.off, map_rows[i].off);
		CHECK_STR(m.path, map_rows[i].path);
	}
}

/* An ELF file whose program headers list the higher PT_LOAD first: the base is the lowest. */
TEST(procmaps_load_base_is_the_lowest_pt_load)
{
	char path[] = "/tmp/perfsh-procmaps-XXXXXX";
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph[3];
	} f = {0};
	uint64_t vaddr = 1, off = 1;
	struct ps_error err;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	memcpy(f.eh.e_ident, ELFMAG, SELFMAG);
	f.eh.e_ident[EI_CLASS] = ELFCLASS64;
	f.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	f.eh.e_ident[EI_VERSION] = EV_CURRENT;
	f.eh.e_type = ET_EXEC;
	f.eh.e_machine = EM_X86_64;
	f.eh.e_version = EV_CURRENT;
	f.eh.e_phoff = sizeof f.eh;
	f.eh.e_ehsize = sizeof f.eh;
	f.eh.e_phentsize = sizeof f.ph[0];
	f.eh.e_phnum = 3;
	f.ph[0] = (Elf64_Phdr){.p_type = PT_LOAD, .p_offset = 0x2010, .p_vaddr = 0x402010, .p_align = 0x1000};
	f.ph[1] = (Elf64_Phdr){.p_type = PT_NOTE, .p_offset = 0x100, .p_vaddr = 0x100, .p_align = 8};
	f.ph[2] = (Elf64_Phdr){.p_type = PT_LOAD, .p_offset = 0, .p_vaddr = 0x400040, .p_align = 0x1000};
	CHECK_EQ_INT(write(fd, &f, sizeof f), sizeof f);
	close(fd);
	CHECK_EQ_INT(ps_elf_load_base(path, &vaddr, &off, &err), 0);
	CHECK_EQ_INT(vaddr, 0x400000);
	CHECK_EQ_INT(off, 0);
	/* no PT_LOAD at all */
	f.ph[0].p_type = f.ph[2].p_type = PT_NOTE;
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK_EQ_INT(write(fd, &f, sizeof f), sizeof f);
	close(fd);
	CHECK_EQ_INT(ps_elf_load_base(path, &vaddr, &off, &err), -1);
	CHECK(strstr(err.msg, "is not an ELF file with loadable segments") != NULL);
	unlink(path);
	CHECK_EQ_INT(ps_elf_load_base(path, &vaddr, &off, &err), -1);
	CHECK_EQ_INT(err.code, ENOENT);
}

struct loaded {
	const char *suffix; /* "" for the program itself */
	uint64_t addr;
	int found;
};

static int loaded_one(struct dl_phdr_info *info, size_t size, void *ud)
{
	struct loaded *l = ud;
	const char *n = info->dlpi_name ? info->dlpi_name : "";
	size_t ln = strlen(n), ls = strlen(l->suffix);

	(void)size;
	if (l->found || (ls ? ln < ls || strcmp(n + ln - ls, l->suffix) : ln != 0))
		return 0;
	l->addr = info->dlpi_addr;
	l->found = 1;
	return 1;
}

TEST(procmaps_bias_matches_the_loader)
{
	char path[1024];
	uint64_t bias = 1;
	struct ps_error err;
	struct loaded exe = {"", 0, 0}, libc = {"/libc.so.6", 0, 0};

	dl_iterate_phdr(loaded_one, &exe);
	dl_iterate_phdr(loaded_one, &libc);
	CHECK(exe.found && libc.found);
	CHECK_EQ_INT(ps_maps_find(getpid(), NULL, PS_MAPS_EXACT, path, sizeof path, &err), 0);
	CHECK_EQ_INT(ps_maps_bias(getpid(), path, &bias, &err), 0);
	CHECK_EQ_INT(bias, exe.addr);
	CHECK_EQ_INT(ps_maps_find(getpid(), "libc.so.6", PS_MAPS_EXACT, path, sizeof path, &err), 0);
	CHECK_STR(strrchr(path, '/'), "/libc.so.6");
	CHECK_EQ_INT(ps_maps_bias(getpid(), path, &bias, &err), 0);
	CHECK_EQ_INT(bias, libc.addr);
}

/* A run-time address and its link-time one (less the load bias) give the same file offset: one
   through the mapping that holds it, the other through the segment that holds it. */
TEST(procmaps_file_offsets_agree)
{
	char path[1024];
	uint64_t rt_off = 0, link_off = 1, bias = 0, addr = (uint64_t)(uintptr_t)ps_map_parse;
	struct ps_elf_file *f;
	struct ps_error err;

	CHECK_EQ_INT(ps_maps_file_offset(getpid(), addr, path, sizeof path, &rt_off, &err), 0);
	CHECK(strstr(path, "tests/c/run") != NULL);
	CHECK_EQ_INT(ps_maps_bias(getpid(), path, &bias, &err), 0);
	CHECK_EQ_INT(ps_elf_open(&f, path, &err), 0);
	if (f) {
		CHECK_EQ_INT(ps_elf_file_offset(f->elf, addr - bias, &link_off), 0);
		CHECK_EQ_INT(link_off, rt_off);
		CHECK_EQ_INT(ps_elf_file_offset(f->elf, 0x7fff00000000, &link_off), -1); /* past every segment */
		ps_elf_close(f);
	}
	CHECK_EQ_INT(ps_maps_file_offset(0, 8, path, sizeof path, &rt_off, &err), -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
	CHECK_EQ_INT(ps_maps_file_offset(0, addr, path, 4, &rt_off, &err), -1);
}

TEST(procmaps_find_by_prefix_only_when_asked)
{
	char path[1024], small[4];
	uint64_t bias = 0;
	struct ps_error err;

	CHECK_EQ_INT(ps_maps_find(getpid(), "libc", PS_MAPS_PREFIX, path, sizeof path, &err), 0);
	CHECK_STR(strrchr(path, '/'), "/libc.so.6");
	CHECK_EQ_INT(ps_maps_find(getpid(), "libc", PS_MAPS_EXACT, path, sizeof path, &err), -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
	CHECK(strstr(err.msg, "'libc' is not mapped in process ") == err.msg);
	CHECK(strstr(err.msg, "(mapped: ") != NULL);
	CHECK_EQ_INT(ps_maps_find(getpid(), "libc.so.6", PS_MAPS_EXACT, small, sizeof small, &err), -1);
	CHECK_EQ_INT(err.code, ENAMETOOLONG);
	CHECK_EQ_INT(ps_maps_find(getpid(), "/nonexistent/libc.so.6", PS_MAPS_PREFIX, path, sizeof path, &err), -1);
	CHECK_EQ_INT(ps_maps_bias(getpid(), "/nonexistent/x", &bias, &err), -1);
	CHECK_EQ_INT(ps_maps_find(-1, "libc.so.6", PS_MAPS_EXACT, path, sizeof path, &err), -1);
	CHECK(strstr(err.msg, "cannot read /proc/-1/maps") == err.msg);
}

TEST(procmaps_status_fields)
{
	char v[64], small[3];

	CHECK_EQ_INT(ps_proc_status(getpid(), "Tgid", v, sizeof v), 0);
	CHECK_EQ_INT(atoi(v), getpid());
	CHECK_EQ_INT(ps_proc_status(getpid(), "Uid", v, sizeof v), 0);
	CHECK_EQ_INT(strtol(v, NULL, 10), getuid()); /* the real uid comes first */
	CHECK(strchr(v, '\n') == NULL && v[0] != ' ' && v[0] != '\t');
	CHECK_EQ_INT(ps_proc_status(getpid(), "SigPnd", v, sizeof v), 0);
	CHECK_EQ_INT(strlen(v), 16);
	/* a field's name is matched whole: "Tgi" is no field */
	CHECK_EQ_INT(ps_proc_status(getpid(), "Tgi", v, sizeof v), -1);
	CHECK_EQ_INT(ps_proc_status(getpid(), "NoSuchField", v, sizeof v), -1);
	CHECK_EQ_INT(ps_proc_status(-1, "Tgid", v, sizeof v), -1);
	/* cut to the buffer */
	CHECK_EQ_INT(ps_proc_status(getpid(), "Name", small, sizeof small), 0);
	CHECK_EQ_INT(strlen(small), 2);
}
