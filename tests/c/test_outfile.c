/* tests/c/test_outfile.c - files written whole (core/base/outfile.c) and .psnap files saved with
 * ps_psnap_replace(): a failed write leaves the old file as it was, and no temporary file. */
#include "ctest.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "psnap_util.h"

static int make_dir(char *dir)
{
	strcpy(dir, "/tmp/perfsh-outfile-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

/* Entries of @dir other than . and .., and whether one is named @only. */
static int entries(const char *dir, const char *only, int *found)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	*found = 0;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		*found |= !strcmp(e->d_name, only);
	}
	if (d)
		closedir(d);
	return n;
}

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(path);
		fchmod(fd, mode);
		close(fd);
	}
}

static int holds(const char *path, const char *text)
{
	char buf[64] = {0};
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) && !memcmp(buf, text, (size_t)n);
}

static void remove_dir(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "  cannot remove %s\n", dir);
}

/* Committed: the new text under the old name, with the old file's mode; discarded: the old
   file as it was. Either way nothing else is left in the directory. */
TEST(outfile_commit_or_discard)
{
	char dir[64], path[128];
	struct ps_outfile o;
	struct ps_error err = {0};
	struct stat st;
	int fd, found;

	if (make_dir(dir))
		SKIP("mkdtemp failed");
	snprintf(path, sizeof path, "%s/p.txt", dir);
	put(path, "old", 0600);
	fd = ps_outfile_open(&o, path, &err);
	CHECK(fd >= 0);
	CHECK(o.tmp[0] != '\0');
	CHECK(holds(path, "old"));
	CHECK_EQ_INT(write(fd, "half", 4), 4);
	close(fd);
	ps_outfile_discard(&o);
	CHECK(holds(path, "old"));
	CHECK_EQ_INT(entries(dir, "p.txt", &found), 1);
	fd = ps_outfile_open(&o, path, &err);
	CHECK_EQ_INT(write(fd, "new", 3), 3);
	close(fd);
	CHECK_EQ_INT(ps_outfile_commit(&o, &err), 0);
	CHECK(holds(path, "new"));
	CHECK_EQ_INT(stat(path, &st), 0);
	CHECK_EQ_INT(st.st_mode & 07777, 0600);
	CHECK_EQ_INT(entries(dir, "p.txt", &found), 1);
	CHECK(found);
	/* a directory is refused; a missing directory says so */
	CHECK_EQ_INT(ps_outfile_open(&o, dir, &err), -1);
	CHECK(strstr(err.msg, "Is a directory") != NULL);
	snprintf(path, sizeof path, "%s/no/p.txt", dir);
	CHECK_EQ_INT(ps_outfile_open(&o, path, &err), -1);
	CHECK(strstr(err.msg, "cannot write ") == err.msg);
	CHECK(strstr(err.msg, "/no/p.txt: No such file or directory") != NULL);
	remove_dir(dir);
}

/* A device is written in place (nothing to rename over /dev/null). */
TEST(outfile_device_in_place)
{
	struct ps_outfile o;
	struct ps_error err = {0};
	int fd = ps_outfile_open(&o, "/dev/null", &err);

	CHECK(fd >= 0);
	CHECK_STR(o.tmp, "");
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(ps_outfile_commit(&o, &err), 0);
}

/* A save that fails half-way (the file size limit) keeps the old file; one that completes
   replaces it with a readable file. */
TEST(psnap_replace_keeps_the_old_file_on_failure)
{
	char dir[64], path[128];
	struct ps_error err = {0};
	struct ps_psnap_writer *w;
	struct ps_psnap_reader *r = NULL;
	struct rlimit old, small = {64 * 1024, 0};
	uint64_t *buf = malloc(8000 * RECSIZE);
	int found;

	if (!buf || make_dir(dir)) {
		free(buf);
		SKIP("no memory or mkdtemp failed");
	}
	for (size_t i = 0; i < 8000; i++)
		psnap_fill((struct ps_snap *)((char *)buf + i * RECSIZE), i);
	snprintf(path, sizeof path, "%s/run.psnap", dir);
	put(path, "old", 0644);
	getrlimit(RLIMIT_FSIZE, &old);
	small.rlim_max = old.rlim_max;
	void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, &small);
	w = ps_psnap_replace(path, &psnap_test_info, &err);
	CHECK(w != NULL);
	if (w) {
		CHECK(holds(path, "old"));
		CHECK_EQ_INT(ps_psnap_write(w, buf, 8000, &err), -1);
		CHECK_EQ_INT(ps_psnap_close(w, &err), -1);
		CHECK(strstr(err.msg, "File too large") != NULL);
	}
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, oldsig);
	CHECK(holds(path, "old"));
	CHECK_EQ_INT(entries(dir, "run.psnap", &found), 1);
	w = ps_psnap_replace(path, &psnap_test_info, &err);
	CHECK(w != NULL);
	if (w) {
		CHECK_EQ_INT(ps_psnap_write(w, buf, 8000, &err), 0);
		CHECK_EQ_INT(ps_psnap_close(w, &err), 0);
	}
	CHECK_EQ_INT(ps_psnap_open(path, &r, &err), 0);
	if (r) {
		CHECK_EQ_INT(ps_psnap_count(r), 8000);
		CHECK_EQ_INT(ps_psnap_complete(r), 1);
		ps_psnap_reader_close(r);
	}
	CHECK_EQ_INT(entries(dir, "run.psnap", &found), 1);
	free(buf);
	remove_dir(dir);
}
