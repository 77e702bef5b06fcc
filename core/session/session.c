/* core/session/session.c - a traced program's session: lifecycle, configuration, the run loop and
 * what it measured.
 *
 * The pieces: the tracer (core/proc/tracer.c) stops the program at breakpoints; the ptrace
 * catcher (core/catch/ptrace/catch_ptrace.c) turns each stop into hits; the hit path (core/hitpath/hitpath.c)
 * pairs them into records. Here: each thread's counter groups (opened before the thread runs
 * its first instruction, counting all the time, only read at a hit), the run loop with its
 * pauses (records, deadline, sampling windows) and the accessors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "session_priv.h"
#include "spawn_stdio.h"

/* ---- threads ---- */

struct thr *ps__thr_find(struct ps_session *s, pid_t tid)
{
	for (struct thr *th = s->threads[(unsigned)tid % THR_BUCKETS]; th; th = th->next)
		if (th->tid == tid)
			return th;
	return NULL;
}

/* The thread's record, made (with its group opened on it) the first time it is seen. */
struct thr *ps__thr_get(struct ps_session *s, pid_t tid, struct ps_error *err)
{
	struct thr *th = ps__thr_find(s, tid);

	if (th)
		return th;
	th = calloc(1, sizeof *th);
	if (!th) {
		ps_error_set(err, ENOMEM, "out of memory for thread %d", (int)tid);
		return NULL;
	}
	th->tid = tid;
	for (int k = 0; k < PS_MAX_HW; k++)
		th->hwfd[k] = -1;
	for (int g = 0, first = 0; g < s->ngroups; first += s->gsize[g++]) {
		if (ps_group_open(&th->g[g], s->ev + first, s->gsize[g], tid, -1, PS_GROUP_ENABLED, err)) {
			while (g-- > 0)
				ps_group_close(&th->g[g]);
			free(th);
			return NULL;
		}
	}
	if (ps__hw_open_thread(s, th, err)) {
		ps__hw_close_thread(s, th);
		for (int g = 0; g < s->ngroups; g++)
			ps_group_close(&th->g[g]);
		free(th);
		return NULL;
	}
	th->next = s->threads[(unsigned)tid % THR_BUCKETS];
	s->threads[(unsigned)tid % THR_BUCKETS] = th;
	return th;
}

static void thr_free(struct thr *th)
{
	for (int g = 0; g < PS_MAX_GROUPS; g++)
		ps_group_close(&th->g[g]);
	free(th);
}

void ps__thr_remove(struct ps_session *s, pid_t tid)
{
	struct thr **pp = &s->threads[(unsigned)tid % THR_BUCKETS];
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->tid == tid) {
			struct thr *th = *pp;
			*pp = th->next;
			ps__hw_close_thread(s, th);
			thr_free(th);
			return;
		}
	}
}

int ps_session_nvals(const struct ps_session *s)
{
	return s->nev + 2 * (s->ngroups > 1 ? s->ngroups - 1 : 0);
}

/* ---- lifecycle ---- */

static int session_new(struct ps_session **sp, const struct ps_event *ev, int nev, struct ps_error *err)
{
	struct ps_session *s = NULL;

	if (nev < 0 || nev > PS_MAX_EVENTS)
		return ps_error_set(err, PS_EUSAGE, "at most %d events per thread (got %d)", PS_MAX_EVENTS, nev);
	s = calloc(1, sizeof *s);
	if (!s)
		return ps_error_set(err, ENOMEM, "out of memory");
	if (nev > 0)
		memcpy(s->ev, ev, (size_t)nev * sizeof *ev);
	s->nev = nev;
	s->ngroups = nev > 0;
	s->gsize[0] = nev;
	s->main_bp = -1;
	s->loader_bp = -1;
	s->unwinds = -1;
	s->hp = ps_hitpath_new(s->reg, &s->nreg, err);
	if (!s->hp) {
		free(s);
		return -1;
	}
	*sp = s;
	return 0;
}

/* The record size follows the event count, so recording starts once the events are final. */
static int start_records(struct ps_session *s, struct ps_error *err)
{
	struct ps_session_header h;

	if (ps_hitpath_recording(s->hp))
		return 0;
	ps__session_header(s, &h);
	return ps_hitpath_record(s->hp, h.info.nvals, h.info.nargs, s->spill_path[0] ? s->spill_path : NULL, &h.info,
				 err);
}

