/* core/session/sampling.c - sampled function regions: every entry counted, the program stopped only
 * on the sampled ones.
 *
 * Entries are counted by one of three mechanisms, chosen per region (PERFSH_SAMPLING forces
 * one; core/events/machine.c tests what fires):
 *   breakpoint  a perf event per sampled region and thread: PERF_TYPE_BREAKPOINT,
 *               HW_BREAKPOINT_X at the entry, sigtrap = 1 (a synchronous TRAP_PERF SIGTRAP on
 *               overflow, which the tracer turns into a hit), remove_on_exec = 1 (the kernel
 *               requires it with sigtrap). The thread stops at the entry.
 *   uprobe      the same with a uprobe perf event on the entry's file offset, where debug
 *               registers do not fire. The kernel sends the SIGTRAP once the entry's first
 *               instruction has run, so the hit starts there: that instruction must be one
 *               whose effect on the stack pointer is known and that keeps the arguments
 *               (ps_x86_entry_step()). Opened per thread: with inherit, clone fails (EFAULT).
 *   int3        the plain entry breakpoint: every entry stops the program, perfsh draws.
 * The count is the exact number of entries; the period chooses the stops:
 *   every N   period N;
 *   p         a geometric gap with mean 1/p, drawn anew after each stop (PERF_EVENT_IOC_PERIOD),
 *             so each entry is sampled independently with probability p;
 *   windows   period 1 inside a window, 2^40 outside, switched at each edge by the run loop
 *             (session.c).
 * An entry that is not sampled costs a debug exception (or a uprobe) handled in the kernel,
 * not a ptrace stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/hw_breakpoint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "session_priv.h"
#include "x86insn.h"

#define FAR_PERIOD (1ULL << 40)

static uint64_t first_period(struct ps_session *s, const struct ps_region_info *ri)
{
	if (ri->sample_every)
		return ri->sample_every;
	if (ri->sample_p > 0)
		return ps_hitpath_gap(s->hp, ri->sample_p);
	return ps_hitpath_in_window(s->hp) ? 1 : FAR_PERIOD;
}

static int ev_open(struct ps_session *s, int k, pid_t tid, struct ps_error *err)
{
	const struct ps_region_info *ri = &s->reg[s->sampled[k]];
	const struct sampler *sm = &s->smp[k];
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	if (sm->counter == PS_COUNT_UPROBE) {
		a.type = (uint32_t)ps_machine_uprobe_type();
		a.config1 = (uint64_t)(uintptr_t)sm->path;
		a.config2 = sm->off;
	} else {
		a.type = PERF_TYPE_BREAKPOINT;
		a.bp_type = HW_BREAKPOINT_X;
		a.bp_addr = ri->addr;
		a.bp_len = sizeof(long);
	}
	a.sample_period = first_period(s, ri);
	a.sigtrap = 1;
	a.remove_on_exec = 1;
	a.sig_data = (uint64_t)ri->id;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOSPC && sm->counter == PS_COUNT_BREAKPOINT)
			return ps_error_set(err, e,
					    "region '%s': no free debug register on thread %d (at most %d "
					    "sampled regions, fewer if a debugger uses some)",
					    ri->name, (int)tid, PS_MAX_HW);
		return ps_error_set(err, e, "region '%s': %s on thread %d: %s", ri->name,
				    sm->counter == PS_COUNT_UPROBE ? "uprobe" : "hardware breakpoint", (int)tid,
				    strerror(e));
	}
	return fd;
}

static int sample_k(const struct ps_session *s, int id)
{
	for (int k = 0; k < s->nsampled; k++)
		if (s->sampled[k] == id)
			return k;
	return -1;
}

/* Start counting sampled region @k's entries on thread @th. */
static int open_one(struct ps_session *s, struct thr *th, int k, struct ps_error *err)
{
	if (s->smp[k].counter == PS_COUNT_INT3)
		return 0; /* the hit path draws */
	th->hwfd[k] = ev_open(s, k, th->tid, err);
	return th->hwfd[k] < 0 ? -1 : 0;
}

