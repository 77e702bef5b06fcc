/* core/events/sysfs_pmu.c - the pmu/term=value,.../ syntax, from the kernel's format files.
 *
 * A format file reads like "config:0-7,21" or "config1:0-63": the term's bits, possibly in
 * several pieces, in config, config1 or config2. An events/NAME file holds terms, e.g.
 * "event=0xc0,umask=0x0".
 */
#include "sysfs_pmu.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suggest.h"

static const char *root_dir = PS_SYSFS_ROOT;

void ps_sysfs_set_root(const char *dir)
{
	root_dir = dir ? dir : PS_SYSFS_ROOT;
}

const char *ps_sysfs_root(void)
{
	return root_dir;
}

static int read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, (int)n, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Place @val into the bits that format @fmt describes ("config:0-7,21"). */
static int apply_format(const char *fmt, uint64_t val, struct perf_event_attr *attr)
{
	__u64 *dst;
	const char *p;

	if (!strncmp(fmt, "config1:", 8))
		dst = &attr->config1, p = fmt + 8;
	else if (!strncmp(fmt, "config2:", 8))
		dst = &attr->config2, p = fmt + 8;
	else if (!strncmp(fmt, "config:", 7))
		dst = &attr->config, p = fmt + 7;
	else
		return -1;
	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;
		if (end == p)
			return -1;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (lo < 0 || hi > 63 || hi < lo)
			return -1;
		int width = (int)(hi - lo + 1);
		uint64_t mask = width == 64 ? ~0ULL : ((1ULL << width) - 1);
		*dst = (*dst & ~(mask << lo)) | ((val & mask) << lo);
		if (width < 64)
			val >>= width;
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return 0;
}

/* A name between the slashes that is neither an event nor a term: the PMU's closest events. */
static int unknown_name(const char *root, const char *pmu, const char *tok, const char *spec, struct ps_error *err)
{
	char path[1024], out[3][128], text[512], cand[300];
	struct ps_suggest s;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof path, "%s/%s/events", root, pmu);
	ps_suggest_init(&s, tok, out, 3);
	if ((d = opendir(path))) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && !strchr(e->d_name, '.'))
				ps_suggest_add(&s, e->d_name);
		closedir(d);
	}
	for (int i = 0; i < s.n; i++)
		if (snprintf(cand, sizeof cand, "%s/%s/", pmu, out[i]) < (int)sizeof out[i])
			memcpy(out[i], cand, strlen(cand) + 1);
	ps_suggest_text(&s, text, sizeof text);
	if (s.n == 0)
		return ps_error_set(err, PS_EUSAGE,
				    "event '%s': PMU '%s' has no term or event '%s' (see %s/%s/format and events)",
				    spec, pmu, tok, root, pmu);
	return ps_error_set(err, PS_EUSAGE, "event '%s': PMU '%s' has no event '%s'%s", spec, pmu, tok, text);
}

/* Apply a comma-separated term list to @attr; @depth counts the named events expanded on the way
   (an event defined by itself, or a loop of them, would not end). */
static int apply_terms(const char *root, const char *pmu, const char *terms, struct perf_event_attr *attr,
		       const char *spec, int depth, struct ps_error *err)
{
	char buf[512], path[1024], fmt[256];

	snprintf(buf, sizeof buf, "%s", terms);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		uint64_t val = 1;
		if (eq) {
			char *end;
			*eq = '\0';
			errno = 0;
			val = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end)
				return ps_error_set(err, PS_EUSAGE, "event '%s': bad value '%s' for '%s'", spec, eq + 1,
						    tok);
		}
		/* An event name inside the slashes ("cpu/cycles/"). */
		snprintf(path, sizeof path, "%s/%s/events/%s", root, pmu, tok);
		if (!eq && read_line(path, fmt, sizeof fmt) == 0) {
			if (depth >= 8)
				return ps_error_set(err, PS_EUSAGE,
						    "event '%s': event '%s' of PMU '%s' is defined by itself", spec,
						    tok, pmu);
			if (apply_terms(root, pmu, fmt, attr, spec, depth + 1, err))
				return -1;
			continue;
		}
		snprintf(path, sizeof path, "%s/%s/format/%s", root, pmu, tok);
		if (read_line(path, fmt, sizeof fmt)) {
			if (!eq)
				return unknown_name(root, pmu, tok, spec, err);
			return ps_error_set(
			    err, PS_EUSAGE,
			    "event '%s': PMU '%s' has no term or event '%s' (see %s/%s/format and events)", spec, pmu,
			    tok, root, pmu);
		}
		if (apply_format(fmt, val, attr))
			return ps_error_set(err, PS_EUSAGE, "event '%s': cannot read format '%s' of term '%s'", spec,
					    fmt, tok);
	}
	return 0;
}

