/* marker/marker_config.h - what the marker library measures and how: set once at start-up, from
 * the environment (file mode) or from perfsh's control block (shared mode, marker_live.c),
 * before markers are on; read by every hit after. */
#ifndef PS_MARKER_CONFIG_H
#define PS_MARKER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "marker_read.h"
#include "markshm.h"
#include "perfsh/marker.h"

struct pm_config {
	int on;	  /* markers set up (a thread's first hit looks): 0 = off in this process */
	int live; /* shared mode: records go to perfsh's control block (marker_live.c), not a file */
	/* what a hit reads: the policy and the armed regions, the process's own (file mode) or the
	   shared control block's, which perfsh changes live */
	struct ps_mshm_policy *pol, own_pol;
	uint8_t *armed, own_armed[PS_MARKER_REGIONS];
	int nev;
	struct ps_event ev[PS_MAX_EVENTS];
	int ngroups, gsize[PM_GROUPS]; /* the events in groups of gsize[g] each, in order */
	int nvals;	/* words of a record's values: nev, then (enabled, running) of each later group */
	size_t recsize; /* of a record: ps_snap_size(nvals, PS_MARKER_FIELDS) */
	struct pm_read_choice read;
};

extern struct pm_config pm_cfg;

/* The process's own policy (every hit, every marker armed) in force. */
void pm_config_defaults(void);
/* Resolve the comma-separated @list into the events, in groups split by ';' ("a,b;c": the
   agent's several groups); -1 with @err. */
int pm_config_events(const char *list, struct ps_error *err);
/* Choose how the events are read (marker_read.h) and the record size; -1 with @err. */
int pm_config_measure(struct ps_error *err);
/* PERFSH_SAMPLE, PERFSH_EVERY, PERFSH_SLOW_US and PERFSH_EVENTS, then pm_config_measure();
   -1 after a warning (markers off). */
int pm_config_from_env(void);

#endif
