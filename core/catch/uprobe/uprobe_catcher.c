/* core/catch/uprobe/uprobe_catcher.c - the uprobe catcher's ops (core/catch/catcher.h): hits the
 * process side (core/catch/uprobe/catch_uprobe.c) catches: the regions' points become uprobe sites (file offsets, from
 * where the address is mapped), and each decoded hit goes to the hit path with the counter values the kernel sampled.
 * The target never stops for a hit.
 *
 * Sites: a function region's entry and its exits (each ret, each tail-call jmp, those of its cold
 * parts: core/binary/retsites.h) are plain uprobes in one counter group (small functions share
 * one), matched by the stack pointer each hit carries (core/catch/uprobe/upframes.h): the return
 * address is never touched, so unwinders, backtraces and exceptions work, and a frame an
 * exception or a longjmp left ends unwound at the thread's next probe above it. A leaf's returns
 * (it calls nothing and leaves by its rets only: nothing unwinds through it) come through a
 * uretprobe, cheaper than a probe on a ret, which the kernel single-steps. Where the exits
 * cannot be found, a uretprobe catches the returns (with a note), unless the program can unwind
 * exceptions (refused: it needs the ptrace catcher). A line range's start and end points (the addresses the ptrace
 * catcher would break at, core/binary/lines_cfg.c: each is one instruction, never an edge) and an SDT pair's probes are
 * plain uprobes (START and END hits, paired as with ptrace), all of one region in one counter
 * group of their own, so that its start and end read the same counters; a single SDT probe is
 * a point event: each hit is one record whose start and end are the values there.
 *
 * Sampling every Nth call or with a probability: the kernel writes a record at every probe (the
 * probe's trap is the floor, and the program never stops) and the hit path decimates them per
 * call (ps_hitpath_sample()): every entry is counted and draws, a chosen one opens a
 * measurement (flagged sampled) and its return follows that choice (an entry nested in it,
 * a recursion, draws on its own, as under ptrace); an unsampled entry and its return are
 * dropped as they are decoded.
 * Time windows: by switching every probe and counter on and off at the window's
 * edges (PERF_EVENT_IOC_ENABLE/DISABLE on the groups, never per hit), so one window covers
 * every region; what is open when a window closes ends there, cut short (its return may
 * never come), and a return whose entry came while closed is ignored. Entries are counted in
 * the windows only.
 *
 * Regions in libraries not mapped yet (loaded at start, or later with dlopen) are probed in the
 * file the loader will map; they stay pending until it is seen mapped, and are dropped with
 * the reason where the program maps another file in its name (core/catch/uprobe/uplibs.c).
 *
 * Several counter groups: each group has probes of its own at every site, and the records of
 * one trap are merged into one hit (core/catch/uprobe/upmerge.h) with every group's values
 * and times, as the ptrace catcher reads them, so each group is scaled on its own. Refused
 * (needs ptrace) where a group could be multiplexed (a hardware PMU's, ps_uprobe_check_groups()).
 * Time windows switch the probes while the program is held a moment at each edge (one stop
 * per thread per edge, never per hit): a sample carries its own probe's time_enabled and
 * time_running, and switched while the thread runs, the entry's and the return's probes
 * would drift apart at each edge; several groups' probes would also leave their counts apart.
 *
 * Inlined copies of a function are range regions (the session arms them, core/binary/lines_inline.c):
 * a plain uprobe at the copy's entry (START) and at each place control leaves it (END).
 *
 * A run's limit (t:run{hits = N}), when the run then holds the program: the run ends at the Nth
 * record, and the records the kernel wrote after it wait in the rings (the program is held a
 * moment later) for the next run, which takes them first: a run keeps exactly N, and no hit is
 * lost or cut short by the pause.
 *
 * Losses: where a thread's ring was full, what it had open ends there (flagged as cut short,
 * like at a thread's exit) and the returns of the calls entered before are not waited for,
 * so no return is ever paired with the wrong entry.
 *
 * Returns of a uretprobe: the kernel keeps at most PS_UPROBE_MAX_DEPTH pending per thread; an
 * entry deeper than that gets none, and ends unwound at its caller's return.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catch_uprobe.h"
#include "catcher.h"
#include "procmaps.h"
#include "run.h"
#include "upframes.h"
#include "uplibs.h"
#include "upsites.h"

_Static_assert(PS_MAX_GROUPS <= PS_UPROBE_MAX_GROUPS, "every counter group the session allows has probes");

static struct ps_upcatch *of(struct ps_catch *c)
{
	return (struct ps_upcatch *)c;
}

static const struct ps_upcatch *of_const(const struct ps_catch *c)
{
	return (const struct ps_upcatch *)c;
}

/* Register @bit (asm/perf_regs.h) of hit @h, whose registers are those of @mask, lowest bit first;
   0 when it has none. */
