/* core/catch/marker/inproc_site.c - the agent preloaded, and the sites it is given checked
 * before the program runs (inproc_site.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inproc_lib.h"
#include "inproc_site.h"
#include "procmaps.h"
#include "sitereloc.h"
#include "symbols.h"

#define AGENT "libperfsh-agent.so"

/* The agent: PERFSH_AGENT, or beside perfsh (the source tree's build/lib, or PREFIX/lib). */
static int find_agent(char *out, size_t n)
{
	static const char *const rel[] = {"/build/lib/", "/../build/lib/", "/lib/", "/../lib/"};
	const char *env = getenv("PERFSH_AGENT");
	char exe[PATH_MAX];
	ssize_t k;

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return access(out, R_OK);
	}
	if ((k = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		return -1;
	exe[k] = '\0';
	*strrchr(exe, '/') = '\0';
	for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		char p[PATH_MAX];

		if ((size_t)snprintf(p, sizeof p, "%s%s%s", exe, rel[i], AGENT) < sizeof p && realpath(p, out) &&
		    access(out, R_OK) == 0)
			return 0;
	}
	return -1;
}

int ps_inproc_agent(char *out, size_t n, struct ps_error *err)
{
	if (find_agent(out, n))
		return ps_error_set(err, PS_EUSAGE,
				    "--backend inproc: %s not found beside perfsh (set PERFSH_AGENT to it, or use "
				    "--backend uprobe)",
				    AGENT);
	return 0;
}

int ps_inproc_available(char *why, size_t n)
{
	char agent[PATH_MAX];

	if (find_agent(agent, sizeof agent) == 0)
		return 1;
	snprintf(why, n, "%s not found beside perfsh", AGENT);
	return 0;
}

int ps_inproc_env_set(struct ps_inproc_env *save, struct ps_error *err)
{
	const char *was = getenv("LD_PRELOAD");
	char agent[PATH_MAX], *list;

	save->preload = NULL;
	if (ps_inproc_agent(agent, sizeof agent, err))
		return -1;
	if (was && !(save->preload = strdup(was)))
		return ps_error_set(err, ENOMEM, "out of memory");
	if (asprintf(&list, "%s%s%s", agent, was && *was ? ":" : "", was ? was : "") < 0) {
		ps_inproc_env_restore(save);
		return ps_error_set(err, ENOMEM, "out of memory");
	}
	setenv("LD_PRELOAD", list, 1);
	free(list);
	if (was)
		setenv("PERFSH_PRELOAD_WAS", save->preload, 1);
	return 0;
}

void ps_inproc_env_restore(struct ps_inproc_env *save)
{
	if (save->preload)
		setenv("LD_PRELOAD", save->preload, 1);
	else
		unsetenv("LD_PRELOAD");
	unsetenv("PERFSH_PRELOAD_WAS");
	free(save->preload);
	save->preload = NULL;
}

/* Not yet: one line, and what measures it instead. */
#define NOT_YET(err, name, what)                                                                                       \
	ps_error_set(err, PS_ENEEDS_UPROBE, "region '%s': %s; use --backend uprobe", name, what)

/* The program's own file: @path is what /proc/PID/exe names, with a dynamic loader mapped. */
static int own_file(pid_t pid, const char *path, const char *name, struct ps_error *err)
{
	char proc[64], exe[PATH_MAX], ld[PATH_MAX];
	struct ps_error e;
	ssize_t k;

	snprintf(proc, sizeof proc, "/proc/%d/exe", (int)pid);
	if ((k = readlink(proc, exe, sizeof exe - 1)) <= 0)
		return ps_error_set(err, errno, "%s: %s", proc, strerror(errno));
	exe[k] = '\0';
	if (strcmp(exe, path))
		return NOT_YET(err, name,
			       "--backend inproc patches the program's own functions, not yet a shared "
			       "library's");
	if (ps_maps_find(pid, "ld-linux", PS_MAPS_PREFIX, ld, sizeof ld, &e))
		return NOT_YET(err, name, "a static program has no dynamic loader to preload the in-process agent");
	if (ps_lib_resolve(pid, "libasan", ld, sizeof ld, &e) == 0 ||
	    ps_lib_resolve(pid, "libtsan", ld, sizeof ld, &e) == 0)
		return NOT_YET(err, name,
			       "a program built with a sanitizer wants its runtime loaded before the in-process agent");
	return 0;
}

