/* core/session/session_priv.h - the inside of struct ps_session, shared by session.c (lifecycle, run
 * loop), catch_ptrace.c (stops to hits), sampling.c (sampled regions) and session_regions.c
 * (names to breakpoints). Not for use outside the core. */
#ifndef PS_SESSION_PRIV_H
#define PS_SESSION_PRIV_H

#include <limits.h>
#include <signal.h>

#include "group.h"
#include "hitpath.h"
#include "lines.h"
#include "machine.h"
#include "psnap.h"
#include "session.h"
#include "symbols.h"
#include "tracer.h"

/* What a breakpoint means to a region. */
enum role_kind {
	ROLE_ENTRY = 1, /* a function region's entry */
	ROLE_START,	/* a range region's start */
	ROLE_END,	/* a range region's end */
	ROLE_MAIN,	/* main(): the libraries are mapped */
	ROLE_UNWIND,	/* the unwinder starts: put real return addresses back */
	ROLE_CATCH,	/* an exception was caught: swap them again */
	ROLE_LOAD,	/* the dynamic loader changed the link map (_dl_debug_state) */
};

#define ROLES_PER_BP 8
struct bpent {
	int nroles;
	struct {
		int region;
		enum role_kind kind;
	} roles[ROLES_PER_BP];
};

#define PS_MAX_GROUPS 4
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

struct ps_session {
	struct ps_tracer *t;
	pid_t pid;
	struct ps_event ev[PS_MAX_EVENTS];
	int nev;
	int ngroups; /* the events form ngroups groups, in order */
	int nargs;   /* argument words in every record */
	int gsize[PS_MAX_GROUPS];
	int started;
	struct thr *threads[THR_BUCKETS];
	struct ps_region_info reg[PS_MAX_REGIONS];
	int nreg;
	struct bpent *bps;
	int nbps;
	int main_bp;	       /* where pending library regions get armed, -1 */
	int loader_bp;	       /* _dl_debug_state, -1 */
	unsigned unwind_hooks; /* which breakpoints on the unwinder are in place */
	struct ps_hitpath *hp;
	uint64_t written_at_run_start, max_records, deadline;
	struct ps_symtab *sym;
	struct ps_lines *lines;
	char exe[PATH_MAX];
	char notice[2048];
	char notice_out[2048]; /* what ps_session_notice() returned last */
	struct ps_error fail;  /* an error met inside a callback */
	int failed;
	volatile sig_atomic_t intr; /* ps_session_interrupt() was called during this run */
	int sampled[PS_MAX_HW];	    /* region ids of the sampled regions */
	struct sampler smp[PS_MAX_HW];
	int nsampled;
	char spill_path[PATH_MAX];    /* records go to this file instead of memory */
	struct ps_session_uprobe *up; /* the uprobe catcher's part (session_uprobe.c), or NULL */
	struct ps_session_marker *mk; /* the marker catcher's (session_marker.c, with up), or NULL */
	int unwinds;		      /* the program can unwind exceptions: 1, 0, -1 not known yet */
	uint64_t held_at;	      /* CLOCK_MONOTONIC ns since which a pause holds the program, 0 */
	int detached;		      /* ps_session_detach() let the program go */
};

/* sampling.c */
int ps__hw_open_thread(struct ps_session *s, struct thr *th, struct ps_error *err);
void ps__hw_close_thread(struct ps_session *s, struct thr *th);
void ps__hw_after_hit(struct ps_session *s, struct thr *th, int slot);
int ps__hw_windows(struct ps_session *s); /* any window-sampled region? */
void ps__hw_set_window(struct ps_session *s, int open);
uint64_t ps__hw_period_ns(struct ps_session *s, int open);
void ps__hw_close_all(struct ps_session *s);
int ps__hw_reopen_all(struct ps_session *s);
int ps__hw_at_entry(struct ps_session *s, int id, const struct user_regs_struct *regs);

/* session_save.c: the .psnap header of the session's records, which the spill file and
   ps_session_save() begin with; @h holds what @h->info points at. */
struct ps_session_header {
	struct ps_psnap_info info;
	const char *events[PS_MAX_EVENTS];
	char groups[64];
	struct ps_psnap_meta meta; /* "groups" = the group layout, "2,1" */
};
void ps__session_header(const struct ps_session *s, struct ps_session_header *h);
/* What the session knew when its file was finished, as metadata pairs: "catcher", "lost"
   (records the catcher's rings dropped), "dropped" (records perfsh could not keep),
   "detached" ("1": the program was let go) and "running.ID" (calls of region ID still running
   then, where there are any), then what each region is (kind.ID, entries.ID, sampled.ID:
   ps_psnap_region_pairs); @f holds what the pairs point at. */
