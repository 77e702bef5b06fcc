/* core/events/events.c - event names: libpfm4, then tracepoints, sysfs PMUs, raw codes; suggestions; listing. */
#include "events.h"

#include <errno.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "suggest.h"
#include "sysfs_pmu.h"
#include "tracepoint.h"

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

static void suggest_all(struct ps_suggest *s);

/* 1 when a libpfm4 name carries a privilege modifier (":u", ":k", ":h", ":u=1", ...). */
static int pfm_priv_mods(const char *name)
{
	for (const char *c = strchr(name, ':'); c; c = strchr(c + 1, ':')) {
		char m = c[1];
		if (m && strchr("ukhUKH", m) && (!c[2] || c[2] == ':' || c[2] == '='))
			return 1;
	}
	return 0;
}

int ps_event_resolve(const char *name, struct ps_event *ev, struct ps_error *err)
{
	char sugg[3][128], text[512], base[128];
	const char *mods;
	struct ps_suggest s;
	int rc;

	memset(ev, 0, sizeof *ev);
	if (!name || !*name)
		return ps_error_set(err, PS_EUSAGE, "empty event name");
	if (strlen(name) >= sizeof ev->name)
		return ps_error_set(err, PS_EUSAGE, "event name too long: '%.40s...'", name);
	snprintf(ev->name, sizeof ev->name, "%s", name);
	if (resolve_pfm(name, &ev->attr) == 0) {
		ev->source = PS_SRC_PFM;
		ev->explicit_priv = (unsigned char)pfm_priv_mods(name);
		return 0;
	}
	rc = ps_tracepoint_parse(name, &ev->attr, err);
	if (rc == 0) {
		ev->source = PS_SRC_TRACEPOINT;
		return 0;
	}
	if (rc < 0)
		return -1;
	rc = ps_sysfs_parse(ps_sysfs_root(), name, &ev->attr, err);
	if (rc == 0) {
		ev->source = PS_SRC_SYSFS;
		ev->explicit_priv = strrchr(name, '/')[1] != '\0';
		return 0;
	}
	if (err && err->code == PS_EUSAGE)
		return -1;
	rc = resolve_raw(name, &ev->attr, err);
	if (rc == 0) {
		ev->source = PS_SRC_RAW;
		ev->explicit_priv = strchr(name, ':') != NULL;
		return 0;
	}
	if (err && err->code == PS_EUSAGE)
		return -1;
	if ((mods = strrchr(name, ':')) && ps_tracepoint_modifier_like(mods + 1) &&
	    (size_t)(mods - name) < sizeof base) {
		/* "instrs:u": the perf names closest to "instrs", with the modifier kept */
		memcpy(base, name, (size_t)(mods - name));
		base[mods - name] = '\0';
		ps_suggest_init(&s, base, sugg, 3);
		for (size_t i = 0; i < NPERF; i++)
			ps_suggest_add(&s, perf_names[i].name);
		for (int i = 0; i < s.n; i++)
			if (strlen(sugg[i]) + strlen(mods) < sizeof sugg[i])
				strcat(sugg[i], mods);
	} else {
		ps_suggest_init(&s, name, sugg, 3);
		suggest_all(&s);
	}
	ps_suggest_text(&s, text, sizeof text);
	if (s.n == 0)
		return ps_error_set(err, PS_ENOTFOUND, "unknown event '%s' (perfsh --list shows the known ones)", name);
	return ps_error_set(err, PS_ENOTFOUND, "unknown event '%s'%s", name, text);
}

/* ---- suggestions ---- */

static int consider_sysfs(const char *pmu, const char *event, const char *terms, void *ud)
{
	char name[128];
	(void)terms;
	snprintf(name, sizeof name, "%s/%s/", pmu, event);
	ps_suggest_add(ud, name);
	return 0;
}

static void suggest_all(struct ps_suggest *s)
{
	for (size_t i = 0; i < NPERF; i++)
		ps_suggest_add(s, perf_names[i].name);
	ps_sysfs_foreach(ps_sysfs_root(), consider_sysfs, s);
}

int ps_event_suggest(const char *name, char (*out)[128], int max)
{
	struct ps_suggest s;

	ps_suggest_init(&s, name, out, max);
	suggest_all(&s);
	return s.n;
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
	struct ps_event ev;
	char name[256];
	struct ps_event_info info;

	snprintf(name, sizeof name, "%s/%s/", pmu, event);
	if (lc->filter && !strstr(name, lc->filter))
		return 0;
	info.name = name;
	info.desc = terms;
	info.kind = PS_KIND_PMU;
	info.usable = ps_event_resolve(name, &ev, NULL) == 0 && ps_event_opens(&ev);
	return lc->cb(&info, lc->ud);
}

/*
 * A tracepoint is listed as usable without opening it: an open registers the tracepoint's perf
 * probe in the kernel, too much to do for each of thousands. Counting needs root or CAP_PERFMON.
 */
static int list_tracepoint(const char *subsys, const char *event, void *ud)
{
	struct list_ctx *lc = ud;
	struct ps_event_info info;
	char name[256];

	snprintf(name, sizeof name, "%s:%s", subsys, event);
	info.name = name;
	info.desc = "tracepoint";
	info.kind = PS_KIND_TRACEPOINT;
	info.usable = 1;
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
			struct ps_event ev;
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
			info.usable = ps_pmu_present() && ps_event_resolve(name, &ev, NULL) == 0 && ps_event_opens(&ev);
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
		struct ps_event ev;

		if (!(kinds & perf_names[i].kind))
			continue;
		if (filter && !strstr(perf_names[i].name, filter))
			continue;
		info.name = perf_names[i].name;
		info.desc = perf_names[i].desc;
		info.kind = perf_names[i].kind;
		info.usable = ps_event_resolve(info.name, &ev, NULL) == 0 && ps_event_opens(&ev);
		if ((rc = cb(&info, ud)))
			return rc;
	}
	if (kinds & PS_KIND_PMU) {
		if ((rc = ps_sysfs_foreach(ps_sysfs_root(), list_sysfs, &lc)))
			return rc;
		if ((rc = list_pfm_native(&lc)))
			return rc;
	}
	if (kinds & PS_KIND_TRACEPOINT)
		return ps_tracepoint_foreach(filter, list_tracepoint, &lc);
	return 0;
}
