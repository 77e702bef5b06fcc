/* core/session/session.c - a measured program's session: lifecycle, configuration and the run
 * loop.
 *
 * The pieces: a catcher (core/catch/catcher.h: ptrace, uprobe or marker) sees the program's
 * hits and hands them to the hit path (core/hitpath/hitpath.h), which pairs them into records.
 * The session starts its catcher, lends it the events, the regions and the hit path (struct
 * ps_catch_env) and from then on only calls its ops: it never asks which catcher it holds,
 * only what the catcher declares it can do. Here: the lifecycle and the run loop with its pauses
 * (records, deadline, interrupt); what it measured is read through session_results.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "session_priv.h"
#include "spawn_stdio.h"

/* The catchers, by enum ps_catcher. */
static const struct ps_catcher_ops *const catchers[] = {
    [PS_CATCH_PTRACE] = &ps_catch_ptrace_ops,
    [PS_CATCH_UPROBE] = &ps_catch_uprobe_ops,
    [PS_CATCH_MARKER] = &ps_catch_marker_ops,
    [PS_CATCH_INPROC] = &ps_catch_inproc_ops,
};

/* ---- lifecycle ---- */

static void session_release(struct ps_session *s)
{
	if (s->env) {
		ps_hitpath_free(s->env->hp);
		free(s->env->reg);
	}
	free(s->env);
	free(s->exe);
	free(s->spill_path);
	free(s->notice_out);
	free(s);
}

