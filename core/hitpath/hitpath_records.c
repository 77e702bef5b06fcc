/* core/hitpath/hitpath_records.c - the hit path's records: each ended measurement becomes one struct
 * ps_snap in the ring, which drains into the store (memory that grows and loses nothing) or
 * into the spill file (a .psnap file, readable after each flush). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hitpath_priv.h"
#include "ring.h"

#define RING_CAPACITY 4096

/* Region names the spill file does not have yet (a record's region is named before it). */
static int spill_names(struct ps_hitpath *hp, struct ps_error *err)
{
	while (hp->spill_nreg < *hp->nreg) {
		if (ps_psnap_add_region(hp->spill, hp->reg[hp->spill_nreg].name, err) < 0)
			return -1;
		hp->spill_nreg++;
	}
	return 0;
}

/* Move what the ring holds into the store or to the spill file; -1 with hp->fail set. */
static int drain(struct ps_hitpath *hp)
{
	size_t n = hp->ring ? ps_ring_count(hp->ring) : 0;

	if (n == 0)
		return 0;
	if (hp->spill) {
		ssize_t w;

		if (spill_names(hp, &hp->fail))
			return -1;
		w = ps_ring_drain_to(hp->ring, hp->spill, &hp->fail);
		if (w < 0)
			return -1;
		hp->spilled += (uint64_t)w;
		return 0;
	}
	if (hp->nstore + n > hp->capstore) {
		uint64_t cap = hp->capstore ? hp->capstore : 4096;
		while (cap < hp->nstore + n)
			cap *= 2;
		unsigned char *p = realloc(hp->store, cap * hp->recsize);
		if (!p)
			return ps_error_set(&hp->fail, ENOMEM, "out of memory for %llu records",
					    (unsigned long long)hp->seq);
		hp->store = p;
		hp->capstore = cap;
	}
	hp->nstore += ps_ring_read(hp->ring, hp->store + hp->nstore * hp->recsize, n);
	return 0;
}

int ps_hitpath_drain(struct ps_hitpath *hp, struct ps_error *err)
{
	if (drain(hp)) {
		if (err)
			*err = hp->fail;
		return -1;
	}
	return 0;
}

/* Slot @sl of thread @th ends at @end, @t_end, @cpu_end: one record. */
void ps__hp_emit(struct ps_hitpath *hp, const struct hthr *th, const struct slot *sl, const struct ps_reading *end,
		 uint64_t t_end, int cpu_end, unsigned flags)
{
	struct ps_region_info *ri = &hp->reg[sl->region];
	struct ps_snap_key k;
	struct ps_snap *rec;

	if (!hp->ring || (ps_ring_space(hp->ring) == 0 && drain(hp))) {
		hp->dropped++;
		return;
	}
	rec = ps_ring_reserve(hp->ring);
	if (!rec) {
		hp->dropped++;
		return;
	}
	k = (struct ps_snap_key){.region = (uint32_t)sl->region,
				 .tid = (uint32_t)th->tid,
				 .seq = hp->seq++,
				 .hit = ri->hits++,
				 .depth = sl->depth,
				 .flags = (uint16_t)(flags | sl->flags | (sl->depth ? PS_SNAP_NESTED : 0)),
				 .nvals = (uint8_t)hp->nvals,
				 .nargs = (uint8_t)hp->nargs};
	ps_snap_fill(rec, &k, sl->args,
		     &(struct ps_snap_point){sl->t, sl->r.time_enabled, sl->r.time_running, sl->cpu, sl->r.val},
		     &(struct ps_snap_point){t_end, end->time_enabled, end->time_running, (int16_t)cpu_end, end->val});
	if (flags & (PS_SNAP_UNWOUND | PS_SNAP_EXITED))
		ri->incomplete++;
	ps_ring_commit(hp->ring);
}

int ps_hitpath_record(struct ps_hitpath *hp, unsigned nvals, unsigned nargs, const char *spill_path,
		      struct ps_psnap_info *info, struct ps_error *err)
{
	if (hp->ring)
		return 0;
	if (nvals > PS_MAX_EVENTS || nargs > PS_MAX_ARGS)
		return ps_error_set(err, PS_EUSAGE, "at most %d counter words and %d arguments in a record",
				    PS_MAX_EVENTS, PS_MAX_ARGS);
	hp->nvals = nvals;
	hp->nargs = nargs;
	hp->recsize = ps_snap_size(nvals, nargs);
	hp->ring = ps_ring_new(hp->recsize, RING_CAPACITY, err);
	if (!hp->ring)
		return -1;
	if (!spill_path)
		return 0;
	info->nvals = nvals;
	info->nargs = nargs;
	hp->spill = ps_psnap_create(spill_path, info, err);
	if (!hp->spill)
		return -1;
	hp->spilling = 1;
	hp->spill_nreg = 0;
	return spill_names(hp, err);
}

