/* core/events.c - event names: libpfm4, then sysfs PMUs, then raw codes; suggestions; listing. */
#include "events.h"

#include <cpuid.h>
#include <errno.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sysfs_pmu.h"

static const char *sysfs_root = "/sys/bus/event_source/devices";

void ps_events_set_sysfs_root(const char *dir)
{
	sysfs_root = dir;
}

/* The names perf itself prints, with what they count. All resolve through libpfm4. */
static const struct {
	const char *name;
	enum ps_event_kind kind;
	const char *desc;
} perf_names[] = {
    {"cycles", PS_KIND_HW, "CPU cycles (cpu-cycles)"},
    {"instructions", PS_KIND_HW, "instructions retired"},
    {"branches", PS_KIND_HW, "branch instructions retired (branch-instructions)"},
    {"branch-misses", PS_KIND_HW, "mispredicted branches"},
    {"cache-references", PS_KIND_HW, "last-level cache accesses"},
    {"cache-misses", PS_KIND_HW, "last-level cache misses"},
    {"bus-cycles", PS_KIND_HW, "bus cycles"},
    {"ref-cycles", PS_KIND_HW, "reference cycles, not scaled by frequency"},
    {"stalled-cycles-frontend", PS_KIND_HW, "cycles the front end stalled"},
    {"stalled-cycles-backend", PS_KIND_HW, "cycles the back end stalled"},
    {"task-clock", PS_KIND_SW, "ns the task ran (per-task clock)"},
    {"cpu-clock", PS_KIND_SW, "ns of the CPU clock while the task ran"},
    {"page-faults", PS_KIND_SW, "page faults (faults)"},
    {"minor-faults", PS_KIND_SW, "page faults served without I/O"},
    {"major-faults", PS_KIND_SW, "page faults that needed I/O"},
    {"context-switches", PS_KIND_SW, "context switches (cs)"},
    {"cpu-migrations", PS_KIND_SW, "moves to another CPU (migrations)"},
    {"L1-dcache-loads", PS_KIND_CACHE, "L1 data cache loads"},
    {"L1-dcache-load-misses", PS_KIND_CACHE, "L1 data cache load misses"},
    {"L1-dcache-stores", PS_KIND_CACHE, "L1 data cache stores"},
    {"L1-icache-loads", PS_KIND_CACHE, "L1 instruction cache loads"},
    {"L1-icache-load-misses", PS_KIND_CACHE, "L1 instruction cache misses"},
    {"LLC-loads", PS_KIND_CACHE, "last-level cache loads"},
    {"LLC-load-misses", PS_KIND_CACHE, "last-level cache load misses"},
    {"LLC-stores", PS_KIND_CACHE, "last-level cache stores"},
    {"LLC-store-misses", PS_KIND_CACHE, "last-level cache store misses"},
    {"dTLB-loads", PS_KIND_CACHE, "data TLB loads"},
    {"dTLB-load-misses", PS_KIND_CACHE, "data TLB load misses"},
    {"iTLB-loads", PS_KIND_CACHE, "instruction TLB loads"},
    {"iTLB-load-misses", PS_KIND_CACHE, "instruction TLB misses"},
    {"branch-loads", PS_KIND_CACHE, "branch predictor unit accesses"},
    {"branch-load-misses", PS_KIND_CACHE, "branch predictor unit misses"},
};
#define NPERF (sizeof perf_names / sizeof perf_names[0])

static int pfm_ready(void)
{
	static int state; /* 0 untried, 1 ok, -1 failed */
	if (!state)
		state = pfm_initialize() == PFM_SUCCESS ? 1 : -1;
	return state == 1;
}

static int resolve_pfm(const char *name, struct perf_event_attr *attr)
{
	pfm_perf_encode_arg_t arg;

	if (!pfm_ready())
		return -1;
	memset(attr, 0, sizeof *attr);
	memset(&arg, 0, sizeof arg);
	arg.attr = attr;
	arg.size = sizeof arg;
	if (pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg) != PFM_SUCCESS)
		return -1;
	attr->size = sizeof *attr;
	/* libpfm4 leaves the hypervisor bit alone; count it only when asked (":h"). */
	if (!strstr(name, ":h") && !strstr(name, ":H"))
		attr->exclude_hv = 1;
	return 0;
}

