/* marker/marker_live.c - shared mode: the program was started by perfsh, which passed its
 * control block (core/catch/marker/markshm.h) as PERFSH_CONTROL. The library takes its events, policy and
 * armed markers from it, publishes its region names there, and writes each thread's records
 * into a slot's ring, which perfsh drains while the program runs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "marker_config.h"
#include "marker_live.h"
#include "marker_say.h"

/* perfsh's control block, mapped */
static struct ps_mshm_ctl *ctl;
static size_t ctl_bytes;

/* The block is perfsh's: say why the markers are off there too, when it can be written. */
static int refuse(const char *fmt, const char *a, const char *b)
{
	char why[256];

	snprintf(why, sizeof why, fmt, a, b);
	pm_warn("PERFSH_CONTROL: %s; markers are off", why);
	if (ctl) {
		snprintf(ctl->why, sizeof ctl->why, "%s", why);
		__atomic_store_n(&ctl->state, PS_MSHM_OFF, __ATOMIC_RELEASE);
		munmap(ctl, ctl_bytes);
		ctl = NULL;
	}
	return -1;
}

/* Map the block at @path and check what it says of itself. */
static int map_block(const char *path)
{
	struct ps_mshm_ctl *c;
	struct stat st;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return refuse("%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof *c) {
		close(fd);
		return refuse("%s: too small to be a perfsh control block%s", path, "");
	}
	c = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c == MAP_FAILED)
		return refuse("%s: mmap: %s", path, strerror(errno));
	if (c->magic != PS_MSHM_MAGIC || c->version != PS_MSHM_VERSION || c->bytes != (uint64_t)st.st_size) {
		char v[64];

		snprintf(v, sizeof v, " (version %u; this library reads %d)",
			 c->magic == PS_MSHM_MAGIC ? c->version : 0, PS_MSHM_VERSION);
		munmap(c, (size_t)st.st_size);
		return refuse("%s: not a perfsh control block this library reads%s", path, v);
	}
	ctl = c;
	ctl_bytes = (size_t)st.st_size;
	return 0;
}

int pm_live_init(const char *path)
{
	struct ps_mshm_ctl *c;
	struct ps_error err;
	int32_t none = 0;

	if (map_block(path))
		return -1;
	c = ctl;
	if (!__atomic_compare_exchange_n(&c->pid, &none, (int32_t)getpid(), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		char who[32];

		snprintf(who, sizeof who, "%d", (int)none);
		munmap(c, ctl_bytes);
		ctl = NULL; /* the block is another process's: leave it as it is */
		return refuse("%s: taken by process %s", path, who);
	}
	if (pm_config_events(c->events, &err))
		return refuse("events '%s': %s", c->events, err.msg);
	if (pm_config_measure(&err))
		return refuse("%s%s", err.msg, "");
	if (pm_cfg.recsize != c->recsize || c->nargs != PS_MARKER_FIELDS) {
		char a[32], b[32];

		snprintf(a, sizeof a, "%zu", pm_cfg.recsize);
		snprintf(b, sizeof b, "%llu", (unsigned long long)c->recsize);
		return refuse("records of %s bytes here, %s in the block", a, b);
	}
	snprintf(c->read_mode, sizeof c->read_mode, "%s", pm_cfg.read.mode == PM_READ_RDPMC ? "rdpmc" : "read");
	c->read_ns = pm_cfg.read.read_ns;
	c->rdpmc_ns = pm_cfg.read.rdpmc_ns;
	if (pm_cfg.read.rdpmc_ns < 0)
		snprintf(c->why, sizeof c->why, "rdpmc: %s", pm_cfg.read.rdpmc_why);
	pm_cfg.pol = &c->pol;
	pm_cfg.armed = c->armed;
	pm_cfg.live = 1;
	__atomic_store_n(&c->state, PS_MSHM_RUNNING, __ATOMIC_RELEASE);
	return 0;
}

int pm_live_slot(struct pm_thread *t)
{
	struct ps_mshm_ctl *c = ctl;
	struct ps_error err;

	for (unsigned i = 0; i < c->nslots; i++) {
		struct ps_mshm_slot *sl = ps_mshm_slot(c, i);
		uint32_t fr = PS_MSHM_FREE;

		if (!__atomic_compare_exchange_n(&sl->state, &fr, PS_MSHM_USED, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		/* perfsh built the ring and zeroed the counts when it freed the slot */
		if (!(t->ring = ps_ring_attach(sl->ring, ps_mshm_ring_bytes(c), &err))) {
			pm_warn("a shared ring: %s; thread %u's markers are off", err.msg, t->tid);
			__atomic_store_n(&sl->state, PS_MSHM_GONE, __ATOMIC_RELEASE);
			return -1;
		}
		sl->tid = t->tid;
		t->slot = sl;
		t->cnt = &sl->cnt;
		t->entries = sl->entries;
		__atomic_fetch_add(&c->threads, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (__atomic_fetch_add(&c->no_slot, 1, __ATOMIC_RELAXED) == 0)
		pm_warn("more than %u threads have hit a marker; the markers of the others are off (counted)",
			c->nslots);
	return -1;
}

void pm_live_slot_gone(struct pm_thread *t)
{
	__atomic_store_n(&t->slot->state, PS_MSHM_GONE, __ATOMIC_RELEASE);
	t->slot = NULL;
}

/* Whether @name is in the comma-separated @list. */
static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t k = e ? (size_t)(e - p) : strlen(p);

		if (k == n && !strncmp(p, name, n))
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

void pm_live_region(int id, const char *name)
{
	struct ps_mshm_ctl *c = ctl;
	char list[sizeof c->arm];

	snprintf(c->names[id], sizeof c->names[id], "%s", name);
	/* published before the list is read: perfsh, arming a name, writes the list first and then
	   looks at the names published; one of the two sees the other */
	__atomic_store_n(&c->nregions, (uint32_t)id + 1, __ATOMIC_SEQ_CST);
	memcpy(list, c->arm, sizeof list);
	list[sizeof list - 1] = '\0';
	if (__atomic_load_n(&c->arm_all, __ATOMIC_SEQ_CST) || listed(list, name))
		__atomic_store_n(&c->armed[id], 1, __ATOMIC_RELAXED);
}

struct ps_mshm_ctl *pm_live_ctl(void)
{
	return ctl;
}
