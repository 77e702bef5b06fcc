/* core/catch/marker/markcatch_priv.h - the marker catcher's state, shared by its two files:
 * marker_catcher.c (starting, arming, running, holding, detaching) and markdrain.c (the rings
 * and slots drained into the hit path). */
#ifndef PS_MARKCATCH_PRIV_H
#define PS_MARKCATCH_PRIV_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "catcher.h"
#include "markshm.h"

struct ps_markcatch {
	struct ps_catch base;
	struct ps_catch_env *env;
	struct ps_tracer *t; /* from the start to the first run */
	int fd;
	struct ps_mshm_ctl *ctl;
	size_t bytes;
	uint32_t seen;			/* names of the library looked at so far */
	int map[PS_MSHM_REGIONS];	/* library region id -> session region, -1 */
	uint64_t gone[PS_MSHM_REGIONS]; /* begins counted by slots since freed */
	uint64_t lost, unmatched, fast; /* of slots since freed */
	uint64_t unarmed;		/* records of markers no region asked for */
	pid_t pid;
	int released;			/* let go of ptrace at the first run */
	int pidfd;			/* then its end is seen here */
	int ended, exited, code, signo; /* how it ended, once released */
	int let_go;			/* t:detach(): it runs on after the session */
	struct ps_tracer *hold;		/* seized and stopped for a pause, or NULL */
	int inproc;			/* --backend inproc: the agent patches function entries and range points */
	uint32_t told;			/* sites whose refusal by the agent was told */
	int attached;			/* -p: the agent is loaded into it at the first run; never killed */
	int injected;			/* the agent took the block: the detach asks it to unpatch */
	char agent[PATH_MAX];		/* -p: the agent's path */
};

/* The session region of marker @name (with the agent: of function or range @name), or -1. */
int ps__mk_region_of(const struct ps_markcatch *m, const char *name);
/* Map the names the library published since the last look. */
void ps__mk_look_at_names(struct ps_markcatch *m);
/* Every record waiting in the slots to the hit path, the hits threads left open when they or the
   program ended among them; the regions' entries brought up to date; the agent's refusals told. */
void ps__mk_drain(struct ps_markcatch *m);

#endif
