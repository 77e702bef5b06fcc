/* core/catch/uprobe/uprobe.c - uprobes and uretprobes sampling a counter group into one perf ring per
 * thread, and the decoder of that ring. See uprobe.h. */
#include "uprobe.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "machine.h"
#include "procmaps.h"
#include "upmerge.h"

#define BOUNCE 65536 /* a record's size is a u16: the largest one fits */
#define ID_COUNTER 0xffffffffu

/* What a perf event id stands for: a counter (kind ID_COUNTER, @idx its place in opts.ev) or a
   probe (@idx the site, @kind entry or return), of the caller's counter group @cg. */
struct idmap {
	uint64_t id;
	uint32_t idx;
	uint32_t kind;
	uint32_t cg;
};

struct ps_uprobe {
	pid_t tid;
	int nev, ngroups, nfd, nmap, nregs;
	int ncg, cfirst[PS_UPROBE_MAX_GROUPS], csize[PS_UPROBE_MAX_GROUPS]; /* the caller's groups */
	int type, retbit;	  /* the uprobe PMU's perf type and its retprobe config bit */
	int *fds;		  /* every event: per group, its counters then its probes; -1 when not open */
	int *leaders;		  /* index in fds of each group's leader (of the caller's group g % ncg) */
	struct idmap *map;	  /* sorted by id */
	uint64_t *got;		  /* hits delivered, two per site (entry, return) */
	struct ps_upmerge *merge; /* with several groups: the hits being merged */
	void *base;		  /* the mapping: the control page, then the data pages */
	size_t map_len, data_size;
	unsigned char *bounce;
	uint64_t lost, hits, other;
};

int ps_uprobe_available(char *why, size_t n)
{
	return ps_machine_uprobes_fire(why, n);
}

/* The first config bit of uprobe PMU format field @name ("config:N" or "config:N-M"), or -1. */
static int format_bit(const char *name)
{
	char path[128];
	FILE *f;
	int bit = -1;

	snprintf(path, sizeof path, "/sys/bus/event_source/devices/uprobe/format/%s", name);
	if ((f = fopen(path, "re"))) {
		if (fscanf(f, "config:%d", &bit) != 1 || bit < 0 || bit > 63)
			bit = -1;
		fclose(f);
	}
	return bit;
}

int ps_uprobe_retprobe_bit(void)
{
	return format_bit("retprobe");
}

