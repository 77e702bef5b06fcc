/* marker/marker_file.c - file mode (marker_file.h): the records' file, written with the core's
 * psnap writer; the threads whose rings drain into it (core/hitpath/ring.h) and their counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "marker_config.h"
#include "marker_file.h"
#include "marker_say.h"
#include "psnap.h"

#define LOST_FROM_NOW "; records from now on are lost (counted)"

static struct ps_psnap_writer *w;
static int closed, failed;
static struct pm_thread *threads; /* the threads writing into the file */
static int nnamed;		  /* regions named so far: ids 0 .. nnamed - 1 */
/* the counts of the threads gone */
static uint64_t gone_entries[PS_MARKER_REGIONS], gone_lost, gone_unmatched, gone_fast;
static uint64_t nthreads; /* threads that joined */

int pm_file_enabled(void)
{
	return !failed;
}

/* The file failed: say so once (async-signal-safe); records from now on are counted as lost. */
static void writer_failed(const struct ps_error *err, const char *then)
{
	if (!failed)
		pm_say(err->msg, then);
	failed = 1;
}

void pm_file_drain(struct pm_thread *t)
{
	struct ps_error err;

	if (!w || closed || failed) {
		t->lost += ps_ring_discard(t->ring);
	} else if (ps_ring_drain_to(t->ring, w, &err) < 0) {
		writer_failed(&err, LOST_FROM_NOW);
		t->lost += ps_ring_discard(t->ring);
	}
}

void pm_file_drain_all(void)
{
	for (struct pm_thread *t = threads; t; t = t->next)
		pm_file_drain(t);
}

void pm_file_join(struct pm_thread *t)
{
	t->next = threads;
	threads = t;
	nthreads++;
}

