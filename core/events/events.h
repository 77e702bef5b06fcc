/* core/events/events.h - resolve event names to perf_event_attr, list and suggest them.
 *
 * The events room (core/events/): what can be counted and how. Event names (perf's, libpfm4's,
 * sysfs PMUs', tracepoints, raw codes) resolve here; groups (group.h) open and read them on a
 * thread; the topology (topology.h) places CPUs in cores and caches; run.h counts a whole
 * command; machine.h finds out which ways of catching a function entry this kernel has. It
 * calls only core/base/ and core/binary/. */
#ifndef PS_EVENTS_H
#define PS_EVENTS_H

#include <linux/perf_event.h>

#include "error.h"

/* Where a name resolved. */
enum ps_event_source { PS_SRC_PFM = 1, PS_SRC_SYSFS = 2, PS_SRC_RAW = 3, PS_SRC_TRACEPOINT = 4 };

/* How an open changed the privilege bits the name asked for (see ps_event_relax()). */
enum ps_event_fallback {
	PS_FB_NONE = 0,
	PS_FB_KERNEL_TOO = 1, /* the PMU refuses user-only counting: kernel and user counted */
	PS_FB_USER_ONLY = 2,  /* perf_event_paranoid forbids the kernel: user space only */
};

/**
 * struct ps_event - one resolved event.
 * @name:   the name as the user wrote it (the key of readings)
 * @attr:   type, config, config1/2 and privilege bits; other fields are the group's business
 * @source: which resolver found it
 * @explicit_priv: 1 when the name chose what to count (":u", ":k", "/uk"); its bits are never relaxed
 * @fallback: set by an open that had to relax the bits (enum ps_event_fallback)
 */
struct ps_event {
	char name[128];
	struct perf_event_attr attr;
	enum ps_event_source source;
	unsigned char explicit_priv;
	unsigned char fallback;
};

/* Kinds, for listing. */
enum ps_event_kind { PS_KIND_HW = 1, PS_KIND_SW = 2, PS_KIND_CACHE = 4, PS_KIND_PMU = 8, PS_KIND_TRACEPOINT = 16 };

/**
 * ps_event_resolve() - resolve @name: libpfm4 first (perf names, native names, :u/:k), then
 * tracepoints (SUBSYS:NAME, from tracefs), then the kernel's sysfs PMUs
 * (pmu/event=0x..,umask=0x../ or pmu/name/), then raw rNNNN.
 * By default only user space is counted (exclude_kernel, exclude_hv); ":k" adds the kernel;
 * tracepoints count wherever they fire.
 * An unknown name fails with PS_ENOTFOUND and "unknown event 'x'; did you mean 'a', 'b' or 'c'?",
 * the candidates of the same kind (a tracepoint's subsystem, a PMU's events) where the name
 * says its kind. A pure function of the name and the files under the sysfs and tracefs roots:
 * it opens no perf event.
 */
int ps_event_resolve(const char *name, struct ps_event *ev, struct ps_error *err);

/**
 * ps_event_relax() - after perf_event_open(@attr) of @ev failed with errno @e, change @attr as
 * perf does when the privilege bits perfsh chose by default are the cause: a PMU that refuses
 * to exclude (EINVAL, EOPNOTSUPP; msr, uncore PMUs) counts kernel and user; an event that would
 * count the kernel where perf_event_paranoid forbids it (EACCES, EPERM) counts user space only.
 * Returns the ps_event_fallback to retry with, or PS_FB_NONE when there is nothing to change
 * (the bits were the name's own choice, or the error has another cause).
 */
int ps_event_relax(const struct ps_event *ev, struct perf_event_attr *attr, int e);

/* "the msr PMU" for a sysfs event msr/..., else "its PMU". */
void ps_event_pmu_phrase(const struct ps_event *ev, char *buf, size_t n);

/* One line saying what @ev's fallback changed ("msr/tsc/: counting kernel and user (...)"); 0 if none. */
int ps_event_note(const struct ps_event *ev, char *buf, size_t n);

/* 1 when @attr takes one of the CPU PMU's counters (hardware, cache, raw and core PMU events). */
int ps_event_takes_counter(const struct perf_event_attr *attr);

/* "software events, tracepoints and the breakpoint, msr and uprobe PMUs": what counts here. */
void ps_event_countable_text(char *buf, size_t n);

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

/*
 * Generic hardware counters of the CPU PMU: 0 without a PMU, else what the CPU reports (CPUID on
 * x86) or, where it does not say, the largest group of branch events that opens.
 */
int ps_pmu_counters(void);

/* 1 when @ev opens on this thread, with ps_event_relax()'s fallback where it needs one. */
int ps_event_opens(const struct ps_event *ev);

#endif