/* rNNNN[:mods] - a raw PMU code in hex. */
static int resolve_raw(const char *name, struct perf_event_attr *attr, struct ps_error *err)
{
	char *end;
	uint64_t code;

	if (name[0] != 'r' || !name[1])
		return -1;
	errno = 0;
	code = strtoull(name + 1, &end, 16);
	if (errno || end == name + 1 || (*end && *end != ':'))
		return -1;
	memset(attr, 0, sizeof *attr);
	attr->size = sizeof *attr;
	attr->type = PERF_TYPE_RAW;
	attr->config = code;
	attr->exclude_kernel = attr->exclude_hv = 1;
	if (*end == ':') {
		attr->exclude_user = 1;
		for (const char *m = end + 1; *m; m++) {
			if (*m == 'u')
				attr->exclude_user = 0;
			else if (*m == 'k')
				attr->exclude_kernel = 0;
			else if (*m == 'h')
				attr->exclude_hv = 0;
			else
				return ps_error_set(err, PS_EUSAGE, "event '%s': unknown modifier '%c' (use u, k or h)",
						    name, *m);
		}
	}
	return 0;
}

int ps_event_resolve(const char *name, struct ps_event *ev, struct ps_error *err)
{
	char sugg[3][128];
	int n, rc;

	memset(ev, 0, sizeof *ev);
	if (!name || !*name)
		return ps_error_set(err, PS_EUSAGE, "empty event name");
	if (strlen(name) >= sizeof ev->name)
		return ps_error_set(err, PS_EUSAGE, "event name too long: '%.40s...'", name);
	snprintf(ev->name, sizeof ev->name, "%s", name);
	if (resolve_pfm(name, &ev->attr) == 0) {
		ev->source = PS_SRC_PFM;
		return 0;
	}
	rc = ps_sysfs_parse(sysfs_root, name, &ev->attr, err);
	if (rc == 0) {
		ev->source = PS_SRC_SYSFS;
		return 0;
	}
	if (err && err->code == PS_EUSAGE)
		return -1;
	rc = resolve_raw(name, &ev->attr, err);
	if (rc == 0) {
		ev->source = PS_SRC_RAW;
		return 0;
	}
	if (err && err->code == PS_EUSAGE)
		return -1;
	n = ps_event_suggest(name, sugg, 3);
	if (n == 3)
		return ps_error_set(err, PS_ENOTFOUND, "unknown event '%s'; did you mean '%s', '%s' or '%s'?", name,
				    sugg[0], sugg[1], sugg[2]);
	if (n == 2)
		return ps_error_set(err, PS_ENOTFOUND, "unknown event '%s'; did you mean '%s' or '%s'?", name, sugg[0],
				    sugg[1]);
	if (n == 1)
		return ps_error_set(err, PS_ENOTFOUND, "unknown event '%s'; did you mean '%s'?", name, sugg[0]);
	return ps_error_set(err, PS_ENOTFOUND, "unknown event '%s' (perfsh --list shows the known ones)", name);
}

/* ---- suggestions ---- */

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[129];

	if (la > 128 || lb > 128)
		return 1000;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int cur = row[j];
			int sub = prev + (lower(a[i - 1]) != lower(b[j - 1]));
			int del = row[j] + 1, ins = row[j - 1] + 1;
			row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			prev = cur;
		}
	}
	return row[lb];
}

/* 1 when every character of @a appears in @b in order (an abbreviation). */
static int subsequence(const char *a, const char *b)
{
	for (; *b && *a; b++)
		if (lower(*a) == lower(*b))
			a++;
	return *a == '\0';
}

/* Distance in quarter steps: abbreviations rank by how much they leave out, others by edits. */
static int distance(const char *typed, const char *known)
{
	int lt = (int)strlen(typed), lk = (int)strlen(known);
	if (subsequence(typed, known))
		return lk - lt;
	return 4 * levenshtein(typed, known);
}

struct best {
	char (*out)[128];
	int score[8];
	int n, max;
	const char *typed;
};

static void consider(struct best *b, const char *name)
{
	int d = distance(b->typed, name), i;

	for (i = 0; i < b->n; i++)
		if (!strcmp(b->out[i], name))
			return;
	for (i = b->n; i > 0 && b->score[i - 1] > d; i--) {
		if (i < b->max) {
			b->score[i] = b->score[i - 1];
			memcpy(b->out[i], b->out[i - 1], 128);
		}
	}
	if (i >= b->max)
		return;
	b->score[i] = d;
	snprintf(b->out[i], 128, "%s", name);
	if (b->n < b->max)
		b->n++;
}

