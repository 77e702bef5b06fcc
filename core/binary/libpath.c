/* core/binary/libpath.c - where the dynamic loader will find a program's libraries before it has
 * loaded them (see ps_lib_resolve() in procmaps.h): for a catcher that probes files (the
 * session's core/session/session_find.c, for the uprobe catcher) while the program is held
 * before its first instruction, or for a library it will load later with dlopen. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procmaps.h"

#define LIST_MAX 65536
#define ENV_MAX 65536 /* bytes of a program's environment read */
#define ENV_VARS 1024

/* What a loader run for the program is given: the program's environment (the loader searches
   LD_LIBRARY_PATH as the program sees it) in @buf, split into @envp. */
struct env {
	char buf[ENV_MAX];
	char *envp[ENV_VARS];
};

/* The environment of process @pid into @e. 0, or -1 (unreadable or too long: ours is used). */
static int env_of(pid_t pid, struct env *e)
{
	char fname[64];
	ssize_t got, len = 0;
	int fd, k = 0;

	snprintf(fname, sizeof fname, "/proc/%d/environ", (int)pid);
	if ((fd = open(fname, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while ((size_t)len + 1 < sizeof e->buf &&
	       ((got = read(fd, e->buf + len, sizeof e->buf - 1 - (size_t)len)) > 0 || (got < 0 && errno == EINTR)))
		if (got > 0)
			len += got;
	close(fd);
	if (len == 0 || (size_t)len + 1 >= sizeof e->buf)
		return -1;
	e->buf[len] = '\0';
	for (char *p = e->buf; p < e->buf + len && k < ENV_VARS - 1; p += strlen(p) + 1)
		e->envp[k++] = p;
	e->envp[k] = NULL;
	return 0;
}

/* Run `@loader [--preload @preload] --list @exe` as program @pid would (its environment, its
   directory) and read what it prints into @out (NUL-terminated). 0 or -1. */
static int loader_list(pid_t pid, const char *loader, const char *exe, const char *preload, char *out, size_t n,
		       struct ps_error *err)
{
	struct env *env = malloc(sizeof *env);
	char cwd[64], **envp = env && env_of(pid, env) == 0 ? env->envp : environ;
	int fd[2], status;
	size_t len = 0;
	ssize_t got;
	pid_t child;

	snprintf(cwd, sizeof cwd, "/proc/%d/cwd", (int)pid);
	if (pipe2(fd, O_CLOEXEC) < 0) {
		int e = errno;
		free(env);
		return ps_error_set(err, e, "pipe: %s", strerror(e));
	}
	if ((child = fork()) < 0) {
		int e = errno;
		close(fd[0]);
		close(fd[1]);
		free(env);
		return ps_error_set(err, e, "fork: %s", strerror(e));
	}
	if (child == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		dup2(fd[1], 1);
		if (null >= 0)
			dup2(null, 2); /* "cannot be preloaded": said by the caller */
		if (chdir(cwd) < 0) {
			/* relative paths are then the caller's */
		}
		if (preload)
			execle(loader, loader, "--preload", preload, "--list", exe, (char *)NULL, envp);
		else
			execle(loader, loader, "--list", exe, (char *)NULL, envp);
		_exit(127);
	}
	free(env);
	close(fd[1]);
	while (len + 1 < n && ((got = read(fd[0], out + len, n - 1 - len)) > 0 || (got < 0 && errno == EINTR)))
		if (got > 0)
			len += (size_t)got;
	out[len] = '\0';
	close(fd[0]);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return ps_error_set(err, PS_EUSAGE, "%s --list %s failed (status %d)", loader, exe, status);
	return 0;
}

/* The library of listing @list (`LOADER --list`: "NAME => PATH (ADDR)") that @want names, into
   @best: 2 exactly, 1 as a prefix, 0 none; -1 with @err where it names several. */
static int pick(char *list, const char *want, const char *exe, char best[PATH_MAX], struct ps_error *err)
{
	char *save = NULL;
	int found = 0;

	for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(line, " => "), *end;
		int m;
		if (!arrow || arrow[4] != '/')
			continue;
		if ((end = strstr(arrow + 4, " (")))
			*end = '\0';
		m = ps_lib_name_match(arrow + 4, want, PS_MAPS_PREFIX);
		if (m == 2 && found != 2) {
			snprintf(best, PATH_MAX, "%s", arrow + 4);
			found = 2;
		} else if (m == 1 && found < 2) {
			if (found == 1 && strcmp(best, arrow + 4))
				return ps_error_set(err, PS_EUSAGE, "'%s' names several libraries of %s: %s and %s",
						    want, exe, best, arrow + 4);
			snprintf(best, PATH_MAX, "%s", arrow + 4);
			found = 1;
		}
	}
	return found;
}

/*
 * A library the program does not load at start, for dlopen to load later: a path is that file
 * (dlopen takes it as it is); a file name (it has ".so") is found where the loader would find
 * it, by the loader itself (`--preload NAME`: the program's RUNPATH, LD_LIBRARY_PATH,
 * ld.so.cache, the standard directories and their glibc-hwcaps). 1 found, 0 not, -1 error.
 * dlopen searches the RUNPATH of the library that calls it, which may differ: a catcher that
 * probes the file checks which one the program maps.
 */
static int resolve_later(pid_t pid, const char *loader, const char *exe, const char *want, char *list,
			 char best[PATH_MAX], struct ps_error *err)
{
	if (strchr(want, '/')) {
		if (want[0] != '/' || access(want, R_OK) != 0)
			return 0;
		snprintf(best, PATH_MAX, "%s", want);
		return 1;
	}
	if (!strstr(want, ".so") || strpbrk(want, ": \t"))
		return 0; /* a prefix ("libgcc_s") names no file to search for */
	if (loader_list(pid, loader, exe, want, list, LIST_MAX, err))
		return 0; /* a loader without --preload (glibc before 2.30) finds nothing */
	return pick(list, want, exe, best, err) == 2;
}

int ps_lib_resolve(pid_t pid, const char *want, char *path, size_t n, struct ps_error *err)
{
	char *list;
	char loader[PATH_MAX], exe[PATH_MAX], best[PATH_MAX] = "";
	int found;

	if (ps_maps_find(pid, "ld-linux-x86-64.so.2", PS_MAPS_EXACT, loader, sizeof loader, err) ||
	    ps_maps_find(pid, NULL, PS_MAPS_EXACT, exe, sizeof exe, err))
		return ps_error_set(err, PS_EUSAGE, "%s is not mapped, and no dynamic loader will map it", want);
	if (!(list = malloc(LIST_MAX)))
		return ps_error_set(err, ENOMEM, "out of memory");
	found = loader_list(pid, loader, exe, NULL, list, LIST_MAX, err) ? -1 : pick(list, want, exe, best, err);
	if (found == 0)
		found = resolve_later(pid, loader, exe, want, list, best, err);
	free(list);
	if (found < 0)
		return -1;
	if (!found)
		return ps_error_set(err, PS_ENOTFOUND,
				    "%s loads no library '%s' at start, and its loader finds no file of that name to "
				    "load later; name the library by its path (/DIR/FILE.so:FUNCTION), or use "
				    "--backend ptrace, which arms it once the program maps it",
				    exe, want);
	if (strlen(best) >= n)
		return ps_error_set(err, ENAMETOOLONG, "%s: path too long", best);
	snprintf(path, n, "%s", best);
	return 0;
}

int ps_lib_linked(pid_t pid, const char *path, struct ps_error *err)
{
	char loader[PATH_MAX], exe[PATH_MAX], *list, *save = NULL;
	struct stat want, sb;
	int found = 0;

	if (stat(path, &want) < 0)
		return ps_error_set(err, errno, "%s: %s", path, strerror(errno));
	if (ps_maps_find(pid, "ld-linux-x86-64.so.2", PS_MAPS_EXACT, loader, sizeof loader, err) ||
	    ps_maps_find(pid, NULL, PS_MAPS_EXACT, exe, sizeof exe, err))
		return 0; /* no dynamic loader: nothing is linked */
	if (!(list = malloc(LIST_MAX)))
		return ps_error_set(err, ENOMEM, "out of memory");
	if (loader_list(pid, loader, exe, NULL, list, LIST_MAX, err)) {
		free(list);
		return -1;
	}
	for (char *line = strtok_r(list, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(line, " => "), *end;

		if (!arrow || arrow[4] != '/')
			continue;
		if ((end = strstr(arrow + 4, " (")))
			*end = '\0';
		found = stat(arrow + 4, &sb) == 0 && sb.st_dev == want.st_dev && sb.st_ino == want.st_ino;
	}
	free(list);
	return found;
}