int ps__hw_open_thread(struct ps_session *s, struct thr *th, struct ps_error *err)
{
	for (int k = 0; k < s->nsampled; k++)
		if (!s->reg[s->sampled[k]].dropped && open_one(s, th, k, err))
			return -1;
	return 0;
}

void ps__hw_close_thread(struct ps_session *s, struct thr *th)
{
	for (int k = 0; k < s->nsampled; k++) {
		uint64_t n;
		if (th->hwfd[k] < 0)
			continue;
		if (read(th->hwfd[k], &n, sizeof n) == (ssize_t)sizeof n)
			s->reg[s->sampled[k]].entries_gone += n;
		close(th->hwfd[k]);
		th->hwfd[k] = -1;
	}
}

/* After a sampled stop of region @slot's event on @th: draw the next gap. */
void ps__hw_after_hit(struct ps_session *s, struct thr *th, int k)
{
	const struct ps_region_info *ri = &s->reg[s->sampled[k]];
	uint64_t period;

	if (ri->sample_p <= 0 || th->hwfd[k] < 0)
		return;
	period = ps_hitpath_gap(s->hp, ri->sample_p);
	ioctl(th->hwfd[k], PERF_EVENT_IOC_PERIOD, &period);
}

int ps__hw_windows(struct ps_session *s)
{
	for (int k = 0; k < s->nsampled; k++)
		if (s->reg[s->sampled[k]].period_ms)
			return 1;
	return 0;
}

/* Open or close the windows of every window-sampled region on every thread. */
void ps__hw_set_window(struct ps_session *s, int open)
{
	uint64_t period = open ? 1 : FAR_PERIOD;

	ps_hitpath_window(s->hp, open);
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			for (int k = 0; k < s->nsampled; k++)
				if (s->reg[s->sampled[k]].period_ms && th->hwfd[k] >= 0)
					ioctl(th->hwfd[k], PERF_EVENT_IOC_PERIOD, &period);
}

/* How long until the next window edge. One window length for all window regions: the first. */
uint64_t ps__hw_period_ns(struct ps_session *s, int open)
{
	for (int k = 0; k < s->nsampled; k++) {
		const struct ps_region_info *ri = &s->reg[s->sampled[k]];
		if (ri->period_ms)
			return (uint64_t)(open ? ri->window_ms : ri->period_ms - ri->window_ms) * 1000000u;
	}
	return 0;
}

/* The other roles of the breakpoint at region @id's entry: 0 when the entry is its alone. */
static int entry_shared(const struct ps_session *s, int id)
{
	for (int b = 0; b < s->nbps; b++) {
		const struct bpent *e = &s->bps[b];
		int mine = 0;
		for (int k = 0; k < e->nroles; k++)
			mine |= e->roles[k].region == id && e->roles[k].kind == ROLE_ENTRY;
		if (mine)
			return e->nroles - 1;
	}
	return 0;
}

/* The perf event counts the entries: the int3 at the entry goes. */
static void drop_entry_int3(struct ps_session *s, int id)
{
	for (int b = 0; b < s->nbps; b++) {
		struct bpent *e = &s->bps[b];
		for (int k = 0; k < e->nroles; k++)
			if (e->roles[k].region == id && e->roles[k].kind == ROLE_ENTRY)
				e->roles[k--] = e->roles[--e->nroles];
		if (e->nroles == 0)
			ps_tracer_bp_enable(s->t, b, 0, NULL);
	}
}

/* Can a uprobe count region @id's entries? Fills @sm; 0, or -1 with the reason in @why. */
static int uprobe_fits(struct ps_session *s, int id, struct sampler *sm, char *why, size_t n)
{
	const struct ps_region_info *ri = &s->reg[id];
	struct ps_error e;
	uint8_t insn[16];
	ssize_t got;
	int fd;

	if (!ps_machine_uprobes_fire(why, n))
		return -1;
	if (entry_shared(s, id)) {
		snprintf(why, n, "another region's breakpoint is at its entry");
		return -1;
	}
	if (ps_machine_file_offset(s->pid, ri->addr, sm->path, sizeof sm->path, &sm->off, &e)) {
		snprintf(why, n, "%.200s", e.msg);
		return -1;
	}
	fd = open(sm->path, O_RDONLY | O_CLOEXEC);
	got = fd < 0 ? -1 : pread(fd, insn, sizeof insn, (off_t)sm->off);
	if (fd >= 0)
		close(fd);
	if (got <= 0) {
		snprintf(why, n, "cannot read its entry in %.200s", sm->path);
		return -1;
	}
	if (ps_x86_entry_step(insn, (size_t)got, &sm->step_len, &sm->sp_down)) {
		snprintf(why, n, "its first instruction (byte %02x) branches, moves the stack or writes an argument",
			 insn[0]);
		return -1;
	}
	return 0;
}

