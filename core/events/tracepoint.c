/* core/events/tracepoint.c - SUBSYS:NAME tracepoints: the id in tracefs, listing, suggestions.
 *
 * tracefs keeps one directory per subsystem and one per tracepoint below it, with the
 * tracepoint's perf config in "id": /sys/kernel/tracing/events/syscalls/sys_enter_write/id.
 * Read by hand rather than through libtracefs (1.6): its tracefs_tracing_dir() mounts tracefs
 * where it is not mounted, its tracefs_event_systems() leaves out subsystems without an "enable"
 * file (ftrace), and it would link into every program that uses the marker library.
 */
#include "tracepoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suggest.h"

static const char *root_override;

void ps_tracepoint_set_root(const char *events_dir)
{
	root_override = events_dir;
}

const char *ps_tracepoint_root(void)
{
	static const char *const dirs[] = {"/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"};

	if (root_override)
		return access(root_override, R_OK | X_OK) == 0 ? root_override : NULL;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (access(dirs[i], R_OK | X_OK) == 0)
			return dirs[i];
	return NULL;
}

int ps_tracepoint_modifier_like(const char *s)
{
	size_t n = strlen(s);
	return n >= 1 && n <= 4 && strspn(s, "ukhpPGHIS") == n;
}

/* Characters of subsystem and tracepoint names; no '/' or '.', so a name never leaves the tree. */
static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n >= 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

static int is_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	closedir(d);
	return 1;
}

static int want_entry(const struct dirent *e)
{
	return e->d_name[0] != '.' && (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN);
}

/* Subdirectories of @dir, sorted; *@out is freed with free_list(). Returns the count, or -1. */
static int list_dirs(const char *dir, struct dirent ***out)
{
	return scandir(dir, out, want_entry, alphasort);
}

