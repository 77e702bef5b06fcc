/* core/binary/buildid.h - what identifies a build of a program: its GNU build id. */
#ifndef PS_BUILDID_H
#define PS_BUILDID_H

#include <stddef.h>

#include "error.h"

/**
 * ps_build_id() - the GNU build id of the ELF file @path (.note.gnu.build-id) in hex.
 * @path: the file
 * @hex:  receives the id as lower-case hex, "" when the file has none
 * @n:    size of @hex (41 holds a SHA-1 id; a longer id is an error)
 * @err:  on failure: "cannot open PATH: ...", "PATH is not an ELF file"
 *
 * Return: 0 (also when the file has no build id), or -1 with @err set.
 */
int ps_build_id(const char *path, char *hex, size_t n, struct ps_error *err);

#endif
