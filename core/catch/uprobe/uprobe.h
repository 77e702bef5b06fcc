/* core/catch/uprobe/uprobe.h - region hits caught in the kernel: uprobes and uretprobes that sample a
 * counter group into a perf mmap ring, so the target is never stopped for a hit.
 *
 * For one thread, ps_uprobe_open() opens:
 *   - one or more counter groups (the caller's events; ev[0] leads each group), each with a
 *     batch of sites as members: a uprobe at each site's file offset and, for a function
 *     entry, a uretprobe at the same offset (the kernel hijacks the return address and fires
 *     at the return). Each probe has sample_period = 1 and
 *     PERF_SAMPLE_IDENTIFIER | TID | TIME | CPU | READ (+ REGS_USER on request), and reads
 *     the whole group (PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING);
 *   - with several groups of the caller's (opts @ngroups): a counter group of each for every
 *     batch, each with probes of its own at the batch's sites. One trap fires every perf
 *     event on its site, so a hit writes one record per group, in no set order; they are
 *     merged into one hit (upmerge.h) by their probes' counts, equal as long as the groups
 *     are enabled and disabled only while the thread is stopped (at its open, while the
 *     caller holds it) or for good (the first group enabled last and disabled first, so a
 *     hit it records has every group's record);
 *   - one mmap ring (1 + ring_pages pages, mmapped on the first group's leader), into which
 *     every probe's output is redirected with PERF_EVENT_IOC_SET_OUTPUT.
 * ps_uprobe_drain() decodes the ring into struct ps_uprobe_hit and counts PERF_RECORD_LOST.
 *
 * A probe is a member of its counter group, so it fires only while its group is on the PMU:
 * groups that take turns on it (multiplexing) would miss hits. Several groups are therefore
 * taken only where none can be multiplexed (software events and tracepoints,
 * ps_uprobe_check_groups()).
 *
 * Per thread, never inherited. Measured on kernel 6.18: `inherit` on a uprobe-PMU event
 * makes the target's clone() fail with EFAULT (config1, the path, is re-read in the child's
 * address space); an inherited per-task event cannot be mmapped (EINVAL); inherited events
 * redirected into one ring lost samples without a PERF_RECORD_LOST. So the caller opens a
 * ps_uprobe for each thread when the thread appears (before it runs the probed code).
 * Events opened on a task before its exec stay (no remove_on_exec) and the probes apply to
 * the new image: a child held before exec can be probed, then released.
 *
 * Probes are file offsets (ps_uprobe_file_offset()): PIE and shared libraries need no load
 * bias. A uprobe lives in the file: every process mapping it takes the trap (in the kernel),
 * measured or not, for as long as the probe is open; close it when the run ends.
 *
 * Fast path: where the probed bytes are the 5-byte NOP 0f 1f 44 00 00
 * (ps_uprobe_site_is_nop5()), the kernel on x86-64 turns the probe into a call: no int3 and
 * no single-step. Other NOPs (five 1-byte NOPs, clang's 0f 1f 44 00 08) take the int3 path.
 *
 * Return depth: the kernel keeps at most PS_UPROBE_MAX_DEPTH (64, MAX_URETPROBE_DEPTH in
 * include/linux/uprobes.h) pending uretprobes per task. A call deeper than that still gives
 * its entry record but no return record (the kernel omits the return probe and logs
 * "omit uretprobe due to nestedness limit"): a consumer pairing entries with returns
 * must expect entries without a return past depth 64 (and a longjmp past frames drops
 * their returns too).
 *
 * Times are CLOCK_MONOTONIC (use_clockid), the clock of ps_now_ns().
 * Thread safety: one ps_uprobe is used by one thread at a time.
 */
#ifndef PS_UPROBE_H
#define PS_UPROBE_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "events.h"
#include "snapshot.h"

#define PS_UPROBE_MAX_DEPTH 64	   /* pending uretprobes per task (kernel's MAX_URETPROBE_DEPTH) */
#define PS_UPROBE_MAX_REGS 8	   /* registers per hit with PERF_SAMPLE_REGS_USER */
#define PS_UPROBE_MAX_PER_GROUP 64 /* sites in one counter group */
#define PS_UPROBE_MAX_GROUPS 4	   /* counter groups of the caller's (each with probes of its own) */

/* x86-64 argument registers as a regs_mask (asm/perf_regs.h bits of CX, DX, SI, DI, R8, R9). */
#define PS_UPROBE_REGS_ARGS ((1ull << 2) | (1ull << 3) | (1ull << 4) | (1ull << 5) | (1ull << 16) | (1ull << 17))
#define PS_UPROBE_REG_SP 7 /* the stack pointer's bit (PERF_REG_X86_SP) */

enum ps_uprobe_kind {
	PS_UPROBE_ENTRY = 0,  /* the uprobe: the site was reached */
	PS_UPROBE_RETURN = 1, /* the uretprobe: the function of a site returned */
	PS_UPROBE_MAP = 2,    /* not a hit: the thread mapped code of a file (opts.maps; the hit's @map) */
};