/* Whether @p is a point of a range region (its start or end at an address of the program). */
static int is_point(const struct ps_catch_point *p)
{
	return !p->path && p->bp_kind == PS_BP_ADDR && (p->role == PS_ROLE_START || p->role == PS_ROLE_END);
}

/* Where a site's entry or point is in its function @sym, checked: 0, or -1 with @err (one line). */
static int site_checks(const struct ps_catch_env *env, const struct ps_catch_point *p, const char *name,
		       const struct ps_symtab *st, const struct ps_sym *sym, uint64_t bias, int point,
		       struct ps_error *err)
{
	const struct ps_sym *any;

	if (!point && env->unwinds == 1 && ps_sym_lookup(st, "_Unwind_RaiseException", &any, NULL) == 0)
		return NOT_YET(
		    err, name,
		    "the program has an unwinder of its own linked in (not libgcc_s's), which the in-process "
		    "agent cannot interpose");
	if (!point && (!sym || sym->addr != p->addr - bias || !sym->size))
		return NOT_YET(err, name, "its entry has no function symbol with a size to patch from");
	if (point && (!sym || !sym->size))
		return NOT_YET(err, name, "no function symbol with a size holds its code");
	return 0;
}

int ps_inproc_site(const struct ps_catch_env *env, pid_t pid, const struct ps_catch_point *p, struct ps_mshm_site *out,
		   struct ps_error *err)
{
	const char *name = p->region >= 0 ? env->reg[p->region].spec : "";
	int point = is_point(p), rc = -1;
	struct ps_symtab *st = NULL;
	const struct ps_sym *sym;
	struct ps_x86_reloc r;
	char path[PATH_MAX];
	uint64_t off, bias;

	if (p->region < 0)
		return 1; /* the session's watch of the unwinder: a program that unwinds is refused below */
	if (!point && p->path && p->role == PS_ROLE_ENTRY)
		return ps_inproc_lib_site(env, pid, p, out, err);
	if (p->path || (!point && (p->role != PS_ROLE_ENTRY || p->bp_kind != PS_BP_FUNC)))
		return NOT_YET(err, name,
			       p->path
				   ? "--backend inproc measures a shared library's functions, not yet its line ranges"
				   : "--backend inproc measures functions and line ranges, not yet single addresses");
	if (ps_maps_file_offset(pid, p->addr, path, sizeof path, &off, err) || own_file(pid, path, name, err))
		return -1;
	if (ps_maps_bias(pid, path, &bias, err) || ps_sym_open(&st, path, err))
		return -1;
	sym = ps_sym_by_addr(st, p->addr - bias);
	if (site_checks(env, p, name, st, sym, bias, point, err) == 0) {
		if (ps_site_reloc(path, p->addr - bias, bias, 5, p->addr + (1u << 20), point ? PS_X86_RELOC_POINT : 0,
				  &r, err)) {
			char why[sizeof err->msg + 64];

			if (point)
				snprintf(why, sizeof why, "its %s at %s+0x%llx: %s",
					 p->role == PS_ROLE_START ? "start" : "end", sym->name,
					 (unsigned long long)(p->addr - bias - sym->addr), err->msg);
			else
				snprintf(why, sizeof why, "%s", err->msg);
			NOT_YET(err, name, why);
		} else {
			rc = 0;
		}
	}
	if (rc == 0) {
		memset(out, 0, sizeof *out);
		out->addr = p->addr;
		out->size = sym->size;
		out->fn = point ? sym->addr + bias : 0;
		out->patch = r.site;
		out->len = r.len;
		if (point)
			out->flags = p->role == PS_ROLE_START ? PS_MSHM_SITE_START : PS_MSHM_SITE_END;
		else
			out->flags = env->reg[p->region].flags & PS_REGION_EVERY_LEVEL ? PS_MSHM_SITE_EVERY_LEVEL : 0;
		snprintf(out->name, sizeof out->name, "%.127s", name);
	}
	ps_sym_close(st);
	return rc;
}