static long perf_open(struct perf_event_attr *a, pid_t tid, int group_fd)
{
	return syscall(SYS_perf_event_open, a, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

static void common_attr(struct perf_event_attr *a)
{
	a->size = sizeof *a;
	a->read_format =
	    PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->inherit = 0;
}

/* Record what @fd's id stands for. */
static int add_id(struct ps_uprobe *u, int fd, uint32_t idx, uint32_t kind, int cg, struct ps_error *err)
{
	uint64_t id;

	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0) {
		int e = errno;
		return ps_error_set(err, e, "uprobe: PERF_EVENT_IOC_ID: %s", strerror(e));
	}
	u->map[u->nmap++] = (struct idmap){id, idx, kind, (uint32_t)cg};
	return 0;
}

static int open_failed(int e, const char *what, pid_t tid, struct ps_error *err)
{
	const char *hint = e == EACCES || e == EPERM ? " (uprobes need root or CAP_PERFMON)" : "";
	return ps_error_set(err, e, "uprobe: perf_event_open(%s) on thread %d: %s%s", what, (int)tid, strerror(e),
			    hint);
}

/* Open the counters of the caller's group @cg as one perf group; the leader disabled. */
static int open_counters(struct ps_uprobe *u, const struct ps_uprobe_opts *o, int cg, struct ps_error *err)
{
	int leader = -1;

	for (int k = u->cfirst[cg]; k < u->cfirst[cg] + u->csize[cg]; k++) {
		struct perf_event_attr a = o->ev[k].attr;

		common_attr(&a);
		a.disabled = leader < 0;
		a.sample_period = 0;
		a.sample_type = 0;
		a.mmap = a.mmap2 = o->maps && k == 0 && u->ngroups == 0; /* into the ring it will own */
		int fd = (int)perf_open(&a, u->tid, leader);
		if (fd < 0)
			return open_failed(errno, o->ev[k].name, u->tid, err);
		if (leader < 0) {
			leader = fd;
			u->leaders[u->ngroups] = u->nfd;
		}
		u->fds[u->nfd++] = fd;
		if (add_id(u, fd, (uint32_t)k, ID_COUNTER, cg, err))
			return -1;
	}
	return leader;
}

/* Why event @a (as the catcher opens it, errno @e) cannot be a uprobe's counter. */
static const char *unreadable(struct perf_event_attr a, int e, char *buf, size_t n)
{
	int fd;

	if (e == EINVAL && (a.exclude_kernel || a.exclude_hv)) {
		a.exclude_kernel = a.exclude_hv = 0; /* would it open counting the kernel too? */
		fd = (int)perf_open(&a, 0, -1);
		if (fd >= 0) {
			close(fd);
			return "its PMU cannot count user space alone, and the uprobe catcher counts user space only";
		}
	}
	snprintf(buf, n, "perf_event_open per thread: %s%s", strerror(e),
		 e == EACCES || e == EPERM ? "; uprobes need root or CAP_PERFMON" : "");
	return buf;
}

int ps_uprobe_check_events(const struct ps_event *ev, int nev, struct ps_error *err)
{
	int fds[PS_MAX_EVENTS], nfd = 0, rc = 0;
	char why[160];

	for (int k = 0; k < nev && k < PS_MAX_EVENTS && rc == 0; k++) {
		struct perf_event_attr a = ev[k].attr;

		common_attr(&a);
		a.disabled = k == 0;
		a.sample_period = 0;
		a.sample_type = 0;
		int fd = (int)perf_open(&a, 0, nfd ? fds[0] : -1);
		if (fd < 0) {
			int e = errno;
			rc = ps_error_set(err, e, "%s cannot be read at a uprobe (%s)", ev[k].name,
					  unreadable(a, e, why, sizeof why));
		} else {
			fds[nfd++] = fd;
		}
	}
	while (nfd > 0)
		close(fds[--nfd]);
	return rc;
}

/* The probe of @kind at @site in the perf group of @leader (the caller's group @cg): the first
   group's carry the registers. */
static int open_probe(struct ps_uprobe *u, const struct ps_uprobe_opts *o, int site, int kind, int leader, int cg,
		      struct ps_error *err)
{
	const struct ps_uprobe_site *s = &o->sites[site];
	struct perf_event_attr a;
	char what[300];

	if (u->type < 0 || (kind == PS_UPROBE_RETURN && u->retbit < 0))
		return ps_error_set(err, ENOENT,
				    "uprobe: the kernel has no uprobe PMU "
				    "(/sys/bus/event_source/devices/uprobe)");
	memset(&a, 0, sizeof a);
	common_attr(&a);
	a.type = (uint32_t)u->type;
	a.config = kind == PS_UPROBE_RETURN ? 1ull << u->retbit : 0;
	if (o->tp_ids && o->tp_ids[2 * site + kind]) {
		a.type = PERF_TYPE_TRACEPOINT; /* the site's shared tracefs event */
		a.config = o->tp_ids[2 * site + kind];
	} else if (s->ref_ctr_offset) {
		int shift = format_bit("ref_ctr_offset");
		if (shift < 0)
			return ps_error_set(err, ENOENT,
					    "uprobe: this kernel cannot count up an SDT semaphore "
					    "(no format/ref_ctr_offset)");
		a.config |= s->ref_ctr_offset << shift;
	}
	if (a.type != PERF_TYPE_TRACEPOINT) {
		a.config1 = (uint64_t)(uintptr_t)s->path;
		a.config2 = s->offset;
	}
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_READ | (o->regs_mask && cg == 0 ? PERF_SAMPLE_REGS_USER : 0);
	a.sample_regs_user = cg == 0 ? o->regs_mask : 0;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)perf_open(&a, u->tid, leader);
	if (fd < 0) {
		snprintf(what, sizeof what, "%s %.200s+0x%llx", kind == PS_UPROBE_RETURN ? "uretprobe" : "uprobe",
			 s->path, (unsigned long long)s->offset);
		return open_failed(errno, what, u->tid, err);
	}
	u->fds[u->nfd++] = fd;
	return add_id(u, fd, (uint32_t)site, (uint32_t)kind, cg, err);
}

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = ((const struct idmap *)a)->id, y = ((const struct idmap *)b)->id;
	return (x > y) - (x < y);
}

