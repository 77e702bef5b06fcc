/* core/catch/marker/inproc_attach.h - --backend inproc on a running process (-p): the agent
 * (agent/agent_attach.c) loaded into it, its sites patched while every thread is held, and the
 * original bytes put back at the detach, or by the agent itself when perfsh ends. */
#ifndef PS_INPROC_ATTACH_H
#define PS_INPROC_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "markshm.h"

/**
 * ps_inproc_attach_check() - what refuses an attach of the agent to process @pid, found before
 * anything is started: its path in @agent (@n bytes); an agent loaded already (an earlier
 * attach, or a program started with --backend inproc: it measures for one perfsh); the
 * injection's refusals (ps_inject_check(): static, no dlopen, seccomp, a sanitizer build); a
 * kernel without membarrier SYNC_CORE (the bytes could not be put back while threads run).
 *
 * Return: 0, 1 when only ptrace can tell whether the process may be traced (the caller's attach
 * says), or -1 with @err set (one line; PS_ENEEDS_UPROBE where --backend uprobe does it).
 */
int ps_inproc_attach_check(pid_t pid, char *agent, size_t n, struct ps_error *err);

/**
 * ps_inproc_attach() - load @agent into running process @pid (not traced by the caller), give it
 * the control block @ctl at @control (a path the process can open), and have it patch the sites
 * listed there: the trampolines made (the others may run meanwhile), then the jmps written with
 * every other thread held, a site that a held thread is inside tried again up to 20 times
 * (10 ms apart, the process let run between) and refused then. From here the agent's watcher
 * puts every written site's bytes back when ps_inproc_detach() asks or perfsh ends.
 *
 * Return: 0 (the sites' states in @ctl), or -1 with @err set (one line).
 */
int ps_inproc_attach(pid_t pid, const char *agent, struct ps_mshm_ctl *ctl, const char *control, struct ps_error *err);

/**
 * ps_inproc_detach() - ask the agent in @pid (attached with @ctl) to put back every patched
 * site's bytes, and wait for it to say so, up to @wait_ns (a process that has ended needs none).
 *
 * Return: 0, or -1 with @err set (not done in time: the agent does it once the process runs).
 */
int ps_inproc_detach(pid_t pid, struct ps_mshm_ctl *ctl, uint64_t wait_ns, struct ps_error *err);

#endif
