/* tests/c/test_events.c - event resolution: libpfm4 names, sysfs terms, raw codes, tracepoints,
 * suggestions, and the fallbacks and messages of opening them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctest.h"
#include "events.h"
#include "group.h"
#include "run.h"
#include "suggest.h"
#include "sysfs_pmu.h"
#include "tracepoint.h"

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
	ps_sysfs_set_root(fake_root);
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
		CHECK_STR(err.msg,
			  "unknown event 'instrs'; did you mean 'instructions', 'cpu/instructions/' or 'cycles'?");
		CHECK(ps_event_resolve("task-clok", &ev, &err) == -1);
		CHECK_STR(err.msg, "unknown event 'task-clok'; did you mean 'task-clock', 'cpu-clock' or 'cycles'?");
	}
	ps_sysfs_set_root(NULL);
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

/* ---- tracepoints ---- */

static char fake_tracefs[64];

static void tp_put(const char *subsys, const char *event, const char *id)
{
	char d[256];
	FILE *f;

	snprintf(d, sizeof d, "%s/%s", fake_tracefs, subsys);
	mkdir(d, 0755);
	snprintf(d, sizeof d, "%s/%s/%s", fake_tracefs, subsys, event);
	mkdir(d, 0755);
	snprintf(d, sizeof d, "%s/%s/%s/id", fake_tracefs, subsys, event);
	if ((f = fopen(d, "w"))) {
		fputs(id, f);
		fclose(f);
	}
}

static int make_fake_tracefs(void)
{
	char d[128];
	FILE *f;

	snprintf(fake_tracefs, sizeof fake_tracefs, "/tmp/ps-tracefs-XXXXXX");
	if (!mkdtemp(fake_tracefs))
		return -1;
	tp_put("syscalls", "sys_enter_write", "700\n");
	tp_put("syscalls", "sys_enter_writev", "701\n");
	tp_put("syscalls", "sys_enter_read", "702\n");
	tp_put("sched", "sched_switch", "300\n");
	tp_put("sched", "sched_wakeup", "301\n");
	tp_put("raw_syscalls", "sys_enter", "20\n");
	tp_put("bad", "noid", "x17\n");
	/* tracefs keeps files beside the subsystems; they are not tracepoints */
	snprintf(d, sizeof d, "%s/enable", fake_tracefs);
	if ((f = fopen(d, "w"))) {
		fputs("0\n", f);
		fclose(f);
	}
	ps_tracepoint_set_root(fake_tracefs);
	return 0;
}

static void remove_fake_tracefs(void)
{
	char cmd[128];

	ps_tracepoint_set_root(NULL);
	snprintf(cmd, sizeof cmd, "rm -rf %s", fake_tracefs);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", fake_tracefs);
}

/* name -> config (the id), or the one-line error. */
static const struct {
	const char *name;
	unsigned long long id;
	const char *error;
} tp_rows[] = {
    {"syscalls:sys_enter_write", 700, NULL},
    {"sched:sched_switch", 300, NULL},
    {"raw_syscalls:sys_enter", 20, NULL},
    {"syscalls:sys_enter_wrte", 0,
     "unknown tracepoint 'syscalls:sys_enter_wrte'; did you mean 'syscalls:sys_enter_write', "
     "'syscalls:sys_enter_writev' or 'syscalls:sys_enter_read'?"},
    {"sched:sched_swich", 0,
     "unknown tracepoint 'sched:sched_swich'; did you mean 'sched:sched_switch' or "
     "'sched:sched_wakeup'?"},
    {"sycalls:sys_enter_write", 0,
     "unknown tracepoint 'sycalls:sys_enter_write'; did you mean "
     "'syscalls:sys_enter_write'?"},
    {"shed:nothing_like_it", 0,
     "unknown tracepoint subsystem 'shed' in 'shed:nothing_like_it'; did you mean "
     "'sched', 'bad' or 'syscalls'? (perfsh --list tracepoint lists them)"},
    {"bad:noid", 0, "tracepoint 'bad:noid': ROOT/bad/noid/id holds 'x17\n', not an id"},
};

