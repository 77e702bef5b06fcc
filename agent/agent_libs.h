/* agent/agent_libs.h - a site in a shared library: its run-time address (agent_libs.c). */
#ifndef PA_AGENT_LIBS_H
#define PA_AGENT_LIBS_H

#include <stdint.h>

#include "markshm.h"

/* A site perfsh gave in a library's file (PS_MSHM_SITE_LIB): @s->addr made the run-time address
   of its entry in that library as the loader mapped it. NULL, or why it cannot be (the site is
   left as it is). A site of the program's own is left alone. */
const char *pa_lib_site(struct ps_mshm_site *s);

/* The agent's own code, [pa_agent_lo, pa_agent_lo + pa_agent_len): found with the first
   library site (0 bytes before, when no call from the agent can reach a patched entry). */
extern uint64_t pa_agent_lo, pa_agent_len;

#endif
