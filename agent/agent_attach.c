/* agent/agent_attach.c - the agent loaded into a running process by perfsh's attach (-p).
 *
 * perfsh holds every thread of the process with ptrace, has one of them call dlopen on the
 * agent (its constructor finds no control block in the environment and does nothing), and then
 * the two functions below (core/proc/inject.h: ps_inject_library_call()):
 *   perfsh_agent_attach(CONTROL): the marker library takes perfsh's control block (markshm.h),
 *     membarrier SYNC_CORE is registered and the SIGTRAP handler installed (agent_unpatch.c),
 *     a watcher thread is started, and each site's trampoline is made as the constructor makes
 *     it (agent.c), the jmp that patches the site kept for later (pa_attach_defer()). This may
 *     take locks (malloc's, the loader's): if a held thread owns one, perfsh lets the others run
 *     until it returns, and nothing of the code has changed meanwhile.
 *   perfsh_agent_patch(): the jmps written, with every other thread held (this takes no lock),
 *     for each site no thread is inside: perfsh has put each held thread's instruction pointer
 *     in the block, and a site whose displaced bytes (past its first) hold one is left for
 *     perfsh's next try, or refused on the last. No thread runs while the bytes change; each
 *     serialises before it runs user code again (membarrier SYNC_CORE, then the detach).
 *
 * The watcher (every signal blocked) waits on a pidfd of perfsh, looking at the block's detach
 * command every WATCH_MS: when perfsh asks, or ends (SIGKILL included), it puts every site's
 * bytes back (agent_unpatch.c) and says so in the block. The trampolines, hooks and the block
 * stay mapped: a thread inside a measured call returns through the exit trampoline, its record
 * going into a ring nobody may read any more.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_attach.h"
#include "agent_near.h"
#include "marker_init.h"
#include "marker_live.h"
#include "x86insn.h"
#include "x86tramp.h"

#define WATCH_MS 50

/* A site's jmp, kept until perfsh_agent_patch() writes it. */
static struct pending {
	struct ps_mshm_site *site;
	uint64_t addr; /* where the jmp goes */
	unsigned len;  /* bytes of the whole instructions it covers */
	uint8_t code[5], orig[5];
	uint64_t resume; /* the copies of the instructions, in the trampoline */
	int prot;
	int written;
} pend[PS_MSHM_SITES];
static unsigned npend;
static int deferring;
static struct ps_mshm_ctl *ctl;

/* The block's site whose function holds @addr. */
static struct ps_mshm_site *site_at(uint64_t addr)
{
	for (uint32_t i = 0; i < ctl->nsites && i < PS_MSHM_SITES; i++)
		if (addr >= ctl->sites[i].addr && addr < ctl->sites[i].addr + ctl->sites[i].size)
			return &ctl->sites[i];
	return NULL;
}

int pa_attach_defer(uint64_t addr, const uint8_t *bytes, size_t n)
{
	struct pending *p = &pend[npend];
	struct ps_x86_insn in;
	uint64_t end;
	int32_t rel;

	if (!deferring)
		return 0;
	if (n != 5 || bytes[0] != 0xe9 || npend == PS_MSHM_SITES || !(p->site = site_at(addr)) ||
	    (p->prot = pa_prot_of(addr)) < 0)
		return -1;
	end = p->site->addr + p->site->size;
	for (p->len = 0; p->len < 5; p->len += in.len)
		if (ps_x86_decode((const uint8_t *)addr + p->len, end - addr - p->len, addr + p->len, &in))
			return -1;
	memcpy(&rel, bytes + 1, 4);
	p->addr = addr;
	p->resume = addr + 5 + (uint64_t)(int64_t)rel - PS_X86_TRAMP_ENTRY + PS_X86_TRAMP_HEAD;
	memcpy(p->code, bytes, 5);
	memcpy(p->orig, (const void *)addr, 5);
	p->written = 0;
	npend++;
	return 1;
}

/* The watcher: the sites' bytes back when perfsh asks or ends. */
static void *watch(void *arg)
{
	struct ps_mshm_attach *at = &ctl->at;
	int fd = (int)syscall(SYS_pidfd_open, at->perfsh, 0);

	(void)arg;
	while (!__atomic_load_n(&at->detach, __ATOMIC_ACQUIRE)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (fd >= 0 ? poll(&p, 1, WATCH_MS) > 0
			    : (usleep(WATCH_MS * 1000), kill(at->perfsh, 0) && errno == ESRCH))
			break; /* perfsh has ended */
	}
	pa_unpatch_all();
	__atomic_store_n(&at->restored, 1, __ATOMIC_RELEASE);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* The watcher started, every signal blocked in it (the program's signals go to its own threads). */
static int start_watcher(void)
{
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t th;
	int rc;

	sigfillset(&all);
	if (pthread_attr_init(&a))
		return -1;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&th, &a, watch, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (!rc)
		pthread_setname_np(th, "perfsh-agent");
	return rc ? -1 : 0;
}

__attribute__((visibility("default"))) int perfsh_agent_attach(const char *control);
__attribute__((visibility("default"))) int perfsh_agent_patch(const char *unused);

int perfsh_agent_attach(const char *control)
{
	int rc = pm_init_attach(control);

	if (rc)
		return rc > 0 ? PS_MSHM_AT_TAKEN : PS_MSHM_AT_OFF;
	ctl = pm_live_ctl();
	if (pa_unpatch_setup())
		return PS_MSHM_AT_NOSYNC;
	if (start_watcher())
		return PS_MSHM_AT_THREAD;
	deferring = 1;
	pa_patch_attach(ctl);
	deferring = 0;
	return PS_MSHM_AT_OK;
}

/* Whether a thread is at one of @p's displaced bytes past its first (a thread at the first runs the jmp). */
static int inside(const struct pending *p, const uint64_t *ip, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (ip[i] > p->addr && ip[i] < p->addr + p->len)
			return 1;
	return 0;
}

static void refuse(struct ps_mshm_site *s, const char *why)
{
	snprintf(s->why, sizeof s->why, "%s", why);
	__atomic_store_n(&s->state, PS_MSHM_SITE_REFUSED, __ATOMIC_RELEASE);
}

int perfsh_agent_patch(const char *unused)
{
	struct ps_mshm_attach *at = ctl ? &ctl->at : NULL;
	uint32_t n = at && at->nheld < PS_MSHM_HELD ? at->nheld : PS_MSHM_HELD;
	int busy = 0, wrote = 0;

	(void)unused;
	for (unsigned i = 0; at && i < npend; i++) {
		struct pending *p = &pend[i];

		if (p->written || p->site->state == PS_MSHM_SITE_REFUSED)
			continue;
		if (inside(p, at->held, n)) {
			busy++;
			if (at->last)
				refuse(p->site, "a thread was inside its first instructions at each try of the patch");
		} else if (pa_code_write(p->addr, p->code, 5, p->prot)) {
			refuse(p->site, "its code cannot be made writable (mprotect)");
		} else {
			p->written = 1;
			wrote++;
			pa_unpatch_add(p->addr, p->orig, p->resume, p->prot);
		}
	}
	if (wrote)
		pa_sync_core();
	if (at)
		__atomic_fetch_add(&at->patched, (uint32_t)wrote, __ATOMIC_RELEASE);
	return busy;
}