static uint64_t reg_at(const struct ps_uprobe_hit *h, uint64_t mask, int bit)
{
	int i = __builtin_popcountll(mask & ((1ull << bit) - 1));

	return (mask >> bit & 1) && i < h->nregs ? h->regs[i] : 0;
}

/* Records want the arguments rdi, rsi, rdx, rcx, r8, r9 (DI, SI, DX, CX, R8, R9 in perf_regs.h). */
static void take_args(uint64_t args[PS_MAX_ARGS], const struct ps_uprobe_hit *h, uint64_t mask)
{
	static const int bit[PS_MAX_ARGS] = {5, 4, 3, 2, 16, 17};

	for (int i = 0; i < PS_MAX_ARGS; i++)
		args[i] = reg_at(h, mask, bit[i]);
}

/* A START, END or POINT hit of a plain uprobe site. */
static void point_hit(struct ps_upcatch *u, struct ps_hit *h, enum ps_uprobe_point kind)
{
	if (kind == PS_UPOINT_END) {
		h->kind = PS_HIT_END;
		ps_hitpath_hit(u->env->hp, h);
		return;
	}
	h->kind = PS_HIT_START;
	u->env->reg[h->region].entries++;
	ps_hitpath_hit(u->env->hp, h);
	if (kind == PS_UPOINT_POINT) {
		h->kind = PS_HIT_END;
		ps_hitpath_hit(u->env->hp, h);
	}
}

/* A function's entry with the return address at @sp (0: unknown, its exit is not matched). */
static void entry_hit(struct ps_upcatch *u, struct ps_hit *h, const struct ps_uprobe_hit *uh, uint64_t sp)
{
	uint64_t args[PS_MAX_ARGS];

	if (u->env->nargs) {
		take_args(args, uh, u->regs_mask);
		h->args = args;
	}
	h->kind = PS_HIT_ENTRY;
	u->env->reg[h->region].entries++;
	ps_upframes_entry(u->frames, u->env->hp, h, sp,
			  !u->sites[uh->site].ret		     ? 0
			  : u->site_kind[uh->site] == PS_UPOINT_LEAF ? PS_UPFRAME_LEAF
								     : PS_UPFRAME_URET);
}

