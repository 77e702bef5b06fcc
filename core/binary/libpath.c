/* core/binary/libpath.c - where the dynamic loader will find a program's libraries before it has
 * loaded them (see ps_lib_resolve() in procmaps.h): for a catcher that probes files (the
 * session's core/session/session_find.c, for the uprobe catcher) while the program is held
 * before its first instruction. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procmaps.h"

#define LIST_MAX 65536

/* Run `@loader --list @exe` and read what it prints into @out (NUL-terminated). 0 or -1. */
static int loader_list(const char *loader, const char *exe, char *out, size_t n, struct ps_error *err)
{
	int fd[2], status;
	size_t len = 0;
	ssize_t got;
	pid_t pid;

	if (pipe2(fd, O_CLOEXEC) < 0)
		return ps_error_set(err, errno, "pipe: %s", strerror(errno));
	if ((pid = fork()) < 0) {
		int e = errno;
		close(fd[0]);
		close(fd[1]);
		return ps_error_set(err, e, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		dup2(fd[1], 1);
		execl(loader, loader, "--list", exe, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (len + 1 < n && ((got = read(fd[0], out + len, n - 1 - len)) > 0 || (got < 0 && errno == EINTR)))
		if (got > 0)
			len += (size_t)got;
	out[len] = '\0';
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return ps_error_set(err, PS_EUSAGE, "%s --list %s failed (status %d)", loader, exe, status);
	return 0;
}

int ps_lib_resolve(pid_t pid, const char *want, char *path, size_t n, struct ps_error *err)
{
	char *list, *save = NULL;
	char loader[PATH_MAX], exe[PATH_MAX], best[PATH_MAX] = "";
	int found = 0, how = PS_MAPS_PREFIX;

	if (ps_maps_find(pid, "ld-linux-x86-64.so.2", PS_MAPS_EXACT, loader, sizeof loader, err) ||
	    ps_maps_find(pid, NULL, PS_MAPS_EXACT, exe, sizeof exe, err))
		return ps_error_set(err, PS_EUSAGE, "%s is not mapped, and no dynamic loader will map it", want);
	if (!(list = malloc(LIST_MAX)))
		return ps_error_set(err, ENOMEM, "out of memory");
	if (loader_list(loader, exe, list, LIST_MAX, err)) {
		free(list);
		return -1;
	}
	for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(line, " => "), *end;
		int m;
		if (!arrow || arrow[4] != '/')
			continue;
		if ((end = strstr(arrow + 4, " (")))
			*end = '\0';
		m = ps_lib_name_match(arrow + 4, want, how);
		if (m == 2 && found != 2) {
			snprintf(best, sizeof best, "%s", arrow + 4);
			found = 2;
		} else if (m == 1 && found < 2) {
			if (found == 1 && strcmp(best, arrow + 4)) {
				ps_error_set(err, PS_EUSAGE, "'%s' names several libraries of %s: %s and %s", want, exe,
					     best, arrow + 4);
				free(list);
				return -1;
			}
			snprintf(best, sizeof best, "%s", arrow + 4);
			found = 1;
		}
	}
	free(list);
	if (!found)
		return ps_error_set(err, PS_ENOTFOUND, "%s loads no library '%s' (its loader lists none)", exe, want);
	if (strlen(best) >= n)
		return ps_error_set(err, ENAMETOOLONG, "%s: path too long", best);
	snprintf(path, n, "%s", best);
	return 0;
}
