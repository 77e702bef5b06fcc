/* core/binary/buildid.c - the GNU build id of an ELF file (libdw's dwelf reads the note). */
#include <elfutils/libdwelf.h>
#include <stdio.h>

#include "buildid.h"
#include "elffile.h"

int ps_build_id(const char *path, char *hex, size_t n, struct ps_error *err)
{
	struct ps_elf_file *f;
	const unsigned char *id;
	ssize_t len;
	int rc = 0;

	if (n)
		hex[0] = '\0';
	if (ps_elf_open(&f, path, err))
		return -1;
	if ((len = dwelf_elf_gnu_build_id(f->elf, (const void **)&id)) > 0) {
		if ((size_t)len * 2 + 1 > n)
			rc = ps_error_set(err, PS_EUSAGE, "%s: a build id of %zd bytes is longer than perfsh reads",
					  path, len);
		for (ssize_t i = 0; rc == 0 && i < len; i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
	}
	ps_elf_close(f);
	return rc;
}
