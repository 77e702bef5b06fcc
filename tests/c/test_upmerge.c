/* tests/c/test_upmerge.c - several counter groups at a uprobe: the records of one trap, one per
 * group, merged into one hit (core/catch/uprobe/upmerge.c) in any order, a hit with a record
 * missing dropped; and, live in this thread, a function whose page faults are known read by
 * two groups at its entry and return (core/catch/uprobe/uprobe.c). The live test is skipped with
 * the reason where the uprobe PMU cannot be opened (not root).
 */
#include "ctest.h"

#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "procmaps.h"
#include "upmerge.h"

/* A record of group @cg of site 0's entry: @v for each of its events, times @t and @t / 2. */
static struct ps_uprobe_hit rec(const struct ps_upmerge *m, int cg, uint64_t seq, uint64_t v, uint64_t t)
{
	struct ps_uprobe_hit h = {.tid = 7, .seq = seq, .time = 1000 * seq + (uint64_t)cg, .cpu = (uint32_t)cg};

	for (int k = m->first[cg]; k < m->first[cg] + m->size[cg]; k++)
		h.val[k] = v;
	h.enabled = t;
	h.running = t / 2;
	h.nregs = cg == 0;
	h.regs[0] = cg == 0 ? 0x55 : 0;
	return h;
}

TEST(upmerge_hit_from_every_group_in_any_order)
{
	static const int gsize[3] = {1, 2, 1};
	struct ps_upmerge m;
	struct ps_uprobe_hit r[3];
	const struct ps_uprobe_hit *h = NULL;

	ps__upmerge_init(&m, 4, 3, gsize);
	/* seq 1: groups 2, 0, 1; seq 2: 1, 2, 0 */
	for (int s = 1; s <= 2; s++) {
		for (int cg = 0; cg < 3; cg++)
			r[cg] = rec(&m, cg, (uint64_t)s, (uint64_t)(10 * s + cg), (uint64_t)(100 * s + 10 * cg));
		int order[2][3] = {{2, 0, 1}, {1, 2, 0}};
		for (int i = 0; i < 3; i++) {
			h = ps__upmerge_add(&m, &r[order[s - 1][i]], order[s - 1][i]);
			CHECK(i < 2 ? h == NULL : h != NULL);
		}
		if (!h)
			return;
		CHECK_EQ_INT(h->nval, 4 + 2 * 2);
		CHECK_EQ_INT(h->seq, s);
		CHECK_EQ_INT(h->time, 1000 * s); /* the first group's time, CPU and registers */
		CHECK_EQ_INT(h->cpu, 0);
		CHECK_EQ_INT(h->nregs, 1);
		CHECK_EQ_INT(h->regs[0], 0x55);
		CHECK_EQ_INT(h->val[0], 10 * s);
		CHECK_EQ_INT(h->val[1], 10 * s + 1);
		CHECK_EQ_INT(h->val[2], 10 * s + 1);
		CHECK_EQ_INT(h->val[3], 10 * s + 2);
		CHECK_EQ_INT(h->enabled, 100 * s);
		CHECK_EQ_INT(h->running, 50 * s);
		CHECK_EQ_INT(h->val[4], 100 * s + 10); /* the second group's times */
		CHECK_EQ_INT(h->val[5], (100 * s + 10) / 2);
		CHECK_EQ_INT(h->val[6], 100 * s + 20); /* the third's */
		CHECK_EQ_INT(h->val[7], (100 * s + 20) / 2);
	}
	CHECK_EQ_INT(m.dropped, 0);
}

TEST(upmerge_drops_a_hit_with_a_record_lost)
{
	static const int gsize[2] = {1, 1};
	struct ps_upmerge m;
	struct ps_uprobe_hit a, b;

	ps__upmerge_init(&m, 2, 2, gsize);
	a = rec(&m, 0, 1, 5, 10); /* seq 1's group 1 record was lost */
	CHECK(ps__upmerge_add(&m, &a, 0) == NULL);
	a = rec(&m, 1, 2, 6, 20); /* seq 2 comes group 1 first: never paired with seq 1 */
	b = rec(&m, 0, 2, 7, 30);
	CHECK(ps__upmerge_add(&m, &a, 1) == NULL);
	const struct ps_uprobe_hit *h = ps__upmerge_add(&m, &b, 0);
	CHECK(h != NULL);
	if (h) {
		CHECK_EQ_INT(h->seq, 2);
		CHECK_EQ_INT(h->val[0], 7);
		CHECK_EQ_INT(h->val[1], 6);
	}
	CHECK_EQ_INT(m.dropped, 1);
}

