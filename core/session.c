/* core/session.c - the hit path: threads, their groups, open measurements, records.
 *
 * At an entry (or range start) the thread's group is read first, then the clock and the
 * CPU, into a slot; at the matching return (or range end) the same again, and the pair
 * becomes one record in the ring. Nothing is allocated on this path once a thread's slot
 * array has grown to its deepest nesting.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "run.h"
#include "session_priv.h"

#define RING_CAPACITY 4096

/* ---- threads ---- */

static struct thr *thr_find(struct ps_session *s, pid_t tid)
{
	for (struct thr *th = s->threads[(unsigned)tid % THR_BUCKETS]; th; th = th->next)
		if (th->tid == tid)
			return th;
	return NULL;
}

/* The thread's record, made (with its group opened on it) the first time it is seen. */
static struct thr *thr_get(struct ps_session *s, pid_t tid, struct ps_error *err)
{
	struct thr *th = thr_find(s, tid);

	if (th)
		return th;
	th = calloc(1, sizeof *th);
	if (!th) {
		ps_error_set(err, ENOMEM, "out of memory for thread %d", (int)tid);
		return NULL;
	}
	th->tid = tid;
	th->free_head = -1;
	for (int i = 0; i < PS_MAX_REGIONS; i++)
		th->active[i] = -1;
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
	free(th->slots);
	free(th);
}

static void thr_remove(struct ps_session *s, pid_t tid)
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

static int slot_alloc(struct thr *th)
{
	if (th->free_head >= 0) {
		int i = th->free_head;
		th->free_head = th->slots[i].next_free;
		return i;
	}
	if (th->nslots == th->cap) {
		int cap = th->cap ? 2 * th->cap : 16;
		struct slot *n = realloc(th->slots, (size_t)cap * sizeof *n);
		if (!n)
			return -1;
		th->slots = n;
		th->cap = cap;
	}
	return th->nslots++;
}

static void slot_free(struct thr *th, int i)
{
	th->slots[i].next_free = th->free_head;
	th->free_head = i;
}

/* ---- records ---- */

/* Region names the spill file does not have yet. */
static int spill_names(struct ps_session *s, struct ps_error *err)
{
	while (s->spill_nreg < s->nreg) {
		if (ps_psnap_add_region(s->spill, s->reg[s->spill_nreg].name, err) < 0)
			return -1;
		s->spill_nreg++;
	}
	return 0;
}

/* Move what the ring holds into the store, which grows and loses nothing, or to the spill
   file. */
static int drain(struct ps_session *s)
{
	size_t n = ps_ring_count(s->ring);

	if (n == 0)
		return 0;
	if (s->spill) {
		ssize_t w;

		if (spill_names(s, &s->fail)) /* a record's region is named before it */
			return -1;
		w = ps_ring_drain_to(s->ring, s->spill, &s->fail);
		if (w < 0)
			return -1;
		s->spilled += (uint64_t)w;
		return 0;
	}
	if (s->nstore + n > s->capstore) {
		uint64_t cap = s->capstore ? s->capstore : 4096;
		while (cap < s->nstore + n)
			cap *= 2;
		unsigned char *p = realloc(s->store, cap * s->recsize);
		if (!p)
			return -1;
		s->store = p;
		s->capstore = cap;
	}
	s->nstore += ps_ring_read(s->ring, s->store + s->nstore * s->recsize, n);
	return 0;
}

int ps_session_nvals(const struct ps_session *s)
{
	return s->nev + 2 * (s->ngroups > 1 ? s->ngroups - 1 : 0);
}

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

