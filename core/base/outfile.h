/* core/base/outfile.h - files written whole or not at all: into a temporary file beside the
 * destination, renamed over it once complete, so a failure leaves the old file as it was. */
#ifndef PS_OUTFILE_H
#define PS_OUTFILE_H

#include <stddef.h>

#include "error.h"

/**
 * struct ps_outfile - an output file being written.
 * @path: where it goes: the destination, through its symbolic link if it is one.
 * @tmp:  the temporary file written meanwhile, in the same directory (".NAME.XXXXXX"), or
 *        "" when @path is written in place (it exists and is not a regular file: a FIFO,
 *        a terminal, /dev/null).
 */
struct ps_outfile {
	char path[4096];
	char tmp[4096];
};

/**
 * ps_outfile_prepare - what ps_outfile_open() does, without opening: for a caller that opens
 * @o->tmp (or, when it is "", @o->path) itself.
 * @o:    filled.
 * @path: the destination.
 * @err:  filled on failure.
 *
 * Return: 0 (the temporary file exists, empty), or -1 with @err set.
 */
int ps_outfile_prepare(struct ps_outfile *o, const char *path, struct ps_error *err);

/**
 * ps_outfile_open - start writing @path whole.
 * @o:    filled.
 * @path: the destination; a directory is refused.
 * @err:  filled on failure.
 *
 * Creates the temporary file (mode: the old file's, or 0666 less the umask for a new one)
 * and returns it open for writing; where @path is written in place, @path itself, truncated.
 *
 * Return: a file descriptor (close-on-exec), or -1 with @err set ("cannot write PATH: Permission denied").
 */
int ps_outfile_open(struct ps_outfile *o, const char *path, struct ps_error *err);

/**
 * ps_outfile_commit - put the complete file in place: rename @o->tmp over @o->path.
 * @o:   the file, its descriptor already closed.
 * @err: filled on failure (the temporary file is then removed).
 *
 * Return: 0, or -1 with @err set.
 */
int ps_outfile_commit(struct ps_outfile *o, struct ps_error *err);

/**
 * ps_outfile_discard - drop the temporary file; @o->path stays as it was. Idempotent.
 * @o: the file, its descriptor already closed.
 */
void ps_outfile_discard(struct ps_outfile *o);

#endif