int ps_hitpath_recording(const struct ps_hitpath *hp)
{
	return hp->ring != NULL;
}

uint64_t ps_hitpath_seq(const struct ps_hitpath *hp)
{
	return hp->seq;
}

uint64_t ps_hitpath_nrecords(const struct ps_hitpath *hp)
{
	if (hp->spilling)
		return hp->spilled + (hp->ring ? ps_ring_count(hp->ring) : 0);
	return hp->nstore;
}

const struct ps_snap *ps_hitpath_record_at(const struct ps_hitpath *hp, uint64_t i)
{
	return i < hp->nstore ? (const struct ps_snap *)(hp->store + i * hp->recsize) : NULL;
}

size_t ps_hitpath_recsize(const struct ps_hitpath *hp)
{
	return hp->recsize;
}

uint64_t ps_hitpath_dropped(const struct ps_hitpath *hp)
{
	return hp->dropped + (hp->ring ? ps_ring_dropped(hp->ring) : 0);
}

int ps_hitpath_spill_flush(struct ps_hitpath *hp, struct ps_error *err)
{
	if (!hp->spill)
		return 0;
	if (ps_hitpath_drain(hp, err))
		return -1;
	return spill_names(hp, err) || ps_psnap_flush(hp->spill, err) ? -1 : 0;
}

int ps_hitpath_spill_meta(struct ps_hitpath *hp, const char *key, const char *value, struct ps_error *err)
{
	if (!hp->spill)
		return ps_error_set(err, PS_EUSAGE, "not spilling to a file");
	return ps_psnap_add_meta(hp->spill, key, value, err);
}

int ps_hitpath_spill_close(struct ps_hitpath *hp, struct ps_error *err)
{
	int rc;

	if (!hp->spill)
		return 0;
	rc = ps_hitpath_spill_flush(hp, err);
	if (ps_psnap_close(hp->spill, err))
		rc = -1;
	hp->spill = NULL;
	return rc;
}

void ps__hp_records_free(struct ps_hitpath *hp)
{
	if (hp->spill) {
		struct ps_error e;
		ps_hitpath_spill_close(hp, &e);
	}
	ps_ring_free(hp->ring);
	free(hp->store);
}

int ps_hitpath_pair(struct ps_hitpath *hp, int region, const struct ps_snap *rec)
{
	struct ps_snap *out;
	unsigned nv = rec->nvals < hp->nvals ? rec->nvals : hp->nvals;

	if (region < 0 || region >= *hp->nreg || !hp->ring || rec->nargs != hp->nargs ||
	    (ps_ring_space(hp->ring) == 0 && drain(hp)) || !(out = ps_ring_reserve(hp->ring))) {
		hp->dropped++;
		return -1;
	}
	/* the pair as it was made, in this ring's layout, on the program's clock */
	*out = *rec;
	out->region = (uint32_t)region;
	out->seq = hp->seq++;
	out->t_start = ps_holds_map(&hp->holds, rec->t_start);
	out->t_end = ps_holds_map(&hp->holds, rec->t_end);
	out->nvals = (uint8_t)hp->nvals;
	memcpy(ps_snap_args(out), ps_snap_args((struct ps_snap *)rec), (size_t)hp->nargs * sizeof(uint64_t));
	memset(ps_snap_start(out), 0, 2 * (size_t)hp->nvals * sizeof(uint64_t));
	memcpy(ps_snap_start(out), ps_snap_start((struct ps_snap *)rec), nv * sizeof(uint64_t));
	memcpy(ps_snap_end(out), ps_snap_end((struct ps_snap *)rec), nv * sizeof(uint64_t));
	hp->reg[region].hits++;
	if (rec->flags & (PS_SNAP_UNWOUND | PS_SNAP_EXITED))
		hp->reg[region].incomplete++;
	ps_ring_commit(hp->ring);
	return 0;
}
