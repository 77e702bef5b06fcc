/* core/group.c - perf event groups, following libpfm4's perf_examples/task.c. */
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

static int is_hw(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE || a->type == PERF_TYPE_RAW ||
	       a->type >= PERF_TYPE_MAX;
}

/* Explain a failed perf_event_open of member @i. */
static int open_error(const struct ps_group *g, const struct ps_event *ev, int i, int n, int e, struct ps_error *err)
{
	char para[400];
	int nhw = 0;

	for (int k = 0; k < n; k++)
		nhw += is_hw(&ev[k].attr) && ev[k].attr.type != PERF_TYPE_SOFTWARE;
	if (e == EACCES || e == EPERM) {
		ps_paranoid_text(para, sizeof para);
		return ps_error_set(err, e, "perf_event_open(%s): %s (%s)", ev[i].name, strerror(e), para);
	}
	if (is_hw(&ev[i].attr) && (e == ENOENT || e == EOPNOTSUPP || e == ENODEV) && !ps_pmu_present())
		return ps_error_set(err, e,
				    "perf_event_open(%s): no hardware PMU on this machine (the kernel counts software "
				    "events only, as in a VM without PMU passthrough); software events such as "
				    "task-clock still work",
				    ev[i].name);
	if (e == ESRCH)
		return ps_error_set(err, e, "perf_event_open(%s): no such process or thread %d", ev[i].name,
				    (int)g->pid);
	if (e == EINVAL && i > 0 && is_hw(&ev[i].attr)) {
		int nc = ps_pmu_counters();
		if (nc > 0 && nhw > nc)
			return ps_error_set(
			    err, e,
			    "perf_event_open(%s): a group of %d hardware events does not fit the PMU, which "
			    "has %d generic counters; split the events into several groups",
			    ev[i].name, nhw, nc);
		return ps_error_set(err, e,
				    "perf_event_open(%s): the group does not fit the PMU (%d hardware events; the CPU "
				    "reports %d generic counters, some events need particular ones): split the group",
				    ev[i].name, nhw, nc);
	}
	return ps_error_set(err, e, "perf_event_open(%s): %s", ev[i].name, strerror(e));
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
	for (int i = 0; i < n; i++) {
		struct perf_event_attr attr = ev[i].attr;

		attr.size = sizeof attr;
		attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
				   PERF_FORMAT_TOTAL_TIME_RUNNING;
		attr.inherit = !!(flags & PS_GROUP_INHERIT);
		if (i == 0) {
			attr.disabled = !(flags & PS_GROUP_ENABLED);
			attr.enable_on_exec = !!(flags & PS_GROUP_ENABLE_ON_EXEC);
		}
		int fd = perf_open(&attr, pid, cpu, i == 0 ? -1 : g->fds[0]);
		if (fd < 0) {
			int e = errno;
			g->n = i;
			ps_group_close(g);
			g->pid = pid;
			return open_error(g, ev, i, n, e, err);
		}
		g->fds[i] = fd;
		g->ev[i] = ev[i];
		if (ioctl(fd, PERF_EVENT_IOC_ID, &g->ids[i]) < 0)
			g->ids[i] = 0;
		g->n = i + 1;
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
