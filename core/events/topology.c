/* core/events/topology.c - CPU topology read from sysfs (/sys/devices/system/cpu).
 *
 * Read by hand rather than through hwloc (2.9): this reads a few id files in well under a
 * millisecond where hwloc_topology_load() takes tens, takes any directory as @root where hwloc
 * takes a whole file-system root (HWLOC_FSROOT) and needs the cpumask files too, and reports only
 * what the kernel says: hwloc drops a die that holds its whole package and, without sysfs cache
 * directories, takes caches from CPUID, which a virtual CPU may make up.
 */
#include "topology.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CPU_NUMBER (1 << 22) /* far above any kernel's NR_CPUS; bounds a hostile list */
#define MAX_CACHE_INDEX 32

/* Read the small text file @path into @buf (NUL-terminated).  0, or -1 with errno. */
static int read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t len;
	int bad;

	if (!f)
		return -1;
	len = fread(buf, 1, size - 1, f);
	bad = ferror(f);
	fclose(f);
	if (bad) {
		errno = EIO;
		return -1;
	}
	buf[len] = '\0';
	return 0;
}

/* The integer in @path, or -1 when it is missing or is not one. */
static int read_int(const char *path)
{
	char buf[64], *end;
	long v;

	if (read_text(path, buf, sizeof buf))
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (end == buf || errno || v < -1 || v > MAX_CPU_NUMBER)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	return *end ? -1 : (int)v;
}

/* Parse a non-negative number at *@p; -1 when there is none or it is too large. */
static int parse_num(const char **p)
{
	long v = 0;

	if (!isdigit((unsigned char)**p))
		return -1;
	while (isdigit((unsigned char)**p)) {
		v = v * 10 + (**p - '0');
		if (v > MAX_CPU_NUMBER)
			return -1;
		(*p)++;
	}
	return (int)v;
}

int ps_topo_parse_list(const char *s, int *cpus, int max)
{
	const char *p = s;
	int n = 0;

	while (isspace((unsigned char)*p))
		p++;
	if (!*p)
		return 0;
	for (;;) {
		int a = parse_num(&p), b = a;

		if (a < 0)
			return -1;
		if (*p == '-') {
			p++;
			b = parse_num(&p);
			if (b < a)
				return -1;
		}
		for (int c = a; c <= b; c++, n++)
			if (cpus && n < max)
				cpus[n] = c;
		if (*p != ',')
			break;
		p++;
	}
	while (isspace((unsigned char)*p))
		p++;
	return *p ? -1 : n;
}

/* The L3 domain of @cpu: the id of its level-3 cache, else the first CPU sharing it; -1. */
static int read_l3(const char *root, int cpu)
{
	char path[4096], buf[4096];

	for (int k = 0; k < MAX_CACHE_INDEX; k++) {
		int id, first;

		snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/level", root, cpu, k);
		if (read_int(path) != 3)
			continue;
		snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/id", root, cpu, k);
		if ((id = read_int(path)) >= 0)
			return id;
		snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/shared_cpu_list", root, cpu, k);
		if (read_text(path, buf, sizeof buf) == 0 && ps_topo_parse_list(buf, &first, 1) >= 1)
			return first;
		return -1;
	}
	return -1;
}

static int read_topo_field(const char *root, int cpu, const char *name)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/cpu%d/topology/%s", root, cpu, name);
	return read_int(path);
}

int ps_topo_read(const char *root, struct ps_topo_cpu **out, int *n, struct ps_error *err)
{
	char path[4096], *buf;
	int *cpus = NULL, count;
	struct ps_topo_cpu *t = NULL;
	const size_t bufsize = 1 << 16;

	*out = NULL;
	*n = 0;
	if (!root)
		root = PS_TOPO_SYSFS;
	buf = malloc(bufsize);
	if (!buf)
		return ps_error_set(err, ENOMEM, "topology: out of memory");
	snprintf(path, sizeof path, "%s/online", root);
	if (read_text(path, buf, bufsize)) {
		ps_error_set(err, errno, "topology: cannot read %s: %s", path, strerror(errno));
		goto fail;
	}
	count = ps_topo_parse_list(buf, NULL, 0);
	if (count < 1) {
		buf[strcspn(buf, "\n")] = '\0';
		ps_error_set(err, EINVAL, "topology: %s is not a CPU list: '%.64s'", path, buf);
		goto fail;
	}
	cpus = malloc((size_t)count * sizeof *cpus);
	t = malloc((size_t)count * sizeof *t);
	if (!cpus || !t) {
		ps_error_set(err, ENOMEM, "topology: out of memory for %d CPUs", count);
		goto fail;
	}
	ps_topo_parse_list(buf, cpus, count);
	for (int i = 0; i < count; i++) {
		int c = cpus[i];

		t[i].cpu = c;
		t[i].package = read_topo_field(root, c, "physical_package_id");
		t[i].die = read_topo_field(root, c, "die_id");
		t[i].core = read_topo_field(root, c, "core_id");
		t[i].l3 = read_l3(root, c);
	}
	free(buf);
	free(cpus);
	*out = t;
	*n = count;
	return 0;
fail:
	free(buf);
	free(cpus);
	free(t);
	return -1;
}
