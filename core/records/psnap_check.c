/* core/records/psnap_check.c - what a .psnap record can be, and the reader's account of a file: what
 * it lost, skipped or recovered (one line), and what survived of a file with no record. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psnap_priv.h"

#define KNOWN_FLAGS (PS_SNAP_UNWOUND | PS_SNAP_EXITED | PS_SNAP_SAMPLED | PS_SNAP_NESTED)

/* A value read at the end that is below the one at the start. A thread that exited inside the
   region may leave its end unread: all zero (the ptrace catcher's ps__thr_read), not a clock gone back. */
static int backwards(uint64_t start, uint64_t end, int exited)
{
	return end < start && !(exited && end == 0);
}

int ps__psnap_check(const struct ps_psnap_reader *r, const struct ps_snap *s)
{
	const uint64_t *start = (const uint64_t *)(s + 1) + s->nargs, *end = start + s->nvals;
	int exited = (s->flags & PS_SNAP_EXITED) != 0;

	if (s->nvals != r->nvals || s->nargs != r->nargs)
		return PS_SKIP_LAYOUT;
	if (s->region >= r->nregions)
		return PS_SKIP_REGION;
	if (s->flags & ~KNOWN_FLAGS)
		return PS_SKIP_FLAGS;
	if (s->tid == 0 || s->tid > PS_PSNAP_MAX_TID)
		return PS_SKIP_TID;
	if (s->cpu_start < -1 || s->cpu_end < -1 || s->cpu_start >= PS_PSNAP_MAX_CPU || s->cpu_end >= PS_PSNAP_MAX_CPU)
		return PS_SKIP_CPU;
	if (s->t_end < s->t_start || backwards(s->enabled_start, s->enabled_end, exited) ||
	    backwards(s->running_start, s->running_end, exited))
		return PS_SKIP_TIME;
	for (unsigned k = 0; k < s->nvals; k++) /* counters, then later groups' times: all only grow */
		if (backwards(start[k], end[k], exited))
			return PS_SKIP_COUNTER;
	return -1;
}

/* The names of the values of a record when the EVNT block is lost: as many as the "groups"
   metadata says there are events (the rest are later groups' times), else one per value. */
static size_t unnamed_events(const struct ps_psnap_reader *r)
{
	const char *g = ps__psnap_meta(r, "groups");
	size_t sum = 0, ngroups = 0;
	char *end;

	while (g && *g) {
		unsigned long n = strtoul(g, &end, 10);

		if (end == g || n == 0 || n > PS_MAX_EVENTS || (*end && *end != ','))
			return r->nvals;
		sum += n;
		ngroups++;
		g = *end ? end + 1 : end;
	}
	return ngroups && sum + 2 * (ngroups - 1) == r->nvals ? sum : r->nvals;
}

int ps__psnap_recover_events(struct ps_psnap_reader *r)
{
	char key[32];
	size_t n = 0, want;

	if (r->events_seen || r->nvals == 0)
		return 0;
	for (; n < r->nvals; n++) {
		snprintf(key, sizeof key, PS_PSNAP_EVENT_KEY "%zu", n);
		if (!ps__psnap_meta(r, key))
			break;
	}
	r->events_from = n ? PS_PSNAP_EVENTS_COPY : PS_PSNAP_EVENTS_UNKNOWN;
	want = n ? n : unnamed_events(r);
	free(r->events); /* no names in it: a damaged EVNT block may have left it allocated */
	r->events = calloc(want + 1, sizeof *r->events);
	if (!r->events)
		return -1;
	for (r->nevents = 0; r->nevents < want; r->nevents++) {
		snprintf(key, sizeof key, PS_PSNAP_EVENT_KEY "%zu", r->nevents);
		if (n)
			r->events[r->nevents] = strdup(ps__psnap_meta(r, key));
		else if ((r->events[r->nevents] = malloc(24)))
			snprintf(r->events[r->nevents], 24, "event%zu", r->nevents + 1);
		if (!r->events[r->nevents])
			return -1;
	}
	return 0;
}

/* Append to @buf (of @size, holding a string) with printf; a full buffer ends in "...". */
static void add(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	if ((size_t)vsnprintf(buf + len, size - len, fmt, ap) >= size - len && size > 4)
		memcpy(buf + size - 4, "...", 4);
	va_end(ap);
}