static void emit(struct ps_session *s, struct thr *th, const struct slot *sl, const struct ps_reading *end,
		 uint64_t t_end, int cpu_end, unsigned flags)
{
	struct ps_region_info *ri = &s->reg[sl->region];
	struct ps_snap *rec;

	if (ps_ring_space(s->ring) == 0 && drain(s)) {
		s->dropped++;
		return;
	}
	rec = ps_ring_reserve(s->ring);
	if (!rec) {
		s->dropped++;
		return;
	}
	rec->region = (uint32_t)sl->region;
	rec->tid = (uint32_t)th->tid;
	rec->seq = s->seq++;
	rec->hit = ri->hits++;
	rec->t_start = sl->t;
	rec->t_end = t_end;
	rec->enabled_start = sl->r.time_enabled;
	rec->running_start = sl->r.time_running;
	rec->enabled_end = end->time_enabled;
	rec->running_end = end->time_running;
	rec->cpu_start = sl->cpu;
	rec->cpu_end = (int16_t)cpu_end;
	rec->flags = (uint16_t)(flags | sl->flags | (sl->depth ? PS_SNAP_NESTED : 0));
	rec->nvals = (uint8_t)ps_session_nvals(s);
	rec->nargs = (uint8_t)s->nargs;
	rec->depth = sl->depth;
	rec->pad = 0;
	memcpy(ps_snap_args(rec), sl->args, (size_t)s->nargs * sizeof(uint64_t));
	memcpy(ps_snap_start(rec), sl->r.val, (size_t)rec->nvals * sizeof(uint64_t));
	memcpy(ps_snap_end(rec), end->val, (size_t)rec->nvals * sizeof(uint64_t));
	if (flags & (PS_SNAP_UNWOUND | PS_SNAP_EXITED))
		ri->incomplete++;
	ps_ring_commit(s->ring);
}

static int pause_wanted(struct ps_session *s, uint64_t now)
{
	if (s->max_records && s->seq - s->written_at_run_start >= s->max_records)
		return PS_TRACER_PAUSE;
	if (s->deadline && now >= s->deadline)
		return PS_TRACER_PAUSE;
	return 0;
}

/* ---- tracer callbacks ---- */

