/* core/catch/marker/markblock.c - the block perfsh shares with the marker library (markblock.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "markblock.h"

/* The names of the session's events, comma-separated, its groups split by ';'; with none,
   task-clock, which the program still needs: its group's time enabled is the on-CPU time of a
   hit. */
static int event_list(const struct ps_catch_env *env, char *out, size_t n, struct ps_error *err)
{
	size_t k = 0;

	snprintf(out, n, "%s", env->nev ? "" : "task-clock");
	for (int i = 0, g = 0, end = env->gsize[0]; i < env->nev; i++) {
		const char *sep = i == 0 ? "" : ",";
		int w;

		if (i == end && g + 1 < env->ngroups) {
			sep = ";";
			end += env->gsize[++g];
		}
		w = snprintf(out + k, n - k, "%s%s", sep, env->ev[i].name);
		if (w < 0 || (size_t)w >= n - k)
			return ps_error_set(err, PS_EUSAGE, "the event list is too long for the marker catcher");
		k += (size_t)w;
	}
	return 0;
}

/* Words of a record's values: every event's, then (enabled, running) of each later group. */
static unsigned nvals_of(const struct ps_catch_env *env)
{
	if (!env->nev)
		return 1;
	return (unsigned)(env->nev + 2 * (env->ngroups > 1 ? env->ngroups - 1 : 0));
}

int ps_mshm_events(const struct ps_catch_env *env, struct ps_mshm_ctl *c, struct ps_error *err)
{
	unsigned nvals = nvals_of(env);
	size_t recsize = ps_snap_size(nvals, PS_MSHM_FIELDS);

	if (ps_ring_bytes(recsize, PS_MSHM_RING_RECORDS) > ps_mshm_ring_bytes(c))
		return ps_error_set(err, PS_EUSAGE, "the marker catcher's rings have no room for records of %u values",
				    nvals);
	if (event_list(env, c->events, sizeof c->events, err))
		return -1;
	c->recsize = recsize;
	c->nvals = nvals;
	for (unsigned i = 0; i < c->nslots; i++)
		if (!ps_ring_init_at(ps_mshm_slot(c, i)->ring, ps_mshm_ring_bytes(c), recsize, PS_MSHM_RING_RECORDS,
				     err))
			return -1;
	return 0;
}

/* The shared block: a memfd laid out as core/catch/marker/markshm.h says, every slot's ring empty. */
int ps_mshm_make(const struct ps_catch_env *env, int grow, int *fdp, struct ps_mshm_ctl **ctlp, size_t *bytesp,
		 struct ps_error *err)
{
	size_t recsize = ps_snap_size(grow ? PS_MAX_EVENTS : nvals_of(env), PS_MSHM_FIELDS);
	size_t ctl = (sizeof(struct ps_mshm_ctl) + 4095) & ~(size_t)4095;
	size_t slot =
	    (offsetof(struct ps_mshm_slot, ring) + ps_ring_bytes(recsize, PS_MSHM_RING_RECORDS) + 4095) & ~(size_t)4095;
	struct ps_mshm_ctl *c;

	*bytesp = ctl + PS_MSHM_SLOTS * slot;
	if ((*fdp = memfd_create("perfsh-marker", MFD_CLOEXEC)) < 0 || ftruncate(*fdp, (off_t)*bytesp))
		return ps_error_set(err, errno, "the marker catcher's shared memory: %s", strerror(errno));
	c = mmap(NULL, *bytesp, PROT_READ | PROT_WRITE, MAP_SHARED, *fdp, 0);
	if (c == MAP_FAILED)
		return ps_error_set(err, errno, "the marker catcher's shared memory: mmap: %s", strerror(errno));
	*ctlp = c;
	c->version = PS_MSHM_VERSION;
	c->nslots = PS_MSHM_SLOTS;
	c->bytes = *bytesp;
	c->slot_bytes = slot;
	c->slots_off = ctl;
	c->nargs = PS_MSHM_FIELDS;
	c->pol.on = 1;
	c->pol.threshold = UINT64_MAX;
	if (ps_mshm_events(env, c, err))
		return -1;
	__atomic_store_n(&c->magic, PS_MSHM_MAGIC, __ATOMIC_RELEASE);
	return 0;
}