static const char *const skip_why[PS_SKIP_N] = {
    [PS_SKIP_LAYOUT] = "other values or arguments than the header's",
    [PS_SKIP_REGION] = "a region no block names",
    [PS_SKIP_FLAGS] = "unknown flags",
    [PS_SKIP_TID] = "a thread id out of range",
    [PS_SKIP_CPU] = "a CPU out of range",
    [PS_SKIP_TIME] = "a time running backwards",
    [PS_SKIP_COUNTER] = "a counter running backwards",
};

/* "3 records skipped as impossible (2 with a counter running backwards, 1 with ...)" */
static void add_skipped(const struct ps_psnap_reader *r, char *w, size_t size, const char *sep)
{
	const char *in = " (";

	add(w, size, "%s%llu record%s skipped as impossible", sep, (unsigned long long)r->skipped,
	    r->skipped == 1 ? "" : "s");
	for (int k = 0; k < PS_SKIP_N; k++)
		if (r->skip[k]) {
			add(w, size, "%s%llu with %s", in, (unsigned long long)r->skip[k], skip_why[k]);
			in = ", ";
		}
	add(w, size, ")");
}

/* The one-line summary of what was lost; "" for an intact file. */
void ps_psnap_summarize(struct ps_psnap_reader *r)
{
	char *w = r->what;
	size_t size = sizeof r->what;
	const char *sep = "";

	w[0] = '\0';
	if (r->ndamaged) {
		add(w, size, "%u damaged block%s skipped (at byte %llu: %s)", r->ndamaged, r->ndamaged > 1 ? "s" : "",
		    (unsigned long long)r->damaged_at, r->damage_why);
		sep = ", ";
	}
	if (r->nrepeats) {
		add(w, size, "%s%u repeated block%s of records ignored (at byte %llu)", sep, r->nrepeats,
		    r->nrepeats > 1 ? "s" : "", (unsigned long long)r->repeat_at);
		sep = ", ";
	}
	if (r->cut[0] || !r->ended) {
		add(w, size, "%s%s", sep, r->cut[0] ? r->cut : "no END block (the writer did not close it)");
		sep = ", ";
	}
	if (r->lost) {
		add(w, size, "%s%llu record%s lost", sep, (unsigned long long)r->lost, r->lost == 1 ? "" : "s");
		sep = ", ";
	}
	if (r->skipped) {
		add_skipped(r, w, size, sep);
		sep = ", ";
	}
	if (r->count && r->events_from == PS_PSNAP_EVENTS_COPY) /* without records, no column to name */
		add(w, size, "%sevent names taken from their copy in the metadata", sep);
	else if (r->count && r->events_from == PS_PSNAP_EVENTS_UNKNOWN)
		add(w, size, "%sevent names lost: the %zu event columns are named event1..event%zu", sep, r->nevents,
		    r->nevents);
	r->complete = !r->what[0];
	r->warning[0] = '\0';
	if (!r->complete)
		add(r->warning, sizeof r->warning, "%s: %s; %llu record%s kept", r->path, r->what,
		    (unsigned long long)r->count, r->count == 1 ? "" : "s");
}

/* "a,b,c" of @n names (NULL: a lost one), at most @max of them. */
static void add_names(char *buf, size_t size, const char *what, char *const *v, size_t n)
{
	enum { MAX = 8 };

	add(buf, size, "; %s ", what);
	for (size_t i = 0; i < n && i < MAX; i++)
		add(buf, size, "%s%s", i ? "," : "", v[i] ? v[i] : "?");
	if (n > MAX)
		add(buf, size, ",... (%zu in all)", n);
}

void ps__psnap_survived(const struct ps_psnap_reader *r, char *buf, size_t size)
{
	const char *command = ps__psnap_meta(r, "command");

	buf[0] = '\0';
	add(buf, size, "; what survived: the file header (version %u, %u value%s and %u argument%s per record)",
	    PS_PSNAP_VERSION, r->nvals, r->nvals == 1 ? "" : "s", r->nargs, r->nargs == 1 ? "" : "s");
	if (r->events_seen && r->nevents)
		add_names(buf, size, "events", r->events, r->nevents);
	if (r->nregions)
		add_names(buf, size, "regions", r->regions, r->nregions);
	if (command)
		add(buf, size, "; command %s", command);
	for (char *c = buf; *c; c++) /* names are the file's bytes: one line, whatever they hold */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}
