/* agent/agent_hooks.c - a hit of a patched function: the entry hook opens it in the marker
 * library (ps_marker_begin(), the first four integer arguments as its fields) and swaps the
 * function's return address for the exit trampoline, keeping the real one on the thread's
 * shadow stack; the exit trampoline ends the hit (ps_marker_end()) and returns to the real
 * address. Both keep every register the ABI gives a meaning at that point: the arguments
 * (rdi, rsi, rdx, rcx, r8, r9, rax for varargs, r10 the static chain, xmm0-7) at the entry,
 * the return values (rax, rdx, xmm0, xmm1, st0) at the exit, and every other one too (see the
 * stubs below); the flags carry nothing at either.
 *
 * The shadow stack is a stack: recursion pushes one frame per call. A frame whose function
 * was left by longjmp is dropped when a frame above it on the machine stack returns. An
 * unwinder meeting a swapped return address would find no unwind information there: the
 * unwinder's entry points put the real ones back first, and the catch swaps the live frames'
 * again (agent_unwind.c).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent_hooks.h"
#include "agent_libs.h"
#include "agent_regs.h"
#include "marker_hit.h"
#include "perfsh/marker.h"

#define SHADOW_DEPTH 256

struct shadow {
	uint64_t sp;  /* where the return address is, at the entry */
	uint64_t ret; /* the real return address */
	unsigned idx; /* the site */
};

static __thread int busy __attribute__((tls_model("initial-exec"))); /* in a hook: calls are the agent's */
typedef struct shadow pa_frame;

/* A thread's shadow stack and open hits, allocated at its first hit and freed when it ends: a
   library dlopen()ed into a running process (perfsh's attach) gets a few hundred bytes of
   initial-exec TLS at most, so the thread's TLS holds only a pointer to them. The names below
   read them as errno reads the thread's own: pa_quick() takes the full path while @tls is NULL,
   and pa_enter() allocates it there, with every register saved. */
struct pa_tls {
	pa_frame frames[SHADOW_DEPTH];
	unsigned depth;
	uint32_t open[PS_MSHM_SITES];
};
static __thread struct pa_tls *tls __attribute__((tls_model("initial-exec")));
#define shadow (tls->frames)
#define depth (tls->depth)
#define open (tls->open)
static pthread_key_t tls_key;

static void tls_free(void *p)
{
	tls = NULL;
	free(p);
}

static void tls_key_make(void)
{
	pthread_key_create(&tls_key, tls_free);
}

/* This thread's frames, allocated: 0, or -1 (no memory: the call is no hit). */
static int tls_get(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (tls)
		return 0;
	pthread_once(&once, tls_key_make);
	if (!(tls = calloc(1, sizeof *tls)))
		return -1;
	pthread_setspecific(tls_key, tls);
	return 0;
}

static int site_id[PS_MSHM_SITES];
static unsigned site_every[PS_MSHM_SITES];

void pa_exit_stub(void);
int pa_quick(uint64_t idx, uint64_t sp);
void pa_enter(uint64_t idx, uint64_t *sp, const uint64_t *regs);
uint64_t pa_exit(uint64_t sp);

void pa_hooks_site(unsigned idx, int id, int every_level)
{
	if (idx < PS_MSHM_SITES) {
		site_id[idx] = id;
		site_every[idx] = (unsigned)every_level;
	}
}

/* Whether the frame at shadow @f is at or below stack pointer @sp on the same stack (within
   STACK_SPAN of it; a frame on another stack, a signal's or a coroutine's, is not). */
#define STACK_SPAN (64ull << 20)
#define BELOW(f, at) ((f)->sp <= (at) && (at) - (f)->sp < STACK_SPAN)

/* The hits of this thread's frames at or below stack pointer @sp end as unwound: a function
   called at @sp (or above) is not inside them, so longjmp has left them. */
static void left(uint64_t sp)
{
	unsigned d = depth;

	while (d > 0 && BELOW(&shadow[d - 1], sp)) {
		d--;
		open[shadow[d].idx]--;
		pm_end_unwound(site_id[shadow[d].idx]);
	}
	depth = d;
}

/* Before anything but the general registers is saved: 1 when the call at @sp is no hit to open
   (a nested call, or one the sampling draw leaves out: its entry counted), 0 for the full path
   (which also ends the hits of frames longjmp has left). */
__attribute__((visibility("hidden"), target("general-regs-only"))) int pa_quick(uint64_t idx, uint64_t sp)
{
	if (idx >= PS_MSHM_SITES || busy || *(uint64_t *)sp - pa_agent_lo < pa_agent_len)
		return 1; /* a call of the agent's own (a library's function it calls too) */
	if (!tls)
		return 0; /* the thread's first hit: pa_enter() allocates its frames */
	if (depth > 0 && BELOW(&shadow[depth - 1], sp))
		return 0; /* frames left by longjmp: ended on the full path, which draws */
	if (depth >= SHADOW_DEPTH)
		return 1; /* no hit: the function returns where it would */
	return pm_quick(site_id[idx], open[idx] && !site_every[idx]);
}