/**
 * struct ps_uprobe_site - one probed place.
 * @path:   the ELF file as the target maps it (the kernel resolves it to an inode).
 * @offset: file offset of the probed instruction (ps_uprobe_file_offset()).
 * @ret:    1 to add a uretprobe (the site is a function's entry and its returns count too).
 * @group:  0: the site shares a counter group with its neighbours, @per_group at a time; else
 *          the sites with this same @group next to it in the array share one group of their
 *          own (at most PS_UPROBE_MAX_PER_GROUP sites): the start and end points of a region
 *          must read the same counters.
 * @ref_ctr_offset: file offset of an SDT semaphore the kernel counts up while the probe is
 *          open (format/ref_ctr_offset), 0 for none.
 */
struct ps_uprobe_site {
	const char *path;
	uint64_t offset;
	int ret;
	int group;
	uint64_t ref_ctr_offset;
};

/**
 * struct ps_uprobe_opts - what ps_uprobe_open() opens.
 * @ev, @nev:       the counters, 1 to PS_MAX_EVENTS - 2; ev[0] leads each group. Their attrs
 *                  are used as resolved (type, config, privilege bits).
 * @ngroups, @gsize: 0 or 1: the counters are one group; else @ev is @ngroups groups of
 *                  @gsize[g] counters each, in order (at most PS_UPROBE_MAX_GROUPS, and
 *                  @nev + 2 * (@ngroups - 1) values at most PS_MAX_EVENTS), the first
 *                  event of each leading it.
 * @sites, @nsites: the sites; a hit's @site is the index in this array.
 * @per_group:      sites per counter group (each group has its own copy of the counters, and
 *                  every sample carries its whole group, 16 bytes per member); 0 means 4,
 *                  at most PS_UPROBE_MAX_PER_GROUP.
 * @ring_pages:     data pages of the ring, a power of two; 0 means 64.
 * @regs_mask:      PERF_SAMPLE_REGS_USER mask (asm/perf_regs.h bits), at most
 *                  PS_UPROBE_MAX_REGS bits; 0 for none. PS_UPROBE_REGS_ARGS for arguments.
 * @enabled:        1 to count and probe at once; 0 to wait for ps_uprobe_enable().
 * @tp_ids:         NULL, or two trace event ids per site (entry, return) of tracefs uprobe
 *                  events (uprobe_defs.h): a probe with a non-zero id is a PERF_TYPE_TRACEPOINT
 *                  event on it, shared with the other threads' (cheap to close); else it is a
 *                  uprobe-PMU event of its own.
 * @maps:           1 to also deliver the files whose code the thread maps (PERF_RECORD_MMAP2 of
 *                  the ring's leader, while it is enabled), as records of kind PS_UPROBE_MAP: a
 *                  probe in a file not mapped yet is installed when the file is, and only then.
 */
struct ps_uprobe_opts {
	const struct ps_event *ev;
	int nev;
	int ngroups;
	const int *gsize;
	const struct ps_uprobe_site *sites;
	int nsites;
	int per_group;
	unsigned ring_pages;
	uint64_t regs_mask;
	int enabled;
	const uint32_t *tp_ids;
	int maps;
};

/**
 * struct ps_uprobe_map - code of a file mapped by a thread (PERF_RECORD_MMAP2).
 * @addr, @len, @pgoff: where, how long, and from which file offset
 * @maj, @min, @ino:    the file's device and inode
 * @path:               its path as the kernel names it (valid during the callback only)
 */
struct ps_uprobe_map {
	uint64_t addr, len, pgoff, ino;
	uint32_t maj, min;
	const char *path;
};

/**
 * struct ps_uprobe_hit - one decoded probe record (or, of kind PS_UPROBE_MAP, a file mapped:
 * @tid and @map only).
 * @tid, @cpu, @time: where and when (CLOCK_MONOTONIC ns).
 * @site:             index in the opts' sites.
 * @kind:             enum ps_uprobe_kind.
 * @seq:              the probe's own count at this hit (1 for its first): a gap between two
 *                    hits of the same site and kind is records lost in between.
 * @enabled, @running: the (first) group's times, for multiplex scaling (ps_scale()).
 * @nval, @val:       the counters' raw values, in the order of opts.ev; with several
 *                    groups, then (enabled, running) of each group after the first (the
 *                    layout of a record's values, snapshot.h).
 * @nregs, @regs:     the registers of regs_mask, lowest bit first (0 when not asked for, or
 *                    when the kernel had none to give).
 */
struct ps_uprobe_hit {
	pid_t tid;
	uint32_t cpu;
	uint32_t site;
	uint32_t kind;
	uint64_t seq;
	uint64_t time;
	uint64_t enabled, running;
	int nval, nregs;
	uint64_t val[PS_MAX_EVENTS];
	uint64_t regs[PS_UPROBE_MAX_REGS];
	struct ps_uprobe_map map;
};

struct ps_uprobe; /* one thread's groups, probes and ring */

/**
 * ps_uprobe_available() - whether uprobe perf events can be opened here: the kernel has the
 * uprobe PMU and this process may use it (root or CAP_PERFMON).
 * Return: 1, or 0 with the reason in @why.
 */
