/* tests/c/test_events.c - event resolution: libpfm4 names, sysfs terms, raw codes, suggestions. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctest.h"
#include "events.h"

/* Table-driven: name -> type, config, exclude_user, exclude_kernel (libpfm4 and raw). */
static const struct {
	const char *name;
	unsigned type;
	unsigned long long config;
	int xu, xk;
} resolve_rows[] = {
	{"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, 1},
	{"instructions:u", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, 1},
	{"instructions:k", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1, 0},
	{"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 1},
	{"perf::cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 1},
	{"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 0, 1},
	{"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0, 1},
	{"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0, 1},
	{"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 0, 1},
	{"L1-dcache-load-misses", PERF_TYPE_HW_CACHE, 0x10000, 0, 1},
	{"r00c0", PERF_TYPE_RAW, 0xc0, 0, 1},
	{"r1a2b", PERF_TYPE_RAW, 0x1a2b, 0, 1},
};

TEST(event_resolve_table)
{
	for (size_t i = 0; i < sizeof resolve_rows / sizeof resolve_rows[0]; i++) {
		struct ps_event ev;
		struct ps_error err = {0};
		int rc = ps_event_resolve(resolve_rows[i].name, &ev, &err);
		if (rc) {
			fprintf(stderr, "  %s: %s\n", resolve_rows[i].name, err.msg);
			CHECK(rc == 0);
			continue;
		}
		CHECK_STR(ev.name, resolve_rows[i].name);
		CHECK_EQ_INT(ev.attr.type, resolve_rows[i].type);
		CHECK_EQ_INT(ev.attr.config, resolve_rows[i].config);
		CHECK_EQ_INT(ev.attr.exclude_user, resolve_rows[i].xu);
		CHECK_EQ_INT(ev.attr.exclude_kernel, resolve_rows[i].xk);
		CHECK_EQ_INT(ev.attr.exclude_hv, 1);
	}
}

/* A PMU tree like the kernel's, in a temporary directory. */
static char fake_root[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;
	snprintf(path, sizeof path, "%s/%s", fake_root, rel);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void make_fake_sysfs(void)
{
	char d[128];
	snprintf(fake_root, sizeof fake_root, "/tmp/ps-sysfs-XXXXXX");
	if (!mkdtemp(fake_root))
		return;
	snprintf(d, sizeof d, "%s/cpu", fake_root);
	mkdir(d, 0755);
	snprintf(d, sizeof d, "%s/cpu/format", fake_root);
	mkdir(d, 0755);
	snprintf(d, sizeof d, "%s/cpu/events", fake_root);
	mkdir(d, 0755);
	put("cpu/type", "4\n");
	put("cpu/format/event", "config:0-7,32-35\n");
	put("cpu/format/umask", "config:8-15\n");
	put("cpu/format/edge", "config:18\n");
	put("cpu/format/cmask", "config:24-31\n");
	put("cpu/format/ldlat", "config1:0-15\n");
	put("cpu/events/instructions", "event=0xc0\n");
	put("cpu/events/cache-misses", "event=0x2e,umask=0x41\n");
	put("cpu/events/loop", "event=1,loop\n");
}

static void remove_fake_sysfs(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", fake_root);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", fake_root);
}

static const struct {
	const char *name;
	unsigned long long config, config1;
	int xu, xk;
	const char *error; /* NULL: resolves */
} sysfs_rows[] = {
	{"cpu/event=0xc0,umask=0x0/", 0xc0, 0, 0, 1, NULL},
	{"cpu/event=0x3c,umask=0x1,cmask=2/", 0x0200013c, 0, 0, 1, NULL},
	{"cpu/event=0x1d4/", 0x1000000d4ULL, 0, 0, 1, NULL}, /* event bits 8.. go to 32-35 */
	{"cpu/event=0xd0,edge/", 0x400d0, 0, 0, 1, NULL},
	{"cpu/event=0xcd,ldlat=3/", 0xcd, 3, 0, 1, NULL},
	{"cpu/instructions/", 0xc0, 0, 0, 1, NULL},
	{"cpu/cache-misses/k", 0x412e, 0, 1, 0, NULL},
	{"cpu/cache-misses/uk", 0x412e, 0, 0, 0, NULL},
	{"cpu/foo=1/", 0, 0, 0, 0,
	 "event 'cpu/foo=1/': PMU 'cpu' has no term or event 'foo' (see ROOT/cpu/format and events)"},
	{"cpu/event=zz/", 0, 0, 0, 0, "event 'cpu/event=zz/': bad value 'zz' for 'event'"},
	{"cpu/event=1/x", 0, 0, 0, 0, "event 'cpu/event=1/x': unknown modifier 'x' (use u, k or h)"},
	{"cpu/loop/", 0, 0, 0, 0, "event 'cpu/loop/': event 'loop' of PMU 'cpu' is defined by itself"},
};

TEST(event_sysfs_terms)
{
	make_fake_sysfs();
	ps_events_set_sysfs_root(fake_root);
	for (size_t i = 0; i < sizeof sysfs_rows / sizeof sysfs_rows[0]; i++) {
		struct ps_event ev;
		struct ps_error err = {0};
		int rc = ps_event_resolve(sysfs_rows[i].name, &ev, &err);
		if (sysfs_rows[i].error) {
			char want[512];
			const char *root = strstr(sysfs_rows[i].error, "ROOT");
			if (root)
				snprintf(want, sizeof want, "%.*s%s%s", (int)(root - sysfs_rows[i].error),
					 sysfs_rows[i].error, fake_root, root + 4);
			else
				snprintf(want, sizeof want, "%s", sysfs_rows[i].error);
			CHECK(rc == -1);
			CHECK_STR(err.msg, want);
			continue;
		}
		if (rc) {
			fprintf(stderr, "  %s: %s\n", sysfs_rows[i].name, err.msg);
			CHECK(rc == 0);
			continue;
		}
		CHECK_EQ_INT(ev.source, PS_SRC_SYSFS);
		CHECK_EQ_INT(ev.attr.type, 4);
		CHECK_EQ_INT(ev.attr.config, sysfs_rows[i].config);
		CHECK_EQ_INT(ev.attr.config1, sysfs_rows[i].config1);
		CHECK_EQ_INT(ev.attr.exclude_user, sysfs_rows[i].xu);
		CHECK_EQ_INT(ev.attr.exclude_kernel, sysfs_rows[i].xk);
	}
	/* Suggestions are deterministic against a known tree. */
	{
		struct ps_event ev;
		struct ps_error err = {0};
		CHECK(ps_event_resolve("instrs", &ev, &err) == -1);
		CHECK_EQ_INT(err.code, PS_ENOTFOUND);
		CHECK_STR(err.msg, "unknown event 'instrs'; did you mean 'instructions', 'cpu/instructions/' or 'cycles'?");
		CHECK(ps_event_resolve("task-clok", &ev, &err) == -1);
		CHECK_STR(err.msg, "unknown event 'task-clok'; did you mean 'task-clock', 'cpu-clock' or 'cycles'?");
	}
	ps_events_set_sysfs_root("/sys/bus/event_source/devices");
	remove_fake_sysfs();
}

TEST(event_real_sysfs_pmu)
{
	struct ps_event ev;
	struct ps_error err = {0};
	if (access("/sys/bus/event_source/devices/msr/events/tsc", R_OK))
		SKIP("this kernel has no msr PMU in sysfs");
	CHECK(ps_event_resolve("msr/tsc/", &ev, &err) == 0);
	CHECK_EQ_INT(ev.source, PS_SRC_SYSFS);
	FILE *f = fopen("/sys/bus/event_source/devices/msr/type", "r");
	unsigned type = 0;
	CHECK(f && fscanf(f, "%u", &type) == 1);
	if (f)
		fclose(f);
	CHECK_EQ_INT(ev.attr.type, type);
}

TEST(event_bad_names)
{
	struct ps_event ev;
	struct ps_error err = {0};
	CHECK(ps_event_resolve("", &ev, &err) == -1);
	CHECK_STR(err.msg, "empty event name");
	CHECK(ps_event_resolve("r00c0:q", &ev, &err) == -1);
	CHECK(ps_event_resolve("nosuchpmu/event=1/", &ev, &err) == -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
}

static int count_cb(const struct ps_event_info *e, void *ud)
{
	int *n = ud;
	if (!strcmp(e->name, "task-clock") && e->usable)
		n[0]++;
	n[1]++;
	return 0;
}

TEST(event_listing)
{
	int n[2] = {0, 0};
	ps_events_foreach(PS_KIND_SW, NULL, count_cb, n);
	CHECK_EQ_INT(n[0], 1); /* software events always work */
	CHECK(n[1] >= 7);
	n[0] = n[1] = 0;
	ps_events_foreach(PS_KIND_SW, "clock", count_cb, n);
	CHECK_EQ_INT(n[1], 2); /* task-clock, cpu-clock */
}
