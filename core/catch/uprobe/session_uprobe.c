/* core/catch/uprobe/session_uprobe.c - a session whose hits the uprobe catcher (core/catch/uprobe/catch_uprobe.c)
 * catches: the regions' points become uprobe sites (file offsets, from where the address is
 * mapped), and each decoded hit goes to the hit path with the counter values the kernel
 * sampled. The target never stops for a hit.
 *
 * Sites: a function region's entry is a uprobe and a uretprobe (ENTRY and RETURN hits); a
 * line range's start and end points (the addresses the ptrace catcher would break at,
 * core/binary/lines_cfg.c: each is one instruction, never an edge) and an SDT pair's probes are
 * plain uprobes (START and END hits, paired as with ptrace), all of one region in one counter
 * group of their own, so that its start and end read the same counters; a single SDT probe is
 * a point event: each hit is one record whose start and end are the values there.
 *
 * Sampling: time windows only, by switching every probe and counter on and off at the window's
 * edges (PERF_EVENT_IOC_ENABLE/DISABLE on the groups, never per hit), so one window covers
 * every region; what is open when a window closes ends there, cut short (its return may
 * never come), and a return whose entry came while closed is ignored. Entries are counted in
 * the windows only. Every-Nth and probability sampling, regions in libraries not mapped yet
 * and several counter groups need the ptrace catcher, and are refused with a line saying so. Inlined copies of a
 * function are not caught (they have no entry to probe).
 *
 * Losses: where a thread's ring was full, what it had open ends there (flagged as cut short,
 * like at a thread's exit) and the returns of the calls entered before are not waited for,
 * so no return is ever paired with the wrong entry.
 *
 * Returns: the kernel keeps at most PS_UPROBE_MAX_DEPTH pending returns per thread; an entry
 * deeper than that gets no return, so it is not waited for (an every-level region's
 * measurement opened there ends when the thread exits, flagged as such).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catch_uprobe.h"
#include "procmaps.h"
#include "run.h"
#include "session_priv.h"

#define UTHR_BUCKETS 64

/* A thread's returns to come: the hit path's handles of its entries, innermost last. */
struct uthr {
	pid_t tid;
	int depth;
	int handle[PS_UPROBE_MAX_DEPTH];
	struct ps_reading last; /* its last counter values and time: where what it leaves open ends */
	uint64_t last_t;
	struct uthr *next;
};

struct ps_session_uprobe {
	struct ps_catch_uprobe *c;
	struct ps_uprobe_site *sites;
	char (*paths)[PATH_MAX];
	int *site_region;
	enum ps_uprobe_point *site_kind;
	int nsites, capsites;
	int nop5;		       /* sites on the 5-byte NOP: the kernel calls the probe, no trap */
	char exe[PATH_MAX];	       /* the program's file (/proc/PID/exe), "" if unknown */
	int probed;		       /* the sites were handed to the catcher */
	uint32_t window_ms, period_ms; /* sampling windows: probes on for window_ms of each period_ms */
	unsigned ring_pages;	       /* per thread; 0: 256 */
	struct uthr *th[UTHR_BUCKETS];
};

static struct uthr *uthr_get(struct ps_session_uprobe *u, pid_t tid, int make)
{
	struct uthr **pp = &u->th[(unsigned)tid % UTHR_BUCKETS];

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->tid == tid)
			return *pp;
	if (!make || !(*pp = calloc(1, sizeof **pp)))
		return NULL;
	(*pp)->tid = tid;
	return *pp;
}

static void uthr_drop(struct ps_session_uprobe *u, pid_t tid)
{
	for (struct uthr **pp = &u->th[(unsigned)tid % UTHR_BUCKETS]; *pp; pp = &(*pp)->next)
		if ((*pp)->tid == tid) {
			struct uthr *t = *pp;
			*pp = t->next;
			free(t);
			return;
		}
}

/* PS_UPROBE_REGS_ARGS gives CX, DX, SI, DI, R8, R9; records want rdi, rsi, rdx, rcx, r8, r9. */
static void take_args(uint64_t args[PS_MAX_ARGS], const struct ps_uprobe_hit *h)
{
	static const int from[PS_MAX_ARGS] = {3, 2, 1, 0, 4, 5};

	for (int i = 0; i < PS_MAX_ARGS; i++)
		args[i] = from[i] < h->nregs ? h->regs[from[i]] : 0;
}

