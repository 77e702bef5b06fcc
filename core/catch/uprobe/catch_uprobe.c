/* core/catch/uprobe/catch_uprobe.c - the uprobe catcher's process side: a ps_uprobe per thread, opened
 * at the thread's birth stop, drained on a timer and at the thread's end. See
 * catch_uprobe.h. */
#include "catch_uprobe.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracer.h"
#include "uprobe_defs.h"

#define DRAIN_US_DEFAULT 2000
/* Ended threads whose probes wait to be closed (see retire()); past it, the oldest is closed. */
#define RETIRED_MAX 16

struct cthread {
	pid_t tid;
	struct ps_uprobe *u;
	uint64_t lost_seen; /* ps_uprobe_lost() when its last hit was delivered */
};

struct ps_catch_uprobe {
	struct ps_tracer *t;
	struct ps_catch_uprobe_opts o;
	struct cthread *th;
	int nth, capth;
	int enabled;
	int detached;
	int started; /* the first run began: the probes are fixed */
	int pause;   /* ps_catch_uprobe_pause() was called */
	int here;    /* ps_catch_uprobe_pause_here(): stop delivering at once */
	int kept;    /* records left in the rings by it, for the next run */
	volatile sig_atomic_t intr;
	uint64_t deadline;
	uint64_t hits, lost_ended, lost_reported_ended, drains;
	int threads;
	struct ps_uprobe **retired; /* ended threads' probes, drained and counted, not closed yet */
	int nretired;
	int failed; /* a callback could not probe a thread: @ferr says why */
	struct ps_error ferr;
	struct ps_uprobe_defs *defs; /* the sites' shared tracefs events, or NULL: uprobe-PMU events */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What a drain of one thread delivers to; @all: every record, even after a pause here. */
struct drain {
	struct ps_catch_uprobe *c;
	struct cthread *t;
	int all;
};

static int deliver(const struct ps_uprobe_hit *h, void *ud)
{
	struct drain *d = ud;
	struct ps_catch_uprobe *c = d->c;
	uint64_t lost = ps_uprobe_lost(d->t->u);

	if (h->kind == PS_UPROBE_MAP) { /* a file mapped, not a hit */
		if (c->o.on_hit)
			c->o.on_hit(c->o.ctx, h);
		return 0;
	}
	if (lost != d->t->lost_seen) {
		/* the kernel reports a loss in order, before the first record it could write again */
		d->t->lost_seen = lost;
		if (c->o.on_loss)
			c->o.on_loss(c->o.ctx, d->t->tid);
	}
	c->hits++;
	if (c->o.on_hit)
		c->o.on_hit(c->o.ctx, h);
	return c->here && !d->all; /* a pause here: the rest stays in the ring */
}

static int th_index(const struct ps_catch_uprobe *c, pid_t tid)
{
	for (int i = 0; i < c->nth; i++)
		if (c->th[i].tid == tid)
			return i;
	return -1;
}

/* Deliver thread @t's records; @all: every one, even after a pause here (its probes close). */
static void th_drain(struct ps_catch_uprobe *c, struct cthread *t, int all)
{
	struct drain d = {c, t, all};

	ps_uprobe_drain(t->u, deliver, &d);
}

/* Close the probes of the ended threads. */
static void close_retired(struct ps_catch_uprobe *c)
{
	while (c->nretired)
		ps_uprobe_close(c->retired[--c->nretired]);
}

/*
 * An ended thread's probes, drained and counted: closing a uprobe event waits for the kernel's
 * RCU grace periods (tens of ms each), and no ring is drained meanwhile, so the other threads'
 * rings would fill while it waits (4 threads of short calls lost 1.75% of their records that
 * way at 256 pages each). The close waits until no probed thread is left (nothing is written
 * then), or until RETIRED_MAX threads wait (then the oldest is closed at once, as before).
 */
static void retire(struct ps_catch_uprobe *c, struct ps_uprobe *u)
{
	if (c->nth == 0 || (!c->retired && !(c->retired = calloc(RETIRED_MAX, sizeof *c->retired)))) {
		ps_uprobe_close(u);
		close_retired(c);
		return;
	}
	if (c->nretired == RETIRED_MAX) {
		ps_uprobe_close(c->retired[0]);
		memmove(c->retired, c->retired + 1, (RETIRED_MAX - 1) * sizeof *c->retired);
		c->nretired--;
	}
	c->retired[c->nretired++] = u;
}

static void th_finish(struct ps_catch_uprobe *c, int i)
{
	struct ps_uprobe *u = c->th[i].u;
	struct ps_error err;
	long missing;

	th_drain(c, &c->th[i], 1);
	missing = ps_uprobe_missing(u, &err);
	c->lost_reported_ended += ps_uprobe_lost(u);
	/* the counts cannot be read: what the kernel reported is all that is known */
	c->lost_ended += missing >= 0 ? (uint64_t)missing : ps_uprobe_lost(u);
	c->th[i] = c->th[--c->nth];
	retire(c, u);
}

static int on_thread_new(void *ud, pid_t tid)
{
	struct ps_catch_uprobe *c = ud;
	struct ps_uprobe_opts uo = c->o.probe;
	struct ps_uprobe *u;

	uo.enabled = c->enabled;
	if (th_index(c, tid) >= 0 || uo.nsites == 0)
		return 0; /* probed already, or nothing to probe */
	if (c->nth == c->capth) {
		int cap = c->capth ? 2 * c->capth : 8;
		struct cthread *n = realloc(c->th, (size_t)cap * sizeof *n);
		if (!n) {
			c->failed = 1;
			ps_error_set(&c->ferr, ENOMEM, "uprobe catcher: out of memory for thread %d", (int)tid);
			return -1;
		}
		c->th = n;
		c->capth = cap;
	}
	if (ps_uprobe_open(&u, tid, &uo, &c->ferr)) {
		c->failed = 1;
		return -1;
	}
	c->th[c->nth++] = (struct cthread){tid, u, 0};
	c->threads++;
	if (c->o.on_thread)
		c->o.on_thread(c->o.ctx, tid, 1);
	return 0;
}

static void on_thread_exit(void *ud, pid_t tid)
{
	struct ps_catch_uprobe *c = ud;
	int i = th_index(c, tid);

	if (i < 0)
		return;
	th_finish(c, i);
	if (c->o.on_thread)
		c->o.on_thread(c->o.ctx, tid, 0);
}

/* Exec replaced the image of process @pid: deliver what came before, then say so. */
static int on_exec(void *ud, pid_t pid)
{
	struct ps_catch_uprobe *c = ud;

	ps_catch_uprobe_drain(c);
	if (c->o.on_exec)
		c->o.on_exec(c->o.ctx, pid);
	return 0;
}

/* Define c->o.probe's sites in tracefs, shared by every thread's probes (uprobe_defs.h); without
   tracefs, each thread's probes are uprobe-PMU events of their own (slower to close). */
static void share_sites(struct ps_catch_uprobe *c)
{
	ps_uprobe_defs_free(c->defs);
	c->defs = NULL;
	c->o.probe.tp_ids = NULL;
	if (c->o.probe.nsites > 0 &&
	    ps_uprobe_defs_new(&c->defs, c->o.probe.sites, c->o.probe.nsites, &(struct ps_error){0}) == 0)
		c->o.probe.tp_ids = ps_uprobe_defs_ids(c->defs);
}

static int catcher_new(struct ps_catch_uprobe **cp, const struct ps_catch_uprobe_opts *o, struct ps_error *err)
{
	struct ps_catch_uprobe *c;

	*cp = NULL;
	if (!o || (o->probe.nsites > 0 && !o->probe.sites))
		return ps_error_set(err, PS_EUSAGE, "uprobe catcher: no options or no sites given");
	if (!(c = calloc(1, sizeof *c)))
		return ps_error_set(err, ENOMEM, "out of memory");
	c->o = *o;
	if (!c->o.drain_us)
		c->o.drain_us = DRAIN_US_DEFAULT;
	c->enabled = !!o->probe.enabled;
	share_sites(c);
	*cp = c;
	return 0;
}

static const struct ps_tracer_ops ops = {
    .thread_new = on_thread_new,
    .thread_exit = on_thread_exit,
    .exec = on_exec,
};

int ps_catch_uprobe_spawn(struct ps_catch_uprobe **cp, char *const argv[], const struct ps_catch_uprobe_opts *o,
			  struct ps_error *err)
{
	if (catcher_new(cp, o, err))
		return -1;
	if (ps_tracer_spawn(&(*cp)->t, argv, &ops, *cp, err)) {
		ps_uprobe_defs_free((*cp)->defs);
		free(*cp);
		*cp = NULL;
		return -1;
	}
	return 0;
}

int ps_catch_uprobe_attach(struct ps_catch_uprobe **cp, pid_t pid, const struct ps_catch_uprobe_opts *o,
			   struct ps_error *err)
{
	if (catcher_new(cp, o, err))
		return -1;
	if (ps_tracer_attach(&(*cp)->t, pid, &ops, *cp, err)) {
		ps_uprobe_defs_free((*cp)->defs);
		free(*cp);
		*cp = NULL;
		return -1;
	}
	return 0;
}

/* One drain of every ring; @all = 0: none after a pause here (the rest is kept for later). */
static long drain_rings(struct ps_catch_uprobe *c, int all)
{
	uint64_t before = c->hits;

	for (int i = 0; i < c->nth && (all || !c->here); i++)
		th_drain(c, &c->th[i], all);
	c->kept = c->here && !all;
	c->drains++;
	return (long)(c->hits - before);
}

long ps_catch_uprobe_drain(struct ps_catch_uprobe *c)
{
	return drain_rings(c, 1);
}

int ps_catch_uprobe_run(struct ps_catch_uprobe *c, struct ps_error *err)
{
	if (c->detached)
		return ps_error_set(err, PS_EUSAGE, "uprobe catcher: detached already");
	c->started = 1;
	c->pause = 0;
	c->here = 0; /* what a pause here left in the rings comes first */
	for (;;) {
		uint64_t next = mono_ns() + (uint64_t)c->o.drain_us * 1000u;
		int rc;

		if (c->deadline && c->deadline < next)
			next = c->deadline;
		ps_tracer_set_deadline(c->t, next);
		rc = ps_tracer_run(c->t, err);
		drain_rings(c, 0);
		if (rc < 0 && c->failed) {
			c->failed = 0;
			if (err)
				*err = c->ferr;
		}
		if (rc)
			return rc;
		/* Only the catcher's own flags tell an interrupt: the tracer's is cleared by whichever
		   of its runs sees it, and a run ends every drain period anyway (a signal handled
		   between two runs, or later than @next under load, would otherwise be lost). A
		   tracer flag left set by an interrupt seen here only ends its next run early. */
		if (c->intr) {
			c->intr = 0;
			c->pause = 0;
			return 0;
		}
		if (c->pause || c->here) {
			c->pause = 0;
			return 0;
		}
		if (c->deadline && mono_ns() >= c->deadline)
			return 0;
	}
}

int ps_catch_uprobe_hold(struct ps_catch_uprobe *c, struct ps_error *err)
{
	int rc;

	if (c->detached)
		return 0;
	rc = ps_tracer_hold(c->t, err);
	if (!c->kept)
		ps_catch_uprobe_drain(c); /* every record the held threads wrote */
	if (rc < 0 && c->failed) {
		c->failed = 0;
		if (err)
			*err = c->ferr;
	}
	return rc;
}

void ps_catch_uprobe_interrupt(struct ps_catch_uprobe *c)
{
	c->intr = 1;
	ps_tracer_interrupt(c->t);
}

void ps_catch_uprobe_pause(struct ps_catch_uprobe *c)
{
	c->pause = 1;
}

void ps_catch_uprobe_pause_here(struct ps_catch_uprobe *c)
{
	c->here = 1;
}

int ps_catch_uprobe_set_probe(struct ps_catch_uprobe *c, const struct ps_uprobe_opts *probe, struct ps_error *err)
{
	if (c->started)
		return ps_error_set(err, PS_EUSAGE, "uprobe catcher: sites are given before the first run");
	c->o.probe = *probe;
	c->enabled = !!probe->enabled;
	share_sites(c);
	return 0;
}

struct ps_tracer *ps_catch_uprobe_tracer(struct ps_catch_uprobe *c)
{
	return c->t;
}

void ps_catch_uprobe_set_deadline(struct ps_catch_uprobe *c, uint64_t deadline_ns)
{
	c->deadline = deadline_ns;
}

int ps_catch_uprobe_enable(struct ps_catch_uprobe *c, int on, struct ps_error *err)
{
	for (int i = 0; i < c->nth; i++)
		if (ps_uprobe_enable(c->th[i].u, on, err))
			return -1;
	c->enabled = !!on;
	return 0;
}

void ps_catch_uprobe_stats(const struct ps_catch_uprobe *c, struct ps_catch_uprobe_stats *s)
{
	memset(s, 0, sizeof *s);
	s->hits = c->hits;
	s->lost = c->lost_ended;
	s->lost_reported = c->lost_reported_ended;
	for (int i = 0; i < c->nth; i++) {
		s->lost += ps_uprobe_lost(c->th[i].u);
		s->lost_reported += ps_uprobe_lost(c->th[i].u);
	}
	s->stops = ps_tracer_stops(c->t);
	s->drains = c->drains;
	s->threads = c->threads;
	s->live = c->nth;
}

int ps_catch_uprobe_status(const struct ps_catch_uprobe *c, int *exited, int *code, int *signo)
{
	return ps_tracer_status(c->t, exited, code, signo);
}

pid_t ps_catch_uprobe_pid(const struct ps_catch_uprobe *c)
{
	return ps_tracer_pid(c->t);
}

int ps_catch_uprobe_detach(struct ps_catch_uprobe *c, struct ps_error *err)
{
	int rc;

	if (c->detached)
		return 0;
	c->here = c->kept = 0; /* what a pause here left is delivered too */
	/* every probe stops first, so the counts read after the last drain are final; the target
	   then goes on while its probes close (the last close of a site waits for the kernel's
	   grace periods): a disabled probe records nothing, and all are gone when this returns */
	for (int i = 0; i < c->nth; i++)
		ps_uprobe_enable(c->th[i].u, 0, err);
	c->detached = 1;
	rc = ps_tracer_detach(c->t, err);
	while (c->nth)
		th_finish(c, c->nth - 1);
	close_retired(c);
	ps_uprobe_defs_free(c->defs); /* no perf event on them is left */
	c->defs = NULL;
	return rc;
}

void ps_catch_uprobe_free(struct ps_catch_uprobe *c)
{
	if (!c)
		return;
	while (c->nth)
		ps_uprobe_close(c->th[--c->nth].u);
	close_retired(c);
	ps_uprobe_defs_free(c->defs);
	ps_tracer_free(c->t);
	free(c->retired);
	free(c->th);
	free(c);
}
