/* core/catch/marker/marker_status.h - what the marker library in a program says, as the marker
 * catcher reads it from the memory it shares with the program (markshm.h). */
#ifndef PS_MARKER_STATUS_H
#define PS_MARKER_STATUS_H

#include <stdint.h>

#include "markshm.h"

/* What the program's marker library says (marker catcher). */
struct ps_marker_status {
	int state;	    /* 0: not answered yet (the program has no marker library), 1: running, 2: off */
	char why[256];	    /* off: why; running: why rdpmc is not used, if it is not */
	char read_mode[16]; /* "read" or "rdpmc" */
	double read_ns, rdpmc_ns;
	uint64_t threads, no_slot; /* threads measured; threads left out (no free slot) */
	uint64_t lost;		   /* records dropped by full rings */
	uint64_t unmatched, fast;  /* ends without a begin; hits under the slow-hit threshold */
	uint64_t unarmed;	   /* records of no region (none expected) */
	struct ps_mshm_policy pol; /* the policy in force */
};

#endif
