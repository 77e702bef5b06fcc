/* tests/c/test_uprobe_defs.c - core/catch/uprobe/uprobe_defs.c: a site defined once in tracefs,
 * and several ps_uprobes (as for several threads) opened on its trace events, each getting
 * every hit of its thread; nothing left defined soon after (the keeper deletes them). Skipped with the reason where
 * uprobes or tracefs cannot be used (not root).
 */
#include "ctest.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "machine.h"
#include "procmaps.h"
#include "uprobe.h"
#include "uprobe_defs.h"

#define CALLS 100

__attribute__((noinline, noclone)) long ud_work(long x);
__attribute__((noinline, noclone)) long ud_work(long x)
{
	__asm__ volatile("" : "+r"(x)::"memory");
	return x + 1;
}

/* How many lines of uprobe_events define this process's events. */
static int defined_here(void)
{
	const char *const files[] = {"/sys/kernel/tracing/uprobe_events", "/sys/kernel/debug/tracing/uprobe_events"};
	char line[4200], mine[40];
	int n = 0;

	snprintf(mine, sizeof mine, ":perfsh_%d/", (int)getpid());
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		FILE *f = fopen(files[i], "re");
		if (!f)
			continue;
		while (fgets(line, sizeof line, f))
			n += strstr(line, mine) == line + 1;
		fclose(f);
		return n;
	}
	return 0;
}

struct count {
	int entries, returns;
};

static int count(const struct ps_uprobe_hit *h, void *ud)
{
	struct count *c = ud;

	if (h->kind == PS_UPROBE_ENTRY)
		c->entries++;
	else
		c->returns++;
	return 0;
}

TEST(uprobe_defs_one_trace_event_per_probe_shared_by_handles)
{
	struct ps_uprobe_defs *d = NULL;
	struct ps_uprobe *u[2] = {NULL, NULL};
	struct ps_uprobe_site site = {.ret = 1};
	struct ps_event ev;
	struct ps_error err;
	char path[4096], why[256];
	uint64_t off;

	if (!ps_uprobe_available(why, sizeof why))
		SKIP("%s", why);
	if (ps_maps_file_offset(0, (uint64_t)(uintptr_t)ud_work, path, sizeof path, &off, &err) ||
	    ps_event_resolve("task-clock", &ev, &err)) {
		CHECK(!err.msg[0]);
		return;
	}
	site.path = path;
	site.offset = off;
	if (ps_uprobe_defs_new(&d, &site, 1, &err))
		SKIP("%.200s", err.msg);
	const uint32_t *ids = ps_uprobe_defs_ids(d);
	CHECK(ids[0] != 0 && ids[1] != 0 && ids[0] != ids[1]);
	CHECK_EQ_INT(defined_here(), 2);
	struct ps_uprobe_opts o = {.ev = &ev, .nev = 1, .sites = &site, .nsites = 1, .enabled = 1, .tp_ids = ids};
	for (int i = 0; i < 2; i++)
		if (ps_uprobe_open(&u[i], gettid(), &o, &err))
			fprintf(stderr, "  %s\n", err.msg);
	CHECK(u[0] && u[1]);
	for (long i = 0; i < CALLS; i++)
		ud_work(i);
	for (int i = 0; i < 2; i++) {
		struct count c = {0, 0};
		if (!u[i])
			continue;
		ps_uprobe_enable(u[i], 0, &err);
		ps_uprobe_drain(u[i], count, &c);
		CHECK_EQ_INT(c.entries, CALLS);
		CHECK_EQ_INT(c.returns, CALLS);
		CHECK_EQ_INT(ps_uprobe_missing(u[i], &err), 0);
		ps_uprobe_close(u[i]);
	}
	ps_uprobe_defs_free(d);
	/* the keeper process deletes them after its last close, 50-200 ms later */
	for (int i = 0; i < 500 && defined_here() > 0; i++)
		usleep(10000);
	CHECK_EQ_INT(defined_here(), 0);
}
