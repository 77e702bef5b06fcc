/* core/session/session_results.c - what a session measured, and what its catcher alone knows
 * (session.h): the region table, the records, the entries, the losses, the notices, and the
 * settings only one kind of catcher has, each asked of the catcher's ops. It calls no other file
 * of the session, so the session's run (session.c) and its files (session_save.c) both read it. */
#include <string.h>

#include "session_priv.h"

uint64_t ps_session_entries(const struct ps_session *s, int id)
{
	const struct ps_region_info *ri = ps_session_region(s, id);
	uint64_t n;

	if (!ri)
		return 0;
	if (s->cat->ops->entries && s->cat->ops->entries(s->cat, id, &n))
		return n; /* counted by the catcher's own perf events */
	return ri->entries;
}

/* ---- what the catcher alone has ---- */

int ps_session_uprobe_ring(struct ps_session *s, unsigned pages, struct ps_error *err)
{
	if (!s->cat->ops->ring)
		return ps_error_set(err, PS_EUSAGE, "a ring size is for the uprobe catcher (backend uprobe)");
	return s->cat->ops->ring(s->cat, pages, err);
}

int ps_session_uprobe_fast_sites(const struct ps_session *s, int *nsites)
{
	*nsites = 0;
	return s->cat->ops->fast_sites ? s->cat->ops->fast_sites(s->cat, nsites) : 0;
}

int ps_session_marker_policy(struct ps_session *s, const struct ps_mshm_policy *p, struct ps_error *err)
{
	if (!s->cat->ops->policy)
		return ps_error_set(err, PS_EUSAGE, "the markers' policy is for the marker catcher (backend marker)");
	return s->cat->ops->policy(s->cat, p, err);
}

int ps_session_marker_status(const struct ps_session *s, struct ps_marker_status *st)
{
	memset(st, 0, sizeof *st);
	return s->cat->ops->marker_status ? s->cat->ops->marker_status(s->cat, st) : -1;
}

/* ---- results ---- */

pid_t ps_session_pid(const struct ps_session *s)
{
	return s->env->pid;
}

int ps_session_status(const struct ps_session *s, int *exited, int *code, int *signo)
{
	return s->cat->ops->status(s->cat, exited, code, signo);
}

uint64_t ps_session_stops(const struct ps_session *s)
{
	return ps_tracer_stops(s->t);
}

int ps_session_nevents(const struct ps_session *s)
{
	return s->env->nev;
}

const struct ps_event *ps_session_event(const struct ps_session *s, int i)
{
	return i >= 0 && i < s->env->nev ? &s->env->ev[i] : NULL;
}

int ps_session_nregions(const struct ps_session *s)
{
	return s->env->nreg;
}

const struct ps_region_info *ps_session_region(const struct ps_session *s, int id)
{
	return id >= 0 && id < s->env->nreg ? &s->env->reg[id] : NULL;
}

uint64_t ps_session_nrecords(const struct ps_session *s)
{
	return ps_hitpath_nrecords(s->env->hp);
}

const struct ps_snap *ps_session_record(const struct ps_session *s, uint64_t i)
{
	return ps_hitpath_record_at(s->env->hp, i);
}

size_t ps_session_recsize(const struct ps_session *s)
{
	size_t n = ps_hitpath_recsize(s->env->hp);
	return n ? n : ps_snap_size((unsigned)ps__nvals(s->env), (unsigned)s->env->nargs);
}

uint64_t ps_session_dropped(const struct ps_session *s)
{
	return ps_hitpath_dropped(s->env->hp);
}

/* The notices since the last call; valid until the next call. */
const char *ps_session_notice(struct ps_session *s)
{
	memcpy(s->notice_out, s->env->notice, PS_NOTICE_MAX);
	s->env->notice[0] = '\0';
	return s->notice_out;
}