static void on_hit(void *ctx, const struct ps_uprobe_hit *uh)
{
	struct ps_upcatch *u = ctx;
	struct ps_reading r = {.n = uh->nval, .time_enabled = uh->enabled, .time_running = uh->running};
	struct ps_hit h = {.tid = uh->tid, .t = uh->time, .cpu = (int)uh->cpu, .r = &r};
	enum ps_uprobe_point kind;
	uint64_t sp = reg_at(uh, u->regs_mask, PS_UPROBE_REG_SP);

	if (uh->kind == PS_UPROBE_MAP) {
		ps__up_lib_mapped(u, &uh->map);
		return;
	}
	if (uh->site >= (uint32_t)u->nsites)
		return;
	h.region = u->site_region[uh->site];
	kind = u->site_kind[uh->site] == PS_UPOINT_LEAF ? PS_UPOINT_ENTRY : u->site_kind[uh->site];
	memcpy(r.val, uh->val, (size_t)uh->nval * sizeof uh->val[0]);
	if (sp && uh->kind == PS_UPROBE_RETURN)
		sp -= 8; /* the ret popped the return address */
	if (sp)
		ps_upframes_unwound(u->frames, u->env->hp, &h, sp,
				    (kind == PS_UPOINT_ENTRY || kind == PS_UPOINT_CATCH) &&
					uh->kind == PS_UPROBE_ENTRY);
	if (kind == PS_UPOINT_CATCH)
		return;
	u->env->reg[h.region].pending = 0; /* its file is mapped */
	if (kind == PS_UPOINT_EXIT || (kind == PS_UPOINT_ENTRY && uh->kind == PS_UPROBE_RETURN))
		ps_upframes_exit(u->frames, u->env->hp, &h, sp);
	else if (kind == PS_UPOINT_ENTRY)
		entry_hit(u, &h, uh, sp);
	else {
		h.sp = sp; /* an inlined copy's end deeper in the stack than its start ends nothing */
		point_hit(u, &h, kind);
	}
	if (ps_hitpath_enough(u->env->hp)) {
		if (u->env->holds)
			ps_catch_uprobe_pause_here(u->c); /* the next hits wait in the rings for the next run */
		else
			ps_catch_uprobe_pause(u->c);
	}
}

/* Records of thread @tid were lost here: end what it had open, and forget its returns to come
   (a return of a call entered before arrives when no later entry is waiting, and is ignored). */
static void on_loss(void *ctx, pid_t tid)
{
	struct ps_upcatch *u = ctx;

	ps_hitpath_cut(u->env->hp, tid, 0);
	ps_upframes_forget(u->frames, tid);
}

/* The program's file into @path ("" if it cannot be read). */
static void exe_of(pid_t pid, char path[PATH_MAX])
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
	n = readlink(link, path, PATH_MAX - 1);
	path[n < 0 ? 0 : n] = '\0';
}

/* After exec of another program: as with ptrace, a region of the old program's file is
   dropped, with a note (its probes stay, but nothing runs that file any more). */
static void drop_old_image(struct ps_upcatch *u, pid_t pid)
{
	char now[PATH_MAX];

	exe_of(pid, now);
	if (!now[0] || !u->exe[0] || !strcmp(now, u->exe))
		return;
	for (int i = 0; i < u->nsites; i++) {
		struct ps_region_info *ri = u->site_region[i] >= 0 ? &u->env->reg[u->site_region[i]] : NULL;
		if (!ri || ri->dropped || strcmp(u->paths[i], u->exe))
			continue;
		ri->dropped = 1;
		snprintf(ri->why, sizeof ri->why, "after exec of %.300s: its probes are in %.300s", now, u->exe);
		ps_catch_notice(u->env, "region '%s' dropped %s", ri->name, ri->why);
	}
	snprintf(u->exe, sizeof u->exe, "%s", now);
}

/* Exec: what was open cannot end (the kernel drops the pending returns); as with ptrace, it
   ends there, cut short. */
static void on_exec(void *ctx, pid_t pid)
{
	struct ps_upcatch *u = ctx;

	ps_hitpath_cut_all(u->env->hp);
	ps_upframes_forget_all(u->frames);
	drop_old_image(u, pid);
}

static void on_thread(void *ctx, pid_t tid, int born)
{
	struct ps_upcatch *u = ctx;

	if (!born) {
		ps_hitpath_cut(u->env->hp, tid, ps_now_ns());
		ps_upframes_forget(u->frames, tid);
	}
}

static void up_free(struct ps_catch *c);

