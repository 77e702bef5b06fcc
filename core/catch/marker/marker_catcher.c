/* core/catch/marker/marker_catcher.c - the marker catcher (its ops: core/catch/catcher.h): a
 * program built with the marker library (perfsh/marker.h), started by perfsh, measures its own
 * markers and writes the records into memory perfsh shares with it (core/catch/marker/markshm.h).
 * The catcher drains those rings while the program runs and hands each record, paired in the
 * program, to the hit path as it is (ps_hitpath_pair(): its hit and depth those the library
 * gave it, as in the library's own files), so marker regions have the records, counts and
 * analyses of every other region. The draining is markdrain.c's; the state both share,
 * markcatch_priv.h.
 *
 * The program is started under the tracer (core/proc/tracer.h) with no breakpoint, held at its
 * first instruction until the first run, and let go then: it runs untraced (no stop at all, not
 * even for its threads' births), and the catcher waits for its end on a pidfd while it drains
 * the rings. The policy (on/off, sampling, slow-hit threshold) is written into the shared block
 * and read by the program at each hit, so it changes while it runs.
 *
 * --backend inproc -p PID attaches instead: the process is held (ptrace) from the start to the
 * first run, as a started program is, while the sites are armed; then the agent is loaded into
 * it and patches them (inproc_attach.h), and it runs untraced. It is never killed: the detach
 * and the free ask the agent to put the functions' bytes back first. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "catcher.h"
#include "inproc_attach.h"
#include "inproc_site.h"
#include "markblock.h"
#include "markcatch_priv.h"
#include "marker_status.h"
#include "markshm.h"
#include "run.h"
#include "tracer.h"

#define DRAIN_NS (2u * 1000 * 1000)	      /* how often the rings are drained while the program runs */
#define DETACH_NS (5ull * 1000 * 1000 * 1000) /* the agent's answer to a detach, at most */

/* The shared block: a memfd laid out as core/catch/marker/markshm.h says (markblock.h). */
static int make_block(struct ps_markcatch *m, struct ps_error *err)
{
	return ps_mshm_make(m->env, m->inproc, &m->fd, &m->ctl, &m->bytes, err);
}

static void unhold(struct ps_markcatch *m);

static struct ps_markcatch *of(struct ps_catch *c)
{
	return (struct ps_markcatch *)c;
}

static const struct ps_markcatch *of_const(const struct ps_catch *c)
{
	return (const struct ps_markcatch *)c;
}