TEST(event_tracepoint_fake_tracefs)
{
	if (make_fake_tracefs())
		SKIP("cannot make a temporary directory");
	for (size_t i = 0; i < sizeof tp_rows / sizeof tp_rows[0]; i++) {
		struct ps_event ev;
		struct ps_error err = {0};
		int rc = ps_event_resolve(tp_rows[i].name, &ev, &err);

		if (tp_rows[i].error) {
			char want[600];
			const char *root = strstr(tp_rows[i].error, "ROOT");
			if (root)
				snprintf(want, sizeof want, "%.*s%s%s", (int)(root - tp_rows[i].error),
					 tp_rows[i].error, fake_tracefs, root + 4);
			else
				snprintf(want, sizeof want, "%s", tp_rows[i].error);
			CHECK(rc == -1);
			CHECK_STR(err.msg, want);
			continue;
		}
		if (rc) {
			fprintf(stderr, "  %s: %s\n", tp_rows[i].name, err.msg);
			CHECK(rc == 0);
			continue;
		}
		CHECK_EQ_INT(ev.source, PS_SRC_TRACEPOINT);
		CHECK_EQ_INT(ev.attr.type, PERF_TYPE_TRACEPOINT);
		CHECK_EQ_INT(ev.attr.config, tp_rows[i].id);
		CHECK_EQ_INT(ev.attr.exclude_user, 0);
		CHECK_EQ_INT(ev.attr.exclude_kernel, 0); /* a tracepoint counts wherever it fires */
		CHECK_EQ_INT(ev.explicit_priv, 0);
	}
	remove_fake_tracefs();
}

/* Names that are no tracepoint: never a path outside the tree, modifiers stay libpfm4's. */
TEST(event_tracepoint_shapes)
{
	struct perf_event_attr attr;
	struct ps_error err = {0};
	struct ps_event ev;

	if (make_fake_tracefs())
		SKIP("cannot make a temporary directory");
	CHECK_EQ_INT(ps_tracepoint_parse("..:..", &attr, &err), 1);
	CHECK_EQ_INT(ps_tracepoint_parse("syscalls:../../etc", &attr, &err), 1);
	CHECK_EQ_INT(ps_tracepoint_parse("a:b:c", &attr, &err), 1);
	CHECK_EQ_INT(ps_tracepoint_parse(":x", &attr, &err), 1);
	CHECK_EQ_INT(ps_tracepoint_parse("instrs:u", &attr, &err), 1);
	CHECK_EQ_INT(ps_tracepoint_parse("enable:x", &attr, &err), -1); /* a file, not a subsystem */
	CHECK(ps_event_resolve("instrs:u", &ev, &err) == -1);
	CHECK_STR(err.msg, "unknown event 'instrs:u'; did you mean 'instructions:u', 'cycles:u' or 'branches:u'?");
	CHECK(ps_event_resolve("instructions:u", &ev, &err) == 0);
	CHECK_EQ_INT(ev.source, PS_SRC_PFM);
	CHECK_EQ_INT(ev.explicit_priv, 1);
	/* without tracefs, a tracepoint-shaped name says what is missing */
	ps_tracepoint_set_root("/nonexistent/tracefs/events");
	CHECK(ps_event_resolve("syscalls:sys_enter_write", &ev, &err) == -1);
	CHECK_STR(err.msg, "unknown event 'syscalls:sys_enter_write' (a tracepoint SUBSYS:NAME needs tracefs, which "
			   "is not mounted or not readable: as root, mount -t tracefs nodev /sys/kernel/tracing)");
	ps_tracepoint_set_root(fake_tracefs);
	remove_fake_tracefs();
}

/* 1 when /proc/mounts lists a file system of @type (" tracefs "), -1 when it cannot be read. */
static int fs_mounted(const char *type)
{
	char line[1024];
	FILE *f = fopen("/proc/mounts", "re");
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, type) != NULL;
	fclose(f);
	return found;
}

