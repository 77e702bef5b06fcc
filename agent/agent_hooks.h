/* agent/agent_hooks.h - what a patched entry runs: the entry hook (through each site's
 * trampoline) and the exit trampoline its return address is swapped for. */
#ifndef PA_AGENT_HOOKS_H
#define PA_AGENT_HOOKS_H

#include <stdint.h>

#include "markshm.h"

/* The entry hook every trampoline calls (assembly: it keeps every argument register). */
void pa_enter_stub(void);
/* The xsave area's size and the components saved, set before any site is patched. */
extern uint64_t pa_xsave_size;
extern uint32_t pa_xsave_mask;
extern uint8_t pa_xsavec; /* 1: the compacted form, xsavec */
/* Site @idx is the marker library's region @id from now on; @every_level: its nested calls are
   hits too (else only the outermost call on a thread is, the others counted as entries). */
void pa_hooks_site(unsigned idx, int id, int every_level);

/* This thread's frames below stack pointer @sp are gone (an unwinder left them): their hits end
   as unwound. The others' return addresses are put back (@back 0: an unwinder is about to walk
   the stack) or swapped for the exit trampoline again (@back 1: an exception was caught). */
void pa_hooks_unwind(uint64_t sp, int back);

#endif