/* Choose how region @id (sampled slot @k) counts its entries, and say so when it is not the
   hardware breakpoint. */
static int choose_counter(struct ps_session *s, int id, int k, struct ps_error *err)
{
	struct ps_region_info *ri = &s->reg[id];
	struct sampler *sm = &s->smp[k];
	char bwhy[256] = "", uwhy[256] = "";
	enum ps_counter forced;
	int f = ps_machine_forced(&forced, err);

	if (f < 0)
		return -1;
	if (f && forced == PS_COUNT_BREAKPOINT && !ps_machine_breakpoints_fire(bwhy, sizeof bwhy))
		return ps_error_set(err, PS_EUSAGE,
				    "PERFSH_SAMPLING=breakpoint: hardware breakpoints do not fire here (%s)", bwhy);
	if (f && forced == PS_COUNT_UPROBE && uprobe_fits(s, id, sm, uwhy, sizeof uwhy))
		return ps_error_set(err, PS_EUSAGE,
				    "PERFSH_SAMPLING=uprobe: region '%s' cannot be counted by a uprobe: %s", ri->name,
				    uwhy);
	if (f)
		sm->counter = forced;
	else if (ps_machine_breakpoints_fire(bwhy, sizeof bwhy))
		sm->counter = PS_COUNT_BREAKPOINT;
	else if (uprobe_fits(s, id, sm, uwhy, sizeof uwhy) == 0)
		sm->counter = PS_COUNT_UPROBE;
	else
		sm->counter = PS_COUNT_INT3;
	ri->counter = sm->counter;
	if (!f && sm->counter == PS_COUNT_UPROBE)
		ps__notice(s, "region '%s': entries counted by a uprobe (hardware breakpoints do not fire here: %s)",
			   ri->name, bwhy);
	if (!f && sm->counter == PS_COUNT_INT3)
		ps__notice(s,
			   "region '%s': entries counted by int3 stops: every entry stops the program (hardware "
			   "breakpoints do not fire here: %s; uprobe: %s)",
			   ri->name, bwhy, uwhy);
	if (sm->counter != PS_COUNT_INT3) {
		drop_entry_int3(s, id);
		ps_tracer_hw_traps(s->t, 1);
	}
	return 0;
}

void ps__hw_close_all(struct ps_session *s)
{
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			ps__hw_close_thread(s, th);
}

/* After exec the kernel removed the events and the regions were armed anew: open them again
   on the threads there are. */
int ps__hw_reopen_all(struct ps_session *s)
{
	for (int k = 0; k < s->nsampled; k++) {
		int id = s->sampled[k];
		char why[256];
		if (s->reg[id].dropped || s->smp[k].counter == PS_COUNT_INT3)
			continue;
		if (s->smp[k].counter == PS_COUNT_UPROBE && uprobe_fits(s, id, &s->smp[k], why, sizeof why))
			return ps_error_set(&s->fail, PS_EUSAGE, "region '%s' after exec: no uprobe: %s",
					    s->reg[id].name, why);
		drop_entry_int3(s, id);
	}
	ps__hw_close_all(s);
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			if (ps__hw_open_thread(s, th, &s->fail))
				return -1;
	return 0;
}

/* Whether a perf trap of sampled region @id stopped the thread where its hit starts: at the
   entry (breakpoint), or right after the entry's first instruction (uprobe), in which case the
   tracer is told where the return address is. 0: the signal came late. */
