/* agent/agent.c - libperfsh-agent.so: perfsh's in-process catcher (--backend inproc), loaded
 * by LD_PRELOAD into a program perfsh starts. It is the marker library (marker/: per-thread
 * groups, rdpmc or read(2), the rings and the control block perfsh drains, the live policy)
 * with the function entries perfsh lists in the control block (markshm.h: sites) patched to
 * call it: each becomes one of the library's regions, named as the site is, and perfsh arms
 * it as it arms a marker. A range region's points (where its hits start and end, inside a
 * function) are patched the same way, to call the point hook (agent_points.c).
 *
 * Patching is done in the constructor, before main(), while the main thread is the only one
 * (checked: with another thread the sites are refused), so no thread runs the bytes being
 * replaced and no cross-modifying-code protocol is needed: each site's page is made writable,
 * the 5-byte jmp to its trampoline (x86tramp.h) written, and its protection put back. The
 * instructions the jmp covers are moved by ps_x86_reloc_at() (perfsh has checked the
 * function's whole flow graph and its jump tables before the run: ps_site_reloc()), every
 * site's from the program's own bytes: the jmps are written once every trampoline is made
 * (two sites may be in one function). A site that cannot be patched is left as it is, its
 * reason in the block.
 *
 * Loaded into a running process by perfsh's attach (-p), the constructor finds no block and
 * does nothing; perfsh then calls perfsh_agent_attach() and perfsh_agent_patch()
 * (agent_attach.c), and pa_patch_attach() below patches the sites as the constructor would,
 * each jmp written later, while perfsh holds every other thread.
 *
 * perfsh starts the program with the agent in LD_PRELOAD; the agent takes it out again (and
 * puts back what was there, PERFSH_PRELOAD_WAS) so the program's children run without it. It
 * also clears the death signal perfsh's spawn set: if perfsh dies, the program runs to its
 * end, its hits going into rings nobody reads.
 */
#include <cpuid.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent_attach.h"
#include "agent_hooks.h"
#include "agent_libs.h"
#include "agent_near.h"
#include "agent_points.h"
#include "marker_init.h"
#include "marker_live.h"
#include "perfsh/marker.h"
#include "x86tramp.h"

static void refuse(struct ps_mshm_site *s, const char *why)
{
	snprintf(s->why, sizeof s->why, "%.255s", why);
	__atomic_store_n(&s->state, PS_MSHM_SITE_REFUSED, __ATOMIC_RELEASE);
}

/* Write @n bytes at @addr in code, the pages made writable for it and their protection put back. */
static int write_code(uint64_t addr, const uint8_t *bytes, size_t n)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), lo = addr & ~(page - 1),
		 hi = (addr + n + page - 1) & ~(page - 1);
	int prot, kept = pa_attach_defer(addr, bytes, n);

	if (kept)
		return kept > 0 ? 0 : -1;
	prot = pa_prot_of(addr);
	if (prot < 0 || mprotect((void *)lo, hi - lo, prot | PROT_WRITE))
		return -1;
	memcpy((void *)addr, bytes, n);
	mprotect((void *)lo, hi - lo, prot);
	return 0;
}

/* What site @s runs: the entry hook or, at a range's point, the point hook. */
static int is_point(const struct ps_mshm_site *s)
{
	return (s->flags & (PS_MSHM_SITE_START | PS_MSHM_SITE_END)) != 0;
}

/* The jmp each site prepared gets, and where: written once every site is ready, so each is
   decoded from the program's own bytes (two sites may be in one function). */
static struct {
	uint64_t at;
	uint8_t jmp[5];
} ready[PS_MSHM_SITES];

/* Prepare site @i (an entry, or a range's point): its trampoline made and written, the jmp to
   it kept in ready[@i] (at 0 when the site is refused). */
