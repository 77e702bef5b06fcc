/* core/catch/marker/inproc_site.h - what the marker catcher needs for --backend inproc, where
 * the program's marker library is the agent (agent/), loaded by LD_PRELOAD, which patches the
 * function entries perfsh lists in the control block (markshm.h: sites). */
#ifndef PS_INPROC_SITE_H
#define PS_INPROC_SITE_H

#include <limits.h>

#include "catcher.h"
#include "markshm.h"

/* perfsh's environment while it starts the program, and how to put it back. */
struct ps_inproc_env {
	char *preload; /* LD_PRELOAD before, or NULL */
};

/* The agent's path (PERFSH_AGENT, or beside perfsh) in @out: 0, or -1 with @err (one line). */
int ps_inproc_agent(char *out, size_t n, struct ps_error *err);

/**
 * ps_inproc_available() - whether the agent can be preloaded: found beside perfsh, or named by
 * PERFSH_AGENT (a build without it cannot use --backend inproc).
 * @why: what is missing, where it returns 0
 *
 * Return: 1 if it can, 0 if not.
 */
int ps_inproc_available(char *why, size_t n);

/**
 * ps_inproc_env_set() - LD_PRELOAD with the agent first (found beside perfsh, or named by
 * PERFSH_AGENT), and PERFSH_PRELOAD_WAS, for the program about to be started.
 *
 * Return: 0, or -1 with @err set (no agent found).
 */
int ps_inproc_env_set(struct ps_inproc_env *save, struct ps_error *err);
/* perfsh's own environment put back, @save released. */
void ps_inproc_env_restore(struct ps_inproc_env *save);

/**
 * ps_inproc_site() - the site for point @p of process @pid (held at its first instruction),
 * checked as the agent will patch it: a function's entry, or an instruction boundary inside
 * a function where a range region starts or ends (PS_ROLE_START, PS_ROLE_END), in the
 * program's own file, which ps_site_reloc() can move for a 5-byte jmp (no branch of the
 * function's flow graph lands inside the bytes displaced; each instruction relocatable), or a
 * function's entry in a library's (ps_inproc_lib_site()).
 * @out: its address, function, size, roles, the bytes displaced and name (the region's spec)
 *       on success
 * @err: PS_ENEEDS_UPROBE and one line ending in what to use instead, for what the agent does
 *       not do yet: a single address, a program with an unwinder linked into it, a static
 *       program, a site the relocation refuses
 *
 * Return: 0, 1 for a point of the session's own that needs nothing here, -1 with @err set.
 */
int ps_inproc_site(const struct ps_catch_env *env, pid_t pid, const struct ps_catch_point *p, struct ps_mshm_site *out,
		   struct ps_error *err);

/* Whether a site named @name (a region's spec) is in @c's list. */
int ps_inproc_sites_named(const struct ps_mshm_ctl *c, const char *name);

/**
 * ps_inproc_sites_add() - site @s put in @c's list for the agent: a second point of the same
 * range at its address adds its role to the site there (an end and a start at one address run
 * in the order they were armed: PS_MSHM_SITE_START_FIRST where the start came first), the same
 * function's entry again is the site there.
 * @err: PS_ENEEDS_UPROBE and one line for a site whose bytes another site's patch takes (or
 *       the reverse), or a list that is full
 *
 * Return: 1 added, 0 merged into a site there, -1 with @err set.
 */
int ps_inproc_sites_add(struct ps_mshm_ctl *c, const struct ps_mshm_site *s, struct ps_error *err);

/* The sites named @name at the end of @c's list taken out (a region that failed to arm). */
void ps_inproc_sites_drop(struct ps_mshm_ctl *c, const char *name);

#endif
