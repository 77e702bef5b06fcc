/* agent/agent_attach.h - the agent loaded into a running process by perfsh's attach (-p):
 * the sites patched while perfsh holds every thread (agent_attach.c), and their original bytes
 * put back, while the program runs, on detach or when perfsh ends (agent_unpatch.c). */
#ifndef PA_AGENT_ATTACH_H
#define PA_AGENT_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#include "markshm.h"

/* agent.c: the sites of @c patched as the constructor patches them, each write of a site's jmp
   handed to pa_attach_defer() instead. */
void pa_patch_attach(struct ps_mshm_ctl *c);

/* agent.c's write of @n bytes at @addr: 1 when an attach keeps it for later (the bytes are
   written by perfsh_agent_patch() while every other thread is held), 0 to write it now. */
int pa_attach_defer(uint64_t addr, const uint8_t *bytes, size_t n);

/* agent_unpatch.c */
/* Core serialisation of every thread of the process (membarrier SYNC_CORE) made possible, and
   the SIGTRAP handler that sends a thread meeting a site's int3 on to its relocated original
   instructions installed. 0, or -1 with errno (the kernel has no SYNC_CORE membarrier). */
int pa_unpatch_setup(void);
/* Every other thread's core serialised before it runs user code again. 0 or -1. */
int pa_sync_core(void);
/* @n bytes at @addr in code of protection @prot (PROT_*) written, the pages writable meanwhile. */
int pa_code_write(uint64_t addr, const uint8_t *bytes, size_t n, int prot);
/* Site @addr is patched (its first 5 bytes were @orig): a thread at an int3 there goes on at
   @resume (the copies of its original instructions). 0, or -1 when the table is full. */
int pa_unpatch_add(uint64_t addr, const uint8_t orig[5], uint64_t resume, int prot);
/* Every site added has its original bytes back, written while the program runs: int3 first,
   then the tail, then the first byte, each step followed by pa_sync_core(). */
void pa_unpatch_all(void);

#endif
