/* core/catch/uprobe/upmerge.c - one hit from the records of several counter groups (see
 * upmerge.h), and which groups can be merged so (ps_uprobe_check_groups(), uprobe.h). */
#include "upmerge.h"

#include <linux/perf_event.h>
#include <string.h>

int ps_uprobe_check_groups(const struct ps_event *ev, int nev, int ngroups, struct ps_error *err)
{
	for (int k = 0; k < nev && ngroups > 1; k++)
		if (ev[k].attr.type != PERF_TYPE_SOFTWARE && ev[k].attr.type != PERF_TYPE_TRACEPOINT)
			return ps_error_set(err, PS_ENEEDS_PTRACE,
					    "several counter groups with %s: groups of a hardware PMU can take turns "
					    "on it, and a group off it misses the probes",
					    ev[k].name);
	return 0;
}

void ps__upmerge_init(struct ps_upmerge *m, int nev, int ngroups, const int *gsize)
{
	memset(m, 0, sizeof *m);
	m->nev = nev;
	m->ngroups = ngroups;
	for (int g = 0, first = 0; g < ngroups; first += gsize[g++]) {
		m->first[g] = first;
		m->size[g] = gsize[g];
	}
}

/* The slot of @r's hit: the one being merged, or a free one (a stale one of the same probe,
   or the oldest, dropped to make room). */
static int slot_of(struct ps_upmerge *m, const struct ps_uprobe_hit *r)
{
	int free = -1, oldest = 0;

	for (int i = 0; i < PS_UPMERGE_SLOTS; i++) {
		const struct ps_uprobe_hit *h = &m->slot[i].h;
		if (!m->slot[i].have) {
			free = free < 0 ? i : free;
			continue;
		}
		if (h->site == r->site && h->kind == r->kind && h->tid == r->tid) {
			if (h->seq == r->seq)
				return i;
			if (h->seq < r->seq) { /* an earlier trap's: its other records will not come */
				m->slot[i].have = 0;
				m->dropped++;
				free = free < 0 ? i : free;
				continue;
			}
		}
		if (m->slot[i].age < m->slot[oldest].age)
			oldest = i;
	}
	if (free < 0) {
		free = oldest;
		m->dropped++;
	}
	m->slot[free].have = 0;
	m->slot[free].age = ++m->adds;
	m->slot[free].h = (struct ps_uprobe_hit){.site = r->site, .kind = r->kind, .tid = r->tid, .seq = r->seq};
	m->slot[free].h.nval = m->nev + 2 * (m->ngroups - 1);
	return free;
}

const struct ps_uprobe_hit *ps__upmerge_add(struct ps_upmerge *m, const struct ps_uprobe_hit *r, int cg)
{
	int i = slot_of(m, r);
	struct ps_uprobe_hit *h = &m->slot[i].h;

	memcpy(h->val + m->first[cg], r->val + m->first[cg], (size_t)m->size[cg] * sizeof r->val[0]);
	if (cg == 0) {
		h->cpu = r->cpu;
		h->time = r->time;
		h->enabled = r->enabled;
		h->running = r->running;
		h->nregs = r->nregs;
		memcpy(h->regs, r->regs, sizeof h->regs);
	} else {
		h->val[m->nev + 2 * (cg - 1)] = r->enabled;
		h->val[m->nev + 2 * (cg - 1) + 1] = r->running;
	}
	m->slot[i].have |= 1u << cg;
	if (m->slot[i].have != (1u << m->ngroups) - 1)
		return NULL;
	m->slot[i].have = 0;
	return h;
}