static int session_new(struct ps_session **sp, const struct ps_event *ev, int nev, struct ps_error *err)
{
	struct ps_session *s = NULL;
	struct ps_catch_env *env;

	if (nev < 0 || nev > PS_MAX_EVENTS)
		return ps_error_set(err, PS_EUSAGE, "at most %d events per thread (got %d)", PS_MAX_EVENTS, nev);
	if (!(s = calloc(1, sizeof *s)) || !(s->env = env = calloc(1, sizeof *env)) ||
	    !(env->reg = calloc(PS_MAX_REGIONS, sizeof *env->reg)) || !(s->exe = calloc(1, PATH_MAX)) ||
	    !(s->notice_out = calloc(1, PS_NOTICE_MAX))) {
		if (s)
			session_release(s);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	if (nev > 0)
		memcpy(env->ev, ev, (size_t)nev * sizeof *ev);
	env->nev = nev;
	env->ngroups = nev > 0;
	env->gsize[0] = nev;
	env->unwinds = -1;
	env->libs_mapped = ps__libs_mapped;
	env->exec = ps__exec_seen;
	env->owner = s;
	s->main_bp = -1;
	s->loader_bp = -1;
	s->unwinds = -1;
	env->hp = ps_hitpath_new(env->reg, &env->nreg, err);
	if (!env->hp) {
		session_release(s);
		return -1;
	}
	*sp = s;
	return 0;
}

/* Start the catcher @how on @argv (spawn) or @pid (attach). */
static int session_start(struct ps_session **sp, char *const argv[], pid_t pid, const struct ps_event *ev, int nev,
			 enum ps_catcher how, struct ps_error *err)
{
	struct ps_session *s = NULL;

	if ((unsigned)how >= sizeof catchers / sizeof catchers[0])
		return ps_error_set(err, PS_EUSAGE, "no catcher %d", (int)how);
	if (session_new(&s, ev, nev, err))
		return -1;
	if (catchers[how]->start(&s->cat, s->env, argv, pid, err)) {
		session_release(s);
		return -1;
	}
	s->t = s->cat->ops->tracer(s->cat);
	*sp = s;
	return 0;
}

int ps_session_spawn_by(struct ps_session **sp, char *const argv[], const struct ps_event *ev, int nev,
			enum ps_catcher how, struct ps_error *err)
{
	return session_start(sp, argv, 0, ev, nev, how, err);
}

int ps_session_spawn_io(struct ps_session **sp, char *const argv[], const struct ps_event *ev, int nev,
			enum ps_catcher how, const char *const stdio[3], struct ps_error *err)
{
	struct ps_spawn_stdio io;
	int rc;

	if (ps_spawn_stdio_open(&io, stdio, err))
		return -1;
	rc = session_start(sp, argv, 0, ev, nev, how, err);
	ps_spawn_stdio_close(&io);
	return rc;
}

int ps_session_attach_by(struct ps_session **sp, pid_t pid, const struct ps_event *ev, int nev, enum ps_catcher how,
			 struct ps_error *err)
{
	return session_start(sp, NULL, pid, ev, nev, how, err);
}

int ps_session_spawn(struct ps_session **sp, char *const argv[], const struct ps_event *ev, int nev,
		     struct ps_error *err)
{
	return session_start(sp, argv, 0, ev, nev, PS_CATCH_PTRACE, err);
}

int ps_session_attach(struct ps_session **sp, pid_t pid, const struct ps_event *ev, int nev, struct ps_error *err)
{
	return session_start(sp, NULL, pid, ev, nev, PS_CATCH_PTRACE, err);
}

enum ps_catcher ps_session_catcher(const struct ps_session *s)
{
	enum ps_catcher k = PS_CATCH_PTRACE;

	for (size_t i = 0; i < sizeof catchers / sizeof catchers[0]; i++)
		if (catchers[i] == s->cat->ops)
			k = (enum ps_catcher)i;
	return k;
}

uint64_t ps_session_lost(const struct ps_session *s)
{
	return s->cat->ops->lost(s->cat);
}

/* The catcher's events changed before the first run (the main thread's groups opened anew). */
static int events_changed(struct ps_session *s, struct ps_error *err)
{
	return s->cat->ops->events ? s->cat->ops->events(s->cat, err) : 0;
}

int ps_session_set_groups(struct ps_session *s, const int *sizes, int n, struct ps_error *err)
{
	struct ps_catch_env *env = s->env;
	int total = 0;

	if (env->started || ps_hitpath_recording(env->hp))
		return ps_error_set(err, PS_EUSAGE, "groups are set before the program starts running");
	if (!(ps__caps(s) & PS_CATCH_EVENTS_LATE) && n > 1)
		return ps_error_set(err, PS_ENEEDS_UPROBE,
				    "the %s catcher counts one group of events; for several, use --backend uprobe",
				    s->cat->ops->name);
	if (n < 1)
		return ps_error_set(err, PS_EUSAGE, "no counter group given; give at least one event");
	if (n > PS_MAX_GROUPS)
		return ps_error_set(err, PS_EUSAGE, "at most %d counter groups (got %d); merge some -g lists",
				    PS_MAX_GROUPS, n);
	for (int g = 0; g < n; g++) {
		if (sizes[g] < 1)
			return ps_error_set(err, PS_EUSAGE, "group %d is empty", g + 1);
		total += sizes[g];
	}
	if (total != env->nev)
		return ps_error_set(err, PS_EUSAGE, "the groups hold %d events, not %d", total, env->nev);
	if (env->nev + 2 * (n - 1) > PS_MAX_EVENTS)
		return ps_error_set(err, PS_EUSAGE, "%d events in %d groups need %d counter words; at most %d",
				    env->nev, n, env->nev + 2 * (n - 1), PS_MAX_EVENTS);
	memcpy(env->gsize, sizes, (size_t)n * sizeof *sizes);
	env->ngroups = n;
	return events_changed(s, err);
}

int ps_session_event_group(const struct ps_session *s, int i)
{
	for (int g = 0, first = 0; g < s->env->ngroups; first += s->env->gsize[g++])
		if (i < first + s->env->gsize[g])
			return g;
	return 0;
}

int ps_session_nvals(const struct ps_session *s)
{
	return ps__nvals(s->env);
}

int ps_session_region_args(struct ps_session *s, int id, int n, struct ps_error *err)
{
	struct ps_catch_env *env = s->env;

	if (id < 0 || id >= env->nreg)
		return ps_error_set(err, PS_EUSAGE, "no region %d", id);
	if (n < 0 || n > PS_MAX_ARGS)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': between 0 and %d integer arguments (x86-64 registers)",
				    env->reg[id].name, PS_MAX_ARGS);
	if (env->started || ps_hitpath_recording(env->hp))
		return ps_error_set(err, PS_EUSAGE, "region '%s': ask for arguments before the first run",
				    env->reg[id].name);
	if (n > env->nargs)
		env->nargs = PS_MAX_ARGS; /* all six: the registers cost the same to copy */
	return 0;
}

int ps_session_set_follow_fork(struct ps_session *s, int follow)
{
	return ps_tracer_set_follow_fork(s->t, follow);
}

int ps_session_add_events(struct ps_session *s, const struct ps_event *ev, int nev, struct ps_error *err)
{
	struct ps_catch_env *env = s->env;

	for (int i = 0; i < nev; i++) {
		int have = 0;
		for (int k = 0; k < env->nev; k++)
			have |= !strcmp(env->ev[k].name, ev[i].name);
		if (have)
			continue;
		if (env->started || ps_hitpath_recording(env->hp))
			return ps_error_set(err, PS_EUSAGE,
					    "event '%s' added after the program started running; give every event "
					    "before the first run",
					    ev[i].name);
		if (!(ps__caps(s) & PS_CATCH_EVENTS_LATE))
			return ps_error_set(err, PS_EUSAGE,
					    "event '%s': the %s catcher counts the events the program was started "
					    "with; give them all to spawn",
					    ev[i].name, s->cat->ops->name);
		if (ps__nvals(env) == PS_MAX_EVENTS)
			return ps_error_set(err, PS_EUSAGE, "at most %d events per thread", PS_MAX_EVENTS);
		/* a region's own events join the first group */
		memmove(env->ev + env->gsize[0] + 1, env->ev + env->gsize[0],
			(size_t)(env->nev - env->gsize[0]) * sizeof *ev);
		env->ev[env->gsize[0]++] = ev[i];
		env->nev++;
		if (env->ngroups == 0)
			env->ngroups = 1;
	}
	/* Reopen the main thread's group with the larger set (nothing has run yet). */
	return events_changed(s, err);
}