static void marker_free(struct ps_markcatch *m)
{
	unhold(m);
	ps_tracer_free(m->t); /* a program not let go yet is killed, as under the other catchers */
	if (m->injected && !m->let_go && !m->ended)
		ps_inproc_detach(m->pid, m->ctl, DETACH_NS, NULL); /* the functions' bytes back before perfsh goes */
	if (m->released && !m->ended && !m->let_go && !m->attached) {
		/* a program started by perfsh dies with its session, as under the other catchers */
		int st;

		kill(m->pid, SIGKILL);
		while (waitpid(m->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (m->pidfd >= 0)
		close(m->pidfd);
	if (m->ctl)
		munmap(m->ctl, m->bytes);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

/* -p (@inproc): the checks of an attach, then process @pid held until the first run, as a
   program perfsh starts is (the agent is loaded into it then, with the sites armed meanwhile). */
static int hold_running(struct ps_markcatch *m, pid_t pid, struct ps_error *err)
{
	int rc = ps_inproc_attach_check(pid, m->agent, sizeof m->agent, err);

	m->attached = 1;
	m->pid = pid;
	if (rc < 0 || ps_tracer_attach(&m->t, pid, NULL, NULL, err))
		return -1;
	return rc > 0 && ps_inproc_attach_check(pid, m->agent, sizeof m->agent, err) ? -1 : 0;
}

/* Start @argv with the block in its environment (and, @inproc, the agent preloaded), or with
   the agent, attach to @pid. */
static int start(struct ps_catch **cp, struct ps_catch_env *env, char *const argv[], pid_t pid, int inproc,
		 struct ps_error *err)
{
	struct ps_inproc_env saved = {0};
	struct ps_markcatch *m;
	char path[64];
	int rc;

	if (!argv && !inproc)
		return ps_error_set(err, PS_EUSAGE,
				    "the marker catcher measures a program perfsh starts; for a running one, arm its "
				    "markers with the uprobe catcher (-r marker:NAME --backend uprobe)");
	if (env->ngroups > 1 && !inproc)
		return ps_error_set(err, PS_EUSAGE, "the marker catcher counts one group of events");
	if (!(m = calloc(1, sizeof *m)))
		return ps_error_set(err, ENOMEM, "out of memory");
	m->base.ops = inproc ? &ps_catch_inproc_ops : &ps_catch_marker_ops;
	m->inproc = inproc;
	m->env = env;
	m->fd = -1;
	m->pidfd = -1;
	for (int i = 0; i < PS_MSHM_REGIONS; i++)
		m->map[i] = -1;
	if (make_block(m, err) || (argv ? inproc && ps_inproc_env_set(&saved, err) : hold_running(m, pid, err))) {
		marker_free(m);
		return -1;
	}
	if (argv) {
		/* the program opens the block through perfsh's descriptor: nothing is left behind on disk */
		snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), m->fd);
		setenv("PERFSH_CONTROL", path, 1);
		rc = ps_tracer_spawn(&m->t, argv, NULL, NULL, err); /* no breakpoint: held at its first instruction */
		unsetenv("PERFSH_CONTROL");
		if (inproc)
			ps_inproc_env_restore(&saved);
		if (rc) {
			marker_free(m);
			return -1;
		}
	}
	env->nargs = PS_MSHM_FIELDS;
	env->pid = m->pid = ps_tracer_pid(m->t);
	*cp = &m->base;
	return 0;
}

static int mk_start(struct ps_catch **cp, struct ps_catch_env *env, char *const argv[], pid_t pid, struct ps_error *err)
{
	return start(cp, env, argv, pid, 0, err);
}

static int ip_start(struct ps_catch **cp, struct ps_catch_env *env, char *const argv[], pid_t pid, struct ps_error *err)
{
	return start(cp, env, argv, pid, 1, err);
}

/* Arm the library's region @name for session region @region. */
static int arm_name(struct ps_markcatch *m, const char *name, int region, struct ps_error *err)
{
	size_t len = strlen(name), used;

	if (len == 0 || len >= PS_MSHM_NAME || strchr(name, ','))
		return ps_error_set(err, PS_EUSAGE, "marker '%s': a name of 1 to %d characters, no comma", name,
				    PS_MSHM_NAME - 1);
	used = strlen(m->ctl->arm);
	if (used + len + 2 > sizeof m->ctl->arm)
		return ps_error_set(err, PS_EUSAGE, "too many markers armed");
	/* the list first, then the names published: the library publishes a name and then reads
	   the list, so one of the two sees the other */
	snprintf(m->ctl->arm + used, sizeof m->ctl->arm - used, "%s%s", used ? "," : "", name);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < m->seen; i++)
		if (!strncmp(m->ctl->names[i], name, PS_MSHM_NAME)) {
			m->map[i] = region;
			__atomic_store_n(&m->ctl->armed[i], 1, __ATOMIC_RELAXED);
		}
	ps__mk_look_at_names(m);
	for (uint32_t i = 0; i < m->seen; i++)
		if (m->map[i] == region)
			__atomic_store_n(&m->ctl->armed[i], 1, __ATOMIC_RELAXED);
	return 0;
}

/* Arm marker @p->name for region @p->region (the session made it, named "marker:NAME"). */
static int mk_arm(struct ps_catch *c, const struct ps_catch_point *p, struct ps_error *err)
{
	struct ps_markcatch *m = of(c);

	if (!p->name)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': the marker catcher measures the program's markers only; arm "
				    "functions, lines and SDT probes with --backend uprobe or ptrace",
				    p->region >= 0 ? m->env->reg[p->region].name : "");
	return arm_name(m, p->name, p->region, err);
}