/* A START, END or POINT hit of a plain uprobe site. */
static void point_hit(struct ps_session *s, struct ps_hit *h, enum ps_uprobe_point kind)
{
	if (kind == PS_UPOINT_END) {
		h->kind = PS_HIT_END;
		ps_hitpath_hit(s->hp, h);
		return;
	}
	h->kind = PS_HIT_START;
	s->reg[h->region].entries++;
	ps_hitpath_hit(s->hp, h);
	if (kind == PS_UPOINT_POINT) {
		h->kind = PS_HIT_END;
		ps_hitpath_hit(s->hp, h);
	}
}

static void on_hit(void *ctx, const struct ps_uprobe_hit *uh)
{
	struct ps_session *s = ctx;
	struct ps_session_uprobe *u = s->up;
	struct uthr *t = uthr_get(u, uh->tid, 1);
	uint64_t args[PS_MAX_ARGS];
	struct ps_hit h = {.tid = uh->tid, .t = uh->time, .cpu = (int)uh->cpu};

	if (!t || uh->site >= (uint32_t)u->nsites)
		return;
	h.region = u->site_region[uh->site];
	t->last.n = uh->nval;
	t->last.time_enabled = uh->enabled;
	t->last.time_running = uh->running;
	memcpy(t->last.val, uh->val, (size_t)uh->nval * sizeof uh->val[0]);
	t->last_t = uh->time;
	h.r = &t->last;
	if (u->site_kind[uh->site] != PS_UPOINT_ENTRY) {
		point_hit(s, &h, u->site_kind[uh->site]);
	} else if (uh->kind == PS_UPROBE_ENTRY) {
		int sl;
		if (s->nargs) {
			take_args(args, uh);
			h.args = args;
		}
		h.kind = PS_HIT_ENTRY;
		s->reg[h.region].entries++;
		sl = ps_hitpath_hit(s->hp, &h);
		if (t->depth < PS_UPROBE_MAX_DEPTH) /* past it, the kernel gives no return */
			t->handle[t->depth++] = sl;
	} else if (t->depth > 0) {
		h.kind = PS_HIT_RETURN;
		h.handle = t->handle[--t->depth];
		if (h.handle >= 0)
			ps_hitpath_hit(s->hp, &h);
	}
	if (s->max_records && ps_hitpath_seq(s->hp) - s->written_at_run_start >= s->max_records)
		ps_catch_uprobe_pause(u->c);
}

/* Records of thread @tid were lost here: end what it had open, and forget its returns to come
   (a return of a call entered before arrives when no later entry is waiting, and is ignored). */
