/* core/session/session_priv.h - the inside of struct ps_session, shared by the session's files:
 * session.c (lifecycle, run loop), session_regions.c and session_find.c (names to points),
 * session_sdt.c (SDT regions) and session_save.c (the .psnap header and facts). Not for use
 * outside core/session/. */
#ifndef PS_SESSION_PRIV_H
#define PS_SESSION_PRIV_H

#include <limits.h>

#include "catcher.h"
#include "lines.h"
#include "psnap.h"
#include "session.h"
#include "symbols.h"
#include "tracer.h"

#define PS_NOTICE_MAX 2048

/*
 * A session: its catcher (core/catch/catcher.h), which it only calls through the catcher's ops,
 * and what it lends the catcher (@env: the events, the region table, the hit path, the run's
 * limits, the notices). The rest is how the session finds its regions in the program's files.
 */
struct ps_session {
	struct ps_catch *cat;
	struct ps_tracer *t;	  /* the catcher's tracer: the program's pid, stops, load biases, forks */
	struct ps_catch_env *env; /* lent to the catcher */
	struct ps_symtab *sym;
	struct ps_lines *lines;
	char *exe;	       /* the program's file (PATH_MAX), "" until looked up */
	char *spill_path;      /* records go to this file instead of memory, or NULL */
	char *notice_out;      /* what ps_session_notice() returned last (PS_NOTICE_MAX) */
	int main_bp;	       /* where pending library regions get armed, -1 */
	int loader_bp;	       /* _dl_debug_state, -1 */
	unsigned unwind_hooks; /* which points on the unwinder are in place (8, 9: watch_catches()) */
	int unwinds;	       /* the program can unwind exceptions: 1, 0, -1 not known yet */
	uint64_t held_at;      /* CLOCK_MONOTONIC ns since which a pause holds the program, 0 */
	int detached;	       /* ps_session_detach() let the program go */
};

/* Counter words of a record: the events, then two time words per group after the first. */
static inline int ps__nvals(const struct ps_catch_env *env)
{
	return env->nev + 2 * (env->ngroups > 1 ? env->ngroups - 1 : 0);
}

/* The session's catcher's capabilities (enum ps_catch_caps). */
static inline unsigned ps__caps(const struct ps_session *s)
{
	return s->cat->ops->caps;
}

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
/* Start recording once the events are final (the first run), into the spill file if one is set. */
int ps__start_records(struct ps_session *s, struct ps_error *err);

/* session_regions.c: from names to points the catcher arms */
/* Arm the point at run-time address @addr of @region for @role (@kind: PS_BP_FUNC or PS_BP_ADDR). */
int ps__arm_addr(struct ps_session *s, uint64_t addr, int kind, int region, enum ps_catch_role role,
		 struct ps_error *err);
int ps__arm_pending(struct ps_session *s, int final);
/* The catcher's callbacks (struct ps_catch_env): the libraries changed, the program exec'd. */
int ps__libs_mapped(void *owner, int final);
int ps__exec_seen(void *owner);

/* session_find.c: where the code is */
void ps__forget_images(struct ps_session *s);
int ps__exe_path(struct ps_session *s, struct ps_error *err); /* s->exe from /proc/PID/exe */
int ps__symtab(struct ps_session *s, struct ps_error *err);   /* s->sym of s->exe */
/* s->lines, or NULL without an error when the program has no DWARF */
struct ps_lines *ps__lines(struct ps_session *s, struct ps_error *err);
uint64_t ps__main_bias(struct ps_session *s);
/* Whether link-time address @addr of the program is code a probe may go at (core/binary/codeaddr.h). */
int ps__code_addr(struct ps_session *s, uint64_t addr, unsigned flags, struct ps_error *err);
/* The run-time entry of @fn in the program or library @lib: 1 found, 0 not mapped yet, -1. */
int ps__find_function(struct ps_session *s, const char *lib, const char *fn, uint64_t *addr, struct ps_error *err);
int ps__unwinds(struct ps_session *s); /* the program can unwind exceptions */
/* @fn of library @lib not mapped yet: the file its loader will map, @path, and the offset there. */
int ps__lib_func_file(struct ps_session *s, const char *lib, const char *fn, char path[PATH_MAX], uint64_t *off,
		      struct ps_error *err);
/* -1 with @err naming region @name when the session's catcher arms no code (markers only). */
int ps__arms_code(struct ps_session *s, const char *name, struct ps_error *err);
/* A new region in the table (not counted in nreg until the caller has armed it). */
struct ps_region_info *ps__new_region(struct ps_session *s, enum ps_region_kind kind, const char *name,
				      const char *spec, unsigned flags, struct ps_error *err);

#endif
