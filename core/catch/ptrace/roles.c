/* core/catch/ptrace/roles.c - what each breakpoint means to the regions: the entry, start or end
 * of one or more regions, or one of the catcher's own points (main, the loader, the unwinder). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ptrace_priv.h"

int ps__pt_role(struct ps_ptrace *p, uint64_t addr, int kind, int region, enum ps_catch_role role, struct ps_error *err)
{
	int id;
	struct bpent *e;

	if ((id = ps_tracer_bp_add(p->t, addr, kind, err)) < 0)
		return -1;
	if (id >= p->nbps) {
		struct bpent *n = realloc(p->bps, (size_t)(id + 1) * sizeof *n);
		if (!n)
			return ps_error_set(err, ENOMEM, "out of memory");
		memset(n + p->nbps, 0, (size_t)(id + 1 - p->nbps) * sizeof *n);
		p->bps = n;
		p->nbps = id + 1;
	}
	e = &p->bps[id];
	for (int k = 0; k < e->nroles; k++)
		if (e->roles[k].region == region && e->roles[k].kind == role) {
			ps_tracer_bp_enable(p->t, id, 1, NULL);
			return id;
		}
	if (e->nroles == ROLES_PER_BP)
		return ps_error_set(err, PS_EUSAGE, "more than %d regions start or end at 0x%" PRIx64, ROLES_PER_BP,
				    addr);
	e->roles[e->nroles].region = region;
	e->roles[e->nroles].kind = role;
	e->nroles++;
	ps_tracer_bp_enable(p->t, id, 1, NULL);
	return id;
}

/* After exec: the old breakpoints are gone, and what they meant. */
void ps__pt_roles_clear(struct ps_ptrace *p)
{
	free(p->bps);
	p->bps = NULL;
	p->nbps = 0;
}
