/* core/catch/ptrace/ptrace.c - the ptrace catcher's ops (core/catch/catcher.h): the program runs
 * under the tracer (core/proc/tracer.h) and stops at a breakpoint at each region point; the
 * stops become hits (catch_ptrace.c). Sampled regions count their entries in the kernel and
 * stop the program only on the sampled ones (sampling.c). */
#include <errno.h>
#include <stdlib.h>

#include "ptrace_priv.h"
#include "run.h"

static struct ps_ptrace *of(struct ps_catch *c)
{
	return (struct ps_ptrace *)c;
}

static const struct ps_ptrace *of_const(const struct ps_catch *c)
{
	return (const struct ps_ptrace *)c;
}

/* Open the main thread's groups at once, so a bad event fails before anything runs. */
static int first_thread(struct ps_ptrace *p, struct ps_error *err)
{
	if (p->env->nev == 0)
		return 0;
	return ps__thr_get(p, p->env->pid, err) ? 0 : -1;
}

static void pt_free(struct ps_catch *c)
{
	struct ps_ptrace *p = of(c);

	/* first the hardware breakpoints: their SIGTRAPs would kill an untraced program */
	ps__hw_close_all(p);
	ps_tracer_free(p->t);
	ps__thr_free_all(p);
	ps__pt_roles_clear(p);
	free(p);
}

static int pt_start(struct ps_catch **cp, struct ps_catch_env *env, char *const argv[], pid_t pid, struct ps_error *err)
{
	struct ps_ptrace *p = calloc(1, sizeof *p);
	int rc;

	if (!p)
		return ps_error_set(err, ENOMEM, "out of memory");
	p->base.ops = &ps_catch_ptrace_ops;
	p->env = env;
	rc = argv ? ps_tracer_spawn(&p->t, argv, &ps__ptrace_ops, p, err)
		  : ps_tracer_attach(&p->t, pid, &ps__ptrace_ops, p, err);
	if (rc) {
		free(p);
		return -1;
	}
	env->pid = ps_tracer_pid(p->t);
	if (first_thread(p, err)) {
		pt_free(&p->base);
		return -1;
	}
	*cp = &p->base;
	return 0;
}

/* The events or groups changed before the first run: the main thread's groups opened anew. */
static int pt_events(struct ps_catch *c, struct ps_error *err)
{
	struct ps_ptrace *p = of(c);

	ps__thr_remove(p, p->env->pid);
	return first_thread(p, err);
}

/* Run with the sampling windows opening and closing on time: the tracer's deadline is the next
   window edge, or the caller's deadline when that comes first. */
static int run_windows(struct ps_ptrace *p, struct ps_error *err)
{
	const struct ps_catch_env *env = p->env;
	uint64_t edge = ps_now_ns() + ps__hw_period_ns(p, ps_hitpath_in_window(env->hp));
	int rc;

	for (;;) {
		ps_tracer_set_deadline(p->t, env->deadline && env->deadline < edge ? env->deadline : edge);
		rc = ps_tracer_run(p->t, err);
		if (rc != 0 || !ps_catch_window_edge(env, edge))
			break; /* ended, failed, or paused for another reason */
		ps__hw_set_window(p, !ps_hitpath_in_window(env->hp));
		edge = ps_now_ns() + ps__hw_period_ns(p, ps_hitpath_in_window(env->hp));
	}
	ps_tracer_set_deadline(p->t, env->deadline);
	return rc;
}

static int pt_run(struct ps_catch *c, struct ps_error *err)
{
	struct ps_ptrace *p = of(c);

	ps_tracer_set_deadline(p->t, p->env->deadline); /* on time even when no stop comes */
	return ps__hw_windows(p) ? run_windows(p, err) : ps_tracer_run(p->t, err);
}

static int pt_hold(struct ps_catch *c, struct ps_error *err)
{
	return ps_tracer_hold(of(c)->t, err);
}

static void pt_interrupt(struct ps_catch *c)
{
	ps_tracer_interrupt(of(c)->t);
}

static int pt_detach(struct ps_catch *c, struct ps_error *err)
{
	struct ps_ptrace *p = of(c);

	/* first the hardware breakpoints: their SIGTRAPs would kill an untraced program */
	ps__hw_close_all(p);
	return ps_tracer_detach(p->t, err);
}

static int pt_status(const struct ps_catch *c, int *exited, int *code, int *signo)
{
	return ps_tracer_status(of_const(c)->t, exited, code, signo);
}

static uint64_t pt_lost(const struct ps_catch *c)
{
	(void)c;
	return 0; /* a stop loses nothing */
}

static int pt_arm(struct ps_catch *c, const struct ps_catch_point *pt, struct ps_error *err)
{
	const char *name = pt->region >= 0 ? of(c)->env->reg[pt->region].name : "";

	if (pt->name || pt->path || pt->role == PS_ROLE_POINT)
		return ps_error_set(err, PS_EUSAGE, "region '%s': the ptrace catcher arms code at addresses only",
				    name);
	return ps__pt_role(of(c), pt->addr, pt->bp_kind, pt->region, pt->role, err);
}

static void pt_disarm(struct ps_catch *c, int region)
{
	/* as before the catchers were parts: the roles armed before the failure stay (the next
	   region, which takes the id, inherits them) */
	(void)c;
	(void)region;
}

static int pt_sample(struct ps_catch *c, int id, const struct ps_sample *how, struct ps_error *err)
{
	return ps__hw_sample(of(c), id, how, err);
}

static int pt_entries(struct ps_catch *c, int id, uint64_t *n)
{
	return ps__hw_entries(of(c), id, n);
}

static struct ps_tracer *pt_tracer(const struct ps_catch *c)
{
	return of_const(c)->t;
}

const struct ps_catcher_ops ps_catch_ptrace_ops = {
    .name = "ptrace",
    .caps = PS_CATCH_STOPS | PS_CATCH_INLINED | PS_CATCH_CODE | PS_CATCH_EVENTS_LATE,
    .start = pt_start,
    .run = pt_run,
    .hold = pt_hold,
    .interrupt = pt_interrupt,
    .detach = pt_detach,
    .free = pt_free,
    .status = pt_status,
    .lost = pt_lost,
    .arm = pt_arm,
    .disarm = pt_disarm,
    .events = pt_events,
    .sample = pt_sample,
    .entries = pt_entries,
    .tracer = pt_tracer,
};
