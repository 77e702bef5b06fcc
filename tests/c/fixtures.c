/* tests/c/fixtures.c - where the C tests find tests/fixtures/. */
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols.h"
#include "uprobe.h"

const char *fixtures_dir(const char *probe_name)
{
	static char dir[600];
	const char *env = getenv("PS_FIXTURES"), *slash = strrchr(__FILE__, '/');
	char exe[512], probe[700], *p;
	ssize_t n;

	if (env)
		return env;
	if (dir[0])
		return dir;
	snprintf(dir, sizeof dir, "%.*s/../fixtures", slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	snprintf(probe, sizeof probe, "%s/%s", dir, probe_name);
	if (access(probe, R_OK) == 0 || (n = readlink("/proc/self/exe", exe, sizeof exe - 1)) < 0)
		return dir;
	exe[n] = '\0';
	while ((p = strrchr(exe, '/')) && p != exe) {
		*p = '\0';
		snprintf(probe, sizeof probe, "%s/tests/fixtures/%s", exe, probe_name);
		if (access(probe, R_OK) == 0) {
			snprintf(dir, sizeof dir, "%s/tests/fixtures", exe);
			break;
		}
	}
	return dir;
}

static char tmpdir[] = "/tmp/perfsh-testXXXXXX";
static int made; /* the name may contain an X, so a flag says it exists */

static void remove_tmpdir(void)
{
	char cmd[64];

	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

const char *fixtures_tmpdir(void)
{
	if (!made) {
		if (!mkdtemp(tmpdir))
			return NULL;
		made = 1;
		atexit(remove_tmpdir);
	}
	return tmpdir;
}

char *fixtures_first_line(char *buf, size_t n, const char *cmd)
{
	FILE *f;

	buf[0] = '\0';
	if (!(f = popen(cmd, "r")))
		return buf;
	if (!fgets(buf, (int)n, f))
		buf[0] = '\0';
	pclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

const char *fixtures_cc(const char *src, const char *name, const char *flags)
{
	static struct {
		char name[64], path[600];
		int ok;
	} built[32];
	static int nbuilt;
	char cmd[1600];
	const char *tmp = fixtures_tmpdir();
	int i;

	for (i = 0; i < nbuilt; i++)
		if (!strcmp(built[i].name, name))
			return built[i].ok ? built[i].path : NULL;
	if (!tmp || nbuilt == (int)(sizeof built / sizeof built[0]))
		return NULL;
	snprintf(built[i].name, sizeof built[i].name, "%s", name);
	snprintf(built[i].path, sizeof built[i].path, "%s/%s", tmp, name);
	snprintf(cmd, sizeof cmd, "cc %s %s/%s -o %s", flags, fixtures_dir(src), src, built[i].path);
	built[i].ok = system(cmd) == 0;
	nbuilt++;
	return built[i].ok ? built[i].path : NULL;
}

const char *fixtures_uprobe_skip(const char *prog, char *why, size_t n)
{
	if (!ps_uprobe_available(why, n))
		return why;
	if (access(prog, X_OK)) {
		snprintf(why, n, "%s is not built (make)", prog);
		return why;
	}
	return NULL;
}

uint64_t fixtures_addr_of(const char *prog, const char *fn)
{
	struct ps_symtab *st;
	const struct ps_sym *s;
	struct ps_error err;
	uint64_t a = 0;

	if (ps_sym_open(&st, prog, &err) < 0)
		return 0;
	if (ps_sym_lookup(st, fn, &s, &err) == 0)
		a = s->addr;
	ps_sym_close(st);
	return a;
}
