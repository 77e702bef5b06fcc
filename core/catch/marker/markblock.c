/* core/catch/marker/markblock.c - the block perfsh shares with the marker library (markblock.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "markblock.h"

/* The comma-separated names of the session's events; with none, task-clock, which the program
   still needs: its group's time enabled is the on-CPU time of a hit. */
static int event_list(const struct ps_catch_env *env, char *out, size_t n, struct ps_error *err)
{
	size_t k = 0;

	snprintf(out, n, "%s", env->nev ? "" : "task-clock");
	for (int i = 0; i < env->nev; i++) {
		int w = snprintf(out + k, n - k, "%s%s", i ? "," : "", env->ev[i].name);

		if (w < 0 || (size_t)w >= n - k)
			return ps_error_set(err, PS_EUSAGE, "the event list is too long for the marker catcher");
		k += (size_t)w;
	}
	return 0;
}

/* The shared block: a memfd laid out as core/catch/marker/markshm.h says, every slot's ring empty. */
int ps_mshm_make(const struct ps_catch_env *env, int *fdp, struct ps_mshm_ctl **ctlp, size_t *bytesp,
		 struct ps_error *err)
{
	unsigned nvals = env->nev ? (unsigned)env->nev : 1;
	size_t recsize = ps_snap_size(nvals, PS_MSHM_FIELDS);
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
	if (event_list(env, c->events, sizeof c->events, err))
		return -1;
	c->version = PS_MSHM_VERSION;
	c->nslots = PS_MSHM_SLOTS;
	c->bytes = *bytesp;
	c->slot_bytes = slot;
	c->slots_off = ctl;
	c->recsize = recsize;
	c->nvals = nvals;
	c->nargs = PS_MSHM_FIELDS;
	c->pol.on = 1;
	c->pol.threshold = UINT64_MAX;
	for (unsigned i = 0; i < PS_MSHM_SLOTS; i++)
		if (!ps_ring_init_at(ps_mshm_slot(c, i)->ring, ps_mshm_ring_bytes(c), recsize, PS_MSHM_RING_RECORDS,
				     err))
			return -1;
	__atomic_store_n(&c->magic, PS_MSHM_MAGIC, __ATOMIC_RELEASE);
	return 0;
}
