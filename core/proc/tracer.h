/* core/proc/tracer.h - process control over ptrace: start or attach to a program, wait for its
 * stops, follow its threads, forks and execs, hold it, detach from it.
 *
 * No Lua, no counters: the layer above opens counters per thread in thread_new(). Breakpoints and
 * caught returns are the ptrace catcher's (core/catch/ptrace/ptrace_bp.h), which hooks into the
 * tracer (tracer_traps.h) and reports through hit() and ret(). All callbacks run on the tracer's
 * thread while the thread they name is stopped. Not thread-safe: one thread drives one tracer.
 *
 * Callbacks are never called from ps_tracer_detach() or ps_tracer_free().
 */
#ifndef PS_TRACER_H
#define PS_TRACER_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "error.h"

struct ps_tracer;

/**
 * struct ps_tracer_ops - what the tracer reports. Any member may be NULL.
 * @thread_new:  a thread exists and is stopped before it runs any instruction of its
 *               own (main thread after exec/attach, each clone, each followed fork).
 *               For the threads present at spawn/attach it is called at the start of the
 *               first ps_tracer_run(), before anything runs. Return 0, or -1 to abort.
 * @thread_exit: the thread is gone (exited or killed); its open frames were reported
 *               through ret(unwound=1) just before.
 * @hit:         a breakpoint of the ptrace catcher (ptrace_bp.h) was hit; @regs are the registers with rip = breakpoint
 *               address. For PS_BP_FUNC return PS_TRACER_CATCH_RETURN to have the return
 *               reported through ret(); store anything in *@cookie to get it back there.
 *               PS_TRACER_PAUSE (may be OR'd) makes ps_tracer_run() return after this
 *               stop, with this thread kept stopped (past the breakpoint) until the
 *               next ps_tracer_run(); other threads keep running. -1 aborts the run
 *               (the thread goes on).
 * @ret:         a call caught at entry returned (the thread is stopped before it runs
 *               caller code); @unwound=1 when the frame was skipped (longjmp, exception,
 *               thread exit, exec) and this is reported late. May return PAUSE or -1.
 * @exec:        exec replaced the image of process @pid: every breakpoint was dropped
 *               (ids restart from 0); the callback may add new ones. -1 aborts.
 */
struct ps_tracer_ops {
	int (*thread_new)(void *ud, pid_t tid);
	void (*thread_exit)(void *ud, pid_t tid);
	int (*hit)(void *ud, pid_t tid, int bp_id, const struct user_regs_struct *regs, uint64_t *cookie);
	int (*ret)(void *ud, pid_t tid, int bp_id, uint64_t cookie, int unwound);
	int (*exec)(void *ud, pid_t pid);
};

/* What a callback may return (besides 0 and -1): pause the run (see hit()). */
enum { PS_TRACER_PAUSE = 2 };

/* ps_tracer_load_bias() when the module is not mapped */
#define PS_TRACER_NO_BIAS UINT64_MAX

/**
 * ps_tracer_spawn() - start @argv[0] (searched in PATH) traced.
 * @t:    receives the tracer
 * @argv: NULL-terminated argument vector
 * @ops:  callbacks (copied)
 * @ud:   passed to every callback
 * @err:  filled on failure ("cannot run 'X': No such file or directory")
 *
 * Returns with the new image loaded and stopped at its first instruction (the
 * PTRACE_EVENT_EXEC stop); thread_new() for it is called by the first ps_tracer_run().
 * The child gets PR_SET_PDEATHSIG(SIGKILL) and PTRACE_O_EXITKILL: it dies with the tracer.
 *
 * Return: 0 or -1.
 */
int ps_tracer_spawn(struct ps_tracer **t, char *const argv[], const struct ps_tracer_ops *ops, void *ud,
		    struct ps_error *err);

/**
 * ps_tracer_attach() - seize every thread of running process @pid and stop them.
 *
 * Returns with all threads stopped; thread_new() for each is called by the first
 * ps_tracer_run(). Return: 0 or -1.
 */
int ps_tracer_attach(struct ps_tracer **t, pid_t pid, const struct ps_tracer_ops *ops, void *ud, struct ps_error *err);

/* The main process id. */
pid_t ps_tracer_pid(const struct ps_tracer *t);

/**
 * ps_tracer_set_follow_fork() - trace forked children (1) or release them (0, default).
 *
 * Released children get every breakpoint byte and every swapped return address of the
 * forking thread restored in their copy of memory before they run. A released vfork
 * child shares memory with its parent: it stays traced, silently (no callback), until it
 * execs or exits. A followed child keeps the breakpoints, and its thread inherits the
 * open frames of the forking thread (their returns are reported on the child's tid with
 * the same cookies).
 */