void pm_file_leave(struct pm_thread *t)
{
	pm_file_drain(t);
	for (int i = 0; i < nnamed; i++)
		gone_entries[i] += t->entries[i];
	gone_lost += t->lost + ps_ring_dropped(t->ring);
	gone_unmatched += t->cnt->unmatched;
	gone_fast += t->cnt->fast;
	for (struct pm_thread **pp = &threads; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
}

/* What the file says of region @id (ps_psnap_region_pairs), as metadata. 0, or -1 with @err. */
static int put_pairs(int id, const struct ps_psnap_region_meta *m, struct ps_error *err)
{
	struct ps_psnap_region_pairs p;

	ps_psnap_region_pairs(id, m, &p);
	for (size_t i = 0; i < p.n; i++)
		if (ps_psnap_add_meta(w, p.meta[i].key, p.meta[i].value, err))
			return -1;
	return 0;
}

void pm_file_name_region(int id, const char *name)
{
	struct ps_psnap_region_meta m = {.kind = "marker", .sampled = pm_cfg.own_pol.sampled != 0};
	struct ps_error err;

	nnamed = id + 1;
	if (!w || closed || failed)
		return;
	if (ps_psnap_add_region(w, name, &err) != id || put_pairs(id, &m, &err))
		writer_failed(&err, LOST_FROM_NOW);
}

int pm_file_flush(void)
{
	struct ps_error err;

	pm_file_drain_all();
	if (!w || closed || failed)
		return -1;
	if (ps_psnap_flush(w, &err)) {
		writer_failed(&err, LOST_FROM_NOW);
		return -1;
	}
	return 0;
}

/* The counts of the run, of the threads gone and of those still here. */
struct counts {
	uint64_t entries[PS_MARKER_REGIONS], lost, unmatched, fast;
};

static void add_up(struct counts *c)
{
	memcpy(c->entries, gone_entries, sizeof c->entries);
	c->lost = gone_lost;
	c->unmatched = gone_unmatched;
	c->fast = gone_fast;
	for (struct pm_thread *t = threads; t; t = t->next) {
		for (int i = 0; i < nnamed; i++)
			c->entries[i] += t->entries[i];
		c->lost += t->lost + ps_ring_dropped(t->ring);
		c->unmatched += t->cnt->unmatched;
		c->fast += t->cnt->fast;
	}
}

/* The counts @c as metadata pairs. */
static int put_counts(const struct counts *c, struct ps_error *err)
{
	char k[48], v[48];
	int rc = 0;

	for (int i = 0; i < nnamed && rc == 0; i++) {
		/* every begin, unless the slow-hit threshold hid the fast ones (marker.fast counts them) */
		if (!pm_cfg.own_pol.slow_ns) {
			rc = put_pairs(i, &(struct ps_psnap_region_meta){.has_entries = 1, .entries = c->entries[i]},
				       err);
			continue;
		}
		snprintf(k, sizeof k, "marker.entries.%d", i);
		snprintf(v, sizeof v, "%llu", (unsigned long long)c->entries[i]);
		rc = ps_psnap_add_meta(w, k, v, err);
	}
#define META_U64(key, val) (snprintf(v, sizeof v, "%llu", (unsigned long long)(val)), ps_psnap_add_meta(w, key, v, err))
	if (rc == 0)
		rc = META_U64("marker.lost", c->lost) || META_U64("marker.unmatched", c->unmatched) ||
		     META_U64("marker.fast", c->fast) || META_U64("marker.threads", nthreads);
#undef META_U64
	return rc;
}

void pm_file_close(void)
{
	struct counts c; /* 8 KiB: at exit, on the stack of the thread that exits */
	struct ps_error err;

	if (!w || closed)
		return;
	pm_file_drain_all();
	add_up(&c);
	if (!failed && put_counts(&c, &err))
		writer_failed(&err, LOST_FROM_NOW);
	if (ps_psnap_close(w, &err) && !failed)
		pm_say(err.msg, "; the file is incomplete");
	else if (c.lost)
		pm_warn("%llu records lost (counted in the file as marker.lost)", (unsigned long long)c.lost);
	w = NULL;
	closed = 1;
}

void pm_file_at_signal(int last)
{
	struct ps_error err;

	if (!w || closed || failed)
		return;
	pm_file_drain_all();
	if (failed)
		return;
	if ((last ? ps_psnap_finish(w, &err) : ps_psnap_flush(w, &err)) == 0)
		closed = last;
	else
		writer_failed(&err, last ? "; the file is incomplete" : LOST_FROM_NOW);
}

void pm_file_forget(void)
{
	w = NULL;
	closed = 1;
}

/* The command line, arguments joined by spaces. */
static void command(char *buf, size_t n)
{
	FILE *f = fopen("/proc/self/cmdline", "re");
	size_t k = 0;

	buf[0] = '\0';
	if (!f)
		return;
	k = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[k] = '\0';
	for (size_t i = 0; k > 0 && i + 1 < k; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
}

int pm_file_open(const char *path)
{
	const struct pm_read_choice *rc = &pm_cfg.read;
	const struct ps_mshm_policy *pol = &pm_cfg.own_pol;
	const char *names[PS_MAX_EVENTS];
	char cmd[512], pid[24], rd[32], rp[128], samp[48], slow[32];
	struct ps_psnap_meta meta[8];
	struct ps_psnap_info info = {0};
	struct ps_error err;

	for (int i = 0; i < pm_cfg.nev; i++)
		names[i] = pm_cfg.ev[i].name;
	command(cmd, sizeof cmd);
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	snprintf(rd, sizeof rd, "%.0f", rc->read_ns);
	if (rc->rdpmc_ns < 0)
		snprintf(rp, sizeof rp, "no: %s", rc->rdpmc_why);
	else
		snprintf(rp, sizeof rp, "%.0f", rc->rdpmc_ns);
	if (pol->every)
		snprintf(samp, sizeof samp, "every %llu", (unsigned long long)pol->every);
	else
		snprintf(samp, sizeof samp, "%s", pol->sampled ? getenv("PERFSH_SAMPLE") : "all");
	snprintf(slow, sizeof slow, "%llu", (unsigned long long)(pol->slow_ns / 1000));
	meta[0] = (struct ps_psnap_meta){"command", cmd};
	meta[1] = (struct ps_psnap_meta){"pid", pid};
	meta[2] = (struct ps_psnap_meta){"source", "marker"};
	meta[3] = (struct ps_psnap_meta){"marker.read", rc->mode == PM_READ_RDPMC ? "rdpmc" : "read"};
	meta[4] = (struct ps_psnap_meta){"marker.read_ns", rd};
	meta[5] = (struct ps_psnap_meta){"marker.rdpmc_ns", rp};
	meta[6] = (struct ps_psnap_meta){"marker.sample", samp};
	meta[7] = (struct ps_psnap_meta){"marker.slow_us", slow};
	info.nvals = (unsigned)pm_cfg.nev;
	info.nargs = PS_MARKER_FIELDS;
	info.nevents = (size_t)pm_cfg.nev;
	info.events = names;
	info.nmeta = 8;
	info.meta = meta;
	if (!(w = ps_psnap_create(path, &info, &err))) {
		pm_warn("PERFSH_OUT: %s; markers are off", err.msg);
		return -1;
	}
	return 0;
}
