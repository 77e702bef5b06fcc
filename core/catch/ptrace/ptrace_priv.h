/* core/catch/ptrace/ptrace_priv.h - the inside of the ptrace catcher, shared by its files:
 * ptrace.c (its ops), catch_ptrace.c (the tracer's stops to hits), threads.c (each thread's
 * counter groups), roles.c (what a breakpoint means to the regions) and sampling.c (sampled
 * regions counted by hardware breakpoints or uprobe events). */
#ifndef PS_PTRACE_PRIV_H
#define PS_PTRACE_PRIV_H

#include <limits.h>
#include <sys/user.h>

#include "catcher.h"
#include "group.h"
#include "machine.h"
#include "ptrace_bp.h"
#include "tracer.h"

#define ROLES_PER_BP 8
/* What a breakpoint means to the regions. */
struct bpent {
	int nroles;
	struct {
		int region;
		enum ps_catch_role kind;
	} roles[ROLES_PER_BP];
};

#define PS_MAX_HW 4 /* debug registers: sampled regions */

struct thr {
	pid_t tid;
	struct thr *next;
	struct ps_group g[PS_MAX_GROUPS];
	int hwfd[PS_MAX_HW]; /* per sampled region: its breakpoint or uprobe event on this thread */
};

#define THR_BUCKETS 256

/* How a sampled region's entries are counted (sampling.c). */
struct sampler {
	enum ps_counter counter;
	unsigned step_len; /* uprobe: the trap comes at entry + step_len, after the first instruction, */
	unsigned sp_down;  /* which moved the stack pointer down this many bytes */
	uint64_t off;	   /* uprobe: the entry's offset in the file @path */
	char path[PATH_MAX];
};

struct ps_ptrace {
	struct ps_catch base;
	struct ps_catch_env *env;
	struct ps_tracer *t;
	struct thr *threads[THR_BUCKETS];
	struct bpent *bps;
	int nbps;
	int sampled[PS_MAX_HW]; /* region ids of the sampled regions */
	struct sampler smp[PS_MAX_HW];
	int nsampled;
};

/* catch_ptrace.c: the tracer's callbacks */
extern const struct ps_tracer_ops ps__ptrace_ops;

/* threads.c */
struct thr *ps__thr_find(struct ps_ptrace *p, pid_t tid);
struct thr *ps__thr_get(struct ps_ptrace *p, pid_t tid, struct ps_error *err);
void ps__thr_remove(struct ps_ptrace *p, pid_t tid);
void ps__thr_free_all(struct ps_ptrace *p);
/* Read every group of the thread: values in event order, then the later groups' times. */
void ps__thr_read(const struct ps_ptrace *p, struct thr *th, struct ps_reading *r);

/* roles.c: breakpoint @addr (run time) gets the role @role of @region; the breakpoint's id */
int ps__pt_role(struct ps_ptrace *p, uint64_t addr, int kind, int region, enum ps_catch_role role,
		struct ps_error *err);
void ps__pt_roles_clear(struct ps_ptrace *p);

/* sampling.c */
int ps__hw_open_thread(struct ps_ptrace *p, struct thr *th, struct ps_error *err);
void ps__hw_close_thread(struct ps_ptrace *p, struct thr *th);
void ps__hw_after_hit(struct ps_ptrace *p, struct thr *th, int slot);
int ps__hw_windows(const struct ps_ptrace *p); /* any window-sampled region? */
void ps__hw_set_window(struct ps_ptrace *p, int open);
uint64_t ps__hw_period_ns(const struct ps_ptrace *p, int open);
void ps__hw_close_all(struct ps_ptrace *p);
int ps__hw_reopen_all(struct ps_ptrace *p);
int ps__hw_at_entry(struct ps_ptrace *p, int id, const struct user_regs_struct *regs);
int ps__hw_sample(struct ps_ptrace *p, int id, const struct ps_sample *how, struct ps_error *err);
int ps__hw_entries(struct ps_ptrace *p, int id, uint64_t *n);

#endif
