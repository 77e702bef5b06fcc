/* core/catch/uprobe/upmerge.h - one hit from the records of several counter groups.
 *
 * With several groups (struct ps_uprobe_opts @ngroups), a site has one probe per group, and a
 * trap fires them all: it writes one record per group, each with its group's values and
 * times, in an order the kernel does not fix (its list of the thread's events), and records
 * of other sites at the same address among them. A record is matched to the others of its
 * hit by its site, its kind (entry or return) and its probe's count: the probes of one site
 * are opened and switched together while the thread is stopped (uprobe.h), so their counts
 * are equal at every trap. The merged hit has the first group's time, CPU and registers,
 * every event's value in the order of the events, then (enabled, running) of each group
 * after the first.
 *
 * A hit whose records did not all come (the ring was full) is dropped when a later record of
 * the same probe comes (the records of one thread come in the order of its traps), or when
 * room is needed for a newer one. Private to core/catch/uprobe/ (uprobe.c).
 */
#ifndef PS_UPMERGE_H
#define PS_UPMERGE_H

#include "uprobe.h"

#define PS_UPMERGE_SLOTS 8 /* hits being merged at once (several sites at one address) */

struct ps_upmerge {
	int nev, ngroups;
	int first[PS_UPROBE_MAX_GROUPS], size[PS_UPROBE_MAX_GROUPS]; /* each group's events in val */
	struct {
		unsigned have; /* groups merged so far, a bit each; 0: the slot is free */
		uint64_t age;
		struct ps_uprobe_hit h;
	} slot[PS_UPMERGE_SLOTS];
	uint64_t adds;
	uint64_t dropped; /* hits dropped with records missing */
};

/* Set @m up for @ngroups groups of @gsize[g] of @nev events (the opts' order). */
void ps__upmerge_init(struct ps_upmerge *m, int nev, int ngroups, const int *gsize);

/* Record @r of group @cg (its values at their places in @r->val, its times in @r->enabled and
   @r->running): the whole hit once the last of its groups came (valid until the next call),
   else NULL. */
const struct ps_uprobe_hit *ps__upmerge_add(struct ps_upmerge *m, const struct ps_uprobe_hit *r, int cg);

#endif
