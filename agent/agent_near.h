/* agent/agent_near.h - memory for trampolines within reach of a jmp rel32 from a site. */
#ifndef PA_AGENT_NEAR_H
#define PA_AGENT_NEAR_H

#include <stddef.h>
#include <stdint.h>

/* @n bytes, readable, writable and executable, within +-1.5 GB of @site; 0 when none can be had. */
uint64_t pa_near_alloc(uint64_t site, size_t n);
/* Every chunk handed out made read-only and executable (the trampolines are written). */
void pa_near_seal(void);
/* The protection (PROT_*) of the mapping at @addr in this process, or -1 (none). */
int pa_prot_of(uint64_t addr);

#endif
