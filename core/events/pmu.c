/* core/events/pmu.c - what this machine counts: the PMU, its counters, and perf's fallbacks when the
 * kernel refuses the privilege bits an event asks for. */
#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "events.h"
#include "sysfs_pmu.h"

static int open_self(struct perf_event_attr *attr, int group_fd)
{
	attr->size = sizeof *attr;
	return (int)syscall(SYS_perf_event_open, attr, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

int ps_event_opens(const struct ps_event *ev)
{
	struct perf_event_attr attr = ev->attr;
	int fd;

	attr.disabled = 1;
	fd = open_self(&attr, -1);
	if (fd < 0 && ps_event_relax(ev, &attr, errno) != PS_FB_NONE)
		fd = open_self(&attr, -1);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int ps_pmu_present(void)
{
	static int state = -1;
	if (state < 0) {
		struct perf_event_attr a = {.type = PERF_TYPE_HARDWARE,
					    .config = PERF_COUNT_HW_INSTRUCTIONS,
					    .disabled = 1,
					    .exclude_kernel = 1,
					    .exclude_hv = 1};
		int fd = open_self(&a, -1);
		state = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return state;
}

/* Generic counters as the CPU reports them (CPUID); 0 where it does not say. */
static int cpuid_counters(void)
{
	unsigned a, b, c, d;
	char vendor[13];

	if (!__get_cpuid(0, &a, &b, &c, &d))
		return 0;
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	if (!strcmp(vendor, "GenuineIntel")) {
		if (a < 0xa || !__get_cpuid(0xa, &a, &b, &c, &d))
			return 0;
		return (int)((a >> 8) & 0xff);
	}
	if (!strcmp(vendor, "AuthenticAMD")) {
		unsigned maxext;
		if (!__get_cpuid(0x80000000, &maxext, &b, &c, &d))
			return 4;
		if (maxext >= 0x80000022 && __get_cpuid(0x80000022, &a, &b, &c, &d) && (a & 1))
			return (int)(b & 0xf); /* PerfMonV2: number of core counters */
		if (__get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 23)))
			return 6; /* PerfCtrExtCore */
		return 4;
	}
	return 0;
}

/* The largest group of branch-instruction events (no fixed counter counts them) that opens. */
static int probe_counters(void)
{
	int fds[32], n;

	for (n = 0; n < 32; n++) {
		struct perf_event_attr a = {.type = PERF_TYPE_HARDWARE,
					    .config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
					    .disabled = n == 0,
					    .exclude_kernel = 1,
					    .exclude_hv = 1};
		if ((fds[n] = open_self(&a, n ? fds[0] : -1)) < 0)
			break;
	}
	for (int i = n - 1; i >= 0; i--)
		close(fds[i]);
	return n;
}

int ps_pmu_counters(void)
{
	static int count = -1;

	if (count < 0) {
		if (!ps_pmu_present())
			count = 0;
		else if ((count = cpuid_counters()) == 0)
			count = probe_counters();
	}
	return count;
}

int ps_event_takes_counter(const struct perf_event_attr *attr)
{
	char names[64][64];
	unsigned types[64];
	int n;

	if (attr->type == PERF_TYPE_HARDWARE || attr->type == PERF_TYPE_HW_CACHE || attr->type == PERF_TYPE_RAW)
		return 1;
	if (attr->type < PERF_TYPE_MAX)
		return 0;
	n = ps_sysfs_pmu_names(ps_sysfs_root(), names, types, 64);
	for (int i = 0; i < n; i++)
		if (types[i] == attr->type)
			return ps_sysfs_pmu_is_core(names[i]);
	return 0;
}

void ps_event_countable_text(char *buf, size_t size)
{
	char names[64][64], list[512] = "";
	int n = ps_sysfs_pmu_names(ps_sysfs_root(), names, NULL, 64), k = 0, shown = 0;
	size_t len;

	for (int i = 0; i < n; i++)
		if (strcmp(names[i], "software") && strcmp(names[i], "tracepoint") && !ps_sysfs_pmu_is_core(names[i]))
			k++;
	for (int i = 0; i < n; i++) {
		if (!strcmp(names[i], "software") || !strcmp(names[i], "tracepoint") || ps_sysfs_pmu_is_core(names[i]))
			continue;
		len = strlen(list);
		shown++;
		if (snprintf(list + len, sizeof list - len, "%s%s",
			     shown == 1	  ? ""
			     : shown == k ? " and "
					  : ", ",
			     names[i]) >= (int)(sizeof list - len))
			break;
	}
	if (k == 0)
		snprintf(buf, size, "software events and tracepoints");
	else
		snprintf(buf, size, "software events, tracepoints and the %s PMU%s", list, k > 1 ? "s" : "");
}

int ps_event_relax(const struct ps_event *ev, struct perf_event_attr *attr, int e)
{
	if (ev->explicit_priv)
		return PS_FB_NONE;
	if ((e == EINVAL || e == EOPNOTSUPP) && !attr->exclude_user && (attr->exclude_kernel || attr->exclude_hv)) {
		attr->exclude_kernel = attr->exclude_hv = 0;
		return PS_FB_KERNEL_TOO;
	}
	if ((e == EACCES || e == EPERM) && !attr->exclude_kernel) {
		attr->exclude_kernel = attr->exclude_hv = 1;
		return PS_FB_USER_ONLY;
	}
	return PS_FB_NONE;
}

static int paranoid_level(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 2;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 2;
		fclose(f);
	}
	return v;
}

void ps_event_pmu_phrase(const struct ps_event *ev, char *buf, size_t n)
{
	const char *slash = strchr(ev->name, '/');

	if (ev->source == PS_SRC_SYSFS && slash && slash - ev->name < 64)
		snprintf(buf, n, "the %.*s PMU", (int)(slash - ev->name), ev->name);
	else
		snprintf(buf, n, "its PMU");
}

int ps_event_note(const struct ps_event *ev, char *buf, size_t n)
{
	char pmu[80];

	ps_event_pmu_phrase(ev, pmu, sizeof pmu);
	if (ev->fallback == PS_FB_KERNEL_TOO)
		snprintf(buf, n, "%s: counting kernel and user (%s refuses user-only counting)", ev->name, pmu);
	else if (ev->fallback == PS_FB_USER_ONLY)
		snprintf(buf, n, "%s: counting user space only (perf_event_paranoid is %d and forbids the kernel)",
			 ev->name, paranoid_level());
	else
		return 0;
	return 1;
}