static void free_list(struct dirent **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Tracepoints of @subsys in the suggestion search. */
static void suggest_in(struct ps_suggest *s, const char *root, const char *subsys)
{
	struct dirent **list;
	char path[512], name[256];
	int n;

	snprintf(path, sizeof path, "%s/%s", root, subsys);
	if ((n = list_dirs(path, &list)) < 0)
		return;
	for (int i = 0; i < n; i++) {
		if (snprintf(name, sizeof name, "%s:%s", subsys, list[i]->d_name) < (int)sizeof name)
			ps_suggest_add(s, name);
	}
	free_list(list, n);
}

/* A subsystem that does not exist: SUBSYS:NAME where another subsystem has NAME, else the subsystems. */
static int unknown_subsys(const char *root, const char *name, const char *subsys, const char *event,
			  struct ps_error *err)
{
	struct dirent **list;
	struct ps_suggest s;
	char out[3][128], text[512], path[512], cand[256];
	int n = list_dirs(root, &list);

	if (n < 0)
		return ps_error_set(err, errno, "tracepoint '%s': cannot list %s: %s", name, root, strerror(errno));
	ps_suggest_init(&s, name, out, 3);
	for (int i = 0; i < n; i++) {
		if (snprintf(path, sizeof path, "%s/%s/%s", root, list[i]->d_name, event) >= (int)sizeof path ||
		    snprintf(cand, sizeof cand, "%s:%s", list[i]->d_name, event) >= (int)sizeof cand)
			continue;
		if (is_dir(path))
			ps_suggest_add(&s, cand);
	}
	if (s.n == 0) {
		ps_suggest_init(&s, subsys, out, 3);
		for (int i = 0; i < n; i++)
			ps_suggest_add(&s, list[i]->d_name);
		free_list(list, n);
		ps_suggest_text(&s, text, sizeof text);
		return ps_error_set(err, PS_ENOTFOUND,
				    "unknown tracepoint subsystem '%s' in '%s'%s (perfsh --list tracepoint lists them)",
				    subsys, name, text);
	}
	free_list(list, n);
	ps_suggest_text(&s, text, sizeof text);
	return ps_error_set(err, PS_ENOTFOUND, "unknown tracepoint '%s'%s", name, text);
}

int ps_tracepoint_parse(const char *name, struct perf_event_attr *attr, struct ps_error *err)
{
	const char *colon = strchr(name, ':'), *root;
	char subsys[64], event[64], path[512], line[32], *end;
	FILE *f;
	unsigned long long id;
	size_t ls;

	if (!colon || strchr(colon + 1, ':') || !name_ok(name, (size_t)(colon - name)) ||
	    !name_ok(colon + 1, strlen(colon + 1)))
		return 1;
	ls = (size_t)(colon - name);
	memcpy(subsys, name, ls);
	subsys[ls] = '\0';
	snprintf(event, sizeof event, "%s", colon + 1);
	root = ps_tracepoint_root();
	if (!root) {
		struct stat st;
		if (ps_tracepoint_modifier_like(event))
			return 1;
		if (!root_override && (stat("/sys/kernel/tracing/events", &st) == 0 || errno == EACCES))
			return ps_error_set(err, EACCES,
					    "tracepoint '%s': /sys/kernel/tracing/events is not readable by this user "
					    "(tracefs is root's: run as root)",
					    name);
		return ps_error_set(err, PS_ENOTFOUND,
				    "unknown event '%s' (a tracepoint SUBSYS:NAME needs tracefs, which is not mounted "
				    "or not readable: as root, mount -t tracefs nodev /sys/kernel/tracing)",
				    name);
	}
	snprintf(path, sizeof path, "%s/%s", root, subsys);
	if (!is_dir(path))
		return ps_tracepoint_modifier_like(event) ? 1 : unknown_subsys(root, name, subsys, event, err);
	snprintf(path, sizeof path, "%s/%s/%s/id", root, subsys, event);
	if (!(f = fopen(path, "re"))) {
		struct ps_suggest s;
		char out[3][128], text[512];
		int e = errno;

		if (e != ENOENT && e != ENOTDIR)
			return ps_error_set(err, e, "tracepoint '%s': cannot read %s: %s", name, path, strerror(e));
		ps_suggest_init(&s, name, out, 3);
		suggest_in(&s, root, subsys);
		ps_suggest_text(&s, text, sizeof text);
		return ps_error_set(err, PS_ENOTFOUND, "unknown tracepoint '%s'%s", name, text);
	}
	if (!fgets(line, sizeof line, f)) {
		fclose(f);
		return ps_error_set(err, EIO, "tracepoint '%s': %s is empty", name, path);
	}
	fclose(f);
	errno = 0;
	id = strtoull(line, &end, 10);
	if (errno || end == line || (*end && *end != '\n'))
		return ps_error_set(err, EIO, "tracepoint '%s': %s holds '%.20s', not an id", name, path, line);
	memset(attr, 0, sizeof *attr);
	attr->size = sizeof *attr;
	attr->type = PERF_TYPE_TRACEPOINT;
	attr->config = id;
	return 0;
}

int ps_tracepoint_foreach(const char *filter, ps_tracepoint_cb cb, void *ud)
{
	const char *root = ps_tracepoint_root();
	struct dirent **subs;
	int ns, rc = 0;

	if (!root || (ns = list_dirs(root, &subs)) < 0)
		return 0;
	for (int i = 0; i < ns && !rc; i++) {
		struct dirent **evs;
		char path[512], name[256];
		int ne;

		snprintf(path, sizeof path, "%s/%s", root, subs[i]->d_name);
		if ((ne = list_dirs(path, &evs)) < 0)
			continue;
		for (int k = 0; k < ne && !rc; k++) {
			if (snprintf(name, sizeof name, "%s:%s", subs[i]->d_name, evs[k]->d_name) >= (int)sizeof name)
				continue;
			if (!filter || strstr(name, filter))
				rc = cb(subs[i]->d_name, evs[k]->d_name, ud);
		}
		free_list(evs, ne);
	}
	free_list(subs, ns);
	return rc;
}
