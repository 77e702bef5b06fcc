/* tests/c/test_spawn_stdio.c - a started command's stdin, stdout and stderr go to files
 * (core/proc/spawn_stdio.c through ps_session_spawn_io), and perfsh's own streams are untouched,
 * also when a file cannot be opened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctest.h"
#include "session.h"

static ino_t ino_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) ? 0 : st.st_ino;
}

TEST(spawn_io_stdout_to_a_file)
{
	char path[] = "/tmp/perfsh-stdio-XXXXXX", buf[256] = "";
	const char *io[3] = {"/dev/null", path, NULL};
	char *argv[] = {"examples/sum", NULL};
	struct ps_session *s = NULL;
	struct ps_error err;
	int exited = 0, code = -1, signo = 0, fd = mkstemp(path);
	ino_t out = ino_of(1), in = ino_of(0);
	FILE *f;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(ps_session_spawn_io(&s, argv, NULL, 0, PS_CATCH_PTRACE, io, &err), 0);
	CHECK(ino_of(1) == out && ino_of(0) == in); /* ours again right after the spawn */
	CHECK_EQ_INT(ps_session_run(s, 0, 0, &err), 1);
	CHECK(ps_session_status(s, &exited, &code, &signo) == 1);
	CHECK(exited && code == 0);
	ps_session_free(s);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	CHECK_STR(buf, "sum = 10736046639121121\n");
	unlink(path);
}

TEST(spawn_io_unopenable_file_changes_nothing)
{
	const char *io[3] = {NULL, "/dev/null", "/nonexistent-dir/err.txt"};
	char *argv[] = {"examples/sum", NULL};
	struct ps_session *s = NULL;
	struct ps_error err;
	ino_t out = ino_of(1), errfd = ino_of(2);

	CHECK_EQ_INT(ps_session_spawn_io(&s, argv, NULL, 0, PS_CATCH_PTRACE, io, &err), -1);
	CHECK(s == NULL);
	CHECK(strstr(err.msg, "/nonexistent-dir/err.txt: No such file or directory") != NULL);
	CHECK(ino_of(1) == out && ino_of(2) == errfd);
}