static int up_start(struct ps_catch **cp, struct ps_catch_env *env, char *const argv[], pid_t pid, struct ps_error *err)
{
	struct ps_upcatch *u;
	struct ps_catch_uprobe_opts o = {
	    .on_hit = on_hit, .on_thread = on_thread, .on_loss = on_loss, .on_exec = on_exec};
	char why[256];
	int rc;

	if (!ps_uprobe_available(why, sizeof why))
		return ps_error_set(err, PS_EUSAGE, "the uprobe catcher cannot work here: %s; use --backend ptrace",
				    why);
	if (!(u = calloc(1, sizeof *u)) || !(u->frames = ps_upframes_new())) {
		free(u);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	u->base.ops = &ps_catch_uprobe_ops;
	u->env = env;
	o.ctx = u;
	/* each thread's last reading, where ps_hitpath_cut() ends what it has open (returns are
	   matched to entries here, by stack pointer, and carry their handles) */
	ps_hitpath_returns(env->hp, PS_UPROBE_MAX_DEPTH);
	rc = argv ? ps_catch_uprobe_spawn(&u->c, argv, &o, err) : ps_catch_uprobe_attach(&u->c, pid, &o, err);
	if (rc) {
		ps_upframes_free(u->frames);
		free(u);
		return -1;
	}
	env->pid = ps_catch_uprobe_pid(u->c);
	exe_of(env->pid, u->exe);
	*cp = &u->base;
	return 0;
}

/* The file and offset where run-time address @addr of the program is mapped. */
static int file_at(const struct ps_upcatch *u, uint64_t addr, const char *name, char path[PATH_MAX], uint64_t *offset,
		   struct ps_error *err)
{
	if (ps_maps_file_offset(u->env->pid, addr, path, PATH_MAX, offset, err))
		return err->code == PS_ENOTFOUND
			   ? ps_error_set(err, PS_ENOTFOUND, "region '%s': no file is mapped at 0x%llx", name,
					  (unsigned long long)addr)
			   : -1;
	return 0;
}

static int up_arm(struct ps_catch *c, const struct ps_catch_point *p, struct ps_error *err)
{
	struct ps_upcatch *u = of(c);
	const char *name = p->region >= 0 ? u->env->reg[p->region].name : "";
	char path[PATH_MAX];
	uint64_t offset = p->offset;
	enum ps_uprobe_point kind = p->role == PS_ROLE_ENTRY   ? PS_UPOINT_ENTRY
				    : p->role == PS_ROLE_START ? PS_UPOINT_START
				    : p->role == PS_ROLE_END   ? PS_UPOINT_END
				    : p->role == PS_ROLE_CATCH ? PS_UPOINT_CATCH
							       : PS_UPOINT_POINT;

	if (p->role > PS_ROLE_POINT && p->role != PS_ROLE_CATCH)
		return ps_error_set(err, PS_ENEEDS_PTRACE,
				    "the uprobe catcher never stops the program: main's, the loader's and the "
				    "unwinder's points are the ptrace catcher's (--backend ptrace)");
	if (p->name)
		return ps_error_set(err, PS_EUSAGE,
				    "region 'marker:%s': the marker catcher (backend marker) measures markers in the "
				    "program; with this one, arm them as an SDT pair",
				    p->name);
	if (p->path)
		snprintf(path, sizeof path, "%s", p->path);
	else if (file_at(u, p->addr, name, path, &offset, err))
		return -1;
	if (kind == PS_UPOINT_ENTRY) {
		if (ps__up_func_sites(u, path, offset, p->region, err))
			return -1;
		if (p->path && p->region >= 0 && u->env->reg[p->region].pending &&
		    ps__up_lib_await(u, path, offset, p->region, err)) {
			c->ops->disarm(c, p->region);
			return -1;
		}
		return 0;
	}
	return ps__up_site_add(u, path, offset, p->region, kind, p->path ? p->ref_ctr_offset : 0, 0, 0, err);
}

static void up_disarm(struct ps_catch *c, int region)
{
	struct ps_upcatch *u = of(c);
	struct ps_error e2;

	if (!u)
		return;
	ps__up_lib_forget(u, region);
	while (u->nsites > 0 && u->site_region[u->nsites - 1] == region) {
		u->nsites--;
		u->nop5 -= ps_uprobe_site_is_nop5(u->paths[u->nsites], u->sites[u->nsites].offset, &e2) == 1;
	}
}

static int up_fast_sites(const struct ps_catch *c, int *nsites)
{
	*nsites = of_const(c)->nsites;
	return of_const(c)->nop5;
}

/* Every-Nth and probability sampling: the kernel writes a record at every probe (its trap is the
   floor) and the hit path decimates them per call: each entry draws (counted, as every entry is),
   and its return, awaited at the handle the draw gave, follows that choice. The draws are seeded
   as the ptrace catcher's are. */
static int sample_calls(struct ps_upcatch *u, int id, const struct ps_sample *how, struct ps_error *err)
{
	struct ps_region_info *ri = &u->env->reg[id];

	ps_hitpath_seed(u->env->hp, (uint64_t)getpid() * 0x2545F4914F6CDD1DULL ^ (uint64_t)ri->addr);
	if (ps_hitpath_sample(u->env->hp, id, how->every, how->p, 0, err))
		return -1;
	ri->sample_every = how->every;
	ri->sample_p = how->p;
	ri->counter = PS_COUNT_UPROBE;
	return 0;
}

static int up_sample(struct ps_catch *c, int id, const struct ps_sample *how, struct ps_error *err)
{
	struct ps_upcatch *u = of(c);
	const char *name = u->env->reg[id].name;

	if (!how->period_ms)
		return sample_calls(u, id, how, err);
	if (u->period_ms && (u->window_ms != how->window_ms || u->period_ms != how->period_ms))
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': the uprobe catcher has one sampling window for every region; give "
				    "them all window_ms = %u, period_ms = %u, or use --backend ptrace",
				    name, u->window_ms, u->period_ms);
	if (ps_hitpath_sample(u->env->hp, id, 0, 0, 1, err))
		return -1;
	u->env->reg[id].window_ms = how->window_ms;
	u->env->reg[id].period_ms = how->period_ms;
	u->env->reg[id].counter = PS_COUNT_UPROBE;
	u->window_ms = how->window_ms;
	u->period_ms = how->period_ms;
	return 0;
}

