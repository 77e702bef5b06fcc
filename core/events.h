/* core/events.h - resolve event names to perf_event_attr, list and suggest them. */
#ifndef PS_EVENTS_H
#define PS_EVENTS_H

#include <linux/perf_event.h>

#include "error.h"

/* Where a name resolved. */
enum ps_event_source { PS_SRC_PFM = 1, PS_SRC_SYSFS = 2, PS_SRC_RAW = 3 };

/**
 * struct ps_event - one resolved event.
 * @name:   the name as the user wrote it (the key of readings)
 * @attr:   type, config, config1/2 and privilege bits; other fields are the group's business
 * @source: which resolver found it
 */
struct ps_event {
	char name[128];
	struct perf_event_attr attr;
	enum ps_event_source source;
};

/* Kinds, for listing. */
enum ps_event_kind { PS_KIND_HW = 1, PS_KIND_SW = 2, PS_KIND_CACHE = 4, PS_KIND_PMU = 8 };

/**
 * ps_event_resolve() - resolve @name: libpfm4 first (perf names, native names, :u/:k),
 * then the kernel's sysfs PMUs (pmu/event=0x..,umask=0x../ or pmu/name/), then raw rNNNN.
 * By default only user space is counted (exclude_kernel, exclude_hv); ":k" adds the kernel.
 * An unknown name fails with PS_ENOTFOUND and "unknown event 'x'; did you mean 'a', 'b' or 'c'?".
 */
int ps_event_resolve(const char *name, struct ps_event *ev, struct ps_error *err);

/**
 * ps_event_suggest() - the up to @max known names closest to @name, best first.
 * Returns how many were written to @out (each a static or list-owned string copied into out[i]).
 */
int ps_event_suggest(const char *name, char (*out)[128], int max);

/* One entry of a listing. @usable: 1 when perf_event_open accepts it on this machine. */
struct ps_event_info {
	const char *name;
	const char *desc;
	enum ps_event_kind kind;
	int usable;
};

typedef int (*ps_event_cb)(const struct ps_event_info *e, void *ud);

/**
 * ps_events_foreach() - call @cb for every event of the kinds in @kinds (a mask of
 * ps_event_kind) whose name contains @filter (NULL = all). Stops early when @cb returns
 * nonzero and returns that value.
 */
int ps_events_foreach(unsigned kinds, const char *filter, ps_event_cb cb, void *ud);

/* 1 when the kernel has a hardware PMU driver (a hardware event opens on this thread). */
int ps_pmu_present(void);

/* Generic hardware counters the CPU reports (CPUID); 0 if unknown. */
int ps_pmu_counters(void);

/* Directory of the kernel's PMUs; tests may point it elsewhere. */
void ps_events_set_sysfs_root(const char *dir);

#endif
