/* core/catch/ptrace/catch_ptrace.c - the ptrace catcher: each stop of the tracer (core/proc/tracer.h) becomes
 * hits for the hit path (core/hitpath/hitpath.h).
 *
 * A breakpoint carries roles (ptrace_priv.h, roles.c): the entry, start or end of a region, which
 * become hits, and the roles only a tracer that stops the program has: main() reached (arm
 * the library regions), the loader's link map changed, the unwinder starting or an exception
 * caught (return addresses put back and swapped again). At a stop that measures, the thread's
 * groups are read first, then the clock and the CPU: the less perfsh runs before the read,
 * the less it counts. A stop that measures nothing (a nested entry, an end with no start)
 * reads nothing.
 */
#include <string.h>

#include "ptrace_priv.h"
#include "run.h"

static int pause_wanted(const struct ps_ptrace *p, uint64_t now)
{
	return ps_catch_pause_due(p->env, now) ? PS_TRACER_PAUSE : 0;
}

static int on_thread_new(void *ud, pid_t tid)
{
	struct ps_ptrace *p = ud;
	if (!ps__thr_get(p, tid, &p->env->fail)) {
		p->env->failed = 1;
		return -1;
	}
	return 0;
}

/* Close what a vanishing thread left open; its group can still be read. */
static void on_thread_exit(void *ud, pid_t tid)
{
	struct ps_ptrace *p = ud;
	struct thr *th = ps__thr_find(p, tid);
	struct ps_reading r;

	if (!th)
		return;
	ps__thr_read(p, th, &r);
	ps_hitpath_thread_exit(p->env->hp, tid, &r, ps_now_ns());
	ps__thr_remove(p, tid);
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
static int sampled_entry(struct ps_ptrace *p, struct thr *th, struct ps_hit *h, const struct user_regs_struct *regs,
			 uint64_t *cookie)
{
	int k, id = h->region, sl;

	for (k = 0; k < p->nsampled && p->sampled[k] != id; k++)
		;
	if (k == p->nsampled)
		return 0;
	ps__hw_after_hit(p, th, k);
	if (!ps__hw_at_entry(p, id, regs)) {
		/* the signal came late (the kernel may deliver it asynchronously): the thread is no
		   longer at the entry, so the return address is not found; this sample is lost */
		p->env->reg[id].late++;
		return 0;
	}
	h->kind = PS_HIT_ENTRY;
	h->flags = PS_SNAP_SAMPLED;
	if ((sl = ps_hitpath_hit(p->env->hp, h)) < 0)
		return 0; /* inside an outer call already */
	*cookie = (uint64_t)sl;
	return PS_TRACER_CATCH_RETURN;
}

/* The hit a region role of breakpoint @bp makes (its counters not filled in). */
static struct ps_hit role_hit(const struct ps_ptrace *p, pid_t tid, int bp, int k)
{
	enum ps_catch_role kind = p->bps[bp].roles[k].kind;
	struct ps_hit h = {.tid = tid, .region = p->bps[bp].roles[k].region, .cpu = -1};

	h.kind = kind == PS_ROLE_ENTRY ? PS_HIT_ENTRY : kind == PS_ROLE_START ? PS_HIT_START : PS_HIT_END;
	return h;
}

/* Whether this stop (at stack pointer @sp) starts or ends a measurement, so that the counters,
   clock and CPU must be read; most nested entries and unmatched ends need none of them. No
   system call here. */
static int stop_measures(const struct ps_ptrace *p, const struct thr *th, int bp, uint64_t sp)
{
	if (bp >= PS_BP_HW_BASE)
		return 1;
	if (bp < 0 || bp >= p->nbps)
		return 0;
	for (int k = 0; k < p->bps[bp].nroles; k++) {
		int id = p->bps[bp].roles[k].region;
		const struct ps_region_info *ri = id >= 0 ? &p->env->reg[id] : NULL;
		struct ps_hit h;
		switch (p->bps[bp].roles[k].kind) {
		case PS_ROLE_ENTRY:
		case PS_ROLE_START:
			h = role_hit(p, th->tid, bp, k);
			h.sp = sp;
			if (!ri->dropped && !ri->pending && ps_hitpath_measures(p->env->hp, &h))
				return 1;
			break;
		case PS_ROLE_END:
			h = role_hit(p, th->tid, bp, k);
			h.sp = sp;
			if (ps_hitpath_measures(p->env->hp, &h))
				return 1;
			break;
		case PS_ROLE_UNWIND:
		case PS_ROLE_CATCH:
		case PS_ROLE_LOAD:
			break;
		default:
			return 1; /* PS_ROLE_MAIN: rare, take the slow path */
		}
	}
	return 0;
}

/* The roles that only a stopping catcher has; 0, or -1 to abort. */
static int ptrace_role(struct ps_ptrace *p, pid_t tid, int bp, int *k)
{
	switch (p->bps[bp].roles[*k].kind) {
	case PS_ROLE_MAIN:
		/* once: drop this role, and the breakpoint if nothing else uses it */
		p->bps[bp].roles[*k] = p->bps[bp].roles[--p->bps[bp].nroles];
		--*k;
		if (p->bps[bp].nroles == 0)
			ps_tracer_bp_enable(p->t, bp, 0, NULL);
		return p->env->libs_mapped(p->env->owner, 1) < 0 ? -1 : 0;
	case PS_ROLE_UNWIND:
		ps_tracer_frames_restore(p->t, tid);
		break;
	case PS_ROLE_CATCH:
		ps_tracer_frames_reswap(p->t, tid);
		break;
	case PS_ROLE_LOAD:
		p->env->libs_mapped(p->env->owner, 0);
		break;
	default:
		break;
	}
	return 0;
}

/* An end breakpoint (every role of it a range's end) is worth a stop only while a hit of its
   regions is open: once none is, disarm it. A start arms its region's ends again (ends_wake()). */
static void ends_sleep(struct ps_ptrace *p, int bp)
{
	for (int k = 0; k < p->bps[bp].nroles; k++)
		if (p->bps[bp].roles[k].kind != PS_ROLE_END ||
		    ps_hitpath_open_calls(p->env->hp, p->bps[bp].roles[k].region))
			return;
	if (p->bps[bp].nroles)
		ps_tracer_bp_enable(p->t, bp, 0, NULL);
}

static void ends_wake(struct ps_ptrace *p, int id)
{
	for (int b = 0; b < p->nbps; b++)
		for (int k = 0; k < p->bps[b].nroles; k++)
			if (p->bps[b].roles[k].kind == PS_ROLE_END && p->bps[b].roles[k].region == id)
				ps_tracer_bp_enable(p->t, b, 1, NULL);
}

/* A stop that measures nothing: count the entries it makes, and nothing else. */
static int plain_roles(struct ps_ptrace *p, struct thr *th, int bp)
{
	for (int k = 0; k < p->bps[bp].nroles; k++) {
		int id = p->bps[bp].roles[k].region;
		enum ps_catch_role kind = p->bps[bp].roles[k].kind;
		if ((kind == PS_ROLE_ENTRY || kind == PS_ROLE_START) && !p->env->reg[id].dropped &&
		    !p->env->reg[id].pending) {
			struct ps_hit h = role_hit(p, th->tid, bp, k); /* seen, not measured: */
			p->env->reg[id].entries++;
			ps_hitpath_hit(p->env->hp, &h); /* a sampled region's draw, made at every entry */
		} else if (kind == PS_ROLE_UNWIND || kind == PS_ROLE_CATCH || kind == PS_ROLE_LOAD)
			ptrace_role(p, th->tid, bp, &k);
	}
	ends_sleep(p, bp); /* an end with no hit open */
	return pause_wanted(p, p->env->deadline ? ps_now_ns() : 0);
}

/* An entry the hardware breakpoint saw but its counter missed. */
static void stray_entry(struct ps_ptrace *p, const struct user_regs_struct *regs)
{
	for (int k = 0; k < p->nsampled; k++)
		if (p->env->reg[p->sampled[k]].addr == regs->rip &&
		    p->env->reg[p->sampled[k]].counter == PS_COUNT_BREAKPOINT)
			p->env->reg[p->sampled[k]].entries_gone++;
}

static int on_hit(void *ud, pid_t tid, int bp, const struct user_regs_struct *regs, uint64_t *cookie)
{
	struct ps_ptrace *p = ud;
	struct thr *th = ps__thr_get(p, tid, &p->env->fail);
	struct ps_reading r;
	uint64_t args[PS_MAX_ARGS];
	struct ps_hit h = {.tid = tid, .r = &r};
	int rc = 0;

	if (!th) {
		p->env->failed = 1;
		return -1;
	}
	if (bp == PS_BP_HW_STRAY) {
		stray_entry(p, regs);
		return 0;
	}
	if (!stop_measures(p, th, bp, regs->rsp)) /* a nested entry, an end with no start, ... */
		return bp >= 0 && bp < p->nbps ? plain_roles(p, th, bp) : 0;
	ps__thr_read(p, th, &r); /* first: the less perfsh runs before the read, the less it counts */
	h.t = ps_now_ns();
	h.cpu = ps_tracer_cpu(p->t, tid);
	if (p->env->nargs) {
		take_args(args, regs);
		h.args = args;
	}
	if (bp >= PS_BP_HW_BASE) {
		h.region = bp - PS_BP_HW_BASE;
		return sampled_entry(p, th, &h, regs, cookie) | pause_wanted(p, h.t);
	}
	if (bp < 0 || bp >= p->nbps)
		return 0;
	for (int k = 0; k < p->bps[bp].nroles; k++) {
		int id = p->bps[bp].roles[k].region, sl;
		enum ps_catch_role kind = p->bps[bp].roles[k].kind;
		struct ps_hit rh = role_hit(p, tid, bp, k);

		rh.t = h.t;
		rh.cpu = h.cpu;
		rh.r = h.r;
		rh.args = h.args;
		rh.sp = regs->rsp;
		if (kind == PS_ROLE_END) {
			ps_hitpath_hit(p->env->hp, &rh);
			ends_sleep(p, bp);
		} else if (kind == PS_ROLE_ENTRY || kind == PS_ROLE_START) {
			if (p->env->reg[id].dropped || p->env->reg[id].pending)
				continue;
			p->env->reg[id].entries++;
			sl = ps_hitpath_hit(p->env->hp, &rh);
			if (kind == PS_ROLE_START)
				ends_wake(p, id);
			if (kind == PS_ROLE_ENTRY && sl >= 0) {
				*cookie = (uint64_t)sl;
				rc |= PS_TRACER_CATCH_RETURN;
			}
		} else if (ptrace_role(p, tid, bp, &k) < 0) {
			return -1;
		}
	}
	return rc | pause_wanted(p, h.t);
}

static int on_ret(void *ud, pid_t tid, int bp, uint64_t cookie, int unwound)
{
	struct ps_ptrace *p = ud;
	struct thr *th = ps__thr_find(p, tid);
	struct ps_reading r;
	struct ps_hit h = {.tid = tid, .kind = PS_HIT_RETURN, .handle = (int)cookie, .r = &r};

	(void)bp;
	if (!th || cookie > INT_MAX || !ps_hitpath_measures(p->env->hp, &h))
		return 0;
	ps__thr_read(p, th, &r);
	h.t = ps_now_ns();
	h.cpu = ps_tracer_cpu(p->t, tid);
	h.flags = unwound ? PS_SNAP_UNWOUND : 0;
	ps_hitpath_hit(p->env->hp, &h);
	return pause_wanted(p, h.t);
}

static int on_exec(void *ud, pid_t pid)
{
	struct ps_ptrace *p = ud;
	(void)pid;
	/* Measurements open across exec cannot end: drop them. */
	ps_hitpath_exec(p->env->hp);
	ps__hw_close_all(p);   /* first: an open uprobe would put its int3 in the new image too */
	ps__pt_roles_clear(p); /* the old breakpoints are gone: the session arms the regions anew */
	if (p->env->exec(p->env->owner) < 0 || ps__hw_reopen_all(p) < 0) {
		p->env->failed = 1;
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