/* A window closes: what is open ends here, and no return to come is waited for. */
static void window_closed(struct ps_upcatch *u)
{
	ps_catch_uprobe_drain(u->c);
	ps_hitpath_cut_all(u->env->hp);
	ps_upframes_forget_all(u->frames);
}

/* Run with the probes switched on and off at the window edges (as the ptrace catcher's run_windows). */
static int run_windows(struct ps_upcatch *u, struct ps_error *err)
{
	int open = ps_hitpath_in_window(u->env->hp), rc;
	uint64_t edge = ps_now_ns() + (uint64_t)(open ? u->window_ms : u->period_ms - u->window_ms) * 1000000u;

	for (;;) {
		ps_catch_uprobe_set_deadline(u->c,
					     u->env->deadline && u->env->deadline < edge ? u->env->deadline : edge);
		rc = ps_catch_uprobe_run(u->c, err);
		if (rc != 0 || !ps_catch_window_edge(u->env, edge))
			break;
		open = !open;
		/* the probes switch while the program is held: a sample's time_enabled and
		   time_running are its own probe's, and a thread's clock stands still while it is off
		   the CPU, so every probe is switched at the same instant of it and a hit's entry and
		   return probes keep one clock (switched while it runs, each probe's clock would drift
		   from the others' at each edge, and a hit's time go wrong); so do several groups'
		   probes, whose records of a trap are merged */
		if (ps_catch_uprobe_hold(u->c, err))
			return -1;
		if (ps_catch_uprobe_enable(u->c, open, err))
			return -1;
		if (!open)
			window_closed(u);
		ps_hitpath_window(u->env->hp, open);
		edge = ps_now_ns() + (uint64_t)(open ? u->window_ms : u->period_ms - u->window_ms) * 1000000u;
	}
	ps_catch_uprobe_set_deadline(u->c, u->env->deadline);
	return rc;
}

