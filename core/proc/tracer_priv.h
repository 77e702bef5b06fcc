/* core/proc/tracer_priv.h - the inside of the tracer, shared by its files (tracer.c lists them and
 * what each owns). Not for use outside them. */
#ifndef PS_TRACER_PRIV_H
#define PS_TRACER_PRIV_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include <unistd.h>

#include "tracer.h"
#include "x86emu.h"
#include "x86insn.h"

#define SLOT_SIZE 32
#define NSLOT 2048
#define SCRATCH_SIZE (NSLOT * SLOT_SIZE)
#define SLOT_TRAMP (NSLOT - 1) /* _start's first instruction */
#define SLOT_SPARE (NSLOT - 2) /* breakpoints with ids beyond the cached slots */
#define SLOT_TOUCH (NSLOT - 3) /* "push %rax; pop %rax; int3": grows the stack */
#define SLOT_USER (NSLOT - 3)

#define INT3 0xcc /* the breakpoint instruction */

/* EFLAGS' resume flag: the next instruction does not raise a debug exception (a hardware
 * breakpoint at rip is stepped over once). */
#define EFLAGS_RF 0x10000ull

/* si_code of a SIGTRAP sent by a perf event with sigtrap=1 (<asm-generic/siginfo.h>). */
#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

/* The sig_data of a perf-event trap carries the breakpoint number in its low 24 bits (the
 * layer above sets it; see PS_BP_HW_BASE in tracer.h). */
#define HW_ID_MASK 0xffffffull

#define PTRACE_OPTS                                                                                                    \
	(PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |     \
	 PTRACE_O_TRACESYSGOOD)

enum emu {
	EMU_XOL,  /* run out of line, int3 after it */
	EMU_STEP, /* run out of line, single-step (indirect branches) */
	EMU_SKIP, /* no effect: endbr64, nop */
	EMU_PUSHF,
	EMU_CALL, /* call rel32 to arg */
	EMU_JMP,  /* jmp rel to arg */
	EMU_JCC,  /* jcc (cc = condition) to arg */
	EMU_LOOP, /* loopne/loope/loop/jrcxz (cc = opcode & 3) to arg */
	EMU_RET,
	EMU_REG, /* register-only (push: and its store), by x86emu.c (@x) */
};

struct bp {
	uint64_t addr;
	int kind, enabled;
	uint8_t orig, len, emu, cc;
	int8_t xreg;	 /* register replacing rip in the out-of-line copy, -1 none */
	uint8_t fixcall; /* indirect call: fix the pushed return address */
	uint8_t xol_len;
	int64_t arg;
	struct ps_x86_emu x; /* EMU_REG */
	uint8_t xol[SLOT_SIZE];
};

struct frame {
	uint64_t ret, sp, cookie;
	int bp;
	int restored; /* the real return address is back in its slot (an exception unwinds) */
};

enum { TH_RUN, TH_HELD, TH_EARLY, TH_AWAIT };

struct proc {
	pid_t pid;
	int memfd;
	int writes_bps; /* breakpoints are written into its memory */
	int sees_bps;	/* its memory holds our int3s (itself or shared with a parent) */
	int silent;	/* released vfork child: handled, never reported */
	int nthreads;
	uint64_t entry; /* AT_ENTRY, 0 until read */
	int tramp_on;	/* int3 written at entry */
	struct bp tramp;
	uint64_t scratch;
	uint64_t nwrites; /* mem_wr() calls so far: what was read ahead is stale once it moves */
	int *slot;	  /* per slot: bp index + 1 held there, -1 fixed content written */
	struct proc *next;
};