/*
 * Where tracefs is not mounted, resolving a tracepoint says what is missing and mounts nothing
 * (libtracefs' tracefs_tracing_dir() would mount it). Where debugfs is mounted, the kernel
 * mounts tracefs below it on the first look, so the test needs neither.
 */
TEST(event_tracepoint_unmounted_mounts_nothing)
{
	struct ps_event ev;
	struct ps_error err = {0};

	if (fs_mounted(" tracefs ") != 0 || fs_mounted(" debugfs ") != 0)
		SKIP("tracefs or debugfs is mounted here (or /proc/mounts cannot be read)");
	CHECK(ps_event_resolve("syscalls:sys_enter_write", &ev, &err) == -1);
	CHECK(strstr(err.msg, "tracefs") != NULL);
	CHECK_EQ_INT(fs_mounted(" tracefs "), 0);
}

static int tp_count_cb(const struct ps_event_info *e, void *ud)
{
	char *buf = ud;
	size_t len = strlen(buf);
	snprintf(buf + len, 512 - len, "%s%s", len ? "," : "", e->name);
	return 0;
}

TEST(event_tracepoint_listing)
{
	char buf[512] = "";

	if (make_fake_tracefs())
		SKIP("cannot make a temporary directory");
	ps_events_foreach(PS_KIND_TRACEPOINT, NULL, tp_count_cb, buf);
	CHECK_STR(buf, "bad:noid,raw_syscalls:sys_enter,sched:sched_switch,sched:sched_wakeup,syscalls:sys_enter_read,"
		       "syscalls:sys_enter_write,syscalls:sys_enter_writev");
	buf[0] = '\0';
	ps_events_foreach(PS_KIND_TRACEPOINT, "write", tp_count_cb, buf);
	CHECK_STR(buf, "syscalls:sys_enter_write,syscalls:sys_enter_writev");
	remove_fake_tracefs();
}

/* A command that writes N times: the tracepoint counts exactly N, as perf stat does. */
TEST(event_tracepoint_counts_writes)
{
	struct ps_event ev[2];
	struct ps_error err = {0};
	struct ps_run_result res;
	char *argv[] = {"examples/writes", "37", NULL};
	int fd;

	if (!ps_tracepoint_root())
		SKIP("tracefs is not mounted (or not readable) at /sys/kernel/tracing or /sys/kernel/debug/tracing");
	if (access("examples/writes", X_OK))
		SKIP("examples/writes is not built (make)");
	if (ps_event_resolve("syscalls:sys_enter_write", &ev[0], &err) ||
	    ps_event_resolve("task-clock", &ev[1], &err)) {
		fprintf(stderr, "  %s\n", err.msg);
		SKIP("this kernel has no syscalls:sys_enter_write tracepoint");
	}
	/* stdout to /dev/null for the child: save ours and restore it */
	fflush(stdout);
	int saved = dup(1);
	fd = open("/dev/null", O_WRONLY);
	CHECK(saved >= 0 && fd >= 0);
	dup2(fd, 1);
	close(fd);
	int rc = ps_run(argv, ev, 2, &res, &err);
	dup2(saved, 1);
	close(saved);
	if (rc)
		fprintf(stderr, "  %s\n", err.msg);
	CHECK(rc == 0);
	CHECK(res.exited && res.code == 0);
	CHECK_EQ_INT(res.reading.val[0], 37);
	CHECK_EQ_INT(res.ev[0].fallback, PS_FB_NONE);
}

/* ---- opening what the kernel refuses at first ---- */