int ps_tracer_set_follow_fork(struct ps_tracer *t, int follow);

/**
 * ps_tracer_run() - let the traced tree run and handle its stops.
 *
 * Return: 1 when every traced process has ended (again 1 on later calls), 0 when a
 * callback asked to pause or ps_tracer_interrupt() was called, -1 on error or when a
 * callback returned -1. Callable again to continue after 0 or -1. While it is not
 * running, threads that are not stopped keep running (their stops wait in the kernel),
 * unless ps_tracer_hold() stopped them; a thread whose callback asked to pause stays stopped
 * until the next call.
 *
 * It waits with waitpid(-1, __WALL): the exit of another child of the calling process
 * that is not traced is consumed and lost while it runs.
 */
int ps_tracer_run(struct ps_tracer *t, struct ps_error *err);

/**
 * ps_tracer_hold() - after ps_tracer_run() returned 0: stop every thread of the traced tree
 * until the next ps_tracer_run(), ps_tracer_detach() or ps_tracer_free().
 *
 * Each thread gets a PTRACE_INTERRUPT; the stops that come before it are handled as in a run
 * (callbacks included: a hit, a thread's birth or end, an exec), and every thread is kept
 * stopped after its stop. The threads are ptrace-stopped, never group-stopped: should the
 * tracer die, the kernel lets them go on (an attached process), or kills them
 * (PTRACE_O_EXITKILL, a spawned one). Return: 0, or -1 with @err (the threads that could be
 * stopped are held).
 */
int ps_tracer_hold(struct ps_tracer *t, struct ps_error *err);

/**
 * ps_tracer_interrupt() - make ps_tracer_run() return 0 soon. Async-signal-safe.
 *
 * It only sets a flag; ps_tracer_run() waits with SIGINT, SIGTERM, SIGHUP and SIGALRM
 * unblocked only inside ppoll(), so a handler of one of them that calls it is seen at once.
 * A SIGINT or SIGQUIT that a terminal sends to a spawned program is not delivered to it.
 */
void ps_tracer_interrupt(struct ps_tracer *t);

/**
 * ps_tracer_set_deadline() - make ps_tracer_run() return 0 once CLOCK_MONOTONIC reaches
 * @deadline_ns (0: no deadline), even if no stop arrives (a thread blocked in a system call
 * or inside one long call). The running threads go on; ps_tracer_detach() stops them.
 */
void ps_tracer_set_deadline(struct ps_tracer *t, uint64_t deadline_ns);

/**
 * ps_tracer_status() - how the main process ended.
 * @exited: 1 once it ended (NULL allowed)
 * @code:   its exit code if it exited normally, else -1
 * @signo:  the signal that killed it, else 0
 *
 * Return: 1 if it ended, 0 if not yet.
 */
int ps_tracer_status(const struct ps_tracer *t, int *exited, int *code, int *signo);

/**
 * ps_tracer_detach() - stop every thread, restore every breakpoint byte and every
 * swapped return address, unmap the scratch page used to run displaced instructions (a
 * munmap system call run by one of the process's stopped threads, whose registers are put
 * back), and PTRACE_DETACH; the process continues unharmed, its memory map as it was found
 * (pending signals are delivered). The page stays only while a vfork child shares the
 * process's memory or where every thread is in a group-stop. After it, the tracer can only
 * be freed.
 */
int ps_tracer_detach(struct ps_tracer *t, struct ps_error *err);

/* ps_tracer_free() - still attached to a spawned child: kill it (and followed children)
 * and reap; attached by pid: detach. NULL is allowed. */
void ps_tracer_free(struct ps_tracer *t);

/**
 * ps_tracer_load_bias() - where a module is loaded, from /proc/pid/maps.
 * @path_or_null: the module's path (or its base name), NULL for the main executable
 *
 * Return: the load bias (0 for a non-PIE executable), PS_TRACER_NO_BIAS if not mapped.
 */
uint64_t ps_tracer_load_bias(struct ps_tracer *t, const char *path_or_null);

/* ps_tracer_cpu() - the CPU stopped thread @tid last ran on, -1: the cpu_id of its rseq area
 * (one read of its memory), else field 39 of its /proc stat. */
int ps_tracer_cpu(struct ps_tracer *t, pid_t tid);

/* ps_tracer_stops() - how many ptrace stops were handled so far. */
uint64_t ps_tracer_stops(const struct ps_tracer *t);

/* ps_tracer_entry() - the return trampoline (AT_ENTRY of the main process), 0 if unknown. */
uint64_t ps_tracer_entry(struct ps_tracer *t);

#endif
