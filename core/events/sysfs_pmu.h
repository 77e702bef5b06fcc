/* core/events/sysfs_pmu.h - events of the kernel's PMUs as /sys/bus/event_source/devices describes them. */
#ifndef PS_SYSFS_PMU_H
#define PS_SYSFS_PMU_H

#include <linux/perf_event.h>

#include "error.h"

/* The kernel's PMUs: one directory each, with type, format/ and events/. */
#define PS_SYSFS_ROOT "/sys/bus/event_source/devices"

/* Point the directory of PMUs elsewhere (tests, fuzz targets); NULL restores PS_SYSFS_ROOT. */
void ps_sysfs_set_root(const char *dir);

/* The directory of PMUs in use: the @root that resolving, listing and suggesting pass below. */
const char *ps_sysfs_root(void);

/**
 * ps_sysfs_parse() - parse "pmu/term=val,term,.../mods" or "pmu/eventname/mods" against
 * the PMU's type and format files under @root. Sets attr->type, config, config1, config2 and,
 * from the trailing modifiers (u, k, h), the exclude bits.
 * Returns 0, or -1 with PS_ENOTFOUND when @spec is not of this syntax or names no PMU, and
 * PS_EUSAGE (with a message) when it does but a term or value is wrong.
 */
int ps_sysfs_parse(const char *root, const char *spec, struct perf_event_attr *attr, struct ps_error *err);

typedef int (*ps_sysfs_cb)(const char *pmu, const char *event, const char *terms, void *ud);

/* Call @cb for every named event of every PMU under @root ("pmu", "event", "event=0x3c,..."). */
int ps_sysfs_foreach(const char *root, ps_sysfs_cb cb, void *ud);

/**
 * ps_sysfs_pmu_names() - names of the PMUs under @root, sorted, up to @max into @out, with their
 * perf type in @types (if not NULL). Returns how many were written.
 */
int ps_sysfs_pmu_names(const char *root, char (*out)[64], unsigned *types, int max);

/* 1 when @pmu is a CPU's core PMU (cpu, cpu_core, cpu_atom, armv8_pmuv3...): its events take counters. */
int ps_sysfs_pmu_is_core(const char *pmu);

#endif