/* A function entry or a range's point for the agent to patch before main(): checked, listed
   in the block, armed. */
static int ip_arm(struct ps_catch *c, const struct ps_catch_point *p, struct ps_error *err)
{
	struct ps_markcatch *m = of(c);
	struct ps_mshm_site site;
	int rc;

	if (m->released)
		return ps_error_set(err, PS_ENEEDS_UPROBE,
				    "--backend inproc patches functions before the program runs; arm region '%s' "
				    "before the first run, or use --backend uprobe",
				    p->region >= 0 ? m->env->reg[p->region].name : "");
	if ((rc = ps_inproc_site(m->env, m->pid, p, &site, err)) != 0)
		return rc > 0 ? 0 : -1;
	if (!ps_inproc_sites_named(m->ctl, site.name) && arm_name(m, site.name, p->region, err))
		return -1; /* one name, one region of the library */
	return ps_inproc_sites_add(m->ctl, &site, err) < 0 ? -1 : 0;
}

/* The session's events or groups changed before the first run: the block says them (the
   agent reads them as the program starts). */
static int ip_events(struct ps_catch *c, struct ps_error *err)
{
	struct ps_markcatch *m = of(c);

	if (m->released)
		return ps_error_set(err, PS_EUSAGE, "the events are set before the program runs");
	return ps_mshm_events(m->env, m->ctl, err);
}

/* A region that failed to arm: its sites taken out of the list. */
static void ip_disarm(struct ps_catch *c, int region)
{
	struct ps_markcatch *m = of(c);

	if (region >= 0 && region < PS_MAX_REGIONS && !m->released)
		ps_inproc_sites_drop(m->ctl, m->env->reg[region].spec);
}

/* The program has ended (its pidfd is readable): reap it and keep how it ended. */
static void reap(struct ps_markcatch *m)
{
	int st;
	pid_t w;

	while ((w = waitpid(m->pid, &st, WNOHANG)) < 0 && errno == EINTR)
		;
	if (w == 0)
		return; /* not yet */
	m->ended = 1;
	if (w == m->pid && WIFEXITED(st)) {
		m->exited = 1;
		m->code = WEXITSTATUS(st);
	} else if (w == m->pid && WIFSIGNALED(st)) {
		m->signo = WTERMSIG(st);
	} else {
		m->code = -1; /* reaped elsewhere: how it ended is not known */
	}
}

/*
 * A pause: the program, which runs untraced, is seized and stopped (PTRACE_SEIZE and
 * PTRACE_INTERRUPT of every thread, core/proc/tracer.c's attach), then let go at the next run,
 * detach or free. A group stop (SIGSTOP) would do it without ptrace, but the program and its
 * parent would see it, and a stopped process stays stopped if perfsh dies; a ptrace stop ends
 * when its tracer dies (then PR_SET_PDEATHSIG kills the program perfsh started), and signals
 * that come meanwhile are kept for it until it goes on. It runs untraced between pauses, so
 * its AddressSanitizer still works and no thread's birth stops it.
 */
static int mk_hold(struct ps_catch *c, struct ps_error *err)
{
	struct ps_markcatch *m = of(c);
	struct pollfd p = {.fd = m->pidfd, .events = POLLIN};
	struct ps_error e2;

	(void)err;
	if (!m->released || m->ended || m->let_go || m->hold)
		return 0;
	if (ps_tracer_attach(&m->hold, m->pid, NULL, NULL, &e2)) {
		m->hold = NULL;
		if (e2.code != ESRCH && poll(&p, 1, 0) == 0) /* not a program that has just ended */
			ps_catch_notice(m->env, "the program runs on through the pause: %s", e2.msg);
		return 0;
	}
	ps__mk_drain(m); /* every record the stopped threads wrote */
	return 0;
}

