/* core/session/session_save.c - the .psnap header of a session's records, and saving them to a file:
 * the spill file and ps_session_save() begin with the same header, and end with the same facts. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_priv.h"

void ps__session_header(const struct ps_session *s, struct ps_session_header *h)
{
	size_t len = 0;

	memset(h, 0, sizeof *h);
	const struct ps_catch_env *env = s->env;

	for (int k = 0; k < env->nev; k++)
		h->events[k] = env->ev[k].name;
	/* the group layout: "2,1" is two groups, of the first two events and of the third */
	for (int g = 0; g < env->ngroups && len < sizeof h->groups; g++)
		len += (size_t)snprintf(h->groups + len, sizeof h->groups - len, "%s%d", g ? "," : "", env->gsize[g]);
	h->meta.key = "groups";
	h->meta.value = h->groups;
	h->info.nvals = (unsigned)ps__nvals(env);
	h->info.nargs = (unsigned)env->nargs;
	h->info.nevents = (size_t)env->nev;
	h->info.events = h->events;
	h->info.nmeta = 1;
	h->info.meta = &h->meta;
}

/* One pair of @f: @key and @value (or, when @value is NULL, the number @v) copied into its storage. */
static void fact(struct ps_session_facts *f, const char *key, const char *value, uint64_t v)
{
	char(*t)[24] = f->text[f->n];

	snprintf(t[0], sizeof t[0], "%s", key);
	if (value)
		snprintf(t[1], sizeof t[1], "%s", value);
	else
		snprintf(t[1], sizeof t[1], "%llu", (unsigned long long)v);
	f->meta[f->n].key = t[0];
	f->meta[f->n].value = t[1];
	f->n++;
}

/* Whether the hits of region @ri are sampled: its own policy, or the markers' (one for all). */
static int sampled(const struct ps_session *s, const struct ps_region_info *ri)
{
	struct ps_marker_status st;

	if (ri->kind != PS_REGION_MARKER)
		return ri->sample_every || ri->sample_p > 0 || ri->period_ms;
	return ps_session_marker_status(s, &st) == 0 &&
	       (st.pol.every > 1 || (st.pol.threshold != UINT64_MAX && ldexp((double)st.pol.threshold, -64) < 1));
}

/* What the file says of each region: kind.ID, entries.ID and sampled.ID (ps_psnap_region_pairs). */
static void region_facts(const struct ps_session *s, struct ps_session_facts *f)
{
	struct ps_psnap_region_pairs p;

	for (int i = 0; i < s->env->nreg; i++) {
		const struct ps_region_info *ri = &s->env->reg[i];
		struct ps_psnap_region_meta m = {.kind = ps_region_kind_name(ri->kind),
						 .has_entries = 1,
						 .entries = ps_session_entries(s, i),
						 .sampled = sampled(s, ri)};

		ps_psnap_region_pairs(i, &m, &p);
		for (size_t k = 0; k < p.n; k++)
			fact(f, p.meta[k].key, p.meta[k].value, 0);
	}
}

void ps__session_facts(const struct ps_session *s, struct ps_session_facts *f)
{
	char key[24];

	f->n = 0;
	fact(f, "catcher", s->cat->ops->name, 0);
	fact(f, "lost", NULL, s->cat->ops->lost(s->cat));
	fact(f, "dropped", NULL, ps_hitpath_dropped(s->env->hp));
	if (s->detached)
		fact(f, "detached", "1", 0);
	for (int i = 0; i < s->env->nreg; i++) {
		uint64_t open = ps_hitpath_open_calls(s->env->hp, i);
		if (open) {
			snprintf(key, sizeof key, "running.%d", i);
			fact(f, key, NULL, open);
		}
	}
	region_facts(s, f);
}

int ps_session_save(const struct ps_session *s, const char *path, const struct ps_psnap_meta *meta, size_t nmeta,
		    struct ps_error *err)
{
	struct ps_session_header h;
	struct ps_session_facts *facts;
	const size_t facts_max = sizeof facts->meta / sizeof facts->meta[0];
	const char *regions[PS_MAX_REGIONS];
	struct ps_psnap_meta *all;
	struct ps_psnap_writer *w;
	int rc = 0;

	if (s->spill_path)
		return ps_error_set(err, PS_EUSAGE, "the records are in the spill file %s already", s->spill_path);
	facts = malloc(sizeof *facts);
	all = facts ? calloc(nmeta + 1 + facts_max, sizeof *all) : NULL;
	if (!all) {
		free(facts);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	ps__session_header(s, &h);
	ps__session_facts(s, facts);
	all[0] = h.meta;
	if (nmeta)
		memcpy(all + 1, meta, nmeta * sizeof *meta);
	memcpy(all + 1 + nmeta, facts->meta, facts->n * sizeof *all);
	for (int i = 0; i < s->env->nreg; i++)
		regions[i] = s->env->reg[i].name;
	h.info.nregions = (size_t)s->env->nreg;
	h.info.regions = regions;
	h.info.nmeta = nmeta + 1 + facts->n;
	h.info.meta = all;
	w = ps_psnap_replace(path, &h.info, err); /* whole: a failed save keeps the old file */
	free(all);
	free(facts);
	if (!w)
		return -1;
	if (ps_hitpath_nrecords(s->env->hp) &&
	    ps_psnap_write(w, ps_hitpath_record_at(s->env->hp, 0), (size_t)ps_hitpath_nrecords(s->env->hp), err))
		rc = -1;
	if (ps_psnap_close(w, err)) /* after a failed write: says the same */
		rc = -1;
	return rc;
}

/* The record size follows the event count, so recording starts once the events are final. */
int ps__start_records(struct ps_session *s, struct ps_error *err)
{
	struct ps_session_header h;

	if (ps_hitpath_recording(s->env->hp))
		return 0;
	ps__session_header(s, &h);
	return ps_hitpath_record(s->env->hp, h.info.nvals, h.info.nargs, s->spill_path, &h.info, err);
}

int ps_session_spill(struct ps_session *s, const char *path, struct ps_error *err)
{
	char *copy;

	if (s->env->started || ps_hitpath_recording(s->env->hp))
		return ps_error_set(err, PS_EUSAGE, "spill to a file before the first run");
	if (strlen(path) >= PATH_MAX)
		return ps_error_set(err, PS_EUSAGE, "path too long: %.40s...", path);
	if (!(copy = strdup(path)))
		return ps_error_set(err, ENOMEM, "out of memory");
	free(s->spill_path);
	s->spill_path = copy;
	return 0;
}

int ps_session_spill_flush(struct ps_session *s, struct ps_error *err)
{
	return ps_hitpath_spill_flush(s->env->hp, err);
}

int ps_session_spill_meta(struct ps_session *s, const char *key, const char *value, struct ps_error *err)
{
	return ps_hitpath_spill_meta(s->env->hp, key, value, err);
}

int ps_session_spill_close(struct ps_session *s, struct ps_error *err)
{
	struct ps_session_facts *f = malloc(sizeof *f);

	if (!f)
		return ps_error_set(err, ENOMEM, "out of memory");
	ps__session_facts(s, f);
	for (size_t i = 0; i < f->n; i++)
		if (ps_hitpath_spill_meta(s->env->hp, f->meta[i].key, f->meta[i].value, err)) {
			free(f);
			return -1;
		}
	free(f);
	return ps_hitpath_spill_close(s->env->hp, err);
}