static struct idmap *lookup(const struct ps_uprobe *u, uint64_t id)
{
	struct idmap key = {.id = id};
	return bsearch(&key, u->map, (size_t)u->nmap, sizeof *u->map, cmp_id);
}

static int check_opts(const struct ps_uprobe_opts *o, struct ps_error *err)
{
	unsigned pages = o->ring_pages ? o->ring_pages : 64;
	int total = 0;

	if (o->nev < 1 || o->nev > PS_MAX_EVENTS - 2)
		return ps_error_set(err, PS_EUSAGE, "uprobe: %d counters; give 1 to %d", o->nev, PS_MAX_EVENTS - 2);
	if (o->ngroups < 0 || o->ngroups > PS_UPROBE_MAX_GROUPS || (o->ngroups > 1 && !o->gsize) ||
	    o->nev + 2 * (o->ngroups > 1 ? o->ngroups - 1 : 0) > PS_MAX_EVENTS)
		return ps_error_set(err, PS_EUSAGE, "uprobe: %d counter groups of %d counters; give 1 to %d groups",
				    o->ngroups, o->nev, PS_UPROBE_MAX_GROUPS);
	for (int g = 0; g < o->ngroups && o->ngroups > 1; g++)
		total += o->gsize[g] > 0 ? o->gsize[g] : -PS_MAX_EVENTS;
	if (o->ngroups > 1 && total != o->nev)
		return ps_error_set(err, PS_EUSAGE, "uprobe: the groups do not hold the %d counters one each", o->nev);
	if (o->nsites < 1 || !o->sites)
		return ps_error_set(err, PS_EUSAGE, "uprobe: no site to probe");
	for (int i = 0; i < o->nsites; i++)
		if (!o->sites[i].path || o->sites[i].path[0] != '/')
			return ps_error_set(err, PS_EUSAGE, "uprobe: site %d has no absolute file path", i);
	if (o->per_group < 0 || o->per_group > PS_UPROBE_MAX_PER_GROUP)
		return ps_error_set(err, PS_EUSAGE, "uprobe: %d sites per group; give 1 to %d", o->per_group,
				    PS_UPROBE_MAX_PER_GROUP);
	if (pages & (pages - 1))
		return ps_error_set(err, PS_EUSAGE, "uprobe: ring of %u pages; give a power of two", pages);
	if (__builtin_popcountll(o->regs_mask) > PS_UPROBE_MAX_REGS)
		return ps_error_set(err, PS_EUSAGE, "uprobe: %d registers asked for; at most %d",
				    __builtin_popcountll(o->regs_mask), PS_UPROBE_MAX_REGS);
	return 0;
}

/* Whether site @s begins a new counter group after @n sites in the current one (see @group). */
static int starts_group(const struct ps_uprobe_opts *o, int s, int n, int per)
{
	const struct ps_uprobe_site *a = &o->sites[s];

	if (s == 0)
		return 1;
	if (a->group != a[-1].group)
		return 1;
	return n >= (a->group ? PS_UPROBE_MAX_PER_GROUP : per);
}

static int count_groups(const struct ps_uprobe_opts *o, int per)
{
	int ngroups = 0;

	for (int s = 0, n = 0; s < o->nsites; s++, n++)
		if (starts_group(o, s, n, per)) {
			ngroups++;
			n = 0;
		}
	return ngroups;
}