#define PAGES 5 /* page faults of one ut_pages() call */
#define CALLS 20

__attribute__((noinline, noclone)) long ut_pages(long n);
__attribute__((noinline, noclone)) long ut_pages(long n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	for (long i = 0; i < n; i++)
		p[i * (long)page] = 1;
	munmap((void *)p, (size_t)n * page);
	return n;
}

struct pairs {
	int n, bad;
	struct ps_uprobe_hit last;
	uint64_t faults; /* page faults from entries to their returns */
};

static int pair(const struct ps_uprobe_hit *h, void *ud)
{
	struct pairs *p = ud;

	if (h->nval != 3 + 2 || h->val[3] < h->val[4] || h->val[3] == 0 || (p->n && h->val[3] < p->last.val[3]))
		p->bad++; /* the second group's times: running never above enabled, never going back */
	if (h->kind == PS_UPROBE_RETURN && p->n)
		p->faults += h->val[1] - p->last.val[1];
	p->last = *h;
	p->n++;
	return 0;
}

TEST(uprobe_two_groups_read_at_each_hit)
{
	static char path[4096];
	struct ps_uprobe_site site;
	struct ps_event ev[3];
	static const int gsize[2] = {1, 2};
	struct ps_uprobe *u;
	struct ps_error err;
	struct pairs p = {0};
	uint64_t off;
	char why[256];

	if (!ps_uprobe_available(why, sizeof why))
		SKIP("%s", why);
	if (ps_event_resolve("task-clock", &ev[0], &err) || ps_event_resolve("page-faults", &ev[1], &err) ||
	    ps_event_resolve("context-switches", &ev[2], &err) ||
	    ps_maps_file_offset(0, (uint64_t)(uintptr_t)ut_pages, path, sizeof path, &off, &err)) {
		CHECK(!"events or file offset");
		return;
	}
	CHECK_EQ_INT(ps_uprobe_check_groups(ev, 3, 2, &err), 0);
	site = (struct ps_uprobe_site){.path = path, .offset = off, .ret = 1};
	struct ps_uprobe_opts o = {.ev = ev,
				   .nev = 3,
				   .ngroups = 2,
				   .gsize = gsize,
				   .sites = &site,
				   .nsites = 1,
				   .ring_pages = 64,
				   .enabled = 1};
	if (ps_uprobe_open(&u, gettid(), &o, &err)) {
		fprintf(stderr, "  %s\n", err.msg);
		CHECK(!"open");
		return;
	}
	ut_pages(PAGES); /* the first call binds mmap and munmap lazily */
	ps_uprobe_drain(u, NULL, NULL);
	for (int i = 0; i < CALLS; i++)
		ut_pages(PAGES);
	CHECK_EQ_INT(ps_uprobe_drain(u, pair, &p), 2 * CALLS);
	CHECK_EQ_INT(p.bad, 0);
	CHECK_EQ_INT(p.faults, PAGES * CALLS); /* each call's own, from the second group */
	CHECK_EQ_INT(ps_uprobe_missing(u, &err), 0);
	ps_uprobe_close(u);
}

/* Groups of a hardware PMU can take turns on it, and a group off it misses its probes: several
   are refused (needs ptrace), one is not; software events never take turns. */
TEST(uprobe_several_groups_only_of_software_events)
{
	struct ps_event ev[2] = {{.name = "task-clock"}, {.name = "cycles"}};
	struct ps_error err;

	ev[0].attr.type = PERF_TYPE_SOFTWARE;
	ev[1].attr.type = PERF_TYPE_HARDWARE;
	CHECK_EQ_INT(ps_uprobe_check_groups(ev, 1, 1, &err), 0);
	CHECK_EQ_INT(ps_uprobe_check_groups(ev, 2, 1, &err), 0);
	CHECK_EQ_INT(ps_uprobe_check_groups(ev, 2, 2, &err), -1);
	CHECK_EQ_INT(err.code, PS_ENEEDS_PTRACE);
	CHECK(strstr(err.msg, "cycles") != NULL);
	ev[1].attr.type = PERF_TYPE_TRACEPOINT;
	CHECK_EQ_INT(ps_uprobe_check_groups(ev, 2, 2, &err), 0);
}
