/* core/binary/buildid.c - the GNU build id of an ELF file (libdw's dwelf reads the note). */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"

int ps_build_id(const char *path, char *hex, size_t n, struct ps_error *err)
{
	const unsigned char *id;
	Elf *elf;
	ssize_t len;
	int fd, rc = 0;

	if (n)
		hex[0] = '\0';
	if (elf_version(EV_CURRENT) == EV_NONE)
		return ps_error_set(err, PS_EUSAGE, "libelf: %s", elf_errmsg(-1));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		rc = errno;
		return ps_error_set(err, rc, "cannot open %s: %s", path, strerror(rc));
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		rc = ps_error_set(err, PS_EUSAGE, "%s is not an ELF file", path);
	} else if ((len = dwelf_elf_gnu_build_id(elf, (const void **)&id)) > 0) {
		if ((size_t)len * 2 + 1 > n)
			rc = ps_error_set(err, PS_EUSAGE, "%s: a build id of %zd bytes is longer than perfsh reads",
					  path, len);
		for (ssize_t i = 0; rc == 0 && i < len; i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
	}
	elf_end(elf);
	close(fd);
	return rc;
}
