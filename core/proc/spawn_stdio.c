/* core/proc/spawn_stdio.c - the standard streams of a command perfsh starts (see spawn_stdio.h).
 * The fork in ps_tracer_spawn() copies the descriptor table, so pointing perfsh's fds 0-2 at
 * the files for the length of the spawn gives them to the child and nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "spawn_stdio.h"

void ps_spawn_stdio_close(struct ps_spawn_stdio *io)
{
	for (int fd = 0; fd < 3; fd++)
		if (io->saved[fd] >= 0) {
			dup2(io->saved[fd], fd);
			close(io->saved[fd]);
			io->saved[fd] = -1;
		}
}

int ps_spawn_stdio_open(struct ps_spawn_stdio *io, const char *const path[3], struct ps_error *err)
{
	for (int fd = 0; fd < 3; fd++)
		io->saved[fd] = -1;
	if (!path)
		return 0;
	fflush(stdout);
	fflush(stderr);
	for (int fd = 0; fd < 3; fd++) {
		int f;

		if (!path[fd])
			continue;
		f = open(path[fd], fd == 0 ? O_RDONLY | O_CLOEXEC : O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (f < 0) {
			int e = errno;
			ps_spawn_stdio_close(io);
			return ps_error_set(err, e, "%s: %s", path[fd], strerror(e));
		}
		io->saved[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 10);
		if (io->saved[fd] < 0 || dup2(f, fd) < 0) {
			int e = errno;
			close(f);
			ps_spawn_stdio_close(io);
			return ps_error_set(err, e, "%s: %s", path[fd], strerror(e));
		}
		close(f);
	}
	return 0;
}
