/* core/events/machine.h - what this machine lets perfsh count function entries with, found by
 * self-tests where the kernel cannot tell (some virtual machines open hardware breakpoints
 * that never fire). */
#ifndef PS_MACHINE_H
#define PS_MACHINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* How the entries of a sampled function region are counted. */
enum ps_counter {
	PS_COUNT_INT3 = 0,	 /* an int3 stop per entry; perfsh decides which are sampled */
	PS_COUNT_BREAKPOINT = 1, /* a hardware execute breakpoint, counted in the kernel */
	PS_COUNT_UPROBE = 2,	 /* a uprobe perf event, counted in the kernel */
};

/* "int3", "breakpoint", "uprobe". */
const char *ps_counter_name(enum ps_counter c);

/**
 * ps_machine_forced() - the mechanism named by the environment variable PERFSH_SAMPLING
 * (breakpoint, uprobe or int3). Returns 1 and sets @c when it is set, 0 when it is not,
 * -1 (PS_EUSAGE) when it names none of them.
 */
int ps_machine_forced(enum ps_counter *c, struct ps_error *err);

/**
 * ps_machine_breakpoints_fire() - whether a hardware execute breakpoint counts: a perf event
 * on a function of perfsh itself, called a known number of times. Tested once per process.
 * Returns 1, or 0 with the reason in @why.
 */
int ps_machine_breakpoints_fire(char *why, size_t n);

/**
 * ps_machine_uprobes_fire() - the same test with a uprobe perf event (needs root or
 * CAP_PERFMON and a kernel with the uprobe PMU). Tested once per process.
 */
int ps_machine_uprobes_fire(char *why, size_t n);

/* The uprobe PMU's perf event type (/sys/bus/event_source/devices/uprobe/type), or -1. */
int ps_machine_uprobe_type(void);

#endif