int ps__hw_at_entry(struct ps_session *s, int id, const struct user_regs_struct *regs)
{
	int k = sample_k(s, id);
	const struct sampler *sm;

	if (k < 0)
		return 0;
	sm = &s->smp[k];
	if (sm->counter != PS_COUNT_UPROBE)
		return regs->rip == s->reg[id].addr;
	if (regs->rip != s->reg[id].addr + sm->step_len)
		return 0;
	ps_tracer_ret_slot(s->t, regs->rsp + sm->sp_down);
	return 1;
}

/* Undo a sampling that could not start on every thread: the region counts by int3 again. */
static int unsample(struct ps_session *s, int id, int k)
{
	struct ps_region_info *ri = &s->reg[id];

	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			if (th->hwfd[k] >= 0) {
				close(th->hwfd[k]);
				th->hwfd[k] = -1;
			}
	s->nsampled--;
	if (ri->counter != PS_COUNT_INT3)
		ps__bp_role(s, ri->addr, PS_BP_FUNC, id, ROLE_ENTRY, NULL);
	ri->counter = PS_COUNT_INT3;
	ri->sample_every = 0;
	ri->sample_p = 0;
	ri->window_ms = ri->period_ms = 0;
	return -1;
}

int ps_session_region_sample(struct ps_session *s, int id, const struct ps_sample *how, struct ps_error *err)
{
	struct ps_region_info *ri;
	int k;

	if (id < 0 || id >= s->nreg)
		return ps_error_set(err, PS_EUSAGE, "no region %d", id);
	ri = &s->reg[id];
	if (ri->kind != PS_REGION_FUNC || ri->pending)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': sampling applies to function regions whose code is mapped", ri->name);
	if (s->started || ps_hitpath_recording(s->hp))
		return ps_error_set(err, PS_EUSAGE, "region '%s': set sampling before the first run", ri->name);
	if ((how->every > 0) + (how->p > 0) + (how->period_ms > 0) != 1)
		return ps_error_set(err, PS_EUSAGE, "region '%s': give one of every, p, or window_ms with period_ms",
				    ri->name);
	if (how->p > 1)
		return ps_error_set(err, PS_EUSAGE, "region '%s': p is a probability above 0 and at most 1, not %g",
				    ri->name, how->p);
	if (how->period_ms && (how->window_ms == 0 || how->window_ms >= how->period_ms))
		return ps_error_set(err, PS_EUSAGE, "region '%s': window_ms is above 0 and below period_ms", ri->name);
	if (s->mk)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': with the marker catcher the program draws its samples itself; set "
				    "the markers' policy (t:markers{sample = P} or {every = N})",
				    ri->name);
	if (s->up)
		return ps__uprobe_sample(s, id, how, err);
	if (sample_k(s, id) >= 0)
		return ps_error_set(err, PS_EUSAGE, "region '%s' is sampled already", ri->name);
	if (s->nsampled == PS_MAX_HW)
		return ps_error_set(err, PS_EUSAGE, "at most %d sampled regions (debug registers)", PS_MAX_HW);
	k = s->nsampled;
	if (choose_counter(s, id, k, err))
		return -1;
	ri->sample_every = how->every;
	ri->sample_p = how->p;
	ri->window_ms = how->window_ms;
	ri->period_ms = how->period_ms;
	s->sampled[s->nsampled++] = id;
	ps_hitpath_seed(s->hp, (uint64_t)getpid() * 0x2545F4914F6CDD1DULL ^ (uint64_t)ri->addr);
	/* threads that exist already */
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			if (open_one(s, th, k, err))
				return unsample(s, id, k);
	if (s->smp[k].counter == PS_COUNT_INT3 &&
	    ps_hitpath_sample(s->hp, id, how->every, how->p, how->period_ms > 0, err))
		return unsample(s, id, k);
	return 0;
}

uint64_t ps_session_entries(const struct ps_session *s, int id)
{
	const struct ps_region_info *ri = ps_session_region(s, id);
	int k = sample_k(s, id);
	uint64_t n;

	if (!ri)
		return 0;
	if (k < 0 || s->smp[k].counter == PS_COUNT_INT3)
		return ri->entries;
	n = ri->entries_gone;
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next) {
			uint64_t v;
			if (th->hwfd[k] >= 0 && read(th->hwfd[k], &v, sizeof v) == (ssize_t)sizeof v)
				n += v;
		}
	return n;
}