static int consider_sysfs(const char *pmu, const char *event, const char *terms, void *ud)
{
	char name[128];
	(void)terms;
	snprintf(name, sizeof name, "%s/%s/", pmu, event);
	consider(ud, name);
	return 0;
}

int ps_event_suggest(const char *name, char (*out)[128], int max)
{
	struct best b = {.out = out, .max = max > 8 ? 8 : max, .typed = name};

	for (size_t i = 0; i < NPERF; i++)
		consider(&b, perf_names[i].name);
	ps_sysfs_foreach(sysfs_root, consider_sysfs, &b);
	return b.n;
}

/* ---- machine facts ---- */

static int try_open(const struct perf_event_attr *a)
{
	struct perf_event_attr attr = *a;
	int fd;

	attr.disabled = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int ps_pmu_present(void)
{
	static int state = -1;
	if (state < 0) {
		struct perf_event_attr a = {.size = sizeof a,
					    .type = PERF_TYPE_HARDWARE,
					    .config = PERF_COUNT_HW_INSTRUCTIONS,
					    .exclude_kernel = 1,
					    .exclude_hv = 1};
		state = try_open(&a);
	}
	return state;
}

int ps_pmu_counters(void)
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

/* ---- listing ---- */

struct list_ctx {
	unsigned kinds;
	const char *filter;
	ps_event_cb cb;
	void *ud;
};

static int list_sysfs(const char *pmu, const char *event, const char *terms, void *ud)
{
	struct list_ctx *lc = ud;
	struct perf_event_attr attr;
	char name[256];
	struct ps_event_info info;

	snprintf(name, sizeof name, "%s/%s/", pmu, event);
	if (lc->filter && !strstr(name, lc->filter))
		return 0;
	info.name = name;
	info.desc = terms;
	info.kind = PS_KIND_PMU;
	info.usable = ps_sysfs_parse(sysfs_root, name, &attr, NULL) == 0 && try_open(&attr);
	return lc->cb(&info, lc->ud);
}

/* Native events of the CPU PMUs libpfm4 detects (not its generic perf tables). */
static int list_pfm_native(struct list_ctx *lc)
{
	pfm_pmu_t p;

	if (!pfm_ready())
		return 0;
	pfm_for_all_pmus(p)
	{
		pfm_pmu_info_t pinfo;
		memset(&pinfo, 0, sizeof pinfo);
		pinfo.size = sizeof pinfo;
		if (pfm_get_pmu_info(p, &pinfo) != PFM_SUCCESS || !pinfo.is_present)
			continue;
		if (!strcmp(pinfo.name, "perf") || !strcmp(pinfo.name, "perf_raw"))
			continue;
		for (int e = pinfo.first_event; e != -1; e = pfm_get_event_next(e)) {
			pfm_event_info_t einfo;
			struct perf_event_attr attr;
			char name[256];
			struct ps_event_info info;
			int rc;

			memset(&einfo, 0, sizeof einfo);
			einfo.size = sizeof einfo;
			if (pfm_get_event_info(e, PFM_OS_PERF_EVENT_EXT, &einfo) != PFM_SUCCESS)
				continue;
			snprintf(name, sizeof name, "%s::%s", pinfo.name, einfo.name);
			if (lc->filter && !strstr(name, lc->filter))
				continue;
			info.name = name;
			info.desc = einfo.desc ? einfo.desc : "";
			info.kind = PS_KIND_PMU;
			info.usable = ps_pmu_present() && resolve_pfm(name, &attr) == 0 && try_open(&attr);
			if ((rc = lc->cb(&info, lc->ud)))
				return rc;
		}
	}
	return 0;
}

int ps_events_foreach(unsigned kinds, const char *filter, ps_event_cb cb, void *ud)
{
	struct list_ctx lc = {kinds, filter, cb, ud};
	int rc;

	for (size_t i = 0; i < NPERF; i++) {
		struct ps_event_info info;
		struct perf_event_attr attr;

		if (!(kinds & perf_names[i].kind))
			continue;
		if (filter && !strstr(perf_names[i].name, filter))
			continue;
		info.name = perf_names[i].name;
		info.desc = perf_names[i].desc;
		info.kind = perf_names[i].kind;
		info.usable = resolve_pfm(info.name, &attr) == 0 && try_open(&attr);
		if ((rc = cb(&info, ud)))
			return rc;
	}
	if (kinds & PS_KIND_PMU) {
		if ((rc = ps_sysfs_foreach(sysfs_root, list_sysfs, &lc)))
			return rc;
		if ((rc = list_pfm_native(&lc)))
			return rc;
	}
	return 0;
}
