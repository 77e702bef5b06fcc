/* agent/agent_hooks.c - a hit of a patched function: the entry hook opens it in the marker
 * library (ps_marker_begin(), the first four integer arguments as its fields) and swaps the
 * function's return address for the exit trampoline, keeping the real one on the thread's
 * shadow stack; the exit trampoline ends the hit (ps_marker_end()) and returns to the real
 * address. Both keep every register the ABI gives a meaning at that point: the arguments
 * (rdi, rsi, rdx, rcx, r8, r9, rax for varargs, r10 the static chain, xmm0-7) at the entry,
 * the return values (rax, rdx, xmm0, xmm1, st0) at the exit, and every other one too (see the
 * stubs below); the flags carry nothing at either.
 *
 * The shadow stack holds, per thread, each swapped slot and its real return address. An exit
 * finds its own entry by the slot it returned from, not by order, so a coroutine or green
 * thread that switches stacks inside a measured call (swapcontext, an assembly switch) returns
 * to its own caller: entries of the other stack stay. A frame below the current one on what
 * looks like the same stack (within STACK_SPAN) is taken as left by longjmp: its hit ends as
 * unwound, and its slot gets its real return address back wherever it still holds the exit
 * trampoline and is not memory the agent itself is using, so a frame that was in fact only
 * suspended on another stack (a coroutine's) returns to its caller, its hit already ended.
 * Such a slot, and at an exception one not on the stack being unwound, is read and written
 * through process_vm_readv/writev, so a freed stack is no fault (a seccomp filter that kills
 * on those calls would kill the program there: only a frame left by longjmp or on another
 * stack takes that path; live frames of the current stack are read directly). An
 * unwinder meeting a swapped return address would find no unwind information there: the
 * unwinder's entry points put the real ones back first, and the catch swaps the live frames'
 * again (agent_unwind.c). A coroutine resumed on another thread inside a measured call has no
 * entry there: the agent cannot tell where it returns, and ends the program with a message.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

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
/* Below the agent's own frame, what the agent itself may still use while it runs. */
#define OWN_SPAN 4096

/* Copy 8 bytes between @here and the slot at @addr of this process (@write: to it): 0, or -1
   where that memory is not mapped (EFAULT: its stack is gone); where the calls are refused
   (seccomp), the slot is read or written directly. */
static int slot_io(uint64_t addr, uint64_t *here, int write)
{
	struct iovec mine = {here, sizeof *here}, theirs = {(void *)addr, sizeof *here};
	ssize_t n = write ? process_vm_writev(getpid(), &mine, 1, &theirs, 1, 0)
			  : process_vm_readv(getpid(), &mine, 1, &theirs, 1, 0);

	if (n == (ssize_t)sizeof *here)
		return 0;
	if (n < 0 && errno == EFAULT)
		return -1;
	if (write)
		*(volatile uint64_t *)addr = *here;
	else
		*here = *(volatile uint64_t *)addr;
	return 0;
}

/* Shadow frame @f is dropped: where its slot still holds the exit trampoline, the real return
   address goes back, unless the slot lies in what the agent is using below @top (then it is no
   program frame's any more). */
static void restore(const pa_frame *f, uint64_t top)
{
	uint64_t here = (uint64_t)__builtin_frame_address(0), v, ret = f->ret;
	int errno_was = errno;

	if (f->sp >= here - OWN_SPAN && f->sp < top)
		return;
	if (slot_io(f->sp, &v, 0) == 0 && v == (uint64_t)pa_exit_stub)
		slot_io(f->sp, &ret, 1);
	errno = errno_was;
}

/* The hits of this thread's frames at or below stack pointer @sp end as unwound: a function
   called at @sp (or above) is not inside them, so longjmp has left them (or a coroutine is
   suspended in them: their slots get their return addresses back). */
static void left(uint64_t sp)
{
	unsigned d = depth;

	while (d > 0 && BELOW(&shadow[d - 1], sp)) {
		d--;
		open[shadow[d].idx]--;
		pm_end_unwound(site_id[shadow[d].idx]);
		restore(&shadow[d], sp);
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

/* No entry for the slot an exit came from: a coroutine resumed on another thread inside a
   measured call. Where it would return is known to the thread it began on only. */
static void no_entry(void)
{
	static const char msg[] = "libperfsh-agent: a measured call returned on another thread than it "
				  "began on (a coroutine moved between threads), and its return address is "
				  "that thread's: measure this program with --backend uprobe\n";
	ssize_t n = write(2, msg, sizeof msg - 1);

	(void)n;
	abort();
}

/* The function whose return address was at @sp - 8 has returned: its hit ends (and those of
   the frames below it that longjmp left); the real return address. Its entry is found by that
   slot: the entries above it belong to other stacks (coroutines) and stay. */
__attribute__((visibility("hidden"))) uint64_t pa_exit(uint64_t sp)
{
	uint64_t slot = sp - 8, ret;
	unsigned d, i;

	if (!tls)
		no_entry(); /* no hit began on this thread */
	left(sp - 16);
	for (d = depth; d > 0 && shadow[d - 1].sp != slot; d--)
		;
	if (!d)
		no_entry();
	d--;
	ret = shadow[d].ret;
	i = shadow[d].idx;
	memmove(&shadow[d], &shadow[d + 1], (depth - d - 1) * sizeof shadow[0]);
	depth--;
	open[i]--;
	busy = 1;
	ps_marker_end(site_id[i]);
	busy = 0;
	return ret;
}

void pa_hooks_unwind(uint64_t sp, int back)
{
	unsigned d;
	int errno_was = errno;

	if (!tls)
		return; /* no hit on this thread yet */
	d = depth;

	while (d > 0 && shadow[d - 1].sp < sp) {
		d--;
		open[shadow[d].idx]--;
		pm_end_unwound(site_id[shadow[d].idx]);
		if (!back)
			restore(&shadow[d], sp); /* a coroutine's, suspended below this stack */
	}
	depth = d;
	for (unsigned i = 0; i < d; i++) {
		uint64_t *slot = (uint64_t *)shadow[i].sp, v, to = back ? (uint64_t)pa_exit_stub : shadow[i].ret;
		int here = shadow[i].sp >= sp && shadow[i].sp - sp < STACK_SPAN;

		/* a live frame of this stack is read directly (no system call on an exception's
		   path); another stack's, a coroutine's, may be gone: through slot_io(). A slot that
		   holds neither is no longer the frame's: left alone */
		if (here ? (v = *slot, 0) : slot_io(shadow[i].sp, &v, 0))
			continue;
		if (v != (back ? shadow[i].ret : (uint64_t)pa_exit_stub))
			continue;
		if (here)
			*slot = to;
		else
			slot_io(shadow[i].sp, &to, 1);
	}
	errno = errno_was;
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
