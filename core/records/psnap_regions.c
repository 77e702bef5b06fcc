/* core/records/psnap_regions.c - what a .psnap file says of each region beside its name: the
 * metadata pairs kind.ID, entries.ID and sampled.ID, made here for every writer (psnap.h). */
#include <stdio.h>

#include "psnap.h"

/* One pair of @p: the key "@name.@id" and @value, copied into @p. */
static void region_pair(struct ps_psnap_region_pairs *p, const char *name, int id, const char *value)
{
	char(*t)[24] = p->text[p->n];

	snprintf(t[0], sizeof t[0], "%s.%d", name, id);
	snprintf(t[1], sizeof t[1], "%s", value);
	p->meta[p->n] = (struct ps_psnap_meta){t[0], t[1]};
	p->n++;
}

size_t ps_psnap_region_pairs(int id, const struct ps_psnap_region_meta *m, struct ps_psnap_region_pairs *p)
{
	char v[24];

	p->n = 0;
	if (m->has_entries) {
		snprintf(v, sizeof v, "%llu", (unsigned long long)m->entries);
		region_pair(p, "entries", id, v);
	}
	if (m->kind)
		region_pair(p, "kind", id, m->kind);
	if (m->sampled)
		region_pair(p, "sampled", id, "1");
	return p->n;
}
