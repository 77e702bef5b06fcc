/* core/catch/ptrace/catch_ptrace.c - the ptrace catcher: each stop of the tracer (core/proc/tracer.h) becomes
 * hits for the hit path (core/hitpath/hitpath.h).
 *
 * A breakpoint carries roles (session_priv.h): the entry, start or end of a region, which
 * become hits, and the roles only a tracer that stops the program has: main() reached (arm
 * the library regions), the loader's link map changed, the unwinder starting or an exception
 * caught (return addresses put back and swapped again). At a stop that measures, the thread's
 * groups are read first, then the clock and the CPU: the less perfsh runs before the read,
 * the less it counts. A stop that measures nothing (a nested entry, an end with no start)
 * reads nothing.
 */
#include <string.h>

#include "run.h"
#include "session_priv.h"

/* Read every group of the thread: values in event order, then the later groups' times. */
static void read_now(struct ps_session *s, struct thr *th, struct ps_reading *r)
{
	struct ps_reading gr;
	int off = 0, extra = s->nev;

	r->n = ps_session_nvals(s);
	if (s->ngroups == 1) {
		if (ps_group_read(&th->g[0], r, NULL))
			memset(r, 0, sizeof *r);
		r->n = s->nev;
		return;
	}
	r->time_enabled = r->time_running = 0;
	for (int g = 0; g < s->ngroups; off += s->gsize[g++]) {
		if (ps_group_read(&th->g[g], &gr, NULL))
			memset(&gr, 0, sizeof gr);
		memcpy(r->val + off, gr.val, (size_t)s->gsize[g] * sizeof gr.val[0]);
		if (g == 0) {
			r->time_enabled = gr.time_enabled;
			r->time_running = gr.time_running;
		} else {
			r->val[extra++] = gr.time_enabled;
			r->val[extra++] = gr.time_running;
		}
	}
}

static int pause_wanted(struct ps_session *s, uint64_t now)
{
	if (s->max_records && ps_hitpath_seq(s->hp) - s->written_at_run_start >= s->max_records)
		return PS_TRACER_PAUSE;
	if (s->deadline && now >= s->deadline)
		return PS_TRACER_PAUSE;
	return 0;
}

