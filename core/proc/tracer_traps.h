/* core/proc/tracer_traps.h - the inside of the tracer that a layer above may use, and the trap hooks
 * through which the tracer hands it the stops that are not process control.
 *
 * The tracer (core/proc/) controls processes: it starts or attaches to them, waits for their stops,
 * follows their threads, forks and execs, and detaches. What patches a program's code (breakpoints,
 * displaced instructions, caught returns: the ptrace catcher, core/catch/ptrace/) registers a struct
 * ps_tracer_traps with ps__tr_set_traps(); the tracer calls its hooks and never names that layer. A
 * hook runs on the tracer's thread while the thread it is given is stopped.
 */
#ifndef PS_TRACER_TRAPS_H
#define PS_TRACER_TRAPS_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include <unistd.h>

#include "tracer.h"

struct ps_tracer;
struct ps_tr_thread;

/**
 * struct ps_tracer_traps - what the tracer asks of the layer that patches the program's code.
 * @trap:       a SIGTRAP signal-delivery stop of @th during a run: handle it and resume or hold
 *              the thread (ps__tr_resume(); a SIGTRAP that is not the layer's goes to the
 *              program). 0, or -1 with t->err set.
 * @settle:     a SIGTRAP stop of @th while every thread is being held (attach, detach, hold),
 *              with its registers @r: return 1 when it was the layer's trap and @th was put back
 *              where it stopped (registers set), 0 when the signal is the program's.
 * @thread_end: @th ends, or exec replaced its image: report what is open for it (before the
 *              thread_exit callback).
 * @fork:       @child (a new process, its struct ps_tr_proc new) was forked by @parent: give it a copy
 *              of the parent's per-process state and the per-thread state it inherits.
 * @release:    forked @child is let go (not followed): undo the layer's changes to its memory.
 * @exec:       exec gave @th's process a new image: its per-process state is void.
 * @detach:     every thread is held and about to be detached: undo every change to the memory
 *              of the traced processes.
 * @free:       the tracer is being freed: release the layer's state (t->traps_ud).
 */
struct ps_tracer_traps {
	int (*trap)(struct ps_tracer *t, struct ps_tr_thread *th);
	int (*settle)(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r);
	void (*thread_end)(struct ps_tracer *t, struct ps_tr_thread *th);
	void (*fork)(struct ps_tracer *t, struct ps_tr_thread *parent, struct ps_tr_thread *child);
	void (*release)(struct ps_tracer *t, struct ps_tr_thread *child);
	void (*exec)(struct ps_tracer *t, struct ps_tr_thread *th);
	void (*detach)(struct ps_tracer *t);
	void (*free)(struct ps_tracer *t);
};

#define PTRACE_OPTS                                                                                                    \
	(PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |     \
	 PTRACE_O_TRACESYSGOOD)

enum { TH_RUN, TH_HELD, TH_EARLY, TH_AWAIT };

/* One address space. */
struct ps_tr_proc {
	pid_t pid;
	int memfd;
	int writes_bps; /* the trap layer's breakpoints are written into its memory */
	int sees_bps;	/* its memory holds them (written there, or shared with a parent) */
	int silent;	/* released vfork child: handled, never reported */
	int nthreads;
	uint64_t entry;	  /* AT_ENTRY, 0 until read */
	uint64_t nwrites; /* mem_wr() calls so far: what was read ahead is stale once it moves */
	void *trap;	  /* the trap layer's state of this process: one malloc'd block, freed with it */
	struct ps_tr_proc *next;
};

struct ps_tr_thread {
	pid_t tid;
	int state;
	int group;     /* held in a group-stop: resume with PTRACE_LISTEN */
	int announced; /* thread_new() was called */
	int release;   /* fork child to clean and detach at its first stop */
	int newkind;   /* PTRACE_EVENT_* that created it, 0 if unknown yet */
	struct ps_tr_proc *proc;
	void *trap; /* the trap layer's state of this thread: one malloc'd block, freed with it */
	int statfd;
	uint64_t rseq_cpu; /* address of cpu_id in its rseq area; 0 unknown (ps_tracer_cpu()) */
	int rseq_wait;	   /* ps_tracer_cpu() calls before the rseq area is looked for again */
	/* read ahead at an entry stop, with one process_vm_readv() (ps__tr_prefetch()): the CPU and
	   the return address at [pre_rsp]; good for stop number pre_stop while the process's
	   nwrites is pre_nw */
	uint64_t pre_stop, pre_nw, pre_rsp, pre_ret;
	int pre_cpu;
	int nsig;
	int sig[4];
};