static int up_run(struct ps_catch *c, struct ps_error *err)
{
	struct ps_upcatch *u = of(c);
	struct ps_uprobe_opts p = {.ev = u->env->ev,
				   .nev = u->env->nev,
				   .ngroups = u->env->ngroups,
				   .gsize = u->env->gsize,
				   .sites = u->sites,
				   .nsites = u->nsites,
				   .ring_pages = u->ring_pages ? u->ring_pages : 256,
				   .regs_mask = u->regs_mask,
				   .enabled = !u->period_ms,
				   .maps = ps__up_lib_awaits(u)};
	struct ps_error why;
	int rc;

	u->regs_mask = REGS_SP | (u->env->nargs ? PS_UPROBE_REGS_ARGS : 0);
	p.regs_mask = u->regs_mask;
	if (!u->probed) {
		if (ps_uprobe_check_groups(u->env->ev, u->env->nev, u->env->ngroups, &why))
			return ps_error_set(err, PS_ENEEDS_PTRACE,
					    "%s; they need the ptrace catcher (--backend ptrace)", why.msg);
		if (u->nsites && u->env->nev == 0)
			return ps_error_set(err, PS_EUSAGE, "the uprobe catcher needs at least one event to count");
		for (int i = 0; i < u->env->nreg && u->period_ms; i++)
			if (!u->env->reg[i].period_ms)
				return ps_error_set(
				    err, PS_EUSAGE,
				    "region '%s': with the uprobe catcher a sampling window switches every "
				    "probe; sample every region in the same window, or use --backend ptrace",
				    u->env->reg[i].name);
		if (ps_catch_uprobe_set_probe(u->c, &p, err))
			return -1;
		u->probed = 1;
	}
	if (u->period_ms) {
		rc = run_windows(u, err);
	} else {
		ps_catch_uprobe_set_deadline(u->c, u->env->deadline);
		rc = ps_catch_uprobe_run(u->c, err);
	}
	ps__up_lib_verdict(u);
	return rc;
}

static int up_hold(struct ps_catch *c, struct ps_error *err)
{
	return ps_catch_uprobe_hold(of(c)->c, err);
}

static void up_interrupt(struct ps_catch *c)
{
	ps_catch_uprobe_interrupt(of(c)->c);
}

static int up_ring(struct ps_catch *c, unsigned pages, struct ps_error *err)
{
	struct ps_upcatch *u = of(c);

	if (pages == 0 || (pages & (pages - 1)) || pages > 65536)
		return ps_error_set(err, PS_EUSAGE, "uprobe ring of %u pages; give a power of two from 1 to 65536",
				    pages);
	if (u->probed)
		return ps_error_set(err, PS_EUSAGE, "set the uprobe ring size before the first run");
	u->ring_pages = pages;
	return 0;
}

static int up_detach(struct ps_catch *c, struct ps_error *err)
{
	int rc = ps_catch_uprobe_detach(of(c)->c, err);

	ps__up_lib_verdict(of(c));
	return rc;
}

static uint64_t up_lost(const struct ps_catch *c)
{
	struct ps_catch_uprobe_stats st;

	ps_catch_uprobe_stats(of_const(c)->c, &st);
	return st.lost;
}

static int up_status(const struct ps_catch *c, int *exited, int *code, int *signo)
{
	return ps_catch_uprobe_status(of_const(c)->c, exited, code, signo);
}

static struct ps_tracer *up_tracer(const struct ps_catch *c)
{
	return ps_catch_uprobe_tracer(of_const(c)->c);
}

static void up_free(struct ps_catch *c)
{
	struct ps_upcatch *u = of(c);

	ps_catch_uprobe_free(u->c);
	ps_upframes_free(u->frames);
	ps__up_lib_free(u);
	free(u->sites);
	free(u->paths);
	free(u->site_region);
	free(u->site_kind);
	free(u);
}

const struct ps_catcher_ops ps_catch_uprobe_ops = {
    .name = "uprobe",
    .caps = PS_CATCH_CODE | PS_CATCH_INLINED | PS_CATCH_FILES | PS_CATCH_EVENTS_LATE,
    .start = up_start,
    .run = up_run,
    .hold = up_hold,
    .interrupt = up_interrupt,
    .detach = up_detach,
    .free = up_free,
    .status = up_status,
    .lost = up_lost,
    .arm = up_arm,
    .disarm = up_disarm,
    .sample = up_sample,
    .tracer = up_tracer,
    .ring = up_ring,
    .fast_sites = up_fast_sites,
};
