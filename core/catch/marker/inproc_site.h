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
 * checked as the agent will patch it: a function's entry in the program's own file, which
 * ps_site_reloc() can move for a 5-byte jmp, or in a library's (ps_inproc_lib_site()).
 * @out: its address, size and name (the region's spec) on success
 * @err: PS_ENEEDS_UPROBE and one line ending in what to use instead, for what the agent does
 *       not do yet: a line range or address, a program with
 *       an unwinder linked into it, a static program, a site the relocation refuses
 *
 * Return: 0, 1 for a point of the session's own that needs nothing here, -1 with @err set.
 */
int ps_inproc_site(const struct ps_catch_env *env, pid_t pid, const struct ps_catch_point *p, struct ps_mshm_site *out,
		   struct ps_error *err);

#endif
