/* agent/agent_unpatch.c - the original bytes of the sites an attach patched, put back while the
 * program's threads run (on perfsh's detach, or when perfsh ends: agent_attach.c's watcher).
 *
 * The rule followed is the one of the Intel SDM (vol. 3A, 8.1.3, cross-modifying code) as
 * Linux's text_poke_bp() applies it: a thread may run the site at any moment, so the site's
 * first byte becomes int3 (0xcc), every core is serialised, the other four bytes get their
 * original values, every core is serialised, and the first byte gets its own, serialised again.
 * At every step a thread fetching the site sees either a whole old instruction, the int3, or a
 * whole new one. Serialising every core is membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE)
 * after the process registered for it: each running thread is interrupted (an IPI and its
 * return), and one not running serialises before it returns to user space.
 *
 * A thread that meets the int3 gets SIGTRAP: the handler here sends it on to the copies of the
 * site's original instructions in its trampoline (past the hook: that call is not a hit), which
 * jump back to the code after them; a SIGTRAP of anything else goes to the handler installed
 * before this one, or takes the default action. The handler stays installed, and the
 * trampolines and hooks stay mapped for good: a thread may still be inside one, or return
 * through the exit trampoline of a call it entered while the site was patched.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent_attach.h"

#define SITES PS_MSHM_SITES

static struct {
	uint64_t addr, resume;
	uint8_t orig[5];
	int prot;
	int restored;
} site[SITES];
static unsigned nsite;
static struct sigaction prev; /* SIGTRAP before ours */

/* A thread at an int3 of a site goes on at the copies of the site's instructions. */
static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	unsigned n = __atomic_load_n(&nsite, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; si->si_code == SI_KERNEL && i < n; i++)
		if (site[i].addr == ip - 1) {
			uc->uc_mcontext.gregs[REG_RIP] = (greg_t)site[i].resume;
			return;
		}
	if (prev.sa_flags & SA_SIGINFO) {
		prev.sa_sigaction(sig, si, ucv);
	} else if (prev.sa_handler == SIG_DFL) {
		signal(sig, SIG_DFL); /* the default action, as without us: delivered when this returns */
		raise(sig);
	} else if (prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
	}
}

/* Ours as SIGTRAP's handler, the one there before kept to chain to. */
static int install(void)
{
	struct sigaction sa, cur;

	if (sigaction(SIGTRAP, NULL, &cur))
		return -1;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_trap)
		return 0;
	prev = cur;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGTRAP, &sa, NULL);
}

static int membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

int pa_unpatch_setup(void)
{
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE))
		return -1;
	return install();
}

int pa_sync_core(void)
{
	return membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE);
}

int pa_code_write(uint64_t addr, const uint8_t *bytes, size_t n, int prot)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), lo = addr & ~(page - 1),
		 hi = (addr + n + page - 1) & ~(page - 1);

	if (mprotect((void *)lo, hi - lo, prot | PROT_WRITE))
		return -1;
	for (size_t i = 0; i < n; i++) /* one byte at a time: no wider store than asked for */
		__atomic_store_n((uint8_t *)addr + i, bytes[i], __ATOMIC_RELAXED);
	return mprotect((void *)lo, hi - lo, prot);
}

int pa_unpatch_add(uint64_t addr, const uint8_t orig[5], uint64_t resume, int prot)
{
	unsigned n = nsite;

	if (n == SITES)
		return -1;
	site[n].addr = addr;
	site[n].resume = resume;
	memcpy(site[n].orig, orig, 5);
	site[n].prot = prot;
	__atomic_store_n(&nsite, n + 1, __ATOMIC_RELEASE);
	return 0;
}

void pa_unpatch_all(void)
{
	static const uint8_t int3 = 0xcc;
	unsigned n = __atomic_load_n(&nsite, __ATOMIC_ACQUIRE);

	install(); /* the program may have set a SIGTRAP handler of its own since the attach */
	for (unsigned i = 0; i < n; i++)
		if (!site[i].restored)
			pa_code_write(site[i].addr, &int3, 1, site[i].prot);
	pa_sync_core();
	for (unsigned i = 0; i < n; i++)
		if (!site[i].restored)
			pa_code_write(site[i].addr + 1, site[i].orig + 1, 4, site[i].prot);
	pa_sync_core();
	for (unsigned i = 0; i < n; i++)
		if (!site[i].restored)
			pa_code_write(site[i].addr, site[i].orig, 1, site[i].prot);
	pa_sync_core();
	for (unsigned i = 0; i < n; i++)
		site[i].restored = 1;
}