struct thread {
	pid_t tid;
	int state;
	int group;     /* held in a group-stop: resume with PTRACE_LISTEN */
	int announced; /* thread_new() was called */
	int release;   /* fork child to clean and detach at its first stop */
	int newkind;   /* PTRACE_EVENT_* that created it, 0 if unknown yet */
	struct proc *proc;
	struct frame *fr;
	int nfr, capfr;
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
	int hw_traps;	   /* hardware breakpoints of the layer above are in use */
	uint64_t ret_slot; /* set by hit() of a perf trap: where the return address is (0: at rsp) */
	struct thread **th;
	unsigned thcap, nth;
	struct proc *procs;
	struct bp *bp;
	int nbp, capbp;
	int *bph; /* address hash: bp index, -1 empty */
	unsigned bphcap;
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

/* ---------------------------------------------------------------- small helpers */

static inline int mem_rd(struct proc *p, uint64_t a, void *buf, size_t n)
{
	return pread(p->memfd, buf, n, (off_t)a) == (ssize_t)n ? 0 : -1;
}

static inline int mem_wr(struct proc *p, uint64_t a, const void *buf, size_t n)
{
	p->nwrites++;
	return pwrite(p->memfd, buf, n, (off_t)a) == (ssize_t)n ? 0 : -1;
}

static inline unsigned long long *regp(struct user_regs_struct *r, int n)
{
	switch (n) {
	case 0:
		return &r->rax;
	case 1:
		return &r->rcx;
	case 2:
		return &r->rdx;
	case 3:
		return &r->rbx;
	case 4:
		return &r->rsp;
	case 5:
		return &r->rbp;
	case 6:
		return &r->rsi;
	case 7:
		return &r->rdi;
	case 8:
		return &r->r8;
	case 9:
		return &r->r9;
	case 10:
		return &r->r10;
	case 11:
		return &r->r11;
	case 12:
		return &r->r12;
	case 13:
		return &r->r13;
	case 14:
		return &r->r14;
	default:
		return &r->r15;
	}
}

static inline void stash(struct thread *th, int sig)
{
	if (th->nsig < (int)(sizeof th->sig / sizeof th->sig[0]))
		th->sig[th->nsig++] = sig;
}

static inline int is_stopsig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
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
static inline int quiet(const struct ps_tracer *t, const struct thread *th)
{
	return t->settling || !th->proc || th->proc->silent;
}

/* tracer_proc.c */
struct thread *ps__tr_th_find(const struct ps_tracer *t, pid_t tid);
struct thread *ps__tr_th_new(struct ps_tracer *t, pid_t tid, struct proc *p, int state);
void ps__tr_th_free(struct ps_tracer *t, struct thread *th);
int ps__tr_fr_push(struct thread *th, const struct frame *f);
struct proc *ps__tr_proc_new(struct ps_tracer *t, pid_t pid);
void ps__tr_proc_free(struct ps_tracer *t, struct proc *p);
uint64_t ps__tr_read_auxv(pid_t pid, unsigned long type);
void ps__tr_thread_gone(struct ps_tracer *t, struct thread *th, int st);
int ps__tr_born(struct ps_tracer *t, struct thread *ch, int sig, int ev);
int ps__tr_on_newchild(struct ps_tracer *t, struct thread *th, int ev);
int ps__tr_on_exec(struct ps_tracer *t, struct thread *th);
void ps__tr_detach_all(struct ps_tracer *t);

/* tracer_bp.c */
int ps__tr_bp_find(const struct ps_tracer *t, uint64_t a);
int ps__tr_bph_rebuild(struct ps_tracer *t, unsigned cap);
void ps__tr_bp_write(struct ps_tracer *t, const struct bp *b, int armed);
void ps__tr_bp_unwrite(struct ps_tracer *t, struct proc *p);
void ps__tr_bp_drop_all(struct ps_tracer *t, struct proc *except);
ssize_t ps__tr_code_read(struct ps_tracer *t, struct proc *p, uint64_t a, uint8_t *buf, size_t n);
struct proc *ps__tr_main_proc(struct ps_tracer *t);

/* tracer_ret.c */
void ps__tr_unwind_below(struct ps_tracer *t, struct thread *th, uint64_t sp);
int ps__tr_catch_return(struct ps_tracer *t, struct thread *th, const struct user_regs_struct *r, int id,
			uint64_t cookie);
int ps__tr_on_tramp(struct ps_tracer *t, struct thread *th, struct user_regs_struct *r);
void ps__tr_frames_unswap(struct proc *p, const struct thread *th, uint64_t sp);

/* tracer_stop.c */
void ps__tr_resume(struct ps_tracer *t, struct thread *th, int sig);
int ps__tr_on_trap(struct ps_tracer *t, struct thread *th);
int ps__tr_handle(struct ps_tracer *t, pid_t pid, int st);
int ps__tr_settle(struct ps_tracer *t);

/* tracer_wait.c */
pid_t ps__tr_wait(struct ps_tracer *t, int *st);
/* Around ps_tracer_run()'s loop: the signals ps__tr_wait() lets in only while it sleeps. */
void ps__tr_wait_begin(struct ps_tracer *t);
/* At an entry stop of @th: read its CPU and the word at @rsp in one call (tracer_proc.c). */
void ps__tr_prefetch(struct ps_tracer *t, struct thread *th, uint64_t rsp);
void ps__tr_wait_end(struct ps_tracer *t);
int ps__tr_tty_signal(const struct ps_tracer *t, pid_t tid, int sig);

/* tracer_xol.c */
int ps__tr_bp_prepare(struct bp *b, const uint8_t *code, size_t n, struct ps_error *err);
int ps__tr_displaced(struct ps_tracer *t, struct thread *th, const struct bp *b, int slot, int key,
		     struct user_regs_struct *r, int *fsig);
/* Unmap the scratch page of @th's process: stopped thread @th runs a munmap system call, as it
 * was mapped, and gets its registers back. 0 (also without a page), 1 the thread is gone, -1. */
int ps__tr_scratch_unmap(struct ps_tracer *t, struct thread *th);

#endif
