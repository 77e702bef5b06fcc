/* agent/agent_points.h - what a patched point of a range region runs (its trampoline calls the
 * point hook): where a hit of the range starts or ends, in the marker library. */
#ifndef PA_AGENT_POINTS_H
#define PA_AGENT_POINTS_H

#include <stdint.h>

/* The hook every point trampoline calls (assembly: it keeps every register and the flags). */
void pa_point_stub(void);

/* Site @idx is a point of the marker library's region @id from now on, where its hits start,
   end, or both (@flags: PS_MSHM_SITE_START, PS_MSHM_SITE_END; the end first unless
   PS_MSHM_SITE_START_FIRST). */
void pa_points_site(unsigned idx, int id, unsigned flags);

#endif