/* Allocate the handle's arrays for @o. */
static struct ps_uprobe *alloc_handle(pid_t tid, const struct ps_uprobe_opts *o, int per, struct ps_error *err)
{
	struct ps_uprobe *u = calloc(1, sizeof *u);
	int ncg = o->ngroups > 1 ? o->ngroups : 1;
	int nbatch = count_groups(o, per), nfd = nbatch * o->nev + 2 * o->nsites * ncg;

	if (u) {
		u->fds = malloc((size_t)nfd * sizeof *u->fds);
		u->leaders = calloc((size_t)(nbatch * ncg), sizeof *u->leaders);
		u->map = calloc((size_t)nfd, sizeof *u->map);
		u->got = calloc((size_t)(2 * o->nsites), sizeof *u->got);
		u->bounce = malloc(BOUNCE);
		if (ncg > 1 && (u->merge = malloc(sizeof *u->merge)))
			ps__upmerge_init(u->merge, o->nev, ncg, o->gsize);
	}
	if (!u || !u->fds || !u->leaders || !u->map || !u->got || !u->bounce || (ncg > 1 && !u->merge)) {
		ps_uprobe_close(u);
		ps_error_set(err, ENOMEM, "uprobe: out of memory");
		return NULL;
	}
	u->tid = tid;
	u->nev = o->nev;
	u->ncg = ncg;
	for (int g = 0, first = 0; g < ncg; first += u->csize[g++]) {
		u->cfirst[g] = first;
		u->csize[g] = ncg > 1 ? o->gsize[g] : o->nev;
	}
	u->nregs = __builtin_popcountll(o->regs_mask);
	u->type = ps_machine_uprobe_type();
	u->retbit = ps_uprobe_retprobe_bit();
	return u;
}

/* Map the ring on the first leader and send every probe's records there. */
static int map_ring(struct ps_uprobe *u, unsigned pages, struct ps_error *err)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	int rfd = u->fds[u->leaders[0]];

	u->data_size = pages * psz;
	u->map_len = (pages + 1) * psz;
	u->base = mmap(NULL, u->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	if (u->base == MAP_FAILED) {
		int e = errno;
		u->base = NULL;
		return ps_error_set(err, e, "uprobe: mmap of a %u-page ring on thread %d: %s%s", pages, (int)u->tid,
				    strerror(e),
				    e == EPERM ? " (perf_event_mlock_kb limits the ring: give fewer pages)" : "");
	}
	for (int g = 0; g < u->ngroups; g++) {
		int end = g + 1 < u->ngroups ? u->leaders[g + 1] : u->nfd;
		for (int i = u->leaders[g] + u->csize[g % u->ncg]; i < end; i++)
			if (ioctl(u->fds[i], PERF_EVENT_IOC_SET_OUTPUT, rfd) < 0) {
				int e = errno;
				return ps_error_set(err, e, "uprobe: PERF_EVENT_IOC_SET_OUTPUT on thread %d: %s",
						    (int)u->tid, strerror(e));
			}
	}
	return 0;
}

int ps_uprobe_open(struct ps_uprobe **out, pid_t tid, const struct ps_uprobe_opts *o, struct ps_error *err)
{
	int per = o->per_group > 0 ? o->per_group : 4;
	struct ps_uprobe *u;

	*out = NULL;
	if (check_opts(o, err) || !(u = alloc_handle(tid, o, per, err)))
		return -1;
	for (int s0 = 0, s1; s0 < o->nsites; s0 = s1) {
		for (s1 = s0 + 1; s1 < o->nsites && !starts_group(o, s1, s1 - s0, per);)
			s1++;
		/* the sites [s0, s1) in one perf group with each of the caller's groups */
		for (int cg = 0; cg < u->ncg; cg++) {
			int leader = open_counters(u, o, cg, err);
			if (leader < 0)
				goto fail;
			u->ngroups++;
			for (int s = s0; s < s1; s++)
				if (open_probe(u, o, s, PS_UPROBE_ENTRY, leader, cg, err) ||
				    (o->sites[s].ret && open_probe(u, o, s, PS_UPROBE_RETURN, leader, cg, err)))
					goto fail;
		}
	}
	qsort(u->map, (size_t)u->nmap, sizeof *u->map, cmp_id);
	if (map_ring(u, o->ring_pages ? o->ring_pages : 64, err) || (o->enabled && ps_uprobe_enable(u, 1, err)))
		goto fail;
	*out = u;
	return 0;
fail:
	ps_uprobe_close(u);
	return -1;
}