static int on_thread_new(void *ud, pid_t tid)
{
	struct ps_session *s = ud;
	if (!thr_get(s, tid, &s->fail)) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

/* Close what a vanishing thread left open; its group can still be read. */
static void on_thread_exit(void *ud, pid_t tid)
{
	struct ps_session *s = ud;
	struct thr *th = thr_find(s, tid);
	struct ps_reading r;

	if (!th)
		return;
	read_now(s, th, &r);
	for (int i = 0; i < s->nreg; i++) {
		int sl = th->active[i];
		if (sl >= 0 && s->reg[i].kind == PS_REGION_RANGE) {
			emit(s, th, &th->slots[sl], &r, ps_now_ns(), -1, PS_SNAP_EXITED);
			slot_free(th, sl);
			th->active[i] = -1;
		}
	}
	thr_remove(s, tid);
}

static void take_args(struct ps_session *s, struct slot *sl, const struct user_regs_struct *regs)
{
	if (s->nargs) {
		sl->args[0] = regs->rdi;
		sl->args[1] = regs->rsi;
		sl->args[2] = regs->rdx;
		sl->args[3] = regs->rcx;
		sl->args[4] = regs->r8;
		sl->args[5] = regs->r9;
	}
}

/* A sampled entry of function region @id, caught by its hardware breakpoint. */
static int sampled_entry(struct ps_session *s, struct thr *th, int id, const struct ps_reading *r, uint64_t now,
			 int cpu, const struct user_regs_struct *regs, uint64_t *cookie)
{
	int k, sl;

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
	if (th->active[id] >= 0 && !(s->reg[id].flags & PS_REGION_EVERY_LEVEL))
		return 0; /* inside an outer call already */
	if ((sl = slot_alloc(th)) < 0) {
		s->dropped++;
		return 0;
	}
	th->slots[sl].region = id;
	th->slots[sl].flags = PS_SNAP_SAMPLED;
	th->slots[sl].depth = th->depth[id]++;
	th->slots[sl].t = now;
	th->slots[sl].cpu = (int16_t)cpu;
	th->slots[sl].r = *r;
	take_args(s, &th->slots[sl], regs);
	if (!(s->reg[id].flags & PS_REGION_EVERY_LEVEL))
		th->active[id] = sl;
	*cookie = (uint64_t)sl;
	return PS_TRACER_CATCH_RETURN;
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
		switch (s->bps[bp].roles[k].kind) {
		case ROLE_ENTRY:
		case ROLE_START:
			if (!ri->dropped && !ri->pending && !ps__int3_skips(s, th, id) &&
			    (th->active[id] < 0 ||
			     (ri->flags & PS_REGION_EVERY_LEVEL && s->bps[bp].roles[k].kind == ROLE_ENTRY)))
				return 1;
			break;
		case ROLE_END:
			if (th->active[id] >= 0)
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

/* A stop that measures nothing: count the entries it makes, and nothing else. */
static int plain_roles(struct ps_session *s, struct thr *th, int bp)
{
	for (int k = 0; k < s->bps[bp].nroles; k++) {
		int id = s->bps[bp].roles[k].region;
		enum role_kind kind = s->bps[bp].roles[k].kind;
		if ((kind == ROLE_ENTRY || kind == ROLE_START) && !s->reg[id].dropped && !s->reg[id].pending) {
			s->reg[id].entries++;
			ps__int3_entry(s, th, id); /* a sampled region's draw, made at every entry */
		} else if (kind == ROLE_UNWIND)
			ps_tracer_frames_restore(s->t, th->tid);
		else if (kind == ROLE_CATCH)
			ps_tracer_frames_reswap(s->t, th->tid);
		else if (kind == ROLE_LOAD)
			ps__arm_pending(s, 0);
	}
	return pause_wanted(s, s->deadline ? ps_now_ns() : 0);
}

static int on_hit(void *ud, pid_t tid, int bp, const struct user_regs_struct *regs, uint64_t *cookie)
{
	struct ps_session *s = ud;
	struct thr *th = thr_get(s, tid, &s->fail);
	struct ps_reading r;
	uint64_t now;
	int cpu, rc = 0;

	if (!th) {
		s->failed = 1;
		return -1;
	}
	if (bp == PS_BP_HW_STRAY) {
		/* an entry the hardware breakpoint saw but its counter missed */
		for (int k = 0; k < s->nsampled; k++)
			if (s->reg[s->sampled[k]].addr == regs->rip &&
			    s->reg[s->sampled[k]].counter == PS_COUNT_BREAKPOINT)
				s->reg[s->sampled[k]].entries_gone++;
		return 0;
	}
	if (!stop_measures(s, th, bp)) /* a nested entry, an end with no start, ... */
		return bp >= 0 && bp < s->nbps ? plain_roles(s, th, bp) : 0;
	read_now(s, th, &r); /* first: the less perfsh runs before the read, the less it counts */
	now = ps_now_ns();
	cpu = ps_tracer_cpu(s->t, tid);
	if (bp >= PS_BP_HW_BASE)
		return sampled_entry(s, th, bp - PS_BP_HW_BASE, &r, now, cpu, regs, cookie) | pause_wanted(s, now);
	if (bp < 0 || bp >= s->nbps)
		return 0;
	for (int k = 0; k < s->bps[bp].nroles; k++) {
		int id = s->bps[bp].roles[k].region, sl, smp;
		struct ps_region_info *ri = id >= 0 ? &s->reg[id] : NULL;

		switch (s->bps[bp].roles[k].kind) {
		case ROLE_MAIN:
			/* once: drop this role, and the breakpoint if nothing else uses it */
			s->bps[bp].roles[k] = s->bps[bp].roles[--s->bps[bp].nroles];
			k--;
			if (s->bps[bp].nroles == 0)
				ps_tracer_bp_enable(s->t, bp, 0, NULL);
			s->main_bp = -1;
			if (ps__arm_pending(s, 1) < 0)
				return -1;
			break;
		case ROLE_ENTRY:
		case ROLE_START:
			if (ri->dropped || ri->pending)
				break;
			ri->entries++;
			if (!(smp = ps__int3_entry(s, th, id)))
				break; /* counted by int3, not sampled */
			if (th->active[id] >= 0 &&
			    !(ri->flags & PS_REGION_EVERY_LEVEL && s->bps[bp].roles[k].kind == ROLE_ENTRY))
				break; /* already inside: nested calls count only in every-level mode */
			if ((sl = slot_alloc(th)) < 0) {
				s->dropped++;
				break;
			}
			th->slots[sl].region = id;
			th->slots[sl].flags = smp > 0 ? PS_SNAP_SAMPLED : 0;
			th->slots[sl].depth = th->depth[id];
			th->slots[sl].t = now;
			th->slots[sl].cpu = (int16_t)cpu;
			th->slots[sl].r = r;
			take_args(s, &th->slots[sl], regs);
			if (s->bps[bp].roles[k].kind == ROLE_ENTRY) {
				th->depth[id]++;
				*cookie = (uint64_t)sl;
				rc |= PS_TRACER_CATCH_RETURN;
				if (!(ri->flags & PS_REGION_EVERY_LEVEL))
					th->active[id] = sl;
			} else {
				th->active[id] = sl;
			}
			break;
		case ROLE_UNWIND:
			ps_tracer_frames_restore(s->t, tid);
			break;
		case ROLE_CATCH:
			ps_tracer_frames_reswap(s->t, tid);
			break;
		case ROLE_LOAD:
			ps__arm_pending(s, 0);
			break;
		case ROLE_END:
			if ((sl = th->active[id]) < 0)
				break;
			emit(s, th, &th->slots[sl], &r, now, cpu, 0);
			slot_free(th, sl);
			th->active[id] = -1;
			break;
		}
	}
	return rc | pause_wanted(s, now);
}

static int on_ret(void *ud, pid_t tid, int bp, uint64_t cookie, int unwound)
{
	struct ps_session *s = ud;
	struct thr *th = thr_find(s, tid);
	struct ps_reading r;
	uint64_t now;
	int sl = (int)cookie, cpu;

	(void)bp;
	if (!th || sl < 0 || sl >= th->nslots)
		return 0;
	read_now(s, th, &r);
	now = ps_now_ns();
	cpu = ps_tracer_cpu(s->t, tid);
	int id = th->slots[sl].region;
	emit(s, th, &th->slots[sl], &r, now, cpu, unwound ? PS_SNAP_UNWOUND : 0);
	if (th->depth[id])
		th->depth[id]--;
	if (th->active[id] == sl)
		th->active[id] = -1;
	slot_free(th, sl);
	return pause_wanted(s, now);
}

static int on_exec(void *ud, pid_t pid)
{
	struct ps_session *s = ud;
	(void)pid;
	/* Measurements open across exec cannot end: drop them. */
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next) {
			for (int i = 0; i < PS_MAX_REGIONS; i++)
				th->active[i] = -1;
			memset(th->depth, 0, sizeof th->depth);
			th->nslots = 0;
			th->free_head = -1;
		}
	ps__hw_close_all(s); /* first: an open uprobe would put its int3 in the new image too */
	if (ps__rearm_after_exec(s) < 0 || ps__hw_reopen_all(s) < 0) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

static const struct ps_tracer_ops ops = {
    .thread_new = on_thread_new,
    .thread_exit = on_thread_exit,
    .hit = on_hit,
    .ret = on_ret,
    .exec = on_exec,
};

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
	*sp = s;
	return 0;
}

/* The ring's record size follows the event count, so it is made once the events are final. */
static int make_ring(struct ps_session *s, struct ps_error *err)
{
	if (s->ring)
		return 0;
	s->recsize = ps_snap_size((unsigned)ps_session_nvals(s), (unsigned)s->nargs);
	s->ring = ps_ring_new(s->recsize, RING_CAPACITY, err);
	if (!s->ring)
		return -1;
	if (s->spill_path[0]) {
		struct ps_session_header h;

		ps__session_header(s, &h);
		s->spill = ps_psnap_create(s->spill_path, &h.info, err);
		if (!s->spill)
			return -1;
		s->spill_nreg = 0;
		return spill_names(s, err);
	}
	return 0;
}

int ps_session_spill(struct ps_session *s, const char *path, struct ps_error *err)
{
	if (s->started || s->ring)
		return ps_error_set(err, PS_EUSAGE, "spill to a file before the first run");
	if (strlen(path) >= sizeof s->spill_path)
		return ps_error_set(err, PS_EUSAGE, "path too long: %.40s...", path);
	snprintf(s->spill_path, sizeof s->spill_path, "%s", path);
	return 0;
}

int ps_session_spill_flush(struct ps_session *s, struct ps_error *err)
{
	if (!s->spill)
		return 0;
	if (drain(s)) {
		if (err)
			*err = s->fail;
		return -1;
	}
	return spill_names(s, err) || ps_psnap_flush(s->spill, err) ? -1 : 0;
}

int ps_session_spill_meta(struct ps_session *s, const char *key, const char *value, struct ps_error *err)
{
	if (!s->spill)
		return ps_error_set(err, PS_EUSAGE, "not spilling to a file");
	return ps_psnap_add_meta(s->spill, key, value, err);
}

int ps_session_spill_close(struct ps_session *s, struct ps_error *err)
{
	int rc;

	if (!s->spill)
		return 0;
	rc = ps_session_spill_flush(s, err);
	if (ps_psnap_close(s->spill, err))
		rc = -1;
	s->spill = NULL;
	return rc;
}

/* Open the main thread's group at once, so a bad event fails before anything runs. */
static int first_thread(struct ps_session *s, struct ps_error *err)
{
	if (s->nev == 0)
		return 0;
	return thr_get(s, s->pid, err) ? 0 : -1;
}

int ps_session_spawn(struct ps_session **sp, char *const argv[], const struct ps_event *ev, int nev,
		     struct ps_error *err)
{
	struct ps_session *s = NULL;

	if (session_new(&s, ev, nev, err))
		return -1;
	if (ps_tracer_spawn(&s->t, argv, &ops, s, err)) {
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

int ps_session_attach(struct ps_session **sp, pid_t pid, const struct ps_event *ev, int nev, struct ps_error *err)
{
	struct ps_session *s = NULL;

	if (session_new(&s, ev, nev, err))
		return -1;
	if (ps_tracer_attach(&s->t, pid, &ops, s, err)) {
		free(s);
		return -1;
	}
	s->pid = pid;
	if (first_thread(s, err)) {
		ps_session_free(s);
		return -1;
	}
	*sp = s;
	return 0;
}

int ps_session_set_groups(struct ps_session *s, const int *sizes, int n, struct ps_error *err)
{
	int total = 0;

	if (s->started || s->ring)
		return ps_error_set(err, PS_EUSAGE, "groups are set before the program starts running");
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
	thr_remove(s, s->pid);
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
	if (s->started || s->ring)
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
		if (s->started || s->ring)
			return ps_error_set(err, PS_EUSAGE,
					    "event '%s' added after the program started running; give every event "
					    "before the first run",
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
	thr_remove(s, s->pid);
	return first_thread(s, err);
}

/* ---- window sampling: a timer interrupts the run at each window edge ---- */

static struct ps_session *volatile window_session;
static volatile sig_atomic_t window_edge;

static void on_alarm(int sig)
{
	struct ps_session *s = window_session;
	(void)sig;
	window_edge = 1;
	if (s)
		ps_tracer_interrupt(s->t);
}

static void arm_timer(uint64_t ns)
{
	struct itimerval it = {{0, 0}, {(time_t)(ns / 1000000000u), (suseconds_t)(ns % 1000000000u / 1000u)}};
	if (!it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &it, NULL);
}

static int run_windows(struct ps_session *s, struct ps_error *err)
{
	struct sigaction sa = {0}, old;
	struct itimerval off = {{0, 0}, {0, 0}};
	int rc;

	sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid must return */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old);
	window_session = s;
	arm_timer(ps__hw_period_ns(s, s->in_window));
	for (;;) {
		window_edge = 0;
		rc = ps_tracer_run(s->t, err);
		if (rc != 0 || !window_edge)
			break; /* ended, failed, or paused for another reason */
		ps__hw_set_window(s, !s->in_window);
		arm_timer(ps__hw_period_ns(s, s->in_window));
	}
	setitimer(ITIMER_REAL, &off, NULL);
	window_session = NULL;
	sigaction(SIGALRM, &old, NULL);
	return rc;
}

int ps_session_run(struct ps_session *s, uint64_t max_records, uint64_t deadline_ns, struct ps_error *err)
{
	int rc;

	if (make_ring(s, err))
		return -1;
	s->started = 1;
	s->max_records = max_records;
	s->deadline = deadline_ns;
	s->written_at_run_start = s->seq;
	s->failed = 0;
	ps_tracer_set_deadline(s->t, deadline_ns); /* on time even when no stop comes */
	rc = ps__hw_windows(s) ? run_windows(s, err) : ps_tracer_run(s->t, err);
	if (drain(s)) {
		if (s->spill && err)
			*err = s->fail;
		else
			ps_error_set(err, ENOMEM, "out of memory for %llu records", (unsigned long long)s->seq);
		return -1;
	}
	if (rc < 0 && s->failed && err)
		*err = s->fail;
	return rc;
}

void ps_session_interrupt(struct ps_session *s)
{
	ps_tracer_interrupt(s->t);
}

int ps_session_detach(struct ps_session *s, struct ps_error *err)
{
	/* first the hardware breakpoints: their SIGTRAPs would kill an untraced program */
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			ps__hw_close_thread(s, th);
	int rc = ps_tracer_detach(s->t, err);
	if (s->ring)
		drain(s);
	return rc;
}

uint64_t ps_session_open_calls(struct ps_session *s, int id)
{
	uint64_t n = 0;

	if (id < 0 || id >= s->nreg)
		return 0;
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			n += th->depth[id] ? th->depth[id] : th->active[id] >= 0;
	return n;
}

void ps_session_free(struct ps_session *s)
{
	if (!s)
		return;
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		for (struct thr *th = s->threads[b]; th; th = th->next)
			ps__hw_close_thread(s, th);
	ps_tracer_free(s->t);
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		while (s->threads[b]) {
			struct thr *th = s->threads[b];
			s->threads[b] = th->next;
			thr_free(th);
		}
	if (s->spill) {
		struct ps_error e;
		ps_session_spill_close(s, &e);
	}
	ps_ring_free(s->ring);
	free(s->store);
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
	if (s->spill_path[0])
		return s->spilled + (s->ring ? ps_ring_count(s->ring) : 0);
	return s->nstore;
}

const struct ps_snap *ps_session_record(const struct ps_session *s, uint64_t i)
{
	return i < s->nstore ? (const struct ps_snap *)(s->store + i * s->recsize) : NULL;
}

size_t ps_session_recsize(const struct ps_session *s)
{
	return s->recsize ? s->recsize : ps_snap_size((unsigned)ps_session_nvals(s), (unsigned)s->nargs);
}

uint64_t ps_session_dropped(const struct ps_session *s)
{
	return s->dropped + (s->ring ? ps_ring_dropped(s->ring) : 0);
}

const char *ps_session_notice(struct ps_session *s)
{
	static char out[sizeof s->notice];
	memcpy(out, s->notice, sizeof out);
	s->notice[0] = '\0';
	return out;
}
