/* core/sampling.c - sampled function regions: hardware execute breakpoints that count every
 * entry in the kernel and stop the program only on the sampled ones.
 *
 * One perf event per sampled region and thread: PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X at the
 * entry, sigtrap = 1 (a synchronous TRAP_PERF SIGTRAP on overflow, which the tracer turns
 * into a hit), remove_on_exec = 1 (the kernel requires it with sigtrap). Its count is the
 * exact number of entries; its period chooses the stops:
 *   every N   period N;
 *   p         a geometric gap with mean 1/p, drawn anew after each stop (PERF_EVENT_IOC_PERIOD),
 *             so each entry is sampled independently with probability p;
 *   windows   period 1 inside a window, 2^40 outside, switched on a timer.
 * An entry that is not sampled costs a debug exception handled in the kernel, not a ptrace
 * stop.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "session_priv.h"

#define FAR_PERIOD (1ULL << 40)

static uint64_t rng_next(struct ps_session *s)
{
	uint64_t x = s->rng ? s->rng : 0x9e3779b97f4a7c15ULL;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	s->rng = x;
	return x;
}

/* Entries until the next sampled one: geometric with success probability p, at least 1. */
static uint64_t gap(struct ps_session *s, double p)
{
	double u = ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0; /* (0,1) */
	if (p >= 1)
		return 1;
	double g = floor(log(u) / log1p(-p)) + 1;
	return g < 1 ? 1 : g > 1e15 ? (uint64_t)1e15 : (uint64_t)g;
}

static uint64_t first_period(struct ps_session *s, const struct ps_region_info *ri)
{
	if (ri->sample_every)
		return ri->sample_every;
	if (ri->sample_p > 0)
		return gap(s, ri->sample_p);
	return s->in_window ? 1 : FAR_PERIOD;
}

static int hw_open(struct ps_session *s, int k, pid_t tid, struct ps_error *err)
{
	const struct ps_region_info *ri = &s->reg[s->sampled[k]];
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_BREAKPOINT;
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = ri->addr;
	a.bp_len = sizeof(long);
	a.sample_period = first_period(s, ri);
	a.sigtrap = 1;
	a.remove_on_exec = 1;
	a.sig_data = (uint64_t)ri->id;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOSPC)
			return ps_error_set(err, e,
					    "region '%s': no free debug register on thread %d (at most %d "
					    "sampled regions, fewer if a debugger uses some)",
					    ri->name, (int)tid, PS_MAX_HW);
		return ps_error_set(err, e, "region '%s': hardware breakpoint on thread %d: %s", ri->name, (int)tid,
				    strerror(e));
	}
	return fd;
}

int ps__hw_open_thread(struct ps_session *s, struct thr *th, struct ps_error *err)
{
	for (int k = 0; k < s->nsampled; k++) {
		if (s->reg[s->sampled[k]].dropped)
			continue;
		int fd = hw_open(s, k, th->tid, err);
		if (fd < 0)
			return -1;
		th->hwfd[k] = fd;
	}
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
	period = gap(s, ri->sample_p);
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

	s->in_window = open;
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

/* After exec the kernel removed the events: open them again on the threads there are. */
int ps__hw_reopen_all(struct ps_session *s)
{
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next) {
			ps__hw_close_thread(s, th);
			if (ps__hw_open_thread(s, th, &s->fail))
				return -1;
		}
	return 0;
}

int ps_session_region_sample(struct ps_session *s, int id, const struct ps_sample *how, struct ps_error *err)
{
	struct ps_region_info *ri;

	if (id < 0 || id >= s->nreg)
		return ps_error_set(err, PS_EUSAGE, "no region %d", id);
	ri = &s->reg[id];
	if (ri->kind != PS_REGION_FUNC || ri->pending)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': sampling applies to function regions whose code is mapped", ri->name);
	if (s->started || s->ring)
		return ps_error_set(err, PS_EUSAGE, "region '%s': set sampling before the first run", ri->name);
	if ((how->every > 0) + (how->p > 0) + (how->period_ms > 0) != 1)
		return ps_error_set(err, PS_EUSAGE, "region '%s': give one of every, p, or window_ms with period_ms",
				    ri->name);
	if (how->p > 1 || (how->period_ms && (how->window_ms == 0 || how->window_ms >= how->period_ms)))
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': p is in (0, 1]; window_ms is above 0 and below period_ms", ri->name);
	if (s->nsampled == PS_MAX_HW)
		return ps_error_set(err, PS_EUSAGE, "at most %d sampled regions (debug registers)", PS_MAX_HW);
	ri->sample_every = how->every;
	ri->sample_p = how->p;
	ri->window_ms = how->window_ms;
	ri->period_ms = how->period_ms;
	s->sampled[s->nsampled++] = id;
	ps_tracer_hw_traps(s->t, 1);
	if (!s->rng)
		s->rng = (uint64_t)getpid() * 0x2545F4914F6CDD1DULL ^ (uint64_t)ri->addr;
	/* the int3 at the entry goes: the hardware breakpoint takes its place */
	for (int b = 0; b < s->nbps; b++) {
		struct bpent *e = &s->bps[b];
		for (int k = 0; k < e->nroles; k++)
			if (e->roles[k].region == id && e->roles[k].kind == ROLE_ENTRY)
				e->roles[k--] = e->roles[--e->nroles];
		if (e->nroles == 0)
			ps_tracer_bp_enable(s->t, b, 0, NULL);
	}
	/* threads that exist already */
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next) {
			int fd = hw_open(s, s->nsampled - 1, th->tid, err);
			if (fd < 0) {
				s->nsampled--;
				return -1;
			}
			th->hwfd[s->nsampled - 1] = fd;
		}
	return 0;
}

uint64_t ps_session_entries(struct ps_session *s, int id)
{
	const struct ps_region_info *ri = ps_session_region(s, id);
	uint64_t n;

	if (!ri)
		return 0;
	for (int k = 0; k < s->nsampled; k++) {
		if (s->sampled[k] != id)
			continue;
		n = ri->entries_gone;
		for (unsigned b = 0; b < THR_BUCKETS; b++)
			for (struct thr *th = s->threads[b]; th; th = th->next) {
				uint64_t v;
				if (th->hwfd[k] >= 0 && read(th->hwfd[k], &v, sizeof v) == (ssize_t)sizeof v)
					n += v;
			}
		return n;
	}
	return ri->entries;
}
