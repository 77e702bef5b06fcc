/* core/run.h - count a whole child command, like perf stat. */
#ifndef PS_RUN_H
#define PS_RUN_H

#include <sys/types.h>

#include "error.h"
#include "group.h"

/**
 * struct ps_run_result - the end of a counted command.
 * @reading:  the group's counts over the command and all its threads and children
 * @exited:   1 if it exited, with @code; else it was killed by @signo
 * @wall_ns:  from exec to exit, CLOCK_MONOTONIC
 * @ev:       the events as opened: a fallback of ps_event_relax() is in ev[i].fallback
 */
struct ps_run_result {
	struct ps_reading reading;
	int exited, code, signo;
	uint64_t wall_ns;
	struct ps_event ev[PS_MAX_EVENTS];
};

/**
 * ps_run() - fork, open the group on the child with enable_on_exec and inherit, let it exec
 * @argv[0] (searched in PATH), wait for it and read the group. A command that cannot be run
 * fails with "cannot run 'x': No such file or directory". SIGINT and SIGQUIT reach the child
 * (same process group); perfsh waits for it.
 */
int ps_run(char *const argv[], const struct ps_event *ev, int n, struct ps_run_result *res, struct ps_error *err);

/* ps_run_forward() - from a signal handler (installed without SA_RESTART) while ps_run()
 * waits: send @sig to the command. Async-signal-safe. */
void ps_run_forward(int sig);

/* CLOCK_MONOTONIC in ns. */
uint64_t ps_now_ns(void);

#endif
