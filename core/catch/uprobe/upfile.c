/* core/catch/uprobe/upfile.c - where a probe goes in a file: the file offset of an address, and
 * whether the bytes there are the 5-byte NOP the kernel calls instead of trapping. See uprobe.h. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "elffile.h"
#include "procmaps.h"
#include "uprobe.h"

int ps_uprobe_site_is_nop5(const char *path, uint64_t off, struct ps_error *err)
{
	static const unsigned char nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	unsigned char b[5];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd < 0 ? -1 : pread(fd, b, sizeof b, (off_t)off);
	int e = errno;

	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)sizeof b)
		return ps_error_set(err, got < 0 ? e : PS_EUSAGE,
				    "uprobe: cannot read 5 bytes at offset 0x%llx of %s%s%s", (unsigned long long)off,
				    path, got < 0 ? ": " : "", got < 0 ? strerror(e) : "");
	return memcmp(b, nop5, sizeof b) == 0;
}

int ps_uprobe_file_offset(const char *path, uint64_t vaddr, uint64_t *off, struct ps_error *err)
{
	struct ps_elf_file *f;
	int rc = 0;

	if (ps_elf_open(&f, path, err))
		return -1;
	if (ps_elf_file_offset(f->elf, vaddr, off))
		rc = ps_error_set(err, PS_ENOTFOUND, "uprobe: address 0x%llx is in no loaded segment of %s",
				  (unsigned long long)vaddr, path);
	ps_elf_close(f);
	return rc;
}