/* The end of a pause: the program goes on untraced (how it ended, should it have died while
   held, was seen by the hold's tracer). */
static void unhold(struct ps_markcatch *m)
{
	int code, signo;

	if (!m->hold)
		return;
	ps_tracer_detach(m->hold, NULL);
	if (ps_tracer_status(m->hold, NULL, &code, &signo)) {
		m->ended = 1;
		m->exited = signo == 0 && code >= 0;
		m->code = code;
		m->signo = signo;
	}
	ps_tracer_free(m->hold);
	m->hold = NULL;
}

/* Let the program go from its exec stop (or the attach's hold): from now on it is not traced
   at all. An attached one gets the agent then (inproc_attach.h). */
static int release(struct ps_markcatch *m, struct ps_error *err)
{
	char path[64];

	if (ps_tracer_detach(m->t, err))
		return -1;
	m->released = 1;
	if ((m->pidfd = (int)syscall(SYS_pidfd_open, m->pid, 0)) < 0)
		return ps_error_set(err, errno, "pidfd_open of process %d: %s", (int)m->pid, strerror(errno));
	if (!m->attached)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), m->fd);
	m->injected = ps_inproc_attach(m->pid, m->agent, m->ctl, path, err) == 0;
	return m->injected ? 0 : -1;
}

static int mk_run(struct ps_catch *c, struct ps_error *err)
{
	struct ps_markcatch *m = of(c);

	if (!m->released && release(m, err))
		return -1;
	if (m->let_go)
		return ps_error_set(err, PS_EUSAGE, "the program was detached; it runs on untraced");
	unhold(m);
	for (;;) {
		uint64_t now = ps_now_ns(), until = now + DRAIN_NS;
		struct pollfd p = {.fd = m->pidfd, .events = POLLIN};
		struct timespec ts;

		if (m->env->deadline && m->env->deadline < until)
			until = m->env->deadline > now ? m->env->deadline : now;
		ts.tv_sec = (time_t)((until - now) / 1000000000u);
		ts.tv_nsec = (long)((until - now) % 1000000000u);
		if (!m->ended && ppoll(&p, 1, &ts, NULL) > 0)
			reap(m);
		ps__mk_drain(m); /* after the reap: an ended program's last records are in the rings */
		if (m->ended)
			return 1;
		now = ps_now_ns();
		if (m->env->intr || ps_catch_pause_due(m->env, now))
			return 0;
	}
}

/* Once the first run has let the program go, how it ended is seen here; before, by the tracer. */
static int mk_status(const struct ps_catch *c, int *exited, int *code, int *signo)
{
	const struct ps_markcatch *m = of_const(c);

	if (!m->released)
		return ps_tracer_status(m->t, exited, code, signo);
	if (exited)
		*exited = m->ended && m->exited;
	if (code)
		*code = m->ended ? m->code : -1;
	if (signo)
		*signo = m->ended ? m->signo : 0;
	return m->ended;
}

static int mk_detach(struct ps_catch *c, struct ps_error *err)
{
	struct ps_markcatch *m = of(c);

	int rc = 0;

	__atomic_store_n(&m->ctl->pol.on, 0, __ATOMIC_RELAXED);
	unhold(m);
	if (!m->released && !m->attached && release(m, err))
		return -1;
	if (m->injected && !m->ended)
		rc = ps_inproc_detach(m->pid, m->ctl, DETACH_NS, err);
	ps__mk_drain(m);
	m->let_go = !m->ended;
	return rc;
}