struct ps_session_facts {
	size_t n;
	struct ps_psnap_meta meta[4 + (1 + PS_PSNAP_REGION_PAIRS) * PS_MAX_REGIONS];
	char text[4 + (1 + PS_PSNAP_REGION_PAIRS) * PS_MAX_REGIONS][2][24];
};
void ps__session_facts(const struct ps_session *s, struct ps_session_facts *f);

/* session.c: the threads' counter groups */
struct thr *ps__thr_find(struct ps_session *s, pid_t tid);
struct thr *ps__thr_get(struct ps_session *s, pid_t tid, struct ps_error *err);
void ps__thr_remove(struct ps_session *s, pid_t tid);

/* catch_ptrace.c: the tracer's callbacks */
extern const struct ps_tracer_ops ps__ptrace_ops;

/* session_uprobe.c: the uprobe catcher (s->up) in place of breakpoints */
int ps__uprobe_start(struct ps_session *s, char *const argv[], pid_t pid, struct ps_error *err);
int ps__uprobe_role(struct ps_session *s, uint64_t addr, int region, enum role_kind role, struct ps_error *err);
/* What a plain site is: a function's entry (with its return), a start, an end, or both at once. */
enum ps_uprobe_point { PS_UPOINT_ENTRY, PS_UPOINT_START, PS_UPOINT_END, PS_UPOINT_POINT };
/* Probe file @path at @offset for @region (semaphore at @ref_ctr_offset, 0 for none). */
int ps__uprobe_site(struct ps_session *s, const char *path, uint64_t offset, int region, enum ps_uprobe_point kind,
		    uint64_t ref_ctr_offset, struct ps_error *err);
/* session.c: whether a pause of the run is a sampling window's edge at @edge (only that). */
int ps__window_edge(struct ps_session *s, uint64_t edge);
/* Sample region @id in time windows (the probes switched on and off); the rest is refused. */
int ps__uprobe_sample(struct ps_session *s, int id, const struct ps_sample *how, struct ps_error *err);
/* Forget the last sites, those of @region (a region that failed to arm); no-op with ptrace. */
void ps__uprobe_drop_region(struct ps_session *s, int region);
int ps__uprobe_run(struct ps_session *s, struct ps_error *err);
struct ps_catch_uprobe *ps__uprobe_catcher(struct ps_session *s);
/* Make the run return 0 soon (async-signal-safe, for ps_session_interrupt()). */
void ps__uprobe_interrupt(struct ps_session *s);
/* After a run returned 0: stop the program until the next run, its records drained. */
int ps__uprobe_hold(struct ps_session *s, struct ps_error *err);
int ps__uprobe_detach(struct ps_session *s, struct ps_error *err);
uint64_t ps__uprobe_lost(const struct ps_session *s);
void ps__uprobe_free(struct ps_session *s);

/* session_marker.c: the marker catcher (s->mk), on the uprobe catcher's process side (s->up)
   with no probe site */
int ps__marker_start(struct ps_session *s, char *const argv[], struct ps_error *err);
int ps__marker_run(struct ps_session *s, struct ps_error *err);
/* After a run returned 0: stop the program until the next run, detach or free. */
void ps__marker_hold(struct ps_session *s);
/* -1 with @err naming region @name when the session is the marker catcher's, else 0. */
int ps__marker_only(const struct ps_session *s, const char *name, struct ps_error *err);
int ps__marker_detach(struct ps_session *s, struct ps_error *err);
/* Once the first run has let the program go: its end (as ps_tracer_status), and 1. */
int ps__marker_released(const struct ps_session *s);
int ps__marker_status(const struct ps_session *s, int *exited, int *code, int *signo);
uint64_t ps__marker_lost(const struct ps_session *s);
void ps__marker_free(struct ps_session *s);

/* session_regions.c */
int ps__bp_role(struct ps_session *s, uint64_t addr, int kind, int region, enum role_kind role, struct ps_error *err);
int ps__arm_pending(struct ps_session *s, int final);
void ps__arm_unwind_hooks(struct ps_session *s);
int ps__rearm_after_exec(struct ps_session *s);
void ps__forget_images(struct ps_session *s);
int ps__exe_path(struct ps_session *s, struct ps_error *err); /* s->exe from /proc/PID/exe */
/* A new region in the table (not counted in s->nreg until the caller has armed it). */
struct ps_region_info *ps__new_region(struct ps_session *s, enum ps_region_kind kind, const char *name,
				      const char *spec, unsigned flags, struct ps_error *err);
void ps__notice(struct ps_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