static void prepare(struct ps_mshm_site *s, unsigned i)
{
	int point = is_point(s), id;
	uint64_t fn = point ? s->fn : s->addr, head = point ? PS_X86_TRAMP_POINT_HEAD : PS_X86_TRAMP_HEAD, tramp;
	uint8_t code[PS_X86_TRAMP_MAX];
	struct ps_x86_reloc r;
	struct ps_error err;
	size_t len;

	s->name[sizeof s->name - 1] = '\0';
	if ((id = ps_marker_region(s->name)) < 0)
		return refuse(s, "the marker library has no region left for it");
	if (point)
		pa_points_site(i, id, s->flags);
	else
		pa_hooks_site(i, id, !!(s->flags & PS_MSHM_SITE_EVERY_LEVEL));
	if (!(tramp = pa_near_alloc(s->addr, PS_X86_TRAMP_MAX)))
		return refuse(s, "no memory for a trampoline within 2 GB of the site");
	if (ps_x86_reloc_at((const uint8_t *)fn, s->size, fn, s->addr, 5, tramp + head,
			    PS_X86_RELOC_IND_CHECKED | (point ? PS_X86_RELOC_POINT : 0), s->name, &r, &err))
		return refuse(s, err.msg);
	if (s->len && (r.site != s->patch || r.len != s->len))
		return refuse(s, "its code is not what perfsh checked before the run");
	len = point ? ps_x86_tramp_point(code, tramp, i, (uint64_t)pa_point_stub, &r)
		    : ps_x86_tramp(code, tramp, i, (uint64_t)pa_enter_stub, &r);
	if (!len || ps_x86_jmp32(ready[i].jmp, r.site, tramp + PS_X86_TRAMP_ENTRY))
		return refuse(s, "the trampoline is out of reach of a jmp rel32");
	memcpy((void *)tramp, code, len);
	ready[i].at = r.site;
}

/* Patch site @i, prepared: its jmp written. */
static void patch(struct ps_mshm_site *s, unsigned i)
{
	if (!ready[i].at)
		return;
	if (write_code(ready[i].at, ready[i].jmp, sizeof ready[i].jmp))
		return refuse(s, "its code cannot be made writable (mprotect)");
	__atomic_store_n(&s->state, PS_MSHM_SITE_PATCHED, __ATOMIC_RELEASE);
}

/* The process's threads: 1 before main() unless a constructor started some. */
static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* What the stubs save (agent_hooks.c): x87, SSE, AVX and AVX-512 state, as the OS enabled them. */
static int xsave_setup(void)
{
	unsigned a, b, c, d, lo, hi;

	if (pa_xsave_size)
		return 0;
	__cpuid(1, a, b, c, d);
	if (!(c & bit_OSXSAVE))
		return -1;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	pa_xsave_mask = lo & 0xe7; /* x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM */
	__cpuid_count(0xd, 1, a, b, c, d);
	pa_xsavec = (a & 2) != 0;
	if (!pa_xsavec)
		__cpuid_count(0xd, 0, a, b, c, d);
	pa_xsave_size = (uint64_t)b + 64;
	return 0;
}

/* LD_PRELOAD as it was before perfsh added the agent. */
static void forget_preload(void)
{
	const char *was = getenv("PERFSH_PRELOAD_WAS");

	if (was)
		setenv("LD_PRELOAD", was, 1);
	else
		unsetenv("LD_PRELOAD");
	unsetenv("PERFSH_PRELOAD_WAS");
}

/* Every site of @c prepared, then every prepared one patched (each refused with @refusal instead
   where it is not NULL), the trampoline memory sealed. */
static void patch_all(struct ps_mshm_ctl *c, const char *refusal)
{
	unsigned n = __atomic_load_n(&c->nsites, __ATOMIC_ACQUIRE);
	const char *why;

	for (unsigned i = 0; i < n && i < PS_MSHM_SITES; i++) {
		if (xsave_setup())
			refuse(&c->sites[i], "this CPU has no xsave to keep the registers with");
		else if (refusal)
			refuse(&c->sites[i], refusal);
		else if ((why = pa_lib_site(&c->sites[i])))
			refuse(&c->sites[i], why);
		else
			prepare(&c->sites[i], i);
	}
	for (unsigned i = 0; i < n && i < PS_MSHM_SITES; i++)
		patch(&c->sites[i], i);
	pa_near_seal();
}

__attribute__((constructor)) static void agent_ctor(void)
{
	struct ps_mshm_ctl *c;

	pm_init();
	if (!(c = pm_live_ctl()))
		return; /* not started by perfsh, or its block refused (said on stderr) */
	forget_preload();
	prctl(PR_SET_PDEATHSIG, 0);
	patch_all(c, threads() == 1 ? NULL : "other threads run already before main(): nothing is patched");
}

void pa_patch_attach(struct ps_mshm_ctl *c)
{
	patch_all(c, NULL);
}