struct ps_tracer {
	struct ps_tracer_ops ops;
	void *ud;
	pid_t pid;
	int spawned, attached, follow, settling;
	const struct ps_tracer_traps *traps; /* NULL until a layer registers (ps__tr_set_traps()) */
	void *traps_ud;			     /* that layer's state */
	struct ps_tr_thread **th;
	unsigned thcap, nth;
	struct ps_tr_proc *procs;
	volatile sig_atomic_t intr;
	uint64_t deadline;	      /* CLOCK_MONOTONIC ns at which ps_tracer_run() pauses, 0: none */
	sigset_t sig_old, sig_during; /* the mask outside ps_tracer_run(), and while it sleeps */
	uint64_t sig_polled;	      /* when pending signals were last let in (CLOCK_MONOTONIC ns) */
	int sig_fresh;		      /* the last wait took a change after a SIGCHLD (tracer_wait.c) */
	int pause;
	const char *abort;
	int ended, code, signo;
	uint64_t stops;
	struct ps_error *err; /* where handlers report: the caller's, or errbuf */
	struct ps_error errbuf;
};

static inline int mem_rd(struct ps_tr_proc *p, uint64_t a, void *buf, size_t n)
{
	return pread(p->memfd, buf, n, (off_t)a) == (ssize_t)n ? 0 : -1;
}

static inline int mem_wr(struct ps_tr_proc *p, uint64_t a, const void *buf, size_t n)
{
	p->nwrites++;
	return pwrite(p->memfd, buf, n, (off_t)a) == (ssize_t)n ? 0 : -1;
}

/* Keep signal @sig for @th's next resume. */
static inline void stash(struct ps_tr_thread *th, int sig)
{
	if (th->nsig < (int)(sizeof th->sig / sizeof th->sig[0]))
		th->sig[th->nsig++] = sig;
}

/* Note what a callback returned: -1 aborts the run, PS_TRACER_PAUSE pauses it. */
static inline void cbres(struct ps_tracer *t, int rc, const char *what)
{
	if (rc < 0)
		t->abort = what;
	else if (rc & PS_TRACER_PAUSE)
		t->pause = 1;
}

/* Whether @th's events are kept from the callbacks (settling, a released vfork child). */
static inline int quiet(const struct ps_tracer *t, const struct ps_tr_thread *th)
{
	return t->settling || !th->proc || th->proc->silent;
}

/* ps__tr_set_traps() - register the trap layer: its hooks and its state (t->traps_ud). */
void ps__tr_set_traps(struct ps_tracer *t, const struct ps_tracer_traps *traps, void *ud);

/* The thread of id @tid, or NULL. */
struct ps_tr_thread *ps__tr_th_find(const struct ps_tracer *t, pid_t tid);
/* The main process (the one spawned or attached to), or NULL once it is gone. */
struct ps_tr_proc *ps__tr_main_proc(struct ps_tracer *t);
/* Entry @type of /proc/@pid/auxv, 0 if missing. */
uint64_t ps__tr_read_auxv(pid_t pid, unsigned long type);
/* Resume stopped thread @th, delivering @sig and the signals it is owed (or hold it: a pause). */
void ps__tr_resume(struct ps_tracer *t, struct ps_tr_thread *th, int sig);
/* Thread @th ended with wait status @st: report it and forget it. */
void ps__tr_thread_gone(struct ps_tracer *t, struct ps_tr_thread *th, int st);
/* At an entry stop of @th: read its CPU and the word at @rsp in one call. */
void ps__tr_prefetch(struct ps_tracer *t, struct ps_tr_thread *th, uint64_t rsp);

#endif
