/* tests/c/test_topology.c - CPU topology from a fake sysfs tree and from the real one. */
#include "ctest.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topology.h"

TEST(topo_parse_list)
{
	static const struct {
		const char *in;
		int n;
		int first, last; /* of the stored CPUs, when n > 0 */
	} rows[] = {
		{"0-3,8-11\n", 8, 0, 11}, {"", 0, 0, 0},    {"\n", 0, 0, 0},   {"5", 1, 5, 5},
		{"0,2,4-5", 4, 0, 5},     {"7-7", 1, 7, 7}, {"3-1", -1, 0, 0}, {"a", -1, 0, 0},
		{"0-3,", -1, 0, 0},       {"0,,1", -1, 0, 0}, {"1-", -1, 0, 0}, {"-1", -1, 0, 0},
		{"0 1", -1, 0, 0},        {"99999999", -1, 0, 0},
	};
	int cpus[16];

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int n = ps_topo_parse_list(rows[i].in, cpus, 16);
		if (n != rows[i].n)
			fprintf(stderr, "  row %zu '%s': %d CPUs, want %d\n", i, rows[i].in, n, rows[i].n);
		CHECK_EQ_INT(n, rows[i].n);
		if (n > 0 && n == rows[i].n) {
			CHECK_EQ_INT(cpus[0], rows[i].first);
			CHECK_EQ_INT(cpus[n - 1], rows[i].last);
		}
	}
	/* counting only, and a list longer than the room given */
	CHECK_EQ_INT(ps_topo_parse_list("0-1023", NULL, 0), 1024);
	CHECK_EQ_INT(ps_topo_parse_list("0-3,8-11", cpus, 5), 8);
	CHECK_EQ_INT(cpus[4], 8);
}

static char fake[] = "/tmp/perfsh-topoXXXXXX";

/* Write @text to @root/@rel, making the directories on the way. */
static int put(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void rm_fake(void)
{
	char cmd[64];

	snprintf(cmd, sizeof cmd, "rm -rf %s", fake);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", fake);
}

/*
 * Two packages of four cores with two threads each, numbered as Linux does: cpu0-3 and
 * cpu8-11 are package 0 (cpuN and cpuN+8 are SMT siblings), cpu4-7 and 12-15 package 1.
 * Package 0 has die_id and an L3 id; package 1 has neither, so its L3 domain comes from
 * shared_cpu_list.  cpu13 is offline, cpu15 has no topology or cache directory, and the
 * cache indexes skip index2.
 */
static int build_fake(void)
{
	char rel[128], val[32];
	int rc = 0;

	if (!mkdtemp(fake))
		return -1;
	rc |= put(fake, "online", "0-12,14-15\n");
	for (int c = 0; c < 15; c++) {
		int pkg = (c % 8) / 4, core = c % 4;
		const char *l3list = pkg ? "4-7,12-15\n" : "0-3,8-11\n";

		snprintf(val, sizeof val, "%d\n", pkg);
		snprintf(rel, sizeof rel, "cpu%d/topology/physical_package_id", c);
		rc |= put(fake, rel, val);
		snprintf(val, sizeof val, "%d\n", core);
		snprintf(rel, sizeof rel, "cpu%d/topology/core_id", c);
		rc |= put(fake, rel, val);
		if (pkg == 0) {
			snprintf(rel, sizeof rel, "cpu%d/topology/die_id", c);
			rc |= put(fake, rel, "0\n");
			snprintf(rel, sizeof rel, "cpu%d/cache/index3/id", c);
			rc |= put(fake, rel, "0\n");
		}
		snprintf(rel, sizeof rel, "cpu%d/cache/index0/level", c);
		rc |= put(fake, rel, "1\n");
		snprintf(rel, sizeof rel, "cpu%d/cache/index0/shared_cpu_list", c);
		snprintf(val, sizeof val, "%d,%d\n", c % 8, c % 8 + 8);
		rc |= put(fake, rel, val);
		snprintf(rel, sizeof rel, "cpu%d/cache/index1/level", c);
		rc |= put(fake, rel, "2\n");
		snprintf(rel, sizeof rel, "cpu%d/cache/index3/level", c);
		rc |= put(fake, rel, "3\n");
		snprintf(rel, sizeof rel, "cpu%d/cache/index3/shared_cpu_list", c);
		rc |= put(fake, rel, l3list);
	}
	return rc ? -1 : 0;
}

TEST(topo_fake_tree)
{
	static const struct ps_topo_cpu want[] = {
		/* cpu package die core l3 */
		{0, 0, 0, 0, 0},  {1, 0, 0, 1, 0},  {2, 0, 0, 2, 0},    {3, 0, 0, 3, 0},
		{4, 1, -1, 0, 4}, {5, 1, -1, 1, 4}, {6, 1, -1, 2, 4},   {7, 1, -1, 3, 4},
		{8, 0, 0, 0, 0},  {9, 0, 0, 1, 0},  {10, 0, 0, 2, 0},   {11, 0, 0, 3, 0},
		{12, 1, -1, 0, 4}, {14, 1, -1, 2, 4}, {15, -1, -1, -1, -1},
	};
	struct ps_topo_cpu *t = NULL;
	struct ps_error err = {0};
	int n = 0;

	if (build_fake()) {
		rm_fake();
		SKIP("cannot build a fake sysfs tree in /tmp");
	}
	CHECK(ps_topo_read(fake, &t, &n, &err) == 0);
	CHECK_EQ_INT(n, 15);
	for (int i = 0; t && i < n && i < 15; i++) {
		CHECK_EQ_INT(t[i].cpu, want[i].cpu);
		CHECK_EQ_INT(t[i].package, want[i].package);
		CHECK_EQ_INT(t[i].die, want[i].die);
		CHECK_EQ_INT(t[i].core, want[i].core);
		CHECK_EQ_INT(t[i].l3, want[i].l3);
	}
	free(t);
	/* a bad online list */
	CHECK(put(fake, "online", "0-3,x\n") == 0);
	CHECK(ps_topo_read(fake, &t, &n, &err) == -1);
	CHECK(t == NULL && n == 0);
	CHECK_EQ_INT(err.code, EINVAL);
	CHECK(strstr(err.msg, "is not a CPU list: '0-3,x'") != NULL);
	rm_fake();
	/* no tree at all */
	CHECK(ps_topo_read(fake, &t, &n, &err) == -1);
	CHECK_EQ_INT(err.code, ENOENT);
	CHECK(strstr(err.msg, "/online: No such file or directory") != NULL);
}

TEST(topo_real_machine)
{
	struct ps_topo_cpu *t = NULL;
	struct ps_error err = {0};
	int n = 0;

	if (access(PS_TOPO_SYSFS "/online", R_OK))
		SKIP("no %s/online", PS_TOPO_SYSFS);
	CHECK(ps_topo_read(NULL, &t, &n, &err) == 0);
	CHECK_EQ_INT(n, sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 0; t && i < n; i++) {
		if (i)
			CHECK(t[i].cpu > t[i - 1].cpu);
		CHECK(t[i].package >= -1 && t[i].core >= -1 && t[i].die >= -1 && t[i].l3 >= -1);
	}
	free(t);
}
