/* core/events/group.h - perf event groups: one leader, read together, scaled from enabled/running. */
#ifndef PS_GROUP_H
#define PS_GROUP_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "events.h"
#include "snapshot.h"

/* Options of ps_group_open(). */
enum {
	PS_GROUP_INHERIT = 1 << 0,	  /* count the threads and children the task creates later */
	PS_GROUP_ENABLE_ON_EXEC = 1 << 1, /* start counting at the task's next exec */
	PS_GROUP_ENABLED = 1 << 2,	  /* start counting at once */
};

/**
 * struct ps_group - an open group. fds[0] is the leader. Zero-initialised or closed: n == 0.
 */
struct ps_group {
	int n;
	int fds[PS_MAX_EVENTS];
	uint64_t ids[PS_MAX_EVENTS];
	struct ps_event ev[PS_MAX_EVENTS];
	pid_t pid;
	int cpu;
};

/**
 * struct ps_reading - one read of a group: raw values in event order and the group's times.
 */
struct ps_reading {
	int n;
	uint64_t time_enabled, time_running;
	uint64_t val[PS_MAX_EVENTS];
};

/**
 * ps_group_open() - open @n resolved events as one group on @pid (0 = self; a tid for one
 * thread) and @cpu (-1 = any). Every member is opened with the leader disabled; with
 * PS_GROUP_ENABLED the group is then enabled whole (a member added to an enabled group of a
 * running task counts nothing until that task is next scheduled in), with
 * PS_GROUP_ENABLE_ON_EXEC it starts at the task's exec. On failure nothing stays open and @err says why: the PMU's
 * counter count when the group does not fit, perf_event_paranoid when permission is denied,
 * the absence of a hardware PMU for a hardware event.
 */
int ps_group_open(struct ps_group *g, const struct ps_event *ev, int n, pid_t pid, int cpu, unsigned flags,
		  struct ps_error *err);
int ps_group_enable(struct ps_group *g, struct ps_error *err);
int ps_group_disable(struct ps_group *g, struct ps_error *err);
int ps_group_reset(struct ps_group *g, struct ps_error *err);

/* Read all members with one read(2). */
int ps_group_read(const struct ps_group *g, struct ps_reading *r, struct ps_error *err);

/* Close every fd; safe to call twice. */
void ps_group_close(struct ps_group *g);

/**
 * ps_scale() - value scaled for multiplexing: @val * @enabled / @running. *@ratio (if not NULL)
 * gets running / enabled: 1 when the group was on the PMU all the time, 0 when never (then the
 * scaled value is 0, since nothing is known).
 */
double ps_scale(uint64_t val, uint64_t enabled, uint64_t running, double *ratio);

/* Text for perf_event_paranoid's current value: "2 (...)" */
void ps_paranoid_text(char *buf, size_t n);

#endif