int ps_session_spill(struct ps_session *s, const char *path, struct ps_error *err)
{
	if (s->started || ps_hitpath_recording(s->hp))
		return ps_error_set(err, PS_EUSAGE, "spill to a file before the first run");
	if (strlen(path) >= sizeof s->spill_path)
		return ps_error_set(err, PS_EUSAGE, "path too long: %.40s...", path);
	snprintf(s->spill_path, sizeof s->spill_path, "%s", path);
	return 0;
}

int ps_session_spill_flush(struct ps_session *s, struct ps_error *err)
{
	return ps_hitpath_spill_flush(s->hp, err);
}

int ps_session_spill_meta(struct ps_session *s, const char *key, const char *value, struct ps_error *err)
{
	return ps_hitpath_spill_meta(s->hp, key, value, err);
}

int ps_session_spill_close(struct ps_session *s, struct ps_error *err)
{
	struct ps_session_facts *f = malloc(sizeof *f);

	if (!f)
		return ps_error_set(err, ENOMEM, "out of memory");
	ps__session_facts(s, f);
	for (size_t i = 0; i < f->n; i++)
		if (ps_hitpath_spill_meta(s->hp, f->meta[i].key, f->meta[i].value, err)) {
			free(f);
			return -1;
		}
	free(f);
	return ps_hitpath_spill_close(s->hp, err);
}

/* Open the main thread's group at once, so a bad event fails before anything runs. */
static int first_thread(struct ps_session *s, struct ps_error *err)
{
	if (s->nev == 0 || s->up) /* the uprobe catcher's probes sample their own counters */
		return 0;
	return ps__thr_get(s, s->pid, err) ? 0 : -1;
}

/* Start the catcher @how on @argv (spawn) or @pid (attach). */
static int session_start(struct ps_session **sp, char *const argv[], pid_t pid, const struct ps_event *ev, int nev,
			 enum ps_catcher how, struct ps_error *err)
{
	struct ps_session *s = NULL;
	int rc;

	if (session_new(&s, ev, nev, err))
		return -1;
	if (how == PS_CATCH_MARKER)
		rc = ps__marker_start(s, argv, err);
	else if (how == PS_CATCH_UPROBE)
		rc = ps__uprobe_start(s, argv, pid, err);
	else
		rc = argv ? ps_tracer_spawn(&s->t, argv, &ps__ptrace_ops, s, err)
			  : ps_tracer_attach(&s->t, pid, &ps__ptrace_ops, s, err);
	if (rc) {
		ps_hitpath_free(s->hp);
		free(s);
		return -1;
	}
	s->pid = ps_tracer_pid(s->t);
	if (first_thread(s, err)) {
		ps_session_free(s);
		return -1;
	}
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
	return s->mk ? PS_CATCH_MARKER : s->up ? PS_CATCH_UPROBE : PS_CATCH_PTRACE;
}

uint64_t ps_session_lost(const struct ps_session *s)
{
	if (s->mk)
		return ps__marker_lost(s);
	return ps__uprobe_lost(s);
}

int ps_session_set_groups(struct ps_session *s, const int *sizes, int n, struct ps_error *err)
{
	int total = 0;

	if (s->started || ps_hitpath_recording(s->hp))
		return ps_error_set(err, PS_EUSAGE, "groups are set before the program starts running");
	if (s->mk && n > 1)
		return ps_error_set(err, PS_EUSAGE, "the marker catcher counts one group of events");
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
	if (total != s->nev)
		return ps_error_set(err, PS_EUSAGE, "the groups hold %d events, not %d", total, s->nev);
	if (s->nev + 2 * (n - 1) > PS_MAX_EVENTS)
		return ps_error_set(err, PS_EUSAGE, "%d events in %d groups need %d counter words; at most %d", s->nev,
				    n, s->nev + 2 * (n - 1), PS_MAX_EVENTS);
	memcpy(s->gsize, sizes, (size_t)n * sizeof *sizes);
	s->ngroups = n;
	ps__thr_remove(s, s->pid);
	return first_thread(s, err);
}

int ps_session_event_group(const struct ps_session *s, int i)
{
	for (int g = 0, first = 0; g < s->ngroups; first += s->gsize[g++])
		if (i < first + s->gsize[g])
			return g;
	return 0;
}

int ps_session_region_args(struct ps_session *s, int id, int n, struct ps_error *err)
{
	if (id < 0 || id >= s->nreg)
		return ps_error_set(err, PS_EUSAGE, "no region %d", id);
	if (n < 0 || n > PS_MAX_ARGS)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': between 0 and %d integer arguments (x86-64 registers)",
				    s->reg[id].name, PS_MAX_ARGS);
	if (s->started || ps_hitpath_recording(s->hp))
		return ps_error_set(err, PS_EUSAGE, "region '%s': ask for arguments before the first run",
				    s->reg[id].name);
	if (n > s->nargs)
		s->nargs = PS_MAX_ARGS; /* all six: the registers cost the same to copy */
	return 0;
}

