/* core/events/group.c - perf event groups, following libpfm4's perf_examples/task.c. */
#include "group.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

void ps_paranoid_text(char *buf, size_t n)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 99;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 99;
		fclose(f);
	}
	snprintf(buf, n,
		 "perf_event_paranoid is %d; 2 allows user-space counting of your own processes, 1 adds the kernel, "
		 "0 adds CPU-wide counting, -1 allows everything: run as root, grant CAP_PERFMON, or lower it with "
		 "'sysctl kernel.perf_event_paranoid=1'",
		 v);
}

/* The event is the CPU's (hardware, cache, raw or a dynamic PMU): no PMU means it cannot open. */
static int is_hw(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE || a->type == PERF_TYPE_RAW;
}

/* A group of more counter events than the PMU has: say what this machine has. */
static int limit_error(const struct ps_event *ev, int i, int n, int e, struct ps_error *err)
{
	char what[300], nmi[120] = "";
	int nhw = 0, nc;
	FILE *f;

	for (int k = 0; k < n; k++)
		nhw += ps_event_takes_counter(&ev[k].attr);
	if (!ps_pmu_present()) {
		ps_event_countable_text(what, sizeof what);
		return ps_error_set(err, e,
				    "perf_event_open(%s): %s; this machine has no hardware PMU: only %s can be counted",
				    ev[i].name, strerror(e), what);
	}
	nc = ps_pmu_counters();
	if ((f = fopen("/proc/sys/kernel/nmi_watchdog", "re"))) {
		if (fgetc(f) == '1')
			snprintf(nmi, sizeof nmi,
				 " (the NMI watchdog holds one of them: sysctl kernel.nmi_watchdog=0 frees it)");
		fclose(f);
	}
	return ps_error_set(
	    err, e,
	    "perf_event_open(%s): a group of %d hardware events does not fit the PMU, which has %d "
	    "generic counters%s; some events need particular ones: split the events into several groups",
	    ev[i].name, nhw, nc, nmi);
}

/* Explain a failed perf_event_open of member @i. */
static int open_error(const struct ps_group *g, const struct ps_event *ev, int i, int n, int e, struct ps_error *err)
{
	char para[400], pmu[80];

	if (e == EACCES || e == EPERM) {
		ps_paranoid_text(para, sizeof para);
		return ps_error_set(err, e, "perf_event_open(%s): %s (%s)", ev[i].name, strerror(e), para);
	}
	if (is_hw(&ev[i].attr) && (e == ENOENT || e == EOPNOTSUPP || e == ENODEV) && !ps_pmu_present()) {
		char what[300];
		ps_event_countable_text(what, sizeof what);
		return ps_error_set(err, e,
				    "perf_event_open(%s): no hardware PMU on this machine (as in a VM without PMU "
				    "passthrough): only %s can be counted",
				    ev[i].name, what);
	}
	if (e == ESRCH)
		return ps_error_set(err, e, "perf_event_open(%s): no such process or thread %d", ev[i].name,
				    (int)g->pid);
	if (e == EINVAL && i > 0 && ps_event_takes_counter(&ev[i].attr))
		return limit_error(ev, i, n, e, err);
	ps_event_pmu_phrase(&ev[i], pmu, sizeof pmu);
	if ((e == EINVAL || e == EOPNOTSUPP) && ev[i].explicit_priv)
		return ps_error_set(err, e,
				    "perf_event_open(%s): %s (%s may not count user and kernel apart: try it "
				    "without the modifier)",
				    ev[i].name, strerror(e), pmu);
	return ps_error_set(err, e, "perf_event_open(%s): %s", ev[i].name, strerror(e));
}

/* Open member @i; on a refusal that comes from the default privilege bits, retry as perf does. */
static int open_member(struct ps_group *g, const struct ps_event *ev, int i, struct perf_event_attr *attr, int *e,
		       int *e2)
{
	struct perf_event_attr relaxed = *attr;
	int fd, fb;

	g->ev[i] = ev[i];
	if ((fd = perf_open(attr, g->pid, g->cpu, i == 0 ? -1 : g->fds[0])) >= 0)
		return fd;
	*e = errno;
	if ((fb = ps_event_relax(&ev[i], &relaxed, *e)) == PS_FB_NONE)
		return -1;
	if ((fd = perf_open(&relaxed, g->pid, g->cpu, i == 0 ? -1 : g->fds[0])) < 0) {
		*e2 = errno;
		return -1;
	}
	g->ev[i].attr = relaxed;
	g->ev[i].fallback = (unsigned char)fb;
	return fd;
}