/* A pause: stop the program under its catcher until the next run (or detach, or free), with
   every record it made drained, so that nothing is lost and no time passes for it meanwhile. */
static int hold(struct ps_session *s, struct ps_error *err)
{
	int rc = s->cat->ops->hold(s->cat, err);

	s->held_at = ps_now_ns();
	return rc;
}

/* The program goes on after a pause: its records' clock leaves the pause out. */
static void unhold(struct ps_session *s)
{
	if (s->held_at)
		ps_hitpath_hold(s->env->hp, s->held_at, ps_now_ns());
	s->held_at = 0;
}

/* One run under the session's catcher: 1 ended, 0 paused (the program left as the catcher
   stopped: going on under the uprobe and marker catchers), -1 failed. */
static int run_catcher(struct ps_session *s, uint64_t max_records, uint64_t deadline_ns, struct ps_error *err)
{
	struct ps_catch_env *env = s->env;

	if (ps__start_records(s, err))
		return -1;
	unhold(s);
	env->started = 1;
	env->deadline = deadline_ns;
	ps_hitpath_limit(env->hp, max_records);
	env->failed = 0;
	env->intr = 0;
	return s->cat->ops->run(s->cat, err);
}

/* After a run: its records to the hit path, and the catcher's own failure where it had one. */
static int run_end(struct ps_session *s, int rc, struct ps_error *err)
{
	if (ps_hitpath_drain(s->env->hp, err))
		return -1;
	if (rc < 0 && s->env->failed && err)
		*err = s->env->fail;
	return rc;
}

int ps_session_run(struct ps_session *s, uint64_t max_records, uint64_t deadline_ns, struct ps_error *err)
{
	int rc;

	s->env->holds = 1;
	rc = run_catcher(s, max_records, deadline_ns, err);
	s->env->holds = 0;

	if (rc == 0 && hold(s, err))
		rc = -1;
	return run_end(s, rc, err);
}

int ps_session_run_on(struct ps_session *s, uint64_t max_records, uint64_t deadline_ns, struct ps_error *err)
{
	return run_end(s, run_catcher(s, max_records, deadline_ns, err), err);
}

int ps_session_hold(struct ps_session *s, struct ps_error *err)
{
	int exited, code, signo;

	if (s->held_at || !s->env->started || s->detached || ps_session_status(s, &exited, &code, &signo))
		return 0;
	return run_end(s, hold(s, err) ? -1 : 0, err);
}

void ps_session_interrupt(struct ps_session *s)
{
	s->env->intr = 1;
	s->cat->ops->interrupt(s->cat); /* the catcher's run loop must see it, not only its tracer */
}

int ps_session_detach(struct ps_session *s, struct ps_error *err)
{
	int rc;

	unhold(s);
	s->detached = 1;
	rc = s->cat->ops->detach(s->cat, err);
	ps_hitpath_drain(s->env->hp, NULL);
	return rc;
}

uint64_t ps_session_open_calls(struct ps_session *s, int id)
{
	return id >= 0 && id < s->env->nreg ? ps_hitpath_open_calls(s->env->hp, id) : 0;
}

void ps_session_free(struct ps_session *s)
{
	if (!s)
		return;
	s->cat->ops->free(s->cat); /* a spawned program still running is killed first */
	ps__forget_images(s);
	session_release(s);
}

/* ---- sampling ---- */

int ps_session_region_sample(struct ps_session *s, int id, const struct ps_sample *how, struct ps_error *err)
{
	struct ps_region_info *ri;

	if (id < 0 || id >= s->env->nreg)
		return ps_error_set(err, PS_EUSAGE, "no region %d", id);
	ri = &s->env->reg[id];
	if (ri->kind != PS_REGION_FUNC || (ri->pending && (ps__caps(s) & PS_CATCH_STOPS)))
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': sampling applies to function regions whose code is mapped", ri->name);
	if (s->env->started || ps_hitpath_recording(s->env->hp))
		return ps_error_set(err, PS_EUSAGE, "region '%s': set sampling before the first run", ri->name);
	if ((how->every > 0) + (how->p > 0) + (how->period_ms > 0) != 1)
		return ps_error_set(err, PS_EUSAGE, "region '%s': give one of every, p, or window_ms with period_ms",
				    ri->name);
	if (how->p > 1)
		return ps_error_set(err, PS_EUSAGE, "region '%s': p is a probability above 0 and at most 1, not %g",
				    ri->name, how->p);
	if (how->period_ms && (how->window_ms == 0 || how->window_ms >= how->period_ms))
		return ps_error_set(err, PS_EUSAGE, "region '%s': window_ms is above 0 and below period_ms", ri->name);
	return s->cat->ops->sample(s->cat, id, how, err);
}
