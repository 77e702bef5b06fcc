/* core/catch/uprobe/uprobe_defs.c - uprobe sites defined once in tracefs, shared by every
 * thread's perf events. See uprobe_defs.h. */
#include "uprobe_defs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static const char *const tracefs_dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

struct ps_uprobe_defs {
	char dir[64]; /* the tracefs mount */
	int set;      /* this set's number in the process: names stay unique */
	int nsites;
	uint32_t *ids; /* 2 per site */
	char *defined; /* 2 per site: the event exists */
};

static int next_set;

/* The tracefs mount whose uprobe_events this process can write, mounting one if none is. */
static int find_tracefs(char dir[64])
{
	char path[128];

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof tracefs_dirs / sizeof *tracefs_dirs; i++) {
			snprintf(path, sizeof path, "%s/uprobe_events", tracefs_dirs[i]);
			if (access(path, W_OK) == 0) {
				snprintf(dir, 64, "%s", tracefs_dirs[i]);
				return 0;
			}
		}
		if (pass == 0 && mount("nodev", tracefs_dirs[0], "tracefs", 0, NULL) != 0)
			break;
	}
	return -1;
}

/* Write one command to uprobe_events (never truncating it). 0, or an errno. */
static int command(const char *dir, const char *cmd)
{
	char path[128];
	int fd, e = 0;
	size_t n = strlen(cmd);

	snprintf(path, sizeof path, "%s/uprobe_events", dir);
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)) < 0)
		return errno;
	if (write(fd, cmd, n) != (ssize_t)n)
		e = errno ? errno : EIO;
	close(fd);
	return e;
}

/* Delete the events of perfsh processes that are gone (killed before they could). */
static void sweep_stale(const char *dir)
{
	char path[128], line[PATH_MAX + 160], name[160], cmd[200];
	FILE *f;
	int pid;

	snprintf(path, sizeof path, "%s/uprobe_events", dir);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%*1[pr]:perfsh_%d/%150s", &pid, name) != 2 || pid == (int)getpid() ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(cmd, sizeof cmd, "-:perfsh_%d/%s\n", pid, name);
		command(dir, cmd);
	}
	fclose(f);
}

static void event_name(const struct ps_uprobe_defs *d, int site, int ret, char *out, size_t n)
{
	snprintf(out, n, "perfsh_%d/s%d_%d%c", (int)getpid(), d->set, site, ret ? 'r' : 'e');
}

static int read_id(const struct ps_uprobe_defs *d, const char *name, uint32_t *id)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof path, "%s/events/%s/id", d->dir, name);
	if (!(f = fopen(path, "re")))
		return errno;
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
	if ((e = command(d->dir, cmd)))
		return e;
	d->defined[2 * i + ret] = 1;
	return read_id(d, name, &d->ids[2 * i + ret]);
}

int ps_uprobe_defs_new(struct ps_uprobe_defs **out, const struct ps_uprobe_site *sites, int nsites,
		       struct ps_error *err)
{
	struct ps_uprobe_defs *d = calloc(1, sizeof *d);
	int e = 0;

	*out = NULL;
	if (!d || !(d->ids = calloc((size_t)(2 * nsites + 1), sizeof *d->ids)) ||
	    !(d->defined = calloc((size_t)(2 * nsites + 1), 1))) {
		ps_uprobe_defs_free(d);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	d->nsites = nsites;
	d->set = __atomic_fetch_add(&next_set, 1, __ATOMIC_RELAXED);
	if (find_tracefs(d->dir)) {
		free(d->defined);
		free(d->ids);
		free(d);
		return ps_error_set(err, ENOENT, "uprobe: no writable tracefs (uprobe_events)");
	}
	sweep_stale(d->dir);
	for (int i = 0; i < nsites && !e; i++)
		if (!(e = define(d, &sites[i], i, 0)) && sites[i].ret)
			e = define(d, &sites[i], i, 1);
	if (e) {
		ps_uprobe_defs_free(d);
		return ps_error_set(err, e, "uprobe: defining a tracefs uprobe event: %s", strerror(e));
	}
	*out = d;
	return 0;
}

const uint32_t *ps_uprobe_defs_ids(const struct ps_uprobe_defs *d)
{
	return d->ids;
}

void ps_uprobe_defs_free(struct ps_uprobe_defs *d)
{
	char name[96], cmd[110];

	if (!d)
		return;
	for (int i = 0; d->defined && i < 2 * d->nsites; i++)
		if (d->defined[i]) {
			event_name(d, i / 2, i % 2, name, sizeof name);
			snprintf(cmd, sizeof cmd, "-:%s\n", name);
			command(d->dir, cmd);
		}
	free(d->defined);
	free(d->ids);
	free(d);
}