/* With several of the caller's groups, the first of a batch is enabled last and disabled first: a
   hit it records, every group records (the probes of the first group count the hits, see
   ps_uprobe_missing()). */
int ps_uprobe_enable(struct ps_uprobe *u, int on, struct ps_error *err)
{
	for (int i = 0; i < u->ngroups; i++) {
		int g = on ? u->ngroups - 1 - i : i;
		if (ioctl(u->fds[u->leaders[g]], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE,
			  PERF_IOC_FLAG_GROUP) < 0) {
			int e = errno;
			return ps_error_set(err, e, "uprobe: %s the probes of thread %d: %s",
					    on ? "enabling" : "disabling", (int)u->tid, strerror(e));
		}
	}
	return 0;
}

void ps_uprobe_close(struct ps_uprobe *u)
{
	if (!u)
		return;
	if (u->base)
		munmap(u->base, u->map_len);
	/* members before their leaders */
	for (int i = u->nfd - 1; i >= 0; i--)
		close(u->fds[i]);
	free(u->fds);
	free(u->leaders);
	free(u->map);
	free(u->got);
	free(u->merge);
	free(u->bounce);
	free(u);
}

/* Decode one PERF_RECORD_SAMPLE (@p: its body, @n u64 words) into @h, a record of the caller's
   group *@cg. 0, or -1 if malformed or not one of ours. */
static int decode_sample(const struct ps_uprobe *u, const uint64_t *p, size_t n, struct ps_uprobe_hit *h, int *cg)
{
	const uint64_t *end = p + n;
	const struct idmap *m, *probe;
	uint64_t nr;

	if (n < 7 || !(probe = m = lookup(u, p[0])) || m->kind == ID_COUNTER)
		return -1;
	memset(h, 0, sizeof *h);
	h->site = m->idx;
	h->kind = m->kind;
	*cg = (int)m->cg;
	h->tid = (pid_t)(uint32_t)(p[1] >> 32);
	h->time = p[2];
	h->cpu = (uint32_t)p[3];
	nr = p[4];
	h->enabled = p[5];
	h->running = p[6];
	p += 7;
	if (nr > (size_t)(end - p) / 2)
		return -1;
	h->nval = u->nev;
	for (uint64_t j = 0; j < nr; j++, p += 2) {
		if (p[1] == probe->id)
			h->seq = p[0];
		else if ((m = lookup(u, p[1])) && m->kind == ID_COUNTER)
			h->val[m->idx] = p[0];
	}
	if (u->nregs && p < end && *p++ != PERF_SAMPLE_REGS_ABI_NONE) {
		if ((size_t)(end - p) < (size_t)u->nregs)
			return -1;
		h->nregs = u->nregs;
		memcpy(h->regs, p, (size_t)u->nregs * sizeof *p);
	}
	return 0;
}

/* Decode one PERF_RECORD_MMAP2 (@p: its body, @n u64 words) into @h. 0, or -1 if malformed. */
static int decode_map(const uint64_t *p, size_t n, struct ps_uprobe_hit *h)
{
	const char *path = (const char *)(p + 8);

	if (n < 9 || !memchr(path, '\0', (n - 8) * 8))
		return -1;
	memset(h, 0, sizeof *h);
	h->kind = PS_UPROBE_MAP;
	h->tid = (pid_t)(uint32_t)(p[0] >> 32);
	h->map = (struct ps_uprobe_map){.addr = p[1],
					.len = p[2],
					.pgoff = p[3],
					.maj = (uint32_t)p[4],
					.min = (uint32_t)(p[4] >> 32),
					.ino = p[5],
					.path = path};
	return 0;
}

