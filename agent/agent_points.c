/* agent/agent_points.c - a range region's points (where its hits start and end, inside a
 * function): each patched with a jmp to a point trampoline (x86tramp.h) that calls the point
 * hook here, then runs the instructions displaced.
 *
 * A hit is paired as the other catchers' hit path pairs a range's (core/hitpath/): a start
 * while the region's hit is open on the thread is counted as an entry and opens nothing, an
 * end while none is open is passed by. The hit itself is the marker library's: begun with
 * ps_marker_begin() where the live policy draws it (pm_quick()), ended with ps_marker_end(),
 * per thread, nested among the thread's other hits as markers nest.
 *
 * The stub runs in the middle of a function: every register may be live there, the flags too,
 * and a leaf function may keep values below its stack pointer (the red zone, which the
 * trampoline steps over). It saves the flags and every register but rsp's (agent_regs.h) and
 * clears the direction flag for C.
 */
#include <stdint.h>
#include <string.h>

#include "agent_points.h"
#include "agent_regs.h"
#include "marker_hit.h"
#include "markshm.h"
#include "perfsh/marker.h"

static int point_id[PS_MSHM_SITES];
static uint8_t point_flags[PS_MSHM_SITES];
static uint8_t point_range[PS_MSHM_SITES]; /* the first site of the same region: where it is open */
static __thread uint8_t open[PS_MSHM_SITES] __attribute__((tls_model("initial-exec")));

void pa_point(uint64_t idx);

void pa_points_site(unsigned idx, int id, unsigned flags)
{
	unsigned k = idx;

	if (idx >= PS_MSHM_SITES)
		return;
	for (unsigned j = 0; j < idx; j++)
		if (point_flags[j] && point_id[j] == id) {
			k = j;
			break;
		}
	point_id[idx] = id;
	point_range[idx] = (uint8_t)k;
	point_flags[idx] = (uint8_t)(flags & (PS_MSHM_SITE_START | PS_MSHM_SITE_END | PS_MSHM_SITE_START_FIRST));
}

/* The hit of the region whose first point is @k (marker region @id) ends, if it is open. */
static void point_end(unsigned k, int id)
{
	if (open[k]) {
		open[k] = 0;
		ps_marker_end(id);
	}
}

/* A hit of that region starts, unless one is open (then it is an entry, counted). */
static void point_start(unsigned k, int id)
{
	if (open[k])
		pm_quick(id, 1);
	else if (!pm_quick(id, 0)) {
		open[k] = 1;
		ps_marker_begin(id);
	}
}

/* Point @idx reached: its region's hit ends, starts, or both, in the order the point says. */
__attribute__((visibility("hidden"))) void pa_point(uint64_t idx)
{
	unsigned i = (unsigned)idx, f;

	if (i >= PS_MSHM_SITES)
		return;
	f = point_flags[i];
	if (f & PS_MSHM_SITE_START_FIRST)
		point_start(point_range[i], point_id[i]);
	if (f & PS_MSHM_SITE_END)
		point_end(point_range[i], point_id[i]);
	if ((f & PS_MSHM_SITE_START) && !(f & PS_MSHM_SITE_START_FIRST))
		point_start(point_range[i], point_id[i]);
}

/* At the program's end by exit() or main's return, in the thread that ends it, and at each
   other thread's end: the hits it has open, of ranges and of functions, end flagged unwound,
   as the catchers outside the program record the hits an end cuts short. */
__attribute__((destructor)) static void points_exit(void)
{
	pm_end_open();
	memset(open, 0, sizeof open);
}

__attribute__((constructor)) static void points_init(void)
{
	pm_end_open_at_thread_end();
}

/*
 * The point stub: called from a point trampoline, the site number at 8(%rsp), 128 bytes below
 * the function's stack pointer. It keeps the flags (pushfq, popfq) and every register but rsp's.
 */
__asm__(".text\n"
	".globl pa_point_stub\n"
	".hidden pa_point_stub\n"
	".type pa_point_stub,@function\n"
	"pa_point_stub:\n"
	"	pushfq\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n" SAVE_GPRS "	cld\n" SAVE_VECTORS "	mov 24(%rbp), %rdi\n"
	"	call pa_point\n" RESTORE_ALL "	pop %rbp\n"
	"	popfq\n"
	"	ret\n"
	".size pa_point_stub, .-pa_point_stub\n");