int ps_session_set_follow_fork(struct ps_session *s, int follow)
{
	return ps_tracer_set_follow_fork(s->t, follow);
}

int ps_session_add_events(struct ps_session *s, const struct ps_event *ev, int nev, struct ps_error *err)
{
	for (int i = 0; i < nev; i++) {
		int have = 0;
		for (int k = 0; k < s->nev; k++)
			have |= !strcmp(s->ev[k].name, ev[i].name);
		if (have)
			continue;
		if (s->started || ps_hitpath_recording(s->hp))
			return ps_error_set(err, PS_EUSAGE,
					    "event '%s' added after the program started running; give every event "
					    "before the first run",
					    ev[i].name);
		if (s->mk)
			return ps_error_set(err, PS_EUSAGE,
					    "event '%s': the marker catcher counts the events the program was started "
					    "with; give them all to spawn",
					    ev[i].name);
		if (ps_session_nvals(s) == PS_MAX_EVENTS)
			return ps_error_set(err, PS_EUSAGE, "at most %d events per thread", PS_MAX_EVENTS);
		/* a region's own events join the first group */
		memmove(s->ev + s->gsize[0] + 1, s->ev + s->gsize[0], (size_t)(s->nev - s->gsize[0]) * sizeof *ev);
		s->ev[s->gsize[0]++] = ev[i];
		s->nev++;
		if (s->ngroups == 0)
			s->ngroups = 1;
	}
	/* Reopen the main thread's group with the larger set (nothing has run yet). */
	ps__thr_remove(s, s->pid);
	return first_thread(s, err);
}

/* Which pause of the run this is: one the caller asked for (records, deadline, interrupt),
   or a sampling window's edge at @edge (only that: the run goes on). */
int ps__window_edge(struct ps_session *s, uint64_t edge)
{
	uint64_t now = ps_now_ns();

	if (s->intr || (s->deadline && now >= s->deadline) ||
	    (s->max_records && ps_hitpath_seq(s->hp) - s->written_at_run_start >= s->max_records))
		return 0;
	return now >= edge;
}

/* Run with the sampling windows opening and closing on time: the tracer's deadline is the next
   window edge, or the caller's deadline when that comes first. */
static int run_windows(struct ps_session *s, struct ps_error *err)
{
	uint64_t edge = ps_now_ns() + ps__hw_period_ns(s, ps_hitpath_in_window(s->hp));
	int rc;

	for (;;) {
		ps_tracer_set_deadline(s->t, s->deadline && s->deadline < edge ? s->deadline : edge);
		rc = ps_tracer_run(s->t, err);
		if (rc != 0 || !ps__window_edge(s, edge))
			break; /* ended, failed, or paused for another reason */
		ps__hw_set_window(s, !ps_hitpath_in_window(s->hp));
		edge = ps_now_ns() + ps__hw_period_ns(s, ps_hitpath_in_window(s->hp));
	}
	ps_tracer_set_deadline(s->t, s->deadline);
	return rc;
}

/* A pause: stop the program under its catcher until the next run (or detach, or free), with
   every record it made drained, so that nothing is lost and no time passes for it meanwhile. */
static int hold(struct ps_session *s, struct ps_error *err)
{
	int rc = 0;

	if (s->mk)
		ps__marker_hold(s);
	else if (s->up)
		rc = ps__uprobe_hold(s, err);
	else
		rc = ps_tracer_hold(s->t, err);
	s->held_at = ps_now_ns();
	return rc;
}

/* The program goes on after a pause: its records' clock leaves the pause out. */
static void unhold(struct ps_session *s)
{
	if (s->held_at)
		ps_hitpath_hold(s->hp, s->held_at, ps_now_ns());
	s->held_at = 0;
}

/* One run under the session's catcher: 1 ended, 0 paused (the program left as the catcher
   stopped: going on under the uprobe and marker catchers), -1 failed. */