/* @regs: r11, r10, r9, r8, rdi, rsi, rdx, rcx, rax as the entry stub pushed them. */
__attribute__((visibility("hidden"))) void pa_enter(uint64_t idx, uint64_t *sp, const uint64_t *regs)
{
	unsigned d, i = (unsigned)idx;

	if (!tls && (tls_get() || pm_quick(site_id[i], 0)))
		return; /* the thread's first hit, drawn here (pa_quick() could not) */
	d = depth;
	if (d > 0 && BELOW(&shadow[d - 1], (uint64_t)sp)) { /* pa_quick() has not drawn yet */
		left((uint64_t)sp);
		if ((d = depth) >= SHADOW_DEPTH || pm_quick(site_id[i], open[i] && !site_every[i]))
			return;
	}
	open[i]++;
	busy = 1;
	pm_begin_with(site_id[i], (const uint64_t[PS_MARKER_FIELDS]){regs[4], regs[5], regs[6], regs[7]});
	busy = 0;
	shadow[d] = (pa_frame){.sp = (uint64_t)sp, .ret = *sp, .idx = i};
	depth = d + 1;
	*sp = (uint64_t)pa_exit_stub;
}

/* The function whose return address was at @sp - 8 has returned: its hit ends (and those of
   the frames below it that longjmp left); the real return address. */
__attribute__((visibility("hidden"))) uint64_t pa_exit(uint64_t sp)
{
	unsigned d;

	left(sp - 16);
	if (!depth)
		abort(); /* no real return address to go to: a stack switched inside a measured call */
	d = --depth;
	open[shadow[d].idx]--;
	busy = 1;
	ps_marker_end(site_id[shadow[d].idx]);
	busy = 0;
	return shadow[d].ret;
}

void pa_hooks_unwind(uint64_t sp, int back)
{
	unsigned d;

	if (!tls)
		return; /* no hit on this thread yet */
	d = depth;

	while (d > 0 && shadow[d - 1].sp < sp) {
		d--;
		open[shadow[d].idx]--;
		pm_end_unwound(site_id[shadow[d].idx]);
	}
	depth = d;
	for (unsigned i = 0; i < d; i++) {
		uint64_t *slot = (uint64_t *)shadow[i].sp;

		/* a slot that holds neither is no longer the frame's: left alone */
		if (back && *slot == shadow[i].ret)
			*slot = (uint64_t)pa_exit_stub;
		else if (!back && *slot == (uint64_t)pa_exit_stub)
			*slot = shadow[i].ret;
	}
}

/*
 * Both stubs keep every register but rsp's use: a caller compiled with -fipa-ra keeps values
 * in caller-saved registers across a direct call to a function that does not write them, so
 * neither the hook nor the marker library under it may change one. The general registers are
 * pushed, the vector and x87 state (with mxcsr) saved by xsavec (compacted, components in
 * their initial state skipped) or else xsave in a 64-byte-aligned area of pa_xsave_size bytes,
 * for the components in pa_xsave_mask (agent.c sets them from cpuid); xrstor reads either.
 *
 * The entry stub: called from a trampoline, site number at 16(%rbp), the function's return
 * address at 24(%rbp); with the general registers saved it asks pa_quick() (which touches no
 * other) whether the call is a hit to open at all, and returns at once if not: a call the
 * sampling draw leaves out costs that alone. The exit stub: reached by the function's ret, the stack pointer just
 * above where the return address was; it makes room for the real one and returns to it.
 */
uint64_t pa_xsave_size __attribute__((visibility("hidden")));
uint32_t pa_xsave_mask __attribute__((visibility("hidden")));
uint8_t pa_xsavec __attribute__((visibility("hidden")));

__asm__(".text\n"
	".globl pa_enter_stub\n"
	".hidden pa_enter_stub\n"
	".type pa_enter_stub,@function\n"
	"pa_enter_stub:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n" SAVE_GPRS "	and $-16, %rsp\n"
	"	mov 16(%rbp), %rdi\n"
	"	lea 24(%rbp), %rsi\n"
	"	call pa_quick\n"
	"	test %eax, %eax\n"
	"	jz 3f\n"
	"	lea -72(%rbp), %rsp\n"
	"	pop %r11\n	pop %r10\n	pop %r9\n	pop %r8\n"
	"	pop %rdi\n	pop %rsi\n	pop %rdx\n	pop %rcx\n	pop %rax\n"
	"	pop %rbp\n"
	"	ret\n"
	"3:\n" SAVE_VECTORS "	mov 16(%rbp), %rdi\n"
	"	lea 24(%rbp), %rsi\n"
	"	lea -72(%rbp), %rdx\n"
	"	call pa_enter\n" RESTORE_ALL "	pop %rbp\n"
	"	ret\n"
	".size pa_enter_stub, .-pa_enter_stub\n"
	".globl pa_exit_stub\n"
	".hidden pa_exit_stub\n"
	".type pa_exit_stub,@function\n"
	"pa_exit_stub:\n"
	"	sub $8, %rsp\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n" SAVE_GPRS SAVE_VECTORS "	lea 16(%rbp), %rdi\n"
	"	call pa_exit\n"
	"	mov %rax, 8(%rbp)\n" RESTORE_ALL "	pop %rbp\n"
	"	ret\n"
	".size pa_exit_stub, .-pa_exit_stub\n");
