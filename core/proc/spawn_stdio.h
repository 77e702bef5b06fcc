/* core/proc/spawn_stdio.h - the standard streams of a command perfsh starts: files in place of
 * perfsh's own stdin, stdout and stderr, which the child inherits at its fork. */
#ifndef PS_SPAWN_STDIO_H
#define PS_SPAWN_STDIO_H

#include "error.h"

/* What ps_spawn_stdio_open() replaced: perfsh's own streams, put back by ps_spawn_stdio_close(). */
struct ps_spawn_stdio {
	int saved[3];
};

/* Point fds 0-2 at @path[0..2] (stdin read, stdout and stderr written, created or truncated;
   a NULL path keeps perfsh's), flushing perfsh's buffered output first. On failure what was
   replaced is put back. Return: 0, or -1 with @err naming the file. */
int ps_spawn_stdio_open(struct ps_spawn_stdio *io, const char *const path[3], struct ps_error *err);
/* Put perfsh's own streams back (safe to call twice). */
void ps_spawn_stdio_close(struct ps_spawn_stdio *io);

#endif