static int run_catcher(struct ps_session *s, uint64_t max_records, uint64_t deadline_ns, struct ps_error *err)
{
	if (start_records(s, err))
		return -1;
	unhold(s);
	s->started = 1;
	s->max_records = max_records;
	s->deadline = deadline_ns;
	s->written_at_run_start = ps_hitpath_seq(s->hp);
	s->failed = 0;
	s->intr = 0;
	ps_tracer_set_deadline(s->t, deadline_ns); /* on time even when no stop comes */
	if (s->mk)
		return ps__marker_run(s, err);
	if (s->up)
		return ps__uprobe_run(s, err);
	return ps__hw_windows(s) ? run_windows(s, err) : ps_tracer_run(s->t, err);
}

/* After a run: its records to the hit path, and the catcher's own failure where it had one. */
static int run_end(struct ps_session *s, int rc, struct ps_error *err)
{
	if (ps_hitpath_drain(s->hp, err))
		return -1;
	if (rc < 0 && s->failed && err)
		*err = s->fail;
	return rc;
}

int ps_session_run(struct ps_session *s, uint64_t max_records, uint64_t deadline_ns, struct ps_error *err)
{
	int rc = run_catcher(s, max_records, deadline_ns, err);

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

	if (s->held_at || !s->started || s->detached || ps_session_status(s, &exited, &code, &signo))
		return 0;
	return run_end(s, hold(s, err) ? -1 : 0, err);
}

void ps_session_interrupt(struct ps_session *s)
{
	s->intr = 1;
	if (s->up)
		ps__uprobe_interrupt(s); /* the catcher's run loop must see it, not only its tracer */
	else
		ps_tracer_interrupt(s->t);
}

int ps_session_detach(struct ps_session *s, struct ps_error *err)
{
	unhold(s);
	s->detached = 1;
	if (s->up) {
		int urc = s->mk ? ps__marker_detach(s, err) : ps__uprobe_detach(s, err);
		ps_hitpath_drain(s->hp, NULL);
		return urc;
	}
	/* first the hardware breakpoints: their SIGTRAPs would kill an untraced program */
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			ps__hw_close_thread(s, th);
	int rc = ps_tracer_detach(s->t, err);
	ps_hitpath_drain(s->hp, NULL);
	return rc;
}

uint64_t ps_session_open_calls(struct ps_session *s, int id)
{
	return id >= 0 && id < s->nreg ? ps_hitpath_open_calls(s->hp, id) : 0;
}

void ps_session_free(struct ps_session *s)
{
	if (!s)
		return;
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			ps__hw_close_thread(s, th);
	if (s->up)
		ps__uprobe_free(s); /* a spawned program still running is killed first */
	else
		ps_tracer_free(s->t);
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		while (s->threads[b]) {
			struct thr *th = s->threads[b];
			s->threads[b] = th->next;
			thr_free(th);
		}
	if (s->mk)
		ps__marker_free(s);
	ps_hitpath_free(s->hp);
	free(s->bps);
	ps__forget_images(s);
	free(s);
}

/* ---- results ---- */

pid_t ps_session_pid(const struct ps_session *s)
{
	return s->pid;
}

int ps_session_status(const struct ps_session *s, int *exited, int *code, int *signo)
{
	if (ps__marker_released(s))
		return ps__marker_status(s, exited, code, signo);
	return ps_tracer_status(s->t, exited, code, signo);
}

uint64_t ps_session_stops(const struct ps_session *s)
{
	return ps_tracer_stops(s->t);
}

int ps_session_nevents(const struct ps_session *s)
{
	return s->nev;
}

const struct ps_event *ps_session_event(const struct ps_session *s, int i)
{
	return i >= 0 && i < s->nev ? &s->ev[i] : NULL;
}

int ps_session_nregions(const struct ps_session *s)
{
	return s->nreg;
}

const struct ps_region_info *ps_session_region(const struct ps_session *s, int id)
{
	return id >= 0 && id < s->nreg ? &s->reg[id] : NULL;
}
uint64_t ps_session_nrecords(const struct ps_session *s)
{
	return ps_hitpath_nrecords(s->hp);
}

const struct ps_snap *ps_session_record(const struct ps_session *s, uint64_t i)
{
	return ps_hitpath_record_at(s->hp, i);
}

size_t ps_session_recsize(const struct ps_session *s)
{
	size_t n = ps_hitpath_recsize(s->hp);
	return n ? n : ps_snap_size((unsigned)ps_session_nvals(s), (unsigned)s->nargs);
}

uint64_t ps_session_dropped(const struct ps_session *s)
{
	return ps_hitpath_dropped(s->hp);
}

/* The notices since the last call; valid until the next call. */
const char *ps_session_notice(struct ps_session *s)
{
	memcpy(s->notice_out, s->notice, sizeof s->notice_out);
	s->notice[0] = '\0';
	return s->notice_out;
}
