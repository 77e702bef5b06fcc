/* marker/marker_read.h - reading a thread's counter group: read(2) of the whole group, or rdpmc
 * through each member's mmap page where the kernel allows it; which one is measured once. */
#ifndef PS_MARKER_READ_H
#define PS_MARKER_READ_H

#include <linux/perf_event.h>
#include <stdint.h>

#include "group.h"

/* How a thread's group is read (chosen once at start-up, the same for every thread). */
enum pm_read_mode { PM_READ_SYSCALL = 0, PM_READ_RDPMC = 1 };

#define PM_GROUPS 4 /* counter groups a thread reads at most (== PS_MAX_GROUPS) */

/* The counters of one thread: its group and, in rdpmc mode, each member's mmap page; and the
   groups after the first (read by read(2)), their values after the first's, their times after
   every event's value (word @nev + 2 (k - 1) for group k). */
struct pm_counters {
	struct ps_group g;
	struct perf_event_mmap_page *page[PS_MAX_EVENTS];
	int nmore, nev;
	struct ps_group more[PM_GROUPS - 1];
};

/* What pm_choose_mode() found. */
struct pm_read_choice {
	enum pm_read_mode mode;
	double read_ns, rdpmc_ns; /* ns per read each way; rdpmc_ns < 0: not available */
	char rdpmc_why[96];	  /* why not */
};

/* Open the events @ev on this thread in @ngroups groups of @gsize[g] each (several: read(2)
   only); -1 with @err. */
int pm_counters_open(struct pm_counters *c, const struct ps_event *ev, const int *gsize, int ngroups,
		     enum pm_read_mode mode, struct ps_error *err);
void pm_counters_close(struct pm_counters *c);
/* Values of the groups into @val (with the later groups' times after them), the first group's
   times into @enabled and @running. */
void pm_counters_read(struct pm_counters *c, enum pm_read_mode mode, uint64_t *val, uint64_t *enabled,
		      uint64_t *running);
/* Open the @n events of @ev on this thread, time both ways of reading, say which into @out. */
int pm_choose_mode(const struct ps_event *ev, int n, struct pm_read_choice *out, struct ps_error *err);

/* read(2) as a bare system call: not a cancellation point (libc's read() is, and costs its
   enable/disable of asynchronous cancellation on every call). */
static inline long pm_sys_read(int fd, void *buf, unsigned long n)
{
	long rc;

	__asm__ __volatile__("syscall"
			     : "=a"(rc)
			     : "0"(0L /* SYS_read */), "D"((long)fd), "S"(buf), "d"(n)
			     : "rcx", "r11", "memory");
	return rc;
}

#endif