TEST(event_msr_tsc_opens)
{
	struct ps_event ev[2];
	struct ps_error err = {0};
	struct ps_group g;
	struct ps_reading r;
	char note[256];

	if (access("/sys/bus/event_source/devices/msr/events/tsc", R_OK))
		SKIP("this kernel has no msr PMU in sysfs");
	CHECK(ps_event_resolve("task-clock", &ev[0], &err) == 0);
	CHECK(ps_event_resolve("msr/tsc/", &ev[1], &err) == 0);
	CHECK_EQ_INT(ev[1].attr.exclude_kernel, 1); /* user space only by default... */
	if (ps_group_open(&g, ev, 2, 0, -1, 0, &err)) {
		if (err.code == EACCES || err.code == EPERM)
			SKIP("msr/tsc/ counts the kernel, which perf_event_paranoid forbids here");
		fprintf(stderr, "  %s\n", err.msg);
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(g.ev[1].fallback, PS_FB_KERNEL_TOO); /* ...which the msr PMU refuses */
	CHECK_EQ_INT(g.ev[1].attr.exclude_kernel, 0);
	CHECK_EQ_INT(g.ev[0].fallback, PS_FB_NONE);
	CHECK(ps_event_note(&g.ev[1], note, sizeof note) == 1);
	CHECK_STR(note, "msr/tsc/: counting kernel and user (the msr PMU refuses user-only counting)");
	CHECK(ps_event_note(&g.ev[0], note, sizeof note) == 0);
	CHECK(ps_group_enable(&g, &err) == 0);
	for (volatile int i = 0; i < 1000000; i++)
		;
	CHECK(ps_group_disable(&g, &err) == 0);
	CHECK(ps_group_read(&g, &r, &err) == 0);
	CHECK(r.val[1] > 0);
	ps_group_close(&g);
	/* a modifier is the user's choice: no fallback, and the message says what to do */
	CHECK(ps_event_resolve("msr/tsc/u", &ev[1], &err) == 0);
	CHECK_EQ_INT(ev[1].explicit_priv, 1);
	CHECK(ps_group_open(&g, ev, 2, 0, -1, 0, &err) == -1);
	CHECK_STR(err.msg, "perf_event_open(msr/tsc/u): Invalid argument (the msr PMU may not count user and kernel "
			   "apart: try it without the modifier)");
}

TEST(event_relax_rules)
{
	struct ps_event ev;
	struct perf_event_attr a;
	struct ps_error err = {0};

	CHECK(ps_event_resolve("task-clock", &ev, &err) == 0);
	a = ev.attr;
	CHECK_EQ_INT(ps_event_relax(&ev, &a, EINVAL), PS_FB_KERNEL_TOO);
	CHECK_EQ_INT(a.exclude_kernel, 0);
	CHECK_EQ_INT(a.exclude_hv, 0);
	CHECK_EQ_INT(ps_event_relax(&ev, &a, EACCES), PS_FB_USER_ONLY);
	CHECK_EQ_INT(a.exclude_kernel, 1);
	a = ev.attr;
	CHECK_EQ_INT(ps_event_relax(&ev, &a, ENOENT), PS_FB_NONE);
	CHECK_EQ_INT(ps_event_relax(&ev, &a, EACCES), PS_FB_NONE); /* already user-only */
	CHECK(ps_event_resolve("task-clock:u", &ev, &err) == 0);
	a = ev.attr;
	CHECK_EQ_INT(ps_event_relax(&ev, &a, EINVAL), PS_FB_NONE);
}

TEST(event_group_limits)
{
	struct ps_event ev[PS_MAX_EVENTS + 1];
	struct ps_error err = {0};
	struct ps_group g;
	char want[200];

	for (int i = 0; i <= PS_MAX_EVENTS; i++)
		CHECK(ps_event_resolve("task-clock", &ev[i], &err) == 0);
	CHECK(ps_group_open(&g, ev, PS_MAX_EVENTS + 1, 0, -1, 0, &err) == -1);
	snprintf(want, sizeof want, "a group holds at most %d events (got %d); split them", PS_MAX_EVENTS,
		 PS_MAX_EVENTS + 1);
	CHECK_STR(err.msg, want);
	CHECK(ps_event_resolve("page-faults", &ev[1], &err) == 0);
	CHECK(ps_group_open(&g, ev, 3, 0, -1, 0, &err) == -1);
	CHECK_EQ_INT(err.code, PS_EUSAGE);
	CHECK_STR(err.msg, "duplicate event task-clock in the group; name it once");
	CHECK_EQ_INT(g.n, 0);
}

/* What the no-PMU message lists, against a known PMU tree. */
TEST(event_countable_text)
{
	char buf[300];
	struct perf_event_attr a = {.type = 4};

	make_fake_sysfs();
	ps_sysfs_set_root(fake_root);
	ps_event_countable_text(buf, sizeof buf);
	CHECK_STR(buf, "software events and tracepoints"); /* "cpu" is the core PMU */
	CHECK_EQ_INT(ps_event_takes_counter(&a), 1);
	{
		char d[128];
		snprintf(d, sizeof d, "%s/msr", fake_root);
		mkdir(d, 0755);
		snprintf(d, sizeof d, "%s/breakpoint", fake_root);
		mkdir(d, 0755);
	}
	put("msr/type", "9\n");
	put("breakpoint/type", "5\n");
	ps_event_countable_text(buf, sizeof buf);
	CHECK_STR(buf, "software events, tracepoints and the breakpoint and msr PMUs");
	a.type = 9;
	CHECK_EQ_INT(ps_event_takes_counter(&a), 0);
	a.type = PERF_TYPE_SOFTWARE;
	CHECK_EQ_INT(ps_event_takes_counter(&a), 0);
	a.type = PERF_TYPE_HARDWARE;
	CHECK_EQ_INT(ps_event_takes_counter(&a), 1);
	ps_sysfs_set_root(NULL);
	remove_fake_sysfs();
	if (!ps_pmu_present())
		CHECK_EQ_INT(ps_pmu_counters(), 0); /* no counters this machine does not have */
}

TEST(event_suggest_text)
{
	char out[3][128], text[512];
	struct ps_suggest s;

	ps_suggest_init(&s, "cycle", out, 3);
	ps_suggest_text(&s, text, sizeof text);
	CHECK_STR(text, "");
	ps_suggest_add(&s, "instructions");
	ps_suggest_add(&s, "cycles");
	ps_suggest_text(&s, text, sizeof text);
	CHECK_STR(text, "; did you mean 'cycles' or 'instructions'?");
	ps_suggest_add(&s, "cycles"); /* once only */
	ps_suggest_add(&s, "bus-cycles");
	ps_suggest_add(&s, "ref-cycles");
	ps_suggest_text(&s, text, sizeof text);
	CHECK_STR(text, "; did you mean 'cycles', 'bus-cycles' or 'ref-cycles'?");
}

TEST(event_sysfs_unknown_name_suggests)
{
	struct ps_event ev;
	struct ps_error err = {0};

	make_fake_sysfs();
	ps_sysfs_set_root(fake_root);
	CHECK(ps_event_resolve("cpu/instrs/", &ev, &err) == -1);
	CHECK_STR(err.msg, "event 'cpu/instrs/': PMU 'cpu' has no event 'instrs'; did you mean 'cpu/instructions/', "
			   "'cpu/loop/' or 'cpu/cache-misses/'?");
	ps_sysfs_set_root(NULL);
	remove_fake_sysfs();
}

/* Without a PMU, a hardware event's failure says what this machine can count instead. */
TEST(event_no_pmu_message)
{
	struct ps_event ev[2];
	struct ps_error err = {0};
	struct ps_group g;
	char what[300], want[512];

	if (ps_pmu_present())
		SKIP("this machine has a hardware PMU");
	CHECK(ps_event_resolve("task-clock", &ev[0], &err) == 0);
	CHECK(ps_event_resolve("instructions", &ev[1], &err) == 0);
	CHECK(ps_group_open(&g, ev, 2, 0, -1, 0, &err) == -1);
	ps_event_countable_text(what, sizeof what);
	snprintf(want, sizeof want,
		 "perf_event_open(instructions): no hardware PMU on this machine (as in a VM without PMU passthrough): "
		 "only %s can be counted",
		 what);
	CHECK_STR(err.msg, want);
	CHECK(strncmp(what, "software events", 15) == 0);
}
