/* marker/marker_config.c - what the marker library measures and how (marker_config.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "marker_config.h"
#include "marker_say.h"
#include "snapshot.h"

struct pm_config pm_cfg;

void pm_config_defaults(void)
{
	pm_cfg.pol = &pm_cfg.own_pol;
	pm_cfg.armed = pm_cfg.own_armed;
	pm_cfg.own_pol.on = 1;
	pm_cfg.own_pol.threshold = UINT64_MAX;
	memset(pm_cfg.own_armed, 1, sizeof pm_cfg.own_armed);
}

/* PERFSH_SAMPLE, PERFSH_EVERY, PERFSH_SLOW_US; -1 after a warning. */
static int read_policy(void)
{
	struct ps_mshm_policy *pol = &pm_cfg.own_pol;
	const char *s;
	char *end;

	if ((s = getenv("PERFSH_SAMPLE")) && *s) {
		double p = strtod(s, &end);

		if (*end || !(p > 0 && p <= 1)) {
			pm_warn("PERFSH_SAMPLE=%s: give a probability in (0, 1], e.g. 0.01; markers are off", s);
			return -1;
		}
		pol->sampled = p < 1;
		pol->threshold = p >= 1 ? UINT64_MAX : (uint64_t)ldexp(p, 64);
	}
	if ((s = getenv("PERFSH_EVERY")) && *s) {
		unsigned long long n = strtoull(s, &end, 10);

		if (*end || n == 0 || *s == '-') {
			pm_warn("PERFSH_EVERY=%s: give a count >= 1 (record every Nth hit); markers are off", s);
			return -1;
		}
		if (pol->sampled) {
			pm_warn("PERFSH_SAMPLE and PERFSH_EVERY are both set: give one; markers are off");
			return -1;
		}
		pol->every = n > 1 ? n : 0;
		pol->sampled |= n > 1;
	}
	if ((s = getenv("PERFSH_SLOW_US")) && *s) {
		double us = strtod(s, &end);

		if (*end || !(us >= 0) || us > 1e12) {
			pm_warn("PERFSH_SLOW_US=%s: give microseconds >= 0; markers are off", s);
			return -1;
		}
		pol->slow_ns = (uint64_t)(us * 1000);
	}
	return 0;
}

int pm_config_events(const char *list, struct ps_error *err)
{
	char buf[1024], *gsave = NULL;

	if (strlen(list) >= sizeof buf)
		return ps_error_set(err, PS_EUSAGE, "the event list is too long");
	strcpy(buf, list);
	pm_cfg.nev = pm_cfg.ngroups = 0;
	for (char *g = strtok_r(buf, ";", &gsave); g; g = strtok_r(NULL, ";", &gsave)) {
		char *save = NULL;
		int first = pm_cfg.nev;

		if (pm_cfg.ngroups == PM_GROUPS)
			return ps_error_set(err, PS_EUSAGE, "at most %d groups", PM_GROUPS);
		for (char *e = strtok_r(g, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
			if (pm_cfg.nev == PS_MAX_EVENTS)
				return ps_error_set(err, PS_EUSAGE, "at most %d events", PS_MAX_EVENTS);
			if (ps_event_resolve(e, &pm_cfg.ev[pm_cfg.nev], err))
				return -1;
			pm_cfg.nev++;
		}
		if (pm_cfg.nev == first)
			return ps_error_set(err, PS_EUSAGE, "a group with no event");
		pm_cfg.gsize[pm_cfg.ngroups++] = pm_cfg.nev - first;
	}
	if (pm_cfg.nev == 0)
		return ps_error_set(err, PS_EUSAGE, "no event named");
	pm_cfg.nvals = pm_cfg.nev + 2 * (pm_cfg.ngroups - 1);
	if (pm_cfg.nvals > PS_MAX_EVENTS)
		return ps_error_set(err, PS_EUSAGE, "%d events in %d groups need %d counter words; at most %d",
				    pm_cfg.nev, pm_cfg.ngroups, pm_cfg.nvals, PS_MAX_EVENTS);
	return 0;
}

int pm_config_measure(struct ps_error *err)
{
	if (pm_choose_mode(pm_cfg.ev, pm_cfg.gsize[0], &pm_cfg.read, err))
		return -1;
	pm_cfg.recsize = ps_snap_size((unsigned)pm_cfg.nvals, PS_MARKER_FIELDS);
	return 0;
}

int pm_config_from_env(void)
{
	const char *s = getenv("PERFSH_EVENTS");
	struct ps_error err;

	if (read_policy())
		return -1;
	if (!s || !*s)
		s = ps_pmu_present() ? "cycles,instructions" : "task-clock,page-faults";
	if (pm_config_events(s, &err)) {
		pm_warn("PERFSH_EVENTS: %s; markers are off", err.msg);
		return -1;
	}
	if (pm_cfg.ngroups > 1) {
		pm_warn("PERFSH_EVENTS: one group of events, comma-separated (no ';'); markers are off");
		return -1;
	}
	if (pm_config_measure(&err)) {
		pm_warn("%s; markers are off", err.msg);
		return -1;
	}
	return 0;
}
