/* core/base/outfile.c - files written whole or not at all (see outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int cannot(struct ps_error *err, const char *path, int e)
{
	return ps_error_set(err, e, "cannot write %s: %s", path, strerror(e));
}

/* @o->tmp: "DIR/.BASE.XXXXXX" beside @o->path, the base cut so the name fits NAME_MAX. */
static void temp_name(struct ps_outfile *o, unsigned long salt)
{
	const char *slash = strrchr(o->path, '/');
	int dirlen = slash ? (int)(slash - o->path + 1) : 0;
	const char *base = o->path + dirlen;

	snprintf(o->tmp, sizeof o->tmp, "%.*s.%.*s.%06lx", dirlen, o->path, NAME_MAX - 9, base, salt & 0xffffff);
}

int ps_outfile_prepare(struct ps_outfile *o, const char *path, struct ps_error *err)
{
	struct stat st;
	int exists, fd = -1;

	o->tmp[0] = '\0';
	if (!path || !path[0])
		return ps_error_set(err, PS_EUSAGE, "no file name given");
	if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path)
		return cannot(err, path, ENAMETOOLONG);
	/* through a symbolic link: the file it names is the one replaced */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		char *real = realpath(path, NULL);
		if (real && strlen(real) < sizeof o->path)
			strcpy(o->path, real);
		free(real);
	}
	exists = stat(o->path, &st) == 0;
	if (exists && S_ISDIR(st.st_mode))
		return cannot(err, path, EISDIR);
	if (exists && !S_ISREG(st.st_mode))
		return 0;
	unsigned long salt = (unsigned long)getpid() * 2654435761u ^ (unsigned long)clock();
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		temp_name(o, salt ^ (unsigned long)ts.tv_nsec ^ ((unsigned long)tries << 12));
		fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST) {
			int e = errno;
			o->tmp[0] = '\0';
			return cannot(err, path, e);
		}
	}
	if (fd < 0) {
		o->tmp[0] = '\0';
		return cannot(err, path, EEXIST);
	}
	if (exists && fchmod(fd, st.st_mode & 07777) < 0) {
		int e = errno;
		close(fd);
		ps_outfile_discard(o);
		return cannot(err, path, e);
	}
	close(fd);
	return 0;
}

int ps_outfile_open(struct ps_outfile *o, const char *path, struct ps_error *err)
{
	int fd;

	if (ps_outfile_prepare(o, path, err))
		return -1;
	fd = o->tmp[0] ? open(o->tmp, O_WRONLY | O_CLOEXEC) : open(o->path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		ps_outfile_discard(o);
		return cannot(err, path, e);
	}
	return fd;
}

int ps_outfile_commit(struct ps_outfile *o, struct ps_error *err)
{
	if (!o->tmp[0])
		return 0;
	if (rename(o->tmp, o->path) < 0) {
		int e = errno;
		ps_outfile_discard(o);
		return cannot(err, o->path, e);
	}
	o->tmp[0] = '\0';
	return 0;
}

void ps_outfile_discard(struct ps_outfile *o)
{
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = '\0';
}