long ps_uprobe_drain(struct ps_uprobe *u, ps_uprobe_cb cb, void *ud)
{
	struct perf_event_mmap_page *mp = u->base;
	unsigned char *data = (unsigned char *)u->base + (u->map_len - u->data_size);
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail, mask;
	struct ps_uprobe_hit h;
	const struct ps_uprobe_hit *hit;
	long got = 0;
	int stop = 0, cg;

	mask = u->data_size - 1;
	while (tail < head && !stop) {
		struct perf_event_header hdr;
		size_t at = (size_t)(tail & mask);
		const unsigned char *rec = data + at;

		memcpy(&hdr, rec, sizeof hdr); /* 8-byte aligned: never split by the wrap */
		if (hdr.size < sizeof hdr || hdr.size % 8 || hdr.size > head - tail) {
			u->other++; /* cannot happen with a sane kernel: resync at the head */
			tail = head;
			break;
		}
		if (at + hdr.size > u->data_size) {
			size_t first = u->data_size - at;
			memcpy(u->bounce, rec, first);
			memcpy(u->bounce + first, data, hdr.size - first);
			rec = u->bounce;
		}
		const uint64_t *body = (const uint64_t *)(const void *)(rec + sizeof hdr);
		size_t words = (hdr.size - sizeof hdr) / 8;
		if (hdr.type == PERF_RECORD_SAMPLE && decode_sample(u, body, words, &h, &cg) == 0) {
			hit = u->merge ? ps__upmerge_add(u->merge, &h, cg) : &h;
			if (hit) {
				u->got[2 * hit->site + hit->kind]++;
				u->hits++;
				got++;
				if (cb && cb(hit, ud))
					stop = 1;
			}
		} else if (hdr.type == PERF_RECORD_MMAP2 && decode_map(body, words, &h) == 0) {
			if (cb && cb(&h, ud))
				stop = 1;
		} else if (hdr.type == PERF_RECORD_LOST && words >= 2) {
			u->lost += body[1];
		} else if (hdr.type == PERF_RECORD_LOST_SAMPLES && words >= 1) {
			u->lost += body[0];
		} else {
			u->other++;
		}
		tail += hdr.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	return got;
}

uint64_t ps_uprobe_lost(const struct ps_uprobe *u)
{
	return u->lost;
}

long ps_uprobe_missing(const struct ps_uprobe *u, struct ps_error *err)
{
	uint64_t buf[3 + 2 * (PS_MAX_EVENTS + 2 * PS_UPROBE_MAX_PER_GROUP)], missing = 0;

	for (int g = 0; g < u->ngroups; g++) {
		ssize_t got = read(u->fds[u->leaders[g]], buf, sizeof buf);
		if (got < 24 || (size_t)got < (3 + 2 * buf[0]) * 8) {
			int e = got < 0 ? errno : EIO;
			return ps_error_set(err, e, "uprobe: reading the counts of thread %d: %s", (int)u->tid,
					    strerror(e));
		}
		for (uint64_t j = 0; j < buf[0]; j++) {
			/* the first group's probes count the hits (see ps_uprobe_enable()) */
			const struct idmap *m = lookup(u, buf[4 + 2 * j]);
			uint64_t had = m && m->kind != ID_COUNTER ? u->got[2 * m->idx + m->kind] : 0;
			if (m && m->kind != ID_COUNTER && m->cg == 0 && buf[3 + 2 * j] > had)
				missing += buf[3 + 2 * j] - had;
		}
	}
	return (long)missing;
}

uint64_t ps_uprobe_hits(const struct ps_uprobe *u)
{
	return u->hits;
}

uint64_t ps_uprobe_other(const struct ps_uprobe *u)
{
	return u->other;
}

int ps_uprobe_fd(const struct ps_uprobe *u)
{
	return u->fds[u->leaders[0]];
}

pid_t ps_uprobe_tid(const struct ps_uprobe *u)
{
	return u->tid;
}
