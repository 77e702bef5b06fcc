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
	point_flags[idx] = (uint8_t)(flags & (PS_MSHM_SITE_START | PS_MSHM_SITE_END));
}

/* Point @idx reached: its region's hit ends, then starts, as the point's roles say. */
__attribute__((visibility("hidden"))) void pa_point(uint64_t idx)
{
	unsigned i = (unsigned)idx, k;
	int id;

	if (i >= PS_MSHM_SITES)
		return;
	k = point_range[i];
	id = point_id[i];
	if ((point_flags[i] & PS_MSHM_SITE_END) && open[k]) {
		open[k] = 0;
		ps_marker_end(id);
	}
	if (!(point_flags[i] & PS_MSHM_SITE_START))
		return;
	if (open[k])
		pm_quick(id, 1); /* inside the open hit: an entry, counted */
	else if (!pm_quick(id, 0)) {
		open[k] = 1;
		ps_marker_begin(id);
	}
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
