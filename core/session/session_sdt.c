/* core/session/session_sdt.c - SDT regions (<sys/sdt.h> probes, core/binary/sdt.h) of the program's
 * own file, armed as file sites by a catcher that probes files (PS_CATCH_FILES: the uprobe
 * catcher): a pair's first probe starts a hit and its second ends it, a single probe is a point
 * event. */
#include <stdio.h>
#include <string.h>

#include "regionspec.h"
#include "sdt.h"
#include "session_priv.h"

/* Arm every site of probe @k of @sp for region @id as @role. */
static int arm_probe(struct ps_session *s, const struct ps_sdt_set *set, const struct ps_sdt_spec *sp, int k, int id,
		     enum ps_catch_role role, struct ps_error *err)
{
	if (!ps_sdt_find(set, sp->provider[k], sp->name[k], s->exe, err))
		return -1;
	for (size_t i = 0; i < set->n; i++) {
		const struct ps_sdt_probe *p = &set->probes[i];
		if (strcmp(p->provider, sp->provider[k]) || strcmp(p->name, sp->name[k]))
			continue;
		struct ps_catch_point pt = {
		    .path = s->exe, .offset = p->offset, .ref_ctr_offset = p->sema_offset, .region = id, .role = role};
		if (s->cat->ops->arm(s->cat, &pt, err))
			return -1;
	}
	return 0;
}

int ps_session_region_sdt(struct ps_session *s, const char *spec, const char *label, unsigned flags,
			  struct ps_error *err)
{
	struct ps_sdt_spec sp;
	struct ps_sdt_set set;
	struct ps_region_info *ri;
	int rc;

	if (ps_sdt_spec_parse(spec, &sp, err))
		return -1;
	if (ps__arms_code(s, spec, err))
		return -1;
	if (!(ps__caps(s) & PS_CATCH_FILES)) /* the in-process catcher's refusal is one auto moves past */
		return ps_error_set(err, ps__caps(s) & PS_CATCH_STOPS ? PS_EUSAGE : PS_ENEEDS_UPROBE,
				    "region '%s': SDT probes are armed by the uprobe catcher only (--backend uprobe or "
				    "auto), not by %s",
				    label ? label : spec, s->cat->ops->name);
	if (ps__exe_path(s, err) || ps_sdt_read(s->exe, &set, err))
		return -1;
	ri = ps__new_region(s, sp.npoints == 1 ? PS_REGION_POINT : PS_REGION_SDT, spec, spec, flags, err);
	if (!ri) {
		ps_sdt_free(&set);
		return -1;
	}
	if (sp.npoints == 1)
		rc = arm_probe(s, &set, &sp, 0, ri->id, PS_ROLE_POINT, err);
	else
		rc = arm_probe(s, &set, &sp, 0, ri->id, PS_ROLE_START, err) ||
		     arm_probe(s, &set, &sp, 1, ri->id, PS_ROLE_END, err);
	ps_sdt_free(&set);
	if (rc) {
		s->cat->ops->disarm(s->cat, ri->id);
		return -1;
	}
	return s->env->nreg++;
}