static void on_loss(void *ctx, pid_t tid)
{
	struct ps_session *s = ctx;
	struct uthr *t = uthr_get(s->up, tid, 0);

	if (!t)
		return;
	ps_hitpath_thread_exit(s->hp, tid, &t->last, t->last_t);
	t->depth = 0;
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
static void drop_old_image(struct ps_session *s, pid_t pid)
{
	struct ps_session_uprobe *u = s->up;
	char now[PATH_MAX];

	exe_of(pid, now);
	if (!now[0] || !u->exe[0] || !strcmp(now, u->exe))
		return;
	for (int i = 0; i < u->nsites; i++) {
		struct ps_region_info *ri = &s->reg[u->site_region[i]];
		if (ri->dropped || strcmp(u->paths[i], u->exe))
			continue;
		ri->dropped = 1;
		snprintf(ri->why, sizeof ri->why, "after exec of %.300s: its probes are in %.300s", now, u->exe);
		ps__notice(s, "region '%s' dropped %s", ri->name, ri->why);
	}
	snprintf(u->exe, sizeof u->exe, "%s", now);
}

/* Exec: what was open cannot end (the kernel drops the pending returns); as with ptrace, it
   ends there, cut short. */
static void on_exec(void *ctx, pid_t pid)
{
	struct ps_session *s = ctx;

	for (unsigned b = 0; b < UTHR_BUCKETS; b++)
		for (struct uthr *t = s->up->th[b]; t; t = t->next)
			on_loss(s, t->tid);
	drop_old_image(s, pid);
}

static void on_thread(void *ctx, pid_t tid, int born)
{
	struct ps_session *s = ctx;
	struct uthr *t;

	if (born)
		return;
	t = uthr_get(s->up, tid, 0);
	if (t)
		ps_hitpath_thread_exit(s->hp, tid, &t->last, ps_now_ns());
	uthr_drop(s->up, tid);
}

int ps__uprobe_start(struct ps_session *s, char *const argv[], pid_t pid, struct ps_error *err)
{
	struct ps_catch_uprobe_opts o = {
	    .on_hit = on_hit, .on_thread = on_thread, .on_loss = on_loss, .on_exec = on_exec, .ctx = s};
	char why[256];
	int rc;

	if (s->mk) /* the marker catcher's process side: no probe, so no uprobe PMU needed */
		memset(&o, 0, sizeof o);
	else if (!ps_uprobe_available(why, sizeof why))
		return ps_error_set(err, PS_EUSAGE, "the uprobe catcher cannot work here: %s; use --backend ptrace",
				    why);
	if (!(s->up = calloc(1, sizeof *s->up)))
		return ps_error_set(err, ENOMEM, "out of memory");
	rc = argv ? ps_catch_uprobe_spawn(&s->up->c, argv, &o, err) : ps_catch_uprobe_attach(&s->up->c, pid, &o, err);
	if (rc) {
		free(s->up);
		s->up = NULL;
		return -1;
	}
	s->t = ps_catch_uprobe_tracer(s->up->c);
	exe_of(ps_catch_uprobe_pid(s->up->c), s->up->exe);
	return 0;
}

/* Room for one more site. */
static int grow_sites(struct ps_session_uprobe *u, struct ps_error *err)
{
	int cap = u->capsites ? 2 * u->capsites : 8;
	struct ps_uprobe_site *ns;
	char(*np)[PATH_MAX];
	int *nr;
	enum ps_uprobe_point *nk;

	if (u->nsites < u->capsites)
		return 0;
	if ((ns = realloc(u->sites, (size_t)cap * sizeof *ns)))
		u->sites = ns;
	if ((np = ns ? realloc(u->paths, (size_t)cap * sizeof *np) : NULL))
		u->paths = np;
	if ((nr = np ? realloc(u->site_region, (size_t)cap * sizeof *nr) : NULL))
		u->site_region = nr;
	if (!(nk = nr ? realloc(u->site_kind, (size_t)cap * sizeof *nk) : NULL))
		return ps_error_set(err, ENOMEM, "out of memory");
	u->site_kind = nk;
	u->capsites = cap;
	for (int i = 0; i < u->nsites; i++) /* the paths may have moved */
		u->sites[i].path = u->paths[i];
	return 0;
}

/* A uprobe lives in the file: say once per file when it is not the program's own. */
static void shared_note(struct ps_session *s, const char *path, const char *name)
{
	if (!s->up->exe[0] || !strcmp(s->up->exe, path))
		return;
	for (int i = 0; i < s->up->nsites; i++)
		if (!strcmp(s->up->paths[i], path))
			return;
	ps__notice(s,
		   "region '%s' is in the shared library %s: while perfsh runs, every process that maps it "
		   "takes the probe's trap",
		   name, path);
}

int ps__uprobe_site(struct ps_session *s, const char *path, uint64_t offset, int region, enum ps_uprobe_point kind,
		    uint64_t ref_ctr_offset, struct ps_error *err)
{
	struct ps_session_uprobe *u = s->up;
	const char *name = region >= 0 ? s->reg[region].name : "";
	struct ps_uprobe_site *site;
	struct ps_error e2;

	if (ps__marker_only(s, name, err))
		return -1;
	if (s->started)
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': with the uprobe catcher, add regions before the first run", name);
	if (grow_sites(u, err))
		return -1;
	shared_note(s, path, name);
	snprintf(u->paths[u->nsites], PATH_MAX, "%s", path);
	site = &u->sites[u->nsites];
	*site = (struct ps_uprobe_site){.path = u->paths[u->nsites],
					.offset = offset,
					.ret = kind == PS_UPOINT_ENTRY,
					.group = kind == PS_UPOINT_ENTRY ? 0 : region + 1,
					.ref_ctr_offset = ref_ctr_offset};
	u->site_region[u->nsites] = region;
	u->site_kind[u->nsites] = kind;
	u->nop5 += ps_uprobe_site_is_nop5(path, offset, &e2) == 1;
	u->nsites++;
	return 0;
}

int ps__uprobe_role(struct ps_session *s, uint64_t addr, int region, enum role_kind role, struct ps_error *err)
{
	const char *name = region >= 0 ? s->reg[region].name : "";
	char maps[64], line[PATH_MAX + 128], path[PATH_MAX];
	uint64_t offset = 0;
	struct ps_map m;
	FILE *f;
	int found = 0;

	if (role != ROLE_ENTRY && role != ROLE_START && role != ROLE_END)
		return ps_error_set(err, PS_ENEEDS_PTRACE,
				    "the uprobe catcher probes only code mapped at the start; a function in a library "
				    "loaded later needs the ptrace catcher (--backend ptrace)");
	snprintf(maps, sizeof maps, "/proc/%d/maps", (int)s->pid);
	if (!(f = fopen(maps, "re")))
		return ps_error_set(err, errno, "%s: %s", maps, strerror(errno));
	while (!found && fgets(line, sizeof line, f))
		if (!ps_map_parse(line, &m) && addr >= m.lo && addr < m.hi && m.path[0] == '/') {
			snprintf(path, sizeof path, "%s", m.path);
			offset = addr - m.lo + m.off;
			found = 1;
		}
	fclose(f);
	if (!found)
		return ps_error_set(err, PS_ENOTFOUND, "region '%s': no file is mapped at 0x%llx", name,
				    (unsigned long long)addr);
	return ps__uprobe_site(s, path, offset, region,
			       role == ROLE_ENTRY   ? PS_UPOINT_ENTRY
			       : role == ROLE_START ? PS_UPOINT_START
						    : PS_UPOINT_END,
			       0, err);
}

void ps__uprobe_drop_region(struct ps_session *s, int region)
{
	struct ps_session_uprobe *u = s->up;
	struct ps_error e2;

	while (u && u->nsites > 0 && u->site_region[u->nsites - 1] == region) {
		u->nsites--;
		u->nop5 -= ps_uprobe_site_is_nop5(u->paths[u->nsites], u->sites[u->nsites].offset, &e2) == 1;
	}
}

int ps_session_uprobe_fast_sites(const struct ps_session *s, int *nsites)
{
	*nsites = s->up ? s->up->nsites : 0;
	return s->up ? s->up->nop5 : 0;
}

int ps__uprobe_sample(struct ps_session *s, int id, const struct ps_sample *how, struct ps_error *err)
{
	struct ps_session_uprobe *u = s->up;
	const char *name = s->reg[id].name;

	if (!how->period_ms)
		return ps_error_set(err, PS_ENEEDS_PTRACE,
				    "region '%s': the uprobe catcher samples in time windows only; every-Nth and "
				    "probability sampling need the ptrace catcher (--backend ptrace)",
				    name);
	if (u->period_ms && (u->window_ms != how->window_ms || u->period_ms != how->period_ms))
		return ps_error_set(err, PS_EUSAGE,
				    "region '%s': the uprobe catcher has one sampling window for every region; give "
				    "them all window_ms = %u, period_ms = %u, or use --backend ptrace",
				    name, u->window_ms, u->period_ms);
	if (ps_hitpath_sample(s->hp, id, 0, 0, 1, err))
		return -1;
	s->reg[id].window_ms = how->window_ms;
	s->reg[id].period_ms = how->period_ms;
	u->window_ms = how->window_ms;
	u->period_ms = how->period_ms;
	return 0;
}

/* A window closes: what is open ends here, and no return to come is waited for. */
static void window_closed(struct ps_session *s)
{
	ps_catch_uprobe_drain(s->up->c);
	for (unsigned b = 0; b < UTHR_BUCKETS; b++)
		for (struct uthr *t = s->up->th[b]; t; t = t->next)
			on_loss(s, t->tid);
}

/* Run with the probes switched on and off at the window edges (see run_windows in session.c). */
static int run_windows(struct ps_session *s, struct ps_error *err)
{
	struct ps_session_uprobe *u = s->up;
	int open = ps_hitpath_in_window(s->hp), rc;
	uint64_t edge = ps_now_ns() + (uint64_t)(open ? u->window_ms : u->period_ms - u->window_ms) * 1000000u;

	for (;;) {
		ps_catch_uprobe_set_deadline(u->c, s->deadline && s->deadline < edge ? s->deadline : edge);
		rc = ps_catch_uprobe_run(u->c, err);
		if (rc != 0 || !ps__window_edge(s, edge))
			break;
		open = !open;
		if (ps_catch_uprobe_enable(u->c, open, err))
			return -1;
		if (!open)
			window_closed(s);
		ps_hitpath_window(s->hp, open);
		edge = ps_now_ns() + (uint64_t)(open ? u->window_ms : u->period_ms - u->window_ms) * 1000000u;
	}
	ps_catch_uprobe_set_deadline(u->c, s->deadline);
	return rc;
}

int ps__uprobe_run(struct ps_session *s, struct ps_error *err)
{
	struct ps_session_uprobe *u = s->up;
	struct ps_uprobe_opts p = {.ev = s->ev,
				   .nev = s->nev,
				   .sites = u->sites,
				   .nsites = u->nsites,
				   .ring_pages = u->ring_pages ? u->ring_pages : 256,
				   .regs_mask = s->nargs ? PS_UPROBE_REGS_ARGS : 0,
				   .enabled = !u->period_ms};

	if (!u->probed) {
		if (s->ngroups > 1)
			return ps_error_set(err, PS_ENEEDS_PTRACE,
					    "the uprobe catcher counts one group of events; several groups need the "
					    "ptrace catcher (--backend ptrace)");
		if (u->nsites && s->nev == 0)
			return ps_error_set(err, PS_EUSAGE, "the uprobe catcher needs at least one event to count");
		for (int i = 0; i < s->nreg && u->period_ms; i++)
			if (!s->reg[i].period_ms)
				return ps_error_set(
				    err, PS_EUSAGE,
				    "region '%s': with the uprobe catcher a sampling window switches every "
				    "probe; sample every region in the same window, or use --backend ptrace",
				    s->reg[i].name);
		if (ps_catch_uprobe_set_probe(u->c, &p, err))
			return -1;
		u->probed = 1;
	}
	if (u->period_ms)
		return run_windows(s, err);
	ps_catch_uprobe_set_deadline(u->c, s->deadline);
	return ps_catch_uprobe_run(u->c, err);
}

struct ps_catch_uprobe *ps__uprobe_catcher(struct ps_session *s)
{
	return s->up ? s->up->c : NULL;
}

int ps__uprobe_hold(struct ps_session *s, struct ps_error *err)
{
	return ps_catch_uprobe_hold(s->up->c, err);
}

void ps__uprobe_interrupt(struct ps_session *s)
{
	ps_catch_uprobe_interrupt(s->up->c);
}

int ps_session_uprobe_ring(struct ps_session *s, unsigned pages, struct ps_error *err)
{
	if (!s->up)
		return ps_error_set(err, PS_EUSAGE, "a ring size is for the uprobe catcher (backend uprobe)");
	if (pages == 0 || (pages & (pages - 1)) || pages > 65536)
		return ps_error_set(err, PS_EUSAGE, "uprobe ring of %u pages; give a power of two from 1 to 65536",
				    pages);
	if (s->up->probed)
		return ps_error_set(err, PS_EUSAGE, "set the uprobe ring size before the first run");
	s->up->ring_pages = pages;
	return 0;
}

int ps__uprobe_detach(struct ps_session *s, struct ps_error *err)
{
	return ps_catch_uprobe_detach(s->up->c, err);
}

uint64_t ps__uprobe_lost(const struct ps_session *s)
{
	struct ps_catch_uprobe_stats st;

	if (!s->up)
		return 0;
	ps_catch_uprobe_stats(s->up->c, &st);
	return st.lost;
}

void ps__uprobe_free(struct ps_session *s)
{
	struct ps_session_uprobe *u = s->up;

	ps_catch_uprobe_free(u->c);
	for (unsigned b = 0; b < UTHR_BUCKETS; b++)
		while (u->th[b]) {
			struct uthr *t = u->th[b];
			u->th[b] = t->next;
			free(t);
		}
	free(u->sites);
	free(u->paths);
	free(u->site_region);
	free(u->site_kind);
	free(u);
	s->up = NULL;
	s->t = NULL;
}