int ps_sysfs_parse(const char *root, const char *spec, struct perf_event_attr *attr, struct ps_error *err)
{
	char pmu[128], path[1024], line[64], body[512];
	const char *s1 = strchr(spec, '/'), *s2;
	size_t len;

	if (!s1 || s1 == spec || !(s2 = strchr(s1 + 1, '/')))
		return ps_error_set(err, PS_ENOTFOUND, "not a pmu/.../ event");
	len = (size_t)(s1 - spec);
	if (len >= sizeof pmu || (size_t)(s2 - s1 - 1) >= sizeof body)
		return ps_error_set(err, PS_ENOTFOUND, "name too long");
	memcpy(pmu, spec, len);
	pmu[len] = '\0';
	memcpy(body, s1 + 1, (size_t)(s2 - s1 - 1));
	body[s2 - s1 - 1] = '\0';
	snprintf(path, sizeof path, "%s/%s/type", root, pmu);
	if (read_line(path, line, sizeof line))
		return ps_error_set(err, PS_ENOTFOUND, "no PMU '%s' in %s", pmu, root);
	memset(attr, 0, sizeof *attr);
	attr->size = sizeof *attr;
	attr->type = (uint32_t)strtoul(line, NULL, 10);
	if (!body[0])
		return ps_error_set(err, PS_EUSAGE, "event '%s': nothing between the slashes", spec);
	if (apply_terms(root, pmu, body, attr, spec, 0, err))
		return -1;
	/* Modifiers after the closing slash: u, k, h. Default: user space only. */
	const char *mods = s2 + 1;
	if (*mods == ':')
		mods++;
	if (!*mods) {
		attr->exclude_kernel = 1;
		attr->exclude_hv = 1;
		return 0;
	}
	attr->exclude_user = attr->exclude_kernel = attr->exclude_hv = 1;
	for (; *mods; mods++) {
		switch (*mods) {
		case 'u':
			attr->exclude_user = 0;
			break;
		case 'k':
			attr->exclude_kernel = 0;
			break;
		case 'h':
			attr->exclude_hv = 0;
			break;
		default:
			return ps_error_set(err, PS_EUSAGE, "event '%s': unknown modifier '%c' (use u, k or h)", spec,
					    *mods);
		}
	}
	return 0;
}

int ps_sysfs_foreach(const char *root, ps_sysfs_cb cb, void *ud)
{
	DIR *d = opendir(root);
	struct dirent *pe;
	int rc = 0;

	if (!d)
		return 0;
	while (!rc && (pe = readdir(d))) {
		char path[1024], terms[512];
		DIR *ed;
		struct dirent *ee;

		if (pe->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/events", root, pe->d_name);
		if (!(ed = opendir(path)))
			continue;
		while (!rc && (ee = readdir(ed))) {
			char file[1400];
			if (ee->d_name[0] == '.' || strchr(ee->d_name, '.'))
				continue; /* skip .unit, .scale and friends */
			snprintf(file, sizeof file, "%s/%s", path, ee->d_name);
			if (read_line(file, terms, sizeof terms) == 0)
				rc = cb(pe->d_name, ee->d_name, terms, ud);
		}
		closedir(ed);
	}
	closedir(d);
	return rc;
}

static int pmu_entry(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

int ps_sysfs_pmu_names(const char *root, char (*out)[64], unsigned *types, int max)
{
	struct dirent **list;
	int n = scandir(root, &list, pmu_entry, alphasort), k = 0;

	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		char path[1024], line[32];

		snprintf(path, sizeof path, "%s/%s/type", root, list[i]->d_name);
		if (k < max && strlen(list[i]->d_name) < 64 && read_line(path, line, sizeof line) == 0) {
			memcpy(out[k], list[i]->d_name, strlen(list[i]->d_name) + 1);
			if (types)
				types[k] = (unsigned)strtoul(line, NULL, 10);
			k++;
		}
		free(list[i]);
	}
	free(list);
	return k;
}

int ps_sysfs_pmu_is_core(const char *pmu)
{
	return !strcmp(pmu, "cpu") || !strcmp(pmu, "cpu_core") || !strcmp(pmu, "cpu_atom") ||
	       !strncmp(pmu, "armv", 4) || strstr(pmu, "pmuv3") != NULL;
}