int ps_group_open(struct ps_group *g, const struct ps_event *ev, int n, pid_t pid, int cpu, unsigned flags,
		  struct ps_error *err)
{
	memset(g, 0, sizeof *g);
	for (int i = 0; i < PS_MAX_EVENTS; i++)
		g->fds[i] = -1;
	g->pid = pid;
	g->cpu = cpu;
	if (n < 1)
		return ps_error_set(err, PS_EUSAGE, "a group needs at least one event");
	if (n > PS_MAX_EVENTS)
		return ps_error_set(err, PS_EUSAGE, "a group holds at most %d events (got %d); split them",
				    PS_MAX_EVENTS, n);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < i; k++)
			if (!strcmp(ev[k].name, ev[i].name))
				return ps_error_set(err, PS_EUSAGE, "duplicate event %s in the group; name it once",
						    ev[i].name);
	for (int i = 0; i < n; i++) {
		struct perf_event_attr attr = ev[i].attr;
		int e = 0, e2 = 0, fd;

		attr.size = sizeof attr;
		attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
				   PERF_FORMAT_TOTAL_TIME_RUNNING;
		attr.inherit = !!(flags & PS_GROUP_INHERIT);
		if (i == 0) {
			/* always opened disabled: a member added to an enabled group of a running task
			   (a thread's group of itself) is not counting until the task is next
			   scheduled in, and loses what it counts until then (measured: 3,610 of a loop's
			   9,765 page faults, or none); the group is enabled whole below */
			attr.disabled = 1;
			attr.enable_on_exec = !!(flags & PS_GROUP_ENABLE_ON_EXEC);
		}
		if ((fd = open_member(g, ev, i, &attr, &e, &e2)) < 0) {
			g->n = i;
			ps_group_close(g);
			g->pid = pid;
			if (e2 == EACCES || e2 == EPERM) {
				char para[400], pmu[80];
				ps_paranoid_text(para, sizeof para);
				ps_event_pmu_phrase(&ev[i], pmu, sizeof pmu);
				return ps_error_set(err, e2,
						    "perf_event_open(%s): %s counts kernel and user together, and "
						    "counting the kernel is not allowed (%s)",
						    ev[i].name, pmu, para);
			}
			return open_error(g, ev, i, n, e, err);
		}
		g->fds[i] = fd;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &g->ids[i]) < 0)
			g->ids[i] = 0;
		g->n = i + 1;
	}
	if ((flags & PS_GROUP_ENABLED) && ioctl(g->fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) < 0) {
		int e = errno;

		ps_group_close(g);
		g->pid = pid;
		return ps_error_set(err, e, "enabling the group of %s: %s", ev[0].name, strerror(e));
	}
	return 0;
}

static int group_ioctl(struct ps_group *g, unsigned long req, const char *what, struct ps_error *err)
{
	if (g->n < 1)
		return ps_error_set(err, EBADF, "%s: the group is closed", what);
	if (ioctl(g->fds[0], req, PERF_IOC_FLAG_GROUP) < 0)
		return ps_error_set(err, errno, "%s: %s", what, strerror(errno));
	return 0;
}

int ps_group_enable(struct ps_group *g, struct ps_error *err)
{
	return group_ioctl(g, PERF_EVENT_IOC_ENABLE, "enable", err);
}

int ps_group_disable(struct ps_group *g, struct ps_error *err)
{
	return group_ioctl(g, PERF_EVENT_IOC_DISABLE, "disable", err);
}

int ps_group_reset(struct ps_group *g, struct ps_error *err)
{
	return group_ioctl(g, PERF_EVENT_IOC_RESET, "reset", err);
}

int ps_group_read(const struct ps_group *g, struct ps_reading *r, struct ps_error *err)
{
	/* nr, time_enabled, time_running, then {value, id} per member */
	uint64_t buf[3 + 2 * PS_MAX_EVENTS];
	ssize_t want, got;

	if (g->n < 1)
		return ps_error_set(err, EBADF, "read: the group is closed");
	want = (ssize_t)((3 + 2 * (size_t)g->n) * sizeof(uint64_t));
	got = read(g->fds[0], buf, sizeof buf);
	if (got < 0)
		return ps_error_set(err, errno, "read of group: %s", strerror(errno));
	if (got < want || buf[0] != (uint64_t)g->n)
		return ps_error_set(err, EIO, "read of group: short read (%zd of %zd bytes)", got, want);
	r->n = g->n;
	r->time_enabled = buf[1];
	r->time_running = buf[2];
	for (int i = 0; i < g->n; i++)
		r->val[i] = buf[3 + 2 * i];
	return 0;
}

void ps_group_close(struct ps_group *g)
{
	/* Members first, then the leader. */
	for (int i = g->n - 1; i >= 0; i--) {
		if (g->fds[i] >= 0)
			close(g->fds[i]);
		g->fds[i] = -1;
	}
	g->n = 0;
}

double ps_scale(uint64_t val, uint64_t enabled, uint64_t running, double *ratio)
{
	if (running == 0 || enabled == 0) {
		if (ratio)
			*ratio = enabled == 0 && running == 0 ? 1.0 : 0.0;
		return enabled == 0 ? (double)val : 0.0;
	}
	if (ratio)
		*ratio = (double)running / (double)enabled;
	if (running >= enabled)
		return (double)val;
	return (double)val * ((double)enabled / (double)running);
}
