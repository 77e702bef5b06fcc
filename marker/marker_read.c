/* marker/marker_read.c - reading a thread's counter group: read(2) of the whole group
 * (PERF_FORMAT_GROUP), or rdpmc through each member's mmap page where the kernel allows it
 * (perf_event_open(2), "the mmap layout"). Which one is measured once at start-up. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "marker_read.h"

void pm_counters_close(struct pm_counters *c)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < PS_MAX_EVENTS; i++)
		if (c->page[i]) {
			munmap(c->page[i], (size_t)pg);
			c->page[i] = NULL;
		}
	for (int k = 0; k < c->nmore; k++)
		ps_group_close(&c->more[k]);
	c->nmore = 0;
	ps_group_close(&c->g);
}

/* Map each member's first page (the one rdpmc needs). */
static int map_pages(struct pm_counters *c, struct ps_error *err)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < c->g.n; i++) {
		void *p = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, c->g.fds[i], 0);

		if (p == MAP_FAILED)
			return ps_error_set(err, errno, "mmap of %s's page: %s", c->g.ev[i].name, strerror(errno));
		c->page[i] = p;
	}
	return 0;
}

int pm_counters_open(struct pm_counters *c, const struct ps_event *ev, const int *gsize, int ngroups,
		     enum pm_read_mode mode, struct ps_error *err)
{
	int first = gsize[0];

	memset(c, 0, sizeof *c);
	if (ps_group_open(&c->g, ev, gsize[0], 0, -1, PS_GROUP_ENABLED, err))
		return -1;
	for (int k = 1; k < ngroups && k < PM_GROUPS; first += gsize[k++], c->nmore++)
		if (ps_group_open(&c->more[k - 1], ev + first, gsize[k], 0, -1, PS_GROUP_ENABLED, err)) {
			pm_counters_close(c);
			return -1;
		}
	c->nev = first;
	if (mode == PM_READ_RDPMC && map_pages(c, err)) {
		pm_counters_close(c);
		return -1;
	}
	return 0;
}

static inline uint64_t rdpmc(uint32_t counter)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

#define BARRIER() __asm__ __volatile__("" ::: "memory")

/* One member through its page: the seqlock loop of perf_event_open(2). Times from member 0. */
static uint64_t page_read(struct perf_event_mmap_page *pc, uint64_t *enabled, uint64_t *running)
{
	uint64_t count, en, run;
	uint32_t seq;

	do {
		uint32_t idx;

		seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		BARRIER();
		en = pc->time_enabled;
		run = pc->time_running;
		if (pc->cap_user_time && en != run) {
			uint64_t cyc = rdtsc(), quot, rem, delta;

			quot = cyc >> pc->time_shift;
			rem = cyc & (((uint64_t)1 << pc->time_shift) - 1);
			delta = pc->time_offset + quot * pc->time_mult + ((rem * pc->time_mult) >> pc->time_shift);
			en += delta;
			if (pc->index)
				run += delta;
		}
		idx = pc->index;
		count = (uint64_t)pc->offset;
		if (pc->cap_user_rdpmc && idx) {
			uint16_t width = pc->pmc_width;
			int64_t pmc = (int64_t)rdpmc(idx - 1);

			pmc <<= 64 - width;
			pmc >>= 64 - width;
			count += (uint64_t)pmc;
		}
		BARRIER();
	} while (__atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE) != seq);
	if (enabled) {
		*enabled = en;
		*running = run;
	}
	return count;
}

/* Group @g by read(2): its values into @val, its times into @enabled and @running. */
static void group_read(const struct ps_group *g, uint64_t *val, uint64_t *enabled, uint64_t *running)
{
	/* nr, time_enabled, time_running, then {value, id} per member */
	uint64_t buf[3 + 2 * PS_MAX_EVENTS];
	int n = g->n;

	if (pm_sys_read(g->fds[0], buf, sizeof buf) < (long)((3 + 2 * (size_t)n) * sizeof(uint64_t))) {
		memset(val, 0, (size_t)n * sizeof *val);
		*enabled = *running = 0;
		return;
	}
	*enabled = buf[1];
	*running = buf[2];
	for (int i = 0; i < n; i++)
		val[i] = buf[3 + 2 * i];
}

void pm_counters_read(struct pm_counters *c, enum pm_read_mode mode, uint64_t *val, uint64_t *enabled,
		      uint64_t *running)
{
	if (mode == PM_READ_RDPMC) {
		for (int i = 0; i < c->g.n; i++)
			val[i] = page_read(c->page[i], i == 0 ? enabled : NULL, running);
	} else {
		group_read(&c->g, val, enabled, running);
	}
	for (int k = 0, first = c->g.n; k < c->nmore; first += c->more[k++].n)
		group_read(&c->more[k], val + first, &val[c->nev + 2 * k], &val[c->nev + 2 * k + 1]);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ns per read of @c in @mode: the best of 5 rounds of 200 (start-up stays under a few ms). */
static double time_reads(struct pm_counters *c, enum pm_read_mode mode)
{
	uint64_t v[PS_MAX_EVENTS], en, run;
	double best = 1e30;

	for (int r = 0; r < 5; r++) {
		double t0 = now_s(), dt;

		for (int i = 0; i < 200; i++)
			pm_counters_read(c, mode, v, &en, &run);
		dt = (now_s() - t0) / 200 * 1e9;
		if (dt < best)
			best = dt;
	}
	return best;
}

/* Why rdpmc cannot read the group of @c (mapped), or NULL when it can. */
static const char *rdpmc_refused(const struct pm_counters *c)
{
	for (int i = 0; i < c->g.n; i++) {
		const struct perf_event_mmap_page *pc = c->page[i];

		if (!pc->cap_user_rdpmc)
			return "the kernel does not allow it (cap_user_rdpmc = 0)";
		if (!pc->index)
			return "an event is not on a hardware counter (software events have none)";
	}
	return NULL;
}

int pm_choose_mode(const struct ps_event *ev, int n, struct pm_read_choice *out, struct ps_error *err)
{
	struct pm_counters c;
	const char *why;

	if (pm_counters_open(&c, ev, &n, 1, PM_READ_RDPMC, err))
		return -1;
	out->read_ns = time_reads(&c, PM_READ_SYSCALL);
	out->rdpmc_ns = -1;
	out->mode = PM_READ_SYSCALL;
	out->rdpmc_why[0] = '\0';
	if ((why = rdpmc_refused(&c))) {
		snprintf(out->rdpmc_why, sizeof out->rdpmc_why, "%s", why);
	} else {
		out->rdpmc_ns = time_reads(&c, PM_READ_RDPMC);
		if (out->rdpmc_ns < out->read_ns)
			out->mode = PM_READ_RDPMC;
	}
	pm_counters_close(&c);
	return 0;
}