static int mk_policy(struct ps_catch *c, const struct ps_mshm_policy *p, struct ps_error *err)
{
	struct ps_mshm_policy *q = &of(c)->ctl->pol;

	(void)err;
	__atomic_store_n(&q->every, p->every, __ATOMIC_RELAXED);
	__atomic_store_n(&q->threshold, p->threshold, __ATOMIC_RELAXED);
	__atomic_store_n(&q->slow_ns, p->slow_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&q->sampled, p->sampled, __ATOMIC_RELAXED);
	__atomic_store_n(&q->on, p->on, __ATOMIC_RELEASE);
	return 0;
}

static int mk_marker_status(const struct ps_catch *cat, struct ps_marker_status *st)
{
	const struct ps_markcatch *m = of_const(cat);
	const struct ps_mshm_ctl *c = m->ctl;

	memset(st, 0, sizeof *st);
	st->state = (int)__atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
	snprintf(st->why, sizeof st->why, "%s", c->why);
	snprintf(st->read_mode, sizeof st->read_mode, "%s", c->read_mode);
	st->read_ns = c->read_ns;
	st->rdpmc_ns = c->rdpmc_ns;
	st->pol = c->pol;
	st->no_slot = __atomic_load_n(&c->no_slot, __ATOMIC_RELAXED);
	st->threads = __atomic_load_n(&c->threads, __ATOMIC_RELAXED);
	st->unarmed = m->unarmed;
	st->unmatched = m->unmatched;
	st->fast = m->fast;
	st->lost = m->lost;
	for (unsigned i = 0; i < c->nslots; i++) {
		const struct ps_mshm_slot *sl = ps_mshm_slot((struct ps_mshm_ctl *)c, i);

		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == PS_MSHM_FREE)
			continue;
		st->lost += ps_ring_dropped((const struct ps_ring *)sl->ring);
		st->unmatched += sl->cnt.unmatched;
		st->fast += sl->cnt.fast;
	}
	return 0;
}

static uint64_t mk_lost(const struct ps_catch *c)
{
	struct ps_marker_status st;

	mk_marker_status(c, &st);
	return st.lost;
}

static void mk_interrupt(struct ps_catch *c)
{
	(void)c; /* the run sees env->intr within DRAIN_NS */
}

static int mk_sample(struct ps_catch *c, int id, const struct ps_sample *how, struct ps_error *err)
{
	(void)how;
	return ps_error_set(err, PS_EUSAGE,
			    "region '%s': with the marker catcher the program draws its samples itself; set the "
			    "markers' policy (t:markers{sample = P} or {every = N})",
			    of(c)->env->reg[id].name);
}

static void mk_disarm(struct ps_catch *c, int region)
{
	(void)c;
	(void)region; /* a marker that failed to arm was never put in the list */
}

static struct ps_tracer *mk_tracer(const struct ps_catch *c)
{
	return of_const(c)->t;
}

static void mk_free(struct ps_catch *c)
{
	marker_free(of(c));
}

/* The marker catcher's ops, but for the name, what it arms and how it starts. */
#define MARKER_OPS(NAME, CAPS, START, ARM, DISARM, EVENTS)                                                             \
	{                                                                                                              \
		.name = NAME, .caps = CAPS, .start = START, .run = mk_run, .hold = mk_hold, .interrupt = mk_interrupt, \
		.detach = mk_detach, .free = mk_free, .status = mk_status, .lost = mk_lost, .arm = ARM,                \
		.disarm = DISARM, .sample = mk_sample, .tracer = mk_tracer, .policy = mk_policy,                       \
		.marker_status = mk_marker_status, .events = EVENTS,                                                   \
	}

const struct ps_catcher_ops ps_catch_marker_ops =
    MARKER_OPS("marker", PS_CATCH_MARKERS, mk_start, mk_arm, mk_disarm, NULL);

/* --backend inproc: the same, with the agent preloaded and function entries and range points
   for it to patch. */
const struct ps_catcher_ops ps_catch_inproc_ops =
    MARKER_OPS("inproc", PS_CATCH_CODE | PS_CATCH_EVENTS_LATE, ip_start, ip_arm, ip_disarm, ip_events);
