/* core/binary/elffile.c - one ELF file, opened once (see elffile.h). */
#include "elffile.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ps_elf_open(struct ps_elf_file **out, const char *path, struct ps_error *err)
{
	struct ps_elf_file *f;
	int e;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return ps_error_set(err, PS_EUSAGE, "libelf: %s", elf_errmsg(-1));
	if (!(f = calloc(1, sizeof *f)) || !(f->path = strdup(path))) {
		free(f);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	f->dfd = -1;
	if ((f->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		e = errno;
		ps_elf_close(f);
		return ps_error_set(err, e, "cannot open %s: %s", path, strerror(e));
	}
	if (!(f->elf = elf_begin(f->fd, ELF_C_READ, NULL)) || elf_kind(f->elf) != ELF_K_ELF ||
	    gelf_getclass(f->elf) == ELFCLASSNONE) {
		ps_elf_close(f);
		return ps_error_set(err, PS_EUSAGE, "%s is not an ELF file", path);
	}
	*out = f;
	return 0;
}

/*
 * Do the string sections of @e end in a NUL? libdw (0.188) reads their strings with strlen()
 * and would run past the end of a damaged one.
 */
static bool strings_terminated(Elf *e)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (strcmp(name, ".debug_str") && strcmp(name, ".debug_line_str"))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return false;
		d = elf_getdata(scn, NULL);
		if (d && d->d_size && (!d->d_buf || ((const char *)d->d_buf)[d->d_size - 1] != '\0'))
			return false;
	}
	return true;
}

static Dwarf *begin_dwarf(Elf *e)
{
	return strings_terminated(e) ? dwarf_begin_elf(e, DWARF_C_READ, NULL) : NULL;
}

/* The DWARF of @f->elf, or of its /usr/lib/debug/.build-id/ file. */
static Dwarf *open_dwarf(struct ps_elf_file *f)
{
	const unsigned char *id;
	char dpath[300];
	ssize_t n = dwelf_elf_gnu_build_id(f->elf, (const void **)&id);
	Dwarf *dw = begin_dwarf(f->elf);
	int used;

	if (dw || n < 2)
		return dw;
	used = snprintf(dpath, sizeof dpath, "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (ssize_t i = 1; i < n && used < 250; i++)
		used += snprintf(dpath + used, sizeof dpath - (size_t)used, "%02x", id[i]);
	snprintf(dpath + used, sizeof dpath - (size_t)used, ".debug");
	if ((f->dfd = open(dpath, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (!(f->delf = elf_begin(f->dfd, ELF_C_READ, NULL)))
		return NULL;
	return begin_dwarf(f->delf);
}

Dwarf *ps_elf_dwarf(struct ps_elf_file *f)
{
	if (!f->dw_tried) {
		f->dw_tried = 1;
		f->dw = open_dwarf(f);
	}
	return f->dw;
}

void ps_elf_close(struct ps_elf_file *f)
{
	if (!f)
		return;
	if (f->dw)
		dwarf_end(f->dw);
	elf_end(f->delf);
	elf_end(f->elf);
	if (f->dfd >= 0)
		close(f->dfd);
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	free(f);
}

uint8_t *ps_elf_code(const struct ps_elf_file *f, uint64_t addr, uint64_t size)
{
	uint8_t *buf = NULL;
	size_t nph;

	if (elf_getphdrnum(f->elf, &nph) != 0)
		return NULL;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    addr < ph.p_vaddr || addr + size > ph.p_vaddr + ph.p_filesz)
			continue;
		if ((buf = malloc(size)) &&
		    pread(f->fd, buf, size, (off_t)(ph.p_offset + (addr - ph.p_vaddr))) != (ssize_t)size) {
			free(buf);
			buf = NULL;
		}
		break;
	}
	return buf;
}
