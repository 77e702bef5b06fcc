/* core/catch/uprobe/uprobe_defs.c - uprobe sites defined once in tracefs, shared by every
 * thread's perf events. See uprobe_defs.h. */
#include "uprobe_defs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const tracefs_dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

struct ps_uprobe_defs {
	int dirfd; /* the tracefs root (O_PATH): a mount of the machine's, or a private one */
	int set;   /* this set's number in the process: names stay unique */
	int nsites;
	uint32_t *ids; /* 2 per site */
	char *defined; /* 2 per site: the event exists */
	int keeper;    /* the write end of the keeper's pipe, -1 without a keeper */
	pid_t owner;   /* the process that defined them: its group, perfsh_OWNER */
};

static int next_set;

/* A directory fd on a tracefs whose uprobe_events this process can write, or -1. Where the
   machine has none mounted, a private one: mounted on a temporary directory, opened, then
   detached from the file tree at once (MNT_DETACH: it lives on through the fd, which the
   keeper inherits), so the machine's mounts are left as they were. */
static int open_tracefs(void)
{
	char path[128], tmp[] = "/tmp/perfsh-tracefs-XXXXXX";
	int fd = -1;

	for (size_t i = 0; i < sizeof tracefs_dirs / sizeof *tracefs_dirs; i++) {
		snprintf(path, sizeof path, "%s/uprobe_events", tracefs_dirs[i]);
		if (access(path, W_OK) == 0)
			return open(tracefs_dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (!mkdtemp(tmp))
		return -1;
	if (mount("nodev", tmp, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0) {
		fd = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		umount2(tmp, MNT_DETACH);
	}
	rmdir(tmp);
	if (fd >= 0 && faccessat(fd, "uprobe_events", W_OK, 0) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Write one command to uprobe_events (never truncating it). 0, or an errno. */
static int command(int dirfd, const char *cmd)
{
	int fd, e = 0;
	size_t n = strlen(cmd);

	if ((fd = openat(dirfd, "uprobe_events", O_WRONLY | O_APPEND | O_CLOEXEC)) < 0)
		return errno;
	if (write(fd, cmd, n) != (ssize_t)n)
		e = errno ? errno : EIO;
	close(fd);
	return e;
}

/* Delete the events of perfsh processes that are gone (killed before they could). */
static void sweep_stale(int dirfd)
{
	char line[PATH_MAX + 160], name[160], cmd[200];
	int fd = openat(dirfd, "uprobe_events", O_RDONLY | O_CLOEXEC), pid;
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%*1[pr]:perfsh_%d/%150s", &pid, name) != 2 || pid == (int)getpid() ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(cmd, sizeof cmd, "-:perfsh_%d/%s\n", pid, name);
		command(dirfd, cmd);
	}
	fclose(f);
}

static void event_name(const struct ps_uprobe_defs *d, int site, int ret, char *out, size_t n)
{
	snprintf(out, n, "perfsh_%d/s%d_%d%c", (int)d->owner, d->set, site, ret ? 'r' : 'e');
}

static int read_id(const struct ps_uprobe_defs *d, const char *name, uint32_t *id)
{
	char path[256];
	FILE *f;
	int ok, fd;

	snprintf(path, sizeof path, "events/%s/id", name);
	if ((fd = openat(d->dirfd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno;
	if (!(f = fdopen(fd, "r"))) {
		close(fd);
		return ENOMEM;
	}
	ok = fscanf(f, "%u", id) == 1;
	fclose(f);
	return ok ? 0 : EIO;
}

/* Define the entry (@ret = 0) or return event of site @i. 0, or an errno. */
static int define(struct ps_uprobe_defs *d, const struct ps_uprobe_site *s, int i, int ret)
{
	char name[96], cmd[PATH_MAX + 200], ref[40] = "";
	int e;

	for (const char *p = s->path; *p; p++)
		if (isspace((unsigned char)*p))
			return EINVAL; /* uprobe_events splits its commands at white space */
	if (s->ref_ctr_offset)
		snprintf(ref, sizeof ref, "(0x%llx)", (unsigned long long)s->ref_ctr_offset);
	event_name(d, i, ret, name, sizeof name);
	snprintf(cmd, sizeof cmd, "%c:%s %s:0x%llx%s\n", ret ? 'r' : 'p', name, s->path, (unsigned long long)s->offset,
		 ref);
	if ((e = command(d->dirfd, cmd)))
		return e;
	d->defined[2 * i + ret] = 1;
	return read_id(d, name, &d->ids[2 * i + ret]);
}

/* Delete the events of @d; one still in use (EBUSY: a perf event on it not released yet) is
   tried again for up to a second when @patient. */
static void delete_all(const struct ps_uprobe_defs *d, int patient)
{
	char name[96], cmd[110];

	for (int i = 0; d->defined && i < 2 * d->nsites; i++) {
		if (!d->defined[i])
			continue;
		event_name(d, i / 2, i % 2, name, sizeof name);
		snprintf(cmd, sizeof cmd, "-:%s\n", name);
		for (int tries = 0; command(d->dirfd, cmd) == EBUSY && patient && tries < 100; tries++)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
}

/* The keeper, in a process of its own: a disabled perf event on each of @d's trace events, on
   itself, keeps them registered; at EOF on @rd (perfsh closed its end, or died) it closes them
   (the last closes, which wait for the kernel's grace periods) and deletes the events. */
static void keeper(const struct ps_uprobe_defs *d, int rd, int ready)
{
	int *fds = calloc((size_t)(2 * d->nsites + 1), sizeof *fds);
	char b;

	for (int i = 0; fds && i < 2 * d->nsites; i++) {
		struct perf_event_attr a = {.size = sizeof a,
					    .type = PERF_TYPE_TRACEPOINT,
					    .config = d->ids[i],
					    .disabled = 1,
					    .exclude_kernel = 1,
					    .exclude_hv = 1};
		fds[i] = d->ids[i] ? (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0) : -1;
		if (d->ids[i] && fds[i] < 0)
			_exit(1);
	}
	if (!fds || write(ready, "k", 1) != 1)
		_exit(1);
	close(ready);
	while (read(rd, &b, 1) != 0 && (errno == EINTR || errno == 0))
		errno = 0;
	for (int i = 0; i < 2 * d->nsites; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	delete_all(d, 1);
	_exit(0);
}

/* Start @d's keeper: perfsh's grandchild in a session of its own (perfsh never waits for it, no
   terminal signal reaches it), holding only its two pipe ends and /dev/null (never perfsh's
   output or the target's pipes). 0 once its events are open, else -1. */
static int start_keeper(struct ps_uprobe_defs *d)
{
	int go[2], ready[2], ok = 0;
	pid_t mid;
	char b;

	if (pipe2(go, O_CLOEXEC))
		return -1;
	if (pipe2(ready, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -1;
	}
	if ((mid = fork()) == 0) {
		/* each end moved above 9 first, so that putting one at 3, 4 or 5 closes no other */
		int null = open("/dev/null", O_RDWR), rd = fcntl(go[0], F_DUPFD, 10), wr = fcntl(ready[1], F_DUPFD, 10),
		    df = fcntl(d->dirfd, F_DUPFD, 10);
		if (null < 0 || rd < 0 || wr < 0 || df < 0 || setsid() < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
		    dup2(null, 2) < 0 || dup2(rd, 3) < 0 || dup2(wr, 4) < 0 || dup2(df, 5) < 0 ||
		    close_range(6, ~0u, 0))
			_exit(1);
		d->dirfd = 5; /* this process's copy */
		if (fork() == 0)
			keeper(d, 3, 4);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	if (mid > 0 && waitpid(mid, NULL, 0) == mid)
		while (!(ok = read(ready[0], &b, 1) == 1) && errno == EINTR)
			;
	close(ready[0]);
	if (!ok) {
		close(go[1]);
		return -1;
	}
	d->keeper = go[1];
	return 0;
}

int ps_uprobe_defs_new(struct ps_uprobe_defs **out, const struct ps_uprobe_site *sites, int nsites,
		       struct ps_error *err)
{
	struct ps_uprobe_defs *d = calloc(1, sizeof *d);
	int e = 0;

	*out = NULL;
	if (d)
		d->keeper = d->dirfd = -1;
	if (!d || !(d->ids = calloc((size_t)(2 * nsites + 1), sizeof *d->ids)) ||
	    !(d->defined = calloc((size_t)(2 * nsites + 1), 1))) {
		ps_uprobe_defs_free(d);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	d->nsites = nsites;
	d->owner = getpid();
	d->set = __atomic_fetch_add(&next_set, 1, __ATOMIC_RELAXED);
	if ((d->dirfd = open_tracefs()) < 0) {
		ps_uprobe_defs_free(d);
		return ps_error_set(err, ENOENT, "uprobe: no writable tracefs (uprobe_events)");
	}
	sweep_stale(d->dirfd);
	for (int i = 0; i < nsites && !e; i++)
		if (!(e = define(d, &sites[i], i, 0)) && sites[i].ret)
			e = define(d, &sites[i], i, 1);
	if (e) {
		ps_uprobe_defs_free(d);
		return ps_error_set(err, e, "uprobe: defining a tracefs uprobe event: %s", strerror(e));
	}
	start_keeper(d); /* without one, ps_uprobe_defs_free() deletes them itself */
	*out = d;
	return 0;
}

const uint32_t *ps_uprobe_defs_ids(const struct ps_uprobe_defs *d)
{
	return d->ids;
}

void ps_uprobe_defs_free(struct ps_uprobe_defs *d)
{
	if (!d)
		return;
	if (d->keeper >= 0)
		close(d->keeper); /* the keeper closes the last references and deletes the events */
	else
		delete_all(d, 0);
	if (d->dirfd >= 0)
		close(d->dirfd);
	free(d->defined);
	free(d->ids);
	free(d);
}