int ps_uprobe_available(char *why, size_t n);

/**
 * ps_uprobe_open() - open the groups, probes and ring of @o for thread @tid.
 * @u:   set to the new handle.
 * @tid: a thread id (a process id is its main thread only).
 * @o:   what to open.
 * @err: filled on failure.
 *
 * On failure nothing stays open and @err names the event, the site and the thread.
 * Return: 0, or -1.
 */
int ps_uprobe_open(struct ps_uprobe **u, pid_t tid, const struct ps_uprobe_opts *o, struct ps_error *err);

/**
 * ps_uprobe_check_events() - whether ps_uprobe_open() can open @ev as its counter group: a
 * trial open of the group on the calling thread, with the attributes the catcher uses (per
 * thread, user space only, no sampling of its own), closed at once. For a caller that must
 * choose the catcher before the program starts.
 * @ev, @nev: the counters, as for struct ps_uprobe_opts (0 events: nothing to check).
 * @err:      filled on failure: "msr/tsc/ cannot be read at a uprobe (...)", naming the first
 *            event that does not open and why.
 * Return: 0, or -1.
 */
int ps_uprobe_check_events(const struct ps_event *ev, int nev, struct ps_error *err);

/**
 * ps_uprobe_check_groups() - whether @ngroups groups of @ev can be counted at a uprobe: one
 * group always; several only when none of their events can be multiplexed (software events
 * and tracepoints: a group of a hardware PMU may be off it at a hit, and its probe then
 * records nothing).
 * Return: 0, or -1 with @err (PS_ENEEDS_PTRACE) naming the first such event.
 */
int ps_uprobe_check_groups(const struct ps_event *ev, int nev, int ngroups, struct ps_error *err);

/* Start (@on = 1) or stop counting and probing, every group at once. 0, or -1 with @err. */
int ps_uprobe_enable(struct ps_uprobe *u, int on, struct ps_error *err);

/* Called for each hit by ps_uprobe_drain(); a non-zero return stops the drain after it. */
typedef int (*ps_uprobe_cb)(const struct ps_uprobe_hit *h, void *ud);

/**
 * ps_uprobe_drain() - decode every record in the ring, in the kernel's order (for one
 * thread: the order of the hits), and free their space.
 * @u:  the handle.
 * @cb: called for each hit (may be NULL to discard).
 * @ud: passed to @cb.
 *
 * PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES add to ps_uprobe_lost(); the kernel writes
 * the count of records it dropped for lack of space before the next record it can write.
 * With opts.maps, the files mapped are delivered too, in order, as records of kind
 * PS_UPROBE_MAP (not counted as hits).
 * Return: the number of hits delivered.
 */
long ps_uprobe_drain(struct ps_uprobe *u, ps_uprobe_cb cb, void *ud);

/* Records the kernel reported lost so far (PERF_RECORD_LOST: ring full). The kernel reports
   a loss only when it can write again, so a loss at the end of a run may not be reported
   yet: ps_uprobe_missing() counts it. */
uint64_t ps_uprobe_lost(const struct ps_uprobe *u);

/**
 * ps_uprobe_missing() - records the probes made but the caller has not received: each
 * probe's count (read from its group) minus the hits of it decoded so far. After a last
 * ps_uprobe_drain() (the target exited, or the probes disabled) it is the exact number of
 * records lost, reported or not, so no loss is ever silent.
 * Return: the count, or -1 with @err when the groups cannot be read.
 */
long ps_uprobe_missing(const struct ps_uprobe *u, struct ps_error *err);

/* Hits decoded so far, and records of other types skipped. */
uint64_t ps_uprobe_hits(const struct ps_uprobe *u);
uint64_t ps_uprobe_other(const struct ps_uprobe *u);

/* The fd that owns the ring: poll() it for POLLIN to wait for records. */
int ps_uprobe_fd(const struct ps_uprobe *u);

/* The thread id given to ps_uprobe_open(). */
pid_t ps_uprobe_tid(const struct ps_uprobe *u);

/* Unmap the ring and close every event; NULL is a no-op. Undecoded records are dropped. */
void ps_uprobe_close(struct ps_uprobe *u);

/**
 * ps_uprobe_site_is_nop5() - whether the 5 bytes at file offset @off of @path are the NOP
 * 0f 1f 44 00 00 that the kernel optimizes (no int3).
 * Return: 1 or 0, or -1 with @err when the file cannot be read there.
 */
int ps_uprobe_site_is_nop5(const char *path, uint64_t off, struct ps_error *err);

/**
 * ps_uprobe_file_offset() - the file offset of link-time virtual address @vaddr in the ELF
 * file @path (from the PT_LOAD segment that holds it), as a uprobe wants it.
 * Return: 0, or -1 with @err (PS_ENOTFOUND when no loaded segment holds @vaddr).
 */
int ps_uprobe_file_offset(const char *path, uint64_t vaddr, uint64_t *off, struct ps_error *err);

/* The config bit that makes a uprobe a uretprobe (format/retprobe), or -1 without the PMU. */
int ps_uprobe_retprobe_bit(void);

#endif
