/* core/events/machine.c - self-tests of the ways to count function entries in the kernel.
 *
 * A hardware execute breakpoint may open without error and never fire (the debug registers
 * of some virtual machines): the only way to know is to count a function run a known number
 * of times. The test runs in perfsh itself, on a function of its own, once per process.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "machine.h"
#include "procmaps.h"

#define PROBE_CALLS 5

const char *ps_counter_name(enum ps_counter c)
{
	return c == PS_COUNT_BREAKPOINT ? "breakpoint" : c == PS_COUNT_UPROBE ? "uprobe" : "int3";
}

int ps_machine_forced(enum ps_counter *c, struct ps_error *err)
{
	const char *v = getenv("PERFSH_SAMPLING");

	if (!v || !v[0])
		return 0;
	for (enum ps_counter k = PS_COUNT_INT3; k <= PS_COUNT_UPROBE; k++)
		if (!strcmp(v, ps_counter_name(k))) {
			*c = k;
			return 1;
		}
	return ps_error_set(err, PS_EUSAGE,
			    "PERFSH_SAMPLING is '%.40s': set it to breakpoint, uprobe or int3, or unset it", v);
}

/* The function the self-tests count: not inlined, not merged, called through a volatile
   pointer. */
__attribute__((noinline)) static void probe_target(int *n)
{
	__asm__ volatile("" : : "r"(n) : "memory");
	(*n)++;
}

static void (*volatile probe_call)(int *) = probe_target;

static void *closer(void *fd)
{
	close((int)(intptr_t)fd);
	return NULL;
}

/* Close @fd in a thread of its own that nothing waits for: closing a uprobe event waits for
   RCU grace periods (50-200 ms measured), and the answer is known before. The thread blocks
   every signal, so none meant for perfsh is taken there. */
static void close_later(int fd)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	int ok = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_attr_init(&at) == 0) {
		ok = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
		     pthread_create(&t, &at, closer, (void *)(intptr_t)fd) == 0;
		pthread_attr_destroy(&at);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ok)
		close(fd);
}

/* Open @a on this thread, call the target PROBE_CALLS times, and read the count; @later: close
   the event in a thread of its own (close_later()). */
static int count_calls(struct perf_event_attr *a, const char *what, int later, char *why, size_t n)
{
	uint64_t v = 0;
	int fd, calls = 0;

	fd = (int)syscall(SYS_perf_event_open, a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		snprintf(why, n, "a %s perf event does not open: %s", what, strerror(errno));
		return 0;
	}
	for (int i = 0; i < PROBE_CALLS; i++)
		probe_call(&calls);
	if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
		v = 0;
	if (later)
		close_later(fd);
	else
		close(fd);
	if (v != PROBE_CALLS) {
		snprintf(why, n, "a %s on a function called %d times counted %llu", what, PROBE_CALLS,
			 (unsigned long long)v);
		return 0;
	}
	return 1;
}

int ps_machine_breakpoints_fire(char *why, size_t n)
{
	static int known = -1;
	static char reason[256];
	struct perf_event_attr a;

	if (known < 0) {
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = PERF_TYPE_BREAKPOINT;
		a.bp_type = HW_BREAKPOINT_X;
		a.bp_addr = (uint64_t)(uintptr_t)probe_call;
		a.bp_len = sizeof(long);
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		known = count_calls(&a, "hardware breakpoint", 0, reason, sizeof reason);
	}
	if (!known)
		snprintf(why, n, "%s", reason);
	return known;
}

int ps_machine_uprobe_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int type = -1;

	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	return type;
}

int ps_machine_uprobes_fire(char *why, size_t n)
{
	static int known = -1;
	static char reason[256];

	if (known < 0) {
		struct perf_event_attr a;
		struct ps_error err;
		char path[4096];
		uint64_t off;
		int type = ps_machine_uprobe_type();

		if (type < 0) {
			snprintf(reason, sizeof reason,
				 "the kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe)");
			known = 0;
		} else if (ps_maps_file_offset(0, (uint64_t)(uintptr_t)probe_call, path, sizeof path, &off, &err)) {
			snprintf(reason, sizeof reason, "%.200s", err.msg);
			known = 0;
		} else {
			memset(&a, 0, sizeof a);
			a.size = sizeof a;
			a.type = (uint32_t)type;
			a.config1 = (uint64_t)(uintptr_t)path;
			a.config2 = off;
			a.exclude_kernel = 1;
			known = count_calls(&a, "uprobe", 1, reason, sizeof reason);
		}
	}
	if (!known)
		snprintf(why, n, "%s", reason);
	return known;
}
