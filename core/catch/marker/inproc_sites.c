/* core/catch/marker/inproc_sites.c - the sites perfsh lists in the control block for the agent
 * (inproc_site.h): one per address, a range's start and end at one address made one site (its
 * roles in the order they were armed), and no two whose patches would overlap. */
#include <stdio.h>
#include <string.h>

#include "inproc_site.h"

/* What site @s is, for a refusal: "the entry of region 'sum'", "a point of region 'f.c:3-4'". */
static const char *what(char *buf, size_t n, const struct ps_mshm_site *s)
{
	snprintf(buf, n, "%s of region '%.127s'",
		 s->flags & (PS_MSHM_SITE_START | PS_MSHM_SITE_END) ? "a point" : "the entry", s->name);
	return buf;
}

int ps_inproc_sites_named(const struct ps_mshm_ctl *c, const char *name)
{
	for (uint32_t i = 0; i < c->nsites && i < PS_MSHM_SITES; i++)
		if (!strncmp(c->sites[i].name, name, sizeof c->sites[i].name))
			return 1;
	return 0;
}

int ps_inproc_sites_add(struct ps_mshm_ctl *c, const struct ps_mshm_site *s, struct ps_error *err)
{
	const unsigned roles = PS_MSHM_SITE_START | PS_MSHM_SITE_END;
	uint32_t n = c->nsites;
	char a[200], b[200];

	for (uint32_t i = 0; i < n; i++) {
		struct ps_mshm_site *o = &c->sites[i];
		int same = !strncmp(o->name, s->name, sizeof o->name);

		if (o->dev != s->dev || o->ino != s->ino)
			continue; /* another file's (a library's function: its link-time address) */

		if (o->addr == s->addr && same && (o->flags & roles) && (s->flags & roles)) {
			/* a range's end and start at one address, run in the order they were armed */
			if (o->flags == PS_MSHM_SITE_START && (s->flags & PS_MSHM_SITE_END))
				o->flags |= PS_MSHM_SITE_START_FIRST;
			o->flags |= s->flags & roles;
			return 0;
		}
		if (o->addr == s->addr && !(o->flags & roles) && !(s->flags & roles))
			return 0; /* one function, one site */
		if (o->patch < s->patch + s->len && s->patch < o->patch + o->len)
			return ps_error_set(err, PS_ENEEDS_UPROBE,
					    "%s at 0x%llx and %s at 0x%llx would be patched over the same bytes; use "
					    "--backend uprobe",
					    what(a, sizeof a, s), (unsigned long long)s->addr, what(b, sizeof b, o),
					    (unsigned long long)o->addr);
	}
	if (n == PS_MSHM_SITES)
		return ps_error_set(err, PS_ENEEDS_UPROBE,
				    "%s: --backend inproc patches at most %d entries and points; use --backend uprobe",
				    what(a, sizeof a, s), PS_MSHM_SITES);
	c->sites[n] = *s;
	__atomic_store_n(&c->nsites, n + 1, __ATOMIC_RELEASE);
	return 1;
}

void ps_inproc_sites_drop(struct ps_mshm_ctl *c, const char *name)
{
	uint32_t n = c->nsites;

	while (n > 0 && !strncmp(c->sites[n - 1].name, name, sizeof c->sites[n - 1].name))
		memset(&c->sites[--n], 0, sizeof c->sites[n]);
	__atomic_store_n(&c->nsites, n, __ATOMIC_RELEASE);
}
