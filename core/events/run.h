/* core/events/run.h - count a whole child command, like perf stat. */
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
 * @passed:   the signal ps_run_forward() passed on to the command (0: none)
 * @killed:   1 when ps_run() killed the command (SIGKILL) because it ignored or blocked
 *            @passed, outlived it by PS_RUN_GRACE_S seconds, or a second signal came
 */
struct ps_run_result {
	struct ps_reading reading;
	int exited, code, signo;
	int passed, killed;
	uint64_t wall_ns;
	struct ps_event ev[PS_MAX_EVENTS];
};

/* Seconds a command may run on after a signal passed on to it, before it is killed. */
#define PS_RUN_GRACE_S 2

/**
 * ps_run() - fork, open the group on the child with enable_on_exec and inherit, let it exec
 * @argv[0] (searched in PATH), wait for it and read the group (@n 0: count nothing, only run
 * it). A command that cannot be run fails with "cannot run 'x': No such file or directory".
 * SIGINT and SIGQUIT from the terminal reach the child (same process group); a signal given
 * to ps_run_forward() is passed on, and the command ends promptly (see @killed).
 */
int ps_run(char *const argv[], const struct ps_event *ev, int n, struct ps_run_result *res, struct ps_error *err);

/* ps_run_forward() - from a signal handler (installed without SA_RESTART) while ps_run()
 * waits: send @sig to the command, or only see that it ends when it was @delivered to it
 * already (the terminal's keys reach the whole process group). Async-signal-safe. */
void ps_run_forward(int sig, int delivered);

/* CLOCK_MONOTONIC in ns. */
uint64_t ps_now_ns(void);

#endif
