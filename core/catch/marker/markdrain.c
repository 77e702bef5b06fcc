/* core/catch/marker/markdrain.c - the marker catcher's rings drained: each thread's slot in the
 * shared block (markshm.h) read while the program runs, its records handed to the hit path as
 * the library paired them (ps_hitpath_pair()), the hits a thread had open when it or the program
 * ended made exited records, a slot whose thread ended freed for another; and the names the
 * library publishes mapped to the session's regions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hitpath.h"
#include "markcatch_priv.h"
#include "ring.h"
#include "snapshot.h"

/* The session region of marker @name (with the agent: of function or range @name), or -1. */
int ps__mk_region_of(const struct ps_markcatch *m, const char *name)
{
	const struct ps_catch_env *env = m->env;

	for (int i = 0; i < env->nreg; i++) {
		enum ps_region_kind k = env->reg[i].kind;

		if ((m->inproc ? k == PS_REGION_FUNC || k == PS_REGION_RANGE : k == PS_REGION_MARKER) &&
		    !strcmp(env->reg[i].spec, name))
			return i;
	}
	return -1;
}

/* Map the names the library published since the last look. */
void ps__mk_look_at_names(struct ps_markcatch *m)
{
	uint32_t n = __atomic_load_n(&m->ctl->nregions, __ATOMIC_SEQ_CST);

	for (; m->seen < n && m->seen < PS_MSHM_REGIONS; m->seen++) {
		char name[PS_MSHM_NAME];

		memcpy(name, m->ctl->names[m->seen], sizeof name);
		name[sizeof name - 1] = '\0';
		m->map[m->seen] = ps__mk_region_of(m, name);
	}
}

/* A library's function the agent has looked at is no longer pending: patched at the address it
   found, or dropped with why. */
static void lib_site_seen(struct ps_markcatch *m, const struct ps_mshm_site *s)
{
	int id = ps__mk_region_of(m, s->name);
	struct ps_region_info *ri;

	if (!(s->flags & PS_MSHM_SITE_LIB) || id < 0)
		return;
	ri = &m->env->reg[id];
	ri->pending = 0;
	if (s->state == PS_MSHM_SITE_PATCHED) {
		ri->addr = s->addr;
	} else if (!ri->dropped) {
		ri->dropped = 1;
		snprintf(ri->why, sizeof ri->why, "%.200s; use --backend uprobe", s->why);
	}
}

/* The sites the agent refused since the last look, told once each. */
static void told_refusals(struct ps_markcatch *m)
{
	for (; m->inproc && m->told < m->ctl->nsites; m->told++) {
		struct ps_mshm_site *s = &m->ctl->sites[m->told];

		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == PS_MSHM_SITE_WAITING)
			return;
		lib_site_seen(m, s);
		if (s->state == PS_MSHM_SITE_REFUSED)
			ps_catch_notice(m->env,
					"region '%s' is not measured: the agent refused it (%.200s); use "
					"--backend uprobe",
					s->name, s->why);
	}
}

/* One record of the library, paired there already: to the hit path as it is. */
static void feed(struct ps_markcatch *m, const struct ps_snap *rec)
{
	int id = rec->region < PS_MSHM_REGIONS ? m->map[rec->region] : -1;

	if (id < 0 || rec->nvals != m->ctl->nvals || rec->nargs != PS_MSHM_FIELDS) {
		m->unarmed++;
		return;
	}
	ps_hitpath_pair(m->env->hp, id, rec);
}

/* The hits @sl's thread had open when it ended (with the program, killed or by exit() inside a
   region, or alone) end as exited records, as the other catchers end what a thread left open:
   at their start, since no end was read. A hit whose record the thread wrote before it died
   between that and closing its frame (@last: the slot's last record, NULL if none) is not
   ended twice. */
static void left_open(struct ps_markcatch *m, struct ps_mshm_slot *sl, const struct ps_snap_key *last)
{
	uint32_t d = __atomic_load_n(&sl->depth, __ATOMIC_ACQUIRE);
	struct ps_snap *rec;

	if (!d || !(rec = calloc(1, m->ctl->recsize)))
		return;
	for (uint32_t j = 0; j < d && j < PS_MSHM_DEPTH; j++) {
		const struct ps_mshm_frame *f = &sl->stack[j];
		const struct ps_snap_key k = {.region = (uint32_t)f->id,
					      .tid = sl->tid,
					      .hit = f->hit,
					      .depth = j,
					      .flags = PS_SNAP_EXITED,
					      .nvals = (uint8_t)m->ctl->nvals,
					      .nargs = PS_MSHM_FIELDS};
		const struct ps_snap_point at = {f->t_start, f->enabled, f->running, f->cpu, f->start};

		if (last && j == d - 1 && last->region == (uint32_t)f->id && last->hit == f->hit && last->depth == j)
			continue;
		if (f->sampled && f->id >= 0) {
			ps_snap_fill(rec, &k, f->args, &at, &at);
			feed(m, rec);
		}
	}
	free(rec);
	sl->depth = 0;
}

/* A slot whose thread ended and whose ring is empty: its counts to the totals, free again. */
static void free_slot(struct ps_markcatch *m, struct ps_mshm_slot *sl, struct ps_ring *r)
{
	for (uint32_t i = 0; i < m->seen; i++)
		m->gone[i] += sl->entries[i];
	m->lost += ps_ring_dropped(r);
	m->unmatched += sl->cnt.unmatched;
	m->fast += sl->cnt.fast;
	memset(&sl->cnt, 0, sizeof sl->cnt);
	memset(sl->entries, 0, sizeof sl->entries);
	sl->depth = 0;
	sl->tid = 0;
	ps_ring_init_at(sl->ring, ps_mshm_ring_bytes(m->ctl), m->ctl->recsize, PS_MSHM_RING_RECORDS, NULL);
	__atomic_store_n(&sl->state, PS_MSHM_FREE, __ATOMIC_RELEASE);
}

/* Every record waiting in the slots to the hit path; the regions' entries brought up to date. */
void ps__mk_drain(struct ps_markcatch *m)
{
	uint64_t entries[PS_MSHM_REGIONS] = {0};

	ps__mk_look_at_names(m);
	told_refusals(m);
	for (unsigned i = 0; i < m->ctl->nslots; i++) {
		struct ps_mshm_slot *sl = ps_mshm_slot(m->ctl, i);
		uint32_t state = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		struct ps_ring *r = (struct ps_ring *)sl->ring;
		const struct ps_snap *rec;
		struct ps_snap_key last = {.region = UINT32_MAX};

		if (state == PS_MSHM_FREE)
			continue;
		while ((rec = ps_ring_peek(r))) {
			last = (struct ps_snap_key){.region = rec->region, .hit = rec->hit, .depth = rec->depth};
			feed(m, rec);
			ps_ring_pop(r);
		}
		if (state == PS_MSHM_GONE || m->ended)
			left_open(m, sl, last.region == UINT32_MAX ? NULL : &last);
		if (state == PS_MSHM_GONE) {
			free_slot(m, sl, r);
			continue;
		}
		for (uint32_t k = 0; k < m->seen; k++)
			entries[k] += __atomic_load_n(&sl->entries[k], __ATOMIC_RELAXED);
	}
	for (uint32_t k = 0; k < m->seen; k++)
		if (m->map[k] >= 0)
			m->env->reg[m->map[k]].entries = m->gone[k] + entries[k];
}
