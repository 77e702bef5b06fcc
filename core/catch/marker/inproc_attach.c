/* core/catch/marker/inproc_attach.c - the agent into a running process, its sites patched, and
 * the detach (inproc_attach.h; the agent's side: agent/agent_attach.c). */
#include "inproc_attach.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "inproc_site.h"
#include "procmaps.h"
#include "run.h"

#define TRIES 20
#define TRY_GAP_NS 10000000L

int ps_inproc_attach_check(pid_t pid, char *agent, size_t n, struct ps_error *err)
{
	char path[4096];
	struct ps_error e;
	long mask;
	int rc;

	if (ps_inproc_agent(agent, n, err))
		return -1;
	if ((rc = ps_inject_check(pid, agent, err)) < 0) {
		char why[sizeof err->msg];

		snprintf(why, sizeof why, "%s", err->msg);
		return ps_error_set(err, err->code == ESRCH ? ESRCH : PS_ENEEDS_UPROBE,
				    "--backend inproc: %s; use --backend uprobe", why);
	}
	if (!ps_maps_find(pid, "libperfsh-agent.so", PS_MAPS_EXACT, path, sizeof path, &e))
		return ps_error_set(err, PS_ENEEDS_UPROBE,
				    "--backend inproc: process %d has perfsh's agent loaded already (an earlier "
				    "attach, or started with --backend inproc), which measures for one perfsh only; "
				    "use --backend uprobe",
				    (int)pid);
	mask = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (mask < 0 || !(mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		return ps_error_set(err, PS_ENEEDS_UPROBE,
				    "--backend inproc: this kernel has no membarrier SYNC_CORE (Linux 4.16 or later), "
				    "without which patched code cannot be put back while the program runs; use "
				    "--backend uprobe");
	return rc;
}

/* What the attach call's refusal means, in @err. */
static int refused(pid_t pid, int why, const struct ps_mshm_ctl *ctl, struct ps_error *err)
{
	switch (why) {
	case PS_MSHM_AT_TAKEN:
		return ps_error_set(err, PS_ENEEDS_UPROBE,
				    "--backend inproc: the agent in process %d measures for another perfsh already; "
				    "use --backend uprobe",
				    (int)pid);
	case PS_MSHM_AT_OFF:
		return ps_error_set(err, PS_EUSAGE,
				    "--backend inproc: the agent in process %d refused perfsh's block: %s", (int)pid,
				    ctl->why);
	case PS_MSHM_AT_NOSYNC:
		return ps_error_set(err, PS_ENEEDS_UPROBE,
				    "--backend inproc: process %d may not register for membarrier SYNC_CORE; use "
				    "--backend uprobe",
				    (int)pid);
	default:
		return ps_error_set(err, EAGAIN, "--backend inproc: the agent in process %d could not start its thread",
				    (int)pid);
	}
}

struct held_ud {
	struct ps_mshm_ctl *ctl;
	const struct ps_inject_call *attach; /* NULL on a retry */
	pid_t pid;
};

/* Every thread is held: the attach call's answer checked, their instruction pointers to the block. */
static int held(void *ud, const uint64_t *ip, int n, struct ps_error *err)
{
	struct held_ud *h = ud;
	struct ps_mshm_attach *at = &h->ctl->at;

	if (h->attach && h->attach->ret != PS_MSHM_AT_OK)
		return refused(h->pid, h->attach->ret, h->ctl, err);
	if (n > PS_MSHM_HELD)
		return ps_error_set(err, PS_ENEEDS_UPROBE,
				    "--backend inproc: process %d has %d threads; the agent patches with at most %d; "
				    "use --backend uprobe",
				    (int)h->pid, n, PS_MSHM_HELD);
	memcpy(at->held, ip, (size_t)n * sizeof *ip);
	__atomic_store_n(&at->nheld, (uint32_t)n, __ATOMIC_RELEASE);
	return 0;
}

int ps_inproc_attach(pid_t pid, const char *agent, struct ps_mshm_ctl *ctl, const char *control, struct ps_error *err)
{
	struct ps_inject_call calls[2] = {{.sym = "perfsh_agent_attach", .arg = control},
					  {.sym = "perfsh_agent_patch", .held = held}};
	struct held_ud ud = {.ctl = ctl, .attach = &calls[0], .pid = pid};
	struct timespec gap = {0, TRY_GAP_NS};
	int rc;

	ctl->at.perfsh = (int32_t)getpid();
	calls[1].ud = &ud;
	rc = ps_inject_library_call(pid, agent, calls, 2, NULL, err);
	ud.attach = NULL;
	for (int try = 1; !rc && calls[1].ret > 0 && try < TRIES; try++) {
		nanosleep(&gap, NULL); /* the process runs: the threads inside a site's bytes leave them */
		ctl->at.last = try == TRIES - 1;
		rc = ps_inject_library_call(pid, agent, &calls[1], 1, NULL, err);
	}
	if (rc && calls[0].ret == PS_MSHM_AT_OK)
		__atomic_store_n(&ctl->at.detach, 1, __ATOMIC_RELEASE); /* the watcher puts back what was written */
	return rc;
}

int ps_inproc_detach(pid_t pid, struct ps_mshm_ctl *ctl, uint64_t wait_ns, struct ps_error *err)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	uint64_t until = ps_now_ns() + wait_ns;
	int rc = 0;

	__atomic_store_n(&ctl->at.detach, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&ctl->at.restored, __ATOMIC_ACQUIRE)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (fd < 0 || poll(&p, 1, 5) > 0)
			break; /* it has ended: nothing to put back */
		if (ps_now_ns() > until) {
			rc = ps_error_set(
			    err, ETIMEDOUT,
			    "--backend inproc: the agent in process %d has not put the functions' bytes back "
			    "after %llu ms (is it stopped?); it does once the process runs",
			    (int)pid, (unsigned long long)(wait_ns / 1000000));
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	return rc;
}