static int on_thread_new(void *ud, pid_t tid)
{
	struct ps_session *s = ud;
	if (!ps__thr_get(s, tid, &s->fail)) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

/* Close what a vanishing thread left open; its group can still be read. */
static void on_thread_exit(void *ud, pid_t tid)
{
	struct ps_session *s = ud;
	struct thr *th = ps__thr_find(s, tid);
	struct ps_reading r;

	if (!th)
		return;
	read_now(s, th, &r);
	ps_hitpath_thread_exit(s->hp, tid, &r, ps_now_ns());
	ps__thr_remove(s, tid);
}

/* The argument registers, x86-64 System V order. */
static void take_args(uint64_t args[PS_MAX_ARGS], const struct user_regs_struct *regs)
{
	args[0] = regs->rdi;
	args[1] = regs->rsi;
	args[2] = regs->rdx;
	args[3] = regs->rcx;
	args[4] = regs->r8;
	args[5] = regs->r9;
}

/* A sampled entry of function region @id, caught by its hardware breakpoint. */
static int sampled_entry(struct ps_session *s, struct thr *th, struct ps_hit *h, const struct user_regs_struct *regs,
			 uint64_t *cookie)
{
	int k, id = h->region, sl;

	for (k = 0; k < s->nsampled && s->sampled[k] != id; k++)
		;
	if (k == s->nsampled)
		return 0;
	ps__hw_after_hit(s, th, k);
	if (!ps__hw_at_entry(s, id, regs)) {
		/* the signal came late (the kernel may deliver it asynchronously): the thread is no
		   longer at the entry, so the return address is not found; this sample is lost */
		s->reg[id].late++;
		return 0;
	}
	h->kind = PS_HIT_ENTRY;
	h->flags = PS_SNAP_SAMPLED;
	if ((sl = ps_hitpath_hit(s->hp, h)) < 0)
		return 0; /* inside an outer call already */
	*cookie = (uint64_t)sl;
	return PS_TRACER_CATCH_RETURN;
}

/* The hit a region role of breakpoint @bp makes (its counters not filled in). */
static struct ps_hit role_hit(const struct ps_session *s, pid_t tid, int bp, int k)
{
	enum role_kind kind = s->bps[bp].roles[k].kind;
	struct ps_hit h = {.tid = tid, .region = s->bps[bp].roles[k].region, .cpu = -1};

	h.kind = kind == ROLE_ENTRY ? PS_HIT_ENTRY : kind == ROLE_START ? PS_HIT_START : PS_HIT_END;
	return h;
}

/* Whether this stop starts or ends a measurement, so that the counters, clock and CPU must
   be read; most nested entries and unmatched ends need none of them. No system call here. */
static int stop_measures(const struct ps_session *s, const struct thr *th, int bp)
{
	if (bp >= PS_BP_HW_BASE)
		return 1;
	if (bp < 0 || bp >= s->nbps)
		return 0;
	for (int k = 0; k < s->bps[bp].nroles; k++) {
		int id = s->bps[bp].roles[k].region;
		const struct ps_region_info *ri = id >= 0 ? &s->reg[id] : NULL;
		struct ps_hit h;
		switch (s->bps[bp].roles[k].kind) {
		case ROLE_ENTRY:
		case ROLE_START:
			h = role_hit(s, th->tid, bp, k);
			if (!ri->dropped && !ri->pending && ps_hitpath_measures(s->hp, &h))
				return 1;
			break;
		case ROLE_END:
			h = role_hit(s, th->tid, bp, k);
			if (ps_hitpath_measures(s->hp, &h))
				return 1;
			break;
		case ROLE_UNWIND:
		case ROLE_CATCH:
		case ROLE_LOAD:
			break;
		default:
			return 1; /* ROLE_MAIN: rare, take the slow path */
		}
	}
	return 0;
}

/* The roles that only a stopping catcher has; 0, or -1 to abort. */
static int ptrace_role(struct ps_session *s, pid_t tid, int bp, int *k)
{
	switch (s->bps[bp].roles[*k].kind) {
	case ROLE_MAIN:
		/* once: drop this role, and the breakpoint if nothing else uses it */
		s->bps[bp].roles[*k] = s->bps[bp].roles[--s->bps[bp].nroles];
		--*k;
		if (s->bps[bp].nroles == 0)
			ps_tracer_bp_enable(s->t, bp, 0, NULL);
		s->main_bp = -1;
		return ps__arm_pending(s, 1) < 0 ? -1 : 0;
	case ROLE_UNWIND:
		ps_tracer_frames_restore(s->t, tid);
		break;
	case ROLE_CATCH:
		ps_tracer_frames_reswap(s->t, tid);
		break;
	case ROLE_LOAD:
		ps__arm_pending(s, 0);
		break;
	default:
		break;
	}
	return 0;
}

/* An end breakpoint (every role of it a range's end) is worth a stop only while a hit of its
   regions is open: once none is, disarm it. A start arms its region's ends again (ends_wake()). */
static void ends_sleep(struct ps_session *s, int bp)
{
	for (int k = 0; k < s->bps[bp].nroles; k++)
		if (s->bps[bp].roles[k].kind != ROLE_END || ps_hitpath_open_calls(s->hp, s->bps[bp].roles[k].region))
			return;
	if (s->bps[bp].nroles)
		ps_tracer_bp_enable(s->t, bp, 0, NULL);
}

static void ends_wake(struct ps_session *s, int id)
{
	for (int b = 0; b < s->nbps; b++)
		for (int k = 0; k < s->bps[b].nroles; k++)
			if (s->bps[b].roles[k].kind == ROLE_END && s->bps[b].roles[k].region == id)
				ps_tracer_bp_enable(s->t, b, 1, NULL);
}

/* A stop that measures nothing: count the entries it makes, and nothing else. */
static int plain_roles(struct ps_session *s, struct thr *th, int bp)
{
	for (int k = 0; k < s->bps[bp].nroles; k++) {
		int id = s->bps[bp].roles[k].region;
		enum role_kind kind = s->bps[bp].roles[k].kind;
		if ((kind == ROLE_ENTRY || kind == ROLE_START) && !s->reg[id].dropped && !s->reg[id].pending) {
			struct ps_hit h = role_hit(s, th->tid, bp, k); /* seen, not measured: */
			s->reg[id].entries++;
			ps_hitpath_hit(s->hp, &h); /* a sampled region's draw, made at every entry */
		} else if (kind == ROLE_UNWIND || kind == ROLE_CATCH || kind == ROLE_LOAD)
			ptrace_role(s, th->tid, bp, &k);
	}
	ends_sleep(s, bp); /* an end with no hit open */
	return pause_wanted(s, s->deadline ? ps_now_ns() : 0);
}

/* An entry the hardware breakpoint saw but its counter missed. */
static void stray_entry(struct ps_session *s, const struct user_regs_struct *regs)
{
	for (int k = 0; k < s->nsampled; k++)
		if (s->reg[s->sampled[k]].addr == regs->rip && s->reg[s->sampled[k]].counter == PS_COUNT_BREAKPOINT)
			s->reg[s->sampled[k]].entries_gone++;
}

static int on_hit(void *ud, pid_t tid, int bp, const struct user_regs_struct *regs, uint64_t *cookie)
{
	struct ps_session *s = ud;
	struct thr *th = ps__thr_get(s, tid, &s->fail);
	struct ps_reading r;
	uint64_t args[PS_MAX_ARGS];
	struct ps_hit h = {.tid = tid, .r = &r};
	int rc = 0;

	if (!th) {
		s->failed = 1;
		return -1;
	}
	if (bp == PS_BP_HW_STRAY) {
		stray_entry(s, regs);
		return 0;
	}
	if (!stop_measures(s, th, bp)) /* a nested entry, an end with no start, ... */
		return bp >= 0 && bp < s->nbps ? plain_roles(s, th, bp) : 0;
	read_now(s, th, &r); /* first: the less perfsh runs before the read, the less it counts */
	h.t = ps_now_ns();
	h.cpu = ps_tracer_cpu(s->t, tid);
	if (s->nargs) {
		take_args(args, regs);
		h.args = args;
	}
	if (bp >= PS_BP_HW_BASE) {
		h.region = bp - PS_BP_HW_BASE;
		return sampled_entry(s, th, &h, regs, cookie) | pause_wanted(s, h.t);
	}
	if (bp < 0 || bp >= s->nbps)
		return 0;
	for (int k = 0; k < s->bps[bp].nroles; k++) {
		int id = s->bps[bp].roles[k].region, sl;
		enum role_kind kind = s->bps[bp].roles[k].kind;
		struct ps_hit rh = role_hit(s, tid, bp, k);

		rh.t = h.t;
		rh.cpu = h.cpu;
		rh.r = h.r;
		rh.args = h.args;
		if (kind == ROLE_END) {
			ps_hitpath_hit(s->hp, &rh);
			ends_sleep(s, bp);
		} else if (kind == ROLE_ENTRY || kind == ROLE_START) {
			if (s->reg[id].dropped || s->reg[id].pending)
				continue;
			s->reg[id].entries++;
			sl = ps_hitpath_hit(s->hp, &rh);
			if (kind == ROLE_START)
				ends_wake(s, id);
			if (kind == ROLE_ENTRY && sl >= 0) {
				*cookie = (uint64_t)sl;
				rc |= PS_TRACER_CATCH_RETURN;
			}
		} else if (ptrace_role(s, tid, bp, &k) < 0) {
			return -1;
		}
	}
	return rc | pause_wanted(s, h.t);
}

static int on_ret(void *ud, pid_t tid, int bp, uint64_t cookie, int unwound)
{
	struct ps_session *s = ud;
	struct thr *th = ps__thr_find(s, tid);
	struct ps_reading r;
	struct ps_hit h = {.tid = tid, .kind = PS_HIT_RETURN, .handle = (int)cookie, .r = &r};

	(void)bp;
	if (!th || cookie > INT_MAX || !ps_hitpath_measures(s->hp, &h))
		return 0;
	read_now(s, th, &r);
	h.t = ps_now_ns();
	h.cpu = ps_tracer_cpu(s->t, tid);
	h.flags = unwound ? PS_SNAP_UNWOUND : 0;
	ps_hitpath_hit(s->hp, &h);
	return pause_wanted(s, h.t);
}

static int on_exec(void *ud, pid_t pid)
{
	struct ps_session *s = ud;
	(void)pid;
	/* Measurements open across exec cannot end: drop them. */
	ps_hitpath_exec(s->hp);
	ps__hw_close_all(s); /* first: an open uprobe would put its int3 in the new image too */
	if (ps__rearm_after_exec(s) < 0 || ps__hw_reopen_all(s) < 0) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

const struct ps_tracer_ops ps__ptrace_ops = {
    .thread_new = on_thread_new,
    .thread_exit = on_thread_exit,
    .hit = on_hit,
    .ret = on_ret,
    .exec = on_exec,
};
