/* core/session/session_regions.c - from names to breakpoints: functions (ELF symbols, shared
 * libraries, inlined copies) and line ranges (DWARF), re-resolved after exec. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codeaddr.h"
#include "procmaps.h"
#include "regionspec.h"
#include "session_priv.h"
#include "uprobe.h"

void ps__notice(struct ps_session *s, const char *fmt, ...)
{
	size_t len = strlen(s->notice);
	va_list ap;

	if (len + 2 >= sizeof s->notice)
		return;
	if (len)
		s->notice[len++] = '\n';
	va_start(ap, fmt);
	vsnprintf(s->notice + len, sizeof s->notice - len, fmt, ap);
	va_end(ap);
}

void ps__forget_images(struct ps_session *s)
{
	ps_sym_close(s->sym);
	ps_lines_close(s->lines);
	s->sym = NULL;
	s->lines = NULL;
	s->exe[0] = '\0';
}

/* The main executable's path, from /proc/PID/exe. */
int ps__exe_path(struct ps_session *s, struct ps_error *err)
{
	char link[64];
	ssize_t n;

	if (s->exe[0])
		return 0;
	snprintf(link, sizeof link, "/proc/%d/exe", (int)s->pid);
	n = readlink(link, s->exe, sizeof s->exe - 1);
	if (n < 0)
		return ps_error_set(err, errno, "%s: %s", link, strerror(errno));
	s->exe[n] = '\0';
	return 0;
}

static int symtab(struct ps_session *s, struct ps_error *err)
{
	if (s->sym)
		return 0;
	if (ps__exe_path(s, err))
		return -1;
	return ps_sym_open(&s->sym, s->exe, err);
}

/* Line tables are optional: NULL without an error when the binary has no DWARF. */
static struct ps_lines *lines(struct ps_session *s, struct ps_error *err)
{
	if (!s->lines && ps__exe_path(s, err) == 0)
		ps_lines_open(&s->lines, s->exe, err);
	return s->lines;
}

static uint64_t main_bias(struct ps_session *s)
{
	uint64_t b = ps_tracer_load_bias(s->t, NULL);
	return b == PS_TRACER_NO_BIAS ? 0 : b;
}

/* Map breakpoint @addr (run time) to (@region, @role), adding the breakpoint if new. */
int ps__bp_role(struct ps_session *s, uint64_t addr, int kind, int region, enum role_kind role, struct ps_error *err)
{
	int id;
	struct bpent *e;

	if (s->up)
		return ps__uprobe_role(s, addr, region, role, err);
	if ((id = ps_tracer_bp_add(s->t, addr, kind, err)) < 0)
		return -1;
	if (id >= s->nbps) {
		struct bpent *n = realloc(s->bps, (size_t)(id + 1) * sizeof *n);
		if (!n)
			return ps_error_set(err, ENOMEM, "out of memory");
		memset(n + s->nbps, 0, (size_t)(id + 1 - s->nbps) * sizeof *n);
		s->bps = n;
		s->nbps = id + 1;
	}
	e = &s->bps[id];
	for (int k = 0; k < e->nroles; k++)
		if (e->roles[k].region == region && e->roles[k].kind == role)
			return id;
	if (e->nroles == ROLES_PER_BP)
		return ps_error_set(err, PS_EUSAGE, "more than %d regions start or end at 0x%" PRIx64, ROLES_PER_BP,
				    addr);
	e->roles[e->nroles].region = region;
	e->roles[e->nroles].kind = role;
	e->nroles++;
	ps_tracer_bp_enable(s->t, id, 1, NULL);
	return id;
}

struct ps_region_info *ps__new_region(struct ps_session *s, enum ps_region_kind kind, const char *name,
				      const char *spec, unsigned flags, struct ps_error *err)
{
	struct ps_region_info *ri;

	if (s->nreg == PS_MAX_REGIONS) {
		ps_error_set(err, PS_EUSAGE, "at most %d regions", PS_MAX_REGIONS);
		return NULL;
	}
	ri = &s->reg[s->nreg];
	memset(ri, 0, sizeof *ri);
	ri->id = s->nreg;
	ri->kind = kind;
	ri->flags = flags;
	snprintf(ri->name, sizeof ri->name, "%s", name);
	snprintf(ri->spec, sizeof ri->spec, "%s", spec);
	return ri;
}

/* An IFUNC's symbol is its resolver: say so, with implementations the loader may pick. */
static int ifunc_error(const struct ps_symtab *st, const struct ps_sym *ifunc, const char *lib, struct ps_error *err)
{
	char list[300] = "";
	size_t len = strlen(ifunc->name);
	int n = 0;

	for (size_t i = 0; i < ps_sym_count(st) && n < 3; i++) {
		const struct ps_sym *c = ps_sym_at(st, i);
		/* glibc's naming: __memcpy_avx_unaligned_erms implements memcpy */
		if (!c->ifunc && !strncmp(c->name, "__", 2) && !strncmp(c->name + 2, ifunc->name, len) &&
		    c->name[2 + len] == '_') {
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s:%s", n ? ", " : "", lib,
				 c->name);
			n++;
		}
	}
	if (!n)
		return ps_error_set(err, PS_EUSAGE,
				    "%s is an IFUNC: the loader picks one of its implementations at run time, and %s "
				    "names none of them; measure the function that calls it instead",
				    ifunc->name, lib);
	return ps_error_set(err, PS_EUSAGE,
			    "%s is an IFUNC: the loader picks one of its implementations at run time; name that one, "
			    "e.g. %s",
			    ifunc->name, list);
}

/* A probe may go at link-time address @addr of the main executable (core/binary/codeaddr.h). */
static int code_addr(struct ps_session *s, uint64_t addr, unsigned flags, struct ps_error *err)
{
	struct ps_error e2;

	if (ps__exe_path(s, err))
		return -1;
	return ps_code_check(s->exe, symtab(s, &e2) ? NULL : s->sym, addr, flags, err);
}

/* The run-time entry of function @fn in the main executable or in library @lib. 1 = found,
   0 = the library is not mapped yet, -1 = error. */
static int find_function(struct ps_session *s, const char *lib, const char *fn, uint64_t *addr, struct ps_error *err)
{
	const struct ps_sym *sym;

	if (lib) {
		char path[PATH_MAX];
		uint64_t bias;
		struct ps_symtab *st;
		struct ps_error e2;
		int rc;

		if (ps_sym_find_mapping(s->pid, lib, path, sizeof path, &bias, &e2))
			return 0;
		if (ps_sym_open(&st, path, err))
			return -1;
		rc = ps_sym_lookup(st, fn, &sym, err);
		if (rc == 0 && sym->ifunc)
			rc = ifunc_error(st, sym, lib, err);
		if (rc == 0)
			*addr = sym->addr + bias;
		ps_sym_close(st);
		return rc == 0 ? 1 : -1;
	}
	if (fn[0] == '0' && fn[1] == 'x') {
		char *end;
		*addr = strtoull(fn, &end, 16);
		if (*end)
			return ps_error_set(err, PS_EUSAGE, "bad address '%s'", fn);
		if (code_addr(s, *addr, PS_CODE_ENTRY, err))
			return -1;
		*addr += main_bias(s);
		return 1;
	}
	if (symtab(s, err) || ps_sym_lookup(s->sym, fn, &sym, err))
		return -1;
	*addr = sym->addr + main_bias(s);
	return 1;
}

/* Whether the program can unwind exceptions through its frames: an unwinder linked in, or a
   C++ runtime or libgcc_s among the libraries its loader will map. */
static int unwinds(struct ps_session *s)
{
	const struct ps_sym *sym;
	char path[PATH_MAX];
	struct ps_error e;

	if (s->unwinds < 0)
		s->unwinds = (symtab(s, &e) == 0 && ps_sym_lookup(s->sym, "_Unwind_RaiseException", &sym, NULL) == 0) ||
			     ps_lib_resolve(s->pid, "libgcc_s", path, sizeof path, &e) == 0 ||
			     ps_lib_resolve(s->pid, "libstdc++", path, sizeof path, &e) == 0;
	return s->unwinds;
}

/* The uprobe catcher probes files: a function of a library not mapped yet (the program is held
   before its first instruction) is found in the file its loader will map. */
static int lib_func_by_file(struct ps_session *s, struct ps_region_info *ri, const char *lib, const char *fn,
			    struct ps_error *err)
{
	char path[PATH_MAX];
	struct ps_symtab *st;
	const struct ps_sym *sym;
	uint64_t off = 0;
	int rc;

	if (ps_lib_resolve(s->pid, lib, path, sizeof path, err) || ps_sym_open(&st, path, err))
		return -1;
	rc = ps_sym_lookup(st, fn, &sym, err);
	if (rc == 0 && sym->ifunc)
		rc = ifunc_error(st, sym, lib, err);
	if (rc == 0)
		rc = ps_uprobe_file_offset(path, sym->addr, &off, err);
	ps_sym_close(st);
	return rc ? -1 : ps__uprobe_site(s, path, off, ri->id, PS_UPOINT_ENTRY, 0, err);
}

/* Arm a function region at its entry. */
static int arm_func(struct ps_session *s, struct ps_region_info *ri, uint64_t addr, struct ps_error *err)
{
	ri->addr = addr;
	ri->pending = 0;
	return ps__bp_role(s, addr, PS_BP_FUNC, ri->id, ROLE_ENTRY, err) < 0 ? -1 : 0;
}

/* A break at main() arms library regions once the dynamic loader has mapped the libraries. */
static int want_main(struct ps_session *s, struct ps_error *err)
{
	uint64_t addr;
	const struct ps_sym *sym;

	if (s->main_bp >= 0) {
		ps_tracer_bp_enable(s->t, s->main_bp, 1, NULL);
		return 0;
	}
	if (symtab(s, err) || ps_sym_lookup(s->sym, "main", &sym, NULL))
		return ps_error_set(err, PS_EUSAGE,
				    "the library is not mapped yet and %s has no 'main' to wait for; attach to the "
				    "running program instead (-p PID)",
				    s->exe);
	addr = sym->addr + main_bias(s);
	s->main_bp = ps__bp_role(s, addr, PS_BP_FUNC, -1, ROLE_MAIN, err);
	return s->main_bp < 0 ? -1 : 0;
}

/*
 * Returns are caught by swapping the return address for a trampoline, which a C++ or Rust
 * unwinder cannot read past. Breakpoints on the unwinder's entry points put the real
 * addresses back before it walks the stack; one on __cxa_begin_catch swaps them again for the
 * frames that are still alive. Armed once the libraries are mapped; a program without an
 * unwinder gets none.
 */
void ps__arm_unwind_hooks(struct ps_session *s)
{
	static const struct {
		const char *lib, *fn;
		enum role_kind role;
	} hooks[] = {
	    {"libgcc_s", "_Unwind_RaiseException", ROLE_UNWIND},
	    {"libgcc_s", "_Unwind_Resume_or_Rethrow", ROLE_UNWIND},
	    {"libgcc_s", "_Unwind_ForcedUnwind", ROLE_UNWIND},
	    {"libstdc++", "__cxa_begin_catch", ROLE_CATCH},
	};
	for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
		struct ps_error err;
		uint64_t addr;
		const struct ps_sym *sym;

		if (s->unwind_hooks & (1u << i))
			continue;
		/* linked in statically, or in the shared library */
		if (symtab(s, &err) == 0 && ps_sym_lookup(s->sym, hooks[i].fn, &sym, NULL) == 0 &&
		    !strcmp(sym->name, hooks[i].fn))
			addr = sym->addr + main_bias(s);
		else if (find_function(s, hooks[i].lib, hooks[i].fn, &addr, &err) != 1)
			continue;
		s->unwind_hooks |= 1u << i;
		if (ps__bp_role(s, addr, PS_BP_ADDR, -1, hooks[i].role, &err) < 0)
			ps__notice(s, "%s not watched (%s): an exception through a region may end the program",
				   hooks[i].fn, err.msg);
	}
}

/*
 * Arm what the libraries mapped so far allow: unwinder hooks and library regions. Called at
 * each change of the loaded libraries (the dynamic loader's _dl_debug_state, dlopen included),
 * or once at main() where the loader cannot be watched; @final drops what is still missing.
 */
int ps__arm_pending(struct ps_session *s, int final)
{
	ps__arm_unwind_hooks(s);
	for (int i = 0; i < s->nreg; i++) {
		struct ps_region_info *ri = &s->reg[i];
		char lib[256], fn[256];
		uint64_t addr;
		struct ps_error err;

		if (!ri->pending)
			continue;
		ps_sym_lib_split(ri->spec, lib, sizeof lib, fn, sizeof fn);
		int rc = find_function(s, lib, fn, &addr, &err);
		if (rc == 1 && arm_func(s, ri, addr, &err) == 0)
			continue;
		if (rc == 0 && !final)
			continue; /* not loaded yet */
		ri->pending = 0;
		ri->dropped = 1;
		snprintf(ri->why, sizeof ri->why, "%s", rc == 0 ? "its library was never mapped" : err.msg);
		ps__notice(s, "region '%s' dropped: %s", ri->name, ri->why);
	}
	return 0;
}

/* Each inlined copy of @fn becomes a range region: its entry to the end of each of its ranges. */
static int add_inlined(struct ps_session *s, const char *fn, unsigned flags, struct ps_error *err)
{
	struct ps_inline inl[64];
	struct ps_lines *l = lines(s, NULL);
	int n, added = 0;
	uint64_t bias = main_bias(s);

	if (!l)
		return 0;
	n = ps_lines_inlined(l, fn, inl, 64, err);
	if (n < 0)
		return 0; /* not a reason to refuse the out-of-line function */
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int k = 0; k < i; k++)
			seen |= inl[k].copy == inl[i].copy;
		if (seen)
			continue;
		char name[256];
		snprintf(name, sizeof name, "%s@inline#%d%s%s", fn, inl[i].copy, inl[i].caller ? " in " : "",
			 inl[i].caller ? inl[i].caller : "");
		struct ps_region_info *ri = ps__new_region(s, PS_REGION_RANGE, name, "", flags, err);
		if (!ri)
			return -1;
		ri->addr = inl[i].entry + bias;
		if (ps__bp_role(s, ri->addr, PS_BP_ADDR, ri->id, ROLE_START, err) < 0) {
			ps__notice(s, "inlined copy %s not armed: %s", name, err->msg);
			continue;
		}
		for (int k = i; k < n; k++)
			if (inl[k].copy == inl[i].copy &&
			    ps__bp_role(s, inl[k].hi + bias, PS_BP_ADDR, ri->id, ROLE_END, err) < 0)
				ps__notice(s, "inlined copy %s: an end not armed: %s", name, err->msg);
		s->nreg++;
		added++;
	}
	return added;
}

/*
 * Watch the libraries the program loads: a breakpoint on the dynamic loader's
 * _dl_debug_state, which it calls after each change of the link map (at start-up and at each
 * dlopen). Without a dynamic loader (a static program) main() stands in. What is mapped now
 * is armed at once.
 */
static int watch_loader(struct ps_session *s, struct ps_error *err)
{
	uint64_t addr;
	struct ps_error e;

	if (s->loader_bp < 0 && find_function(s, "ld-linux-x86-64.so.2", "_dl_debug_state", &addr, &e) == 1)
		s->loader_bp = ps__bp_role(s, addr, PS_BP_ADDR, -1, ROLE_LOAD, &e);
	ps__arm_pending(s, 0);
	if (s->loader_bp >= 0)
		return 0;
	return want_main(s, err);
}

static void watch_unwinder(struct ps_session *s)
{
	struct ps_error e;
	if (watch_loader(s, &e) < 0 && !s->unwind_hooks)
		ps__notice(s, "no dynamic loader and no main to wait for: exceptions through regions are not watched");
}

int ps_session_region_func(struct ps_session *s, const char *name, unsigned flags, struct ps_error *err)
{
	char lib[256], fn[256];
	int islib = ps_sym_lib_split(name, lib, sizeof lib, fn, sizeof fn);
	uint64_t addr = 0;
	struct ps_region_info *ri;
	int rc, first;

	if (ps__marker_only(s, name, err))
		return -1;
	if (islib < 0)
		return ps_error_set(err, PS_EUSAGE, "bad function name '%s'", name);
	if (s->up)
		flags |= PS_REGION_NO_INLINE; /* an inlined copy has no entry to probe */
	for (int i = 0; i < s->nreg; i++)
		if (s->reg[i].kind == PS_REGION_FUNC && !strcmp(s->reg[i].spec, name) && !s->reg[i].dropped &&
		    s->reg[i].flags == flags)
			return i; /* the same function twice is one region */
	rc = find_function(s, islib ? lib : NULL, islib ? fn : name, &addr, err);
	if (rc >= 0 && s->up && unwinds(s))
		return ps_error_set(err, PS_ENEEDS_PTRACE,
				    "region '%s': %s can unwind exceptions (C++, Rust), and an unwinder that meets the "
				    "return address a uretprobe put in place terminates the program; function regions "
				    "of it need the ptrace catcher (--backend ptrace)",
				    name, s->exe);
	if (rc < 0) {
		/* A function inlined everywhere has no symbol of its own but may have copies. */
		struct ps_error e2;
		int save = s->nreg;
		if (!islib && !(flags & PS_REGION_NO_INLINE) && add_inlined(s, name, flags, &e2) > 0)
			return save;
		return -1;
	}
	first = s->nreg;
	ri = ps__new_region(s, PS_REGION_FUNC, name, name, flags, err);
	if (!ri)
		return -1;
	if (rc == 0 && s->up) {
		if (lib_func_by_file(s, ri, lib, fn, err))
			return -1;
		s->nreg++;
		return first;
	}
	if (rc == 0) {
		ri->pending = 1;
		ri->addr = 0;
		s->nreg++;
		if (watch_loader(s, err)) {
			s->nreg--;
			return -1;
		}
		return first;
	}
	if (arm_func(s, ri, addr, err))
		return -1;
	s->nreg++;
	if (!islib && !(flags & PS_REGION_NO_INLINE) && add_inlined(s, name, flags, err) < 0)
		return -1;
	if (!s->up) /* the kernel's return probes need no help from the unwinder */
		watch_unwinder(s);
	return first;
}

/*
 * A range in one file: from its functions' control flow, arm only where a hit can start or
 * end (core/binary/lines_range.c). Return 0 when armed, 1 when the flow cannot be analysed (arm the
 * lines' first addresses), -1 on error.
 */
static int flow_range(struct ps_session *s, struct ps_region_info *ri, struct ps_lines *l, const char *file, int l1,
		      int l2, struct ps_error *err)
{
	struct ps_lines_range r = {.l1 = l1, .l2 = l2};
	uint64_t bias = main_bias(s);
	int n;

	if ((n = ps_lines_range_arms(l, file, &r, err)) == 0)
		snprintf(ri->reading, sizeof ri->reading,
			 "hits run from each start of line %d to the next of line %d (its code was not decoded)", l1,
			 l2);
	if (n <= 0)
		return n < 0 ? -1 : 1;
	if (r.l1 != l1)
		ps__notice(s, "%s: line %d has no code; the range starts at line %d", ri->name, l1, r.l1);
	if (r.l2 != l2)
		ps__notice(s, "%s: line %d has no code; the range ends at line %d", ri->name, l2, r.l2);
	ri->addr = r.arm[n - 1].addr + bias; /* a start: they come after the ends */
	for (int i = 0; i < n; i++)
		if (ps__bp_role(s, r.arm[i].addr + bias, PS_BP_ADDR, ri->id, r.arm[i].end ? ROLE_END : ROLE_START,
				err) < 0)
			return -1;
	if (r.note[0])
		ps__notice(s, "%s", r.note);
	if (r.end_idle && s->up)
		ps__notice(s,
			   "%s: control also reaches its end where no hit is open (a loop after the hit, say): the "
			   "uprobe catcher takes a probe there each time (the ptrace catcher disarms it between hits)",
			   ri->name);
	snprintf(ri->reading, sizeof ri->reading, "%s", r.reading);
	return 0;
}

static int arm_range(struct ps_session *s, struct ps_region_info *ri, struct ps_error *err)
{
	struct ps_region_spec rs;
	int a1, a2, n1, n2, rc;
	uint64_t from[32], to[32], bias = main_bias(s);
	struct ps_lines *l;

	if (ps_region_spec_parse(ri->spec, &rs, err))
		return -1;
	if (rs.kind == PS_RSPEC_ADDR_RANGE) {
		if (code_addr(s, rs.addr1, 0, err) || code_addr(s, rs.addr2, 0, err))
			return -1;
		n1 = n2 = 1;
		from[0] = rs.addr1 + bias;
		to[0] = rs.addr2 + bias;
	} else if (rs.kind != PS_RSPEC_LINE_RANGE) {
		return ps_error_set(err, PS_EUSAGE, "bad range '%s': expected FILE:L1-L2, FILE:L1-FILE:L2 or 0xA-0xB",
				    ri->spec);
	} else {
		if (!(l = lines(s, err)))
			return -1;
		if (!strcmp(rs.file1, rs.file2) && (rc = flow_range(s, ri, l, rs.file1, rs.line1, rs.line2, err)) <= 0)
			return rc;
		if ((n1 = ps_lines_addrs(l, rs.file1, rs.line1, from, 32, &a1, err)) < 0 ||
		    (n2 = ps_lines_addrs(l, rs.file2, rs.line2, to, 32, &a2, err)) < 0)
			return -1;
		if (a1 != rs.line1)
			ps__notice(s, "%s: line %d has no code; the range starts at line %d", ri->name, rs.line1, a1);
		if (a2 != rs.line2)
			ps__notice(s, "%s: line %d has no code; the range ends at line %d", ri->name, rs.line2, a2);
		for (int i = 0; i < n1; i++)
			from[i] += bias;
		for (int i = 0; i < n2; i++)
			to[i] += bias;
	}
	ri->addr = from[0];
	for (int i = 0; i < n1; i++)
		if (ps__bp_role(s, from[i], PS_BP_ADDR, ri->id, ROLE_START, err) < 0)
			return -1;
	for (int i = 0; i < n2; i++)
		if (ps__bp_role(s, to[i], PS_BP_ADDR, ri->id, ROLE_END, err) < 0)
			return -1;
	return 0;
}

int ps_session_region_range(struct ps_session *s, const char *spec, unsigned flags, struct ps_error *err)
{
	struct ps_region_info *ri =
	    ps__marker_only(s, spec, err) ? NULL : ps__new_region(s, PS_REGION_RANGE, spec, spec, flags, err);
	if (!ri)
		return -1;
	if (arm_range(s, ri, err)) {
		ps__uprobe_drop_region(s, ri->id); /* its id is given to the next region */
		return -1;
	}
	return s->nreg++;
}

/* After exec: the old breakpoints are gone; look every region up again in the new image. */
int ps__rearm_after_exec(struct ps_session *s)
{
	ps__forget_images(s);
	free(s->bps);
	s->bps = NULL;
	s->nbps = 0;
	s->main_bp = -1;
	s->loader_bp = -1;
	s->unwind_hooks = 0;
	for (int i = 0; i < s->nreg; i++) {
		struct ps_region_info *ri = &s->reg[i];
		struct ps_error err;
		char lib[256], fn[256];
		uint64_t addr;
		int rc = 0;

		if (ri->dropped)
			continue;
		if (!ri->spec[0]) {
			rc = -1;
			snprintf(err.msg, sizeof err.msg, "inlined copies are not re-armed after exec");
		} else if (ri->kind == PS_REGION_FUNC) {
			int islib = ps_sym_lib_split(ri->spec, lib, sizeof lib, fn, sizeof fn) == 1;
			rc = find_function(s, islib ? lib : NULL, islib ? fn : ri->spec, &addr, &err);
			if (rc == 1)
				rc = arm_func(s, ri, addr, &err);
			else if (rc == 0) {
				ri->pending = 1;
				rc = watch_loader(s, &err);
			}
		} else {
			rc = arm_range(s, ri, &err);
		}
		if (rc < 0) {
			ri->dropped = 1;
			snprintf(ri->why, sizeof ri->why, "after exec of %.300s: %s",
				 s->exe[0] ? s->exe : "a new image", err.msg);
			ps__notice(s, "region '%s' dropped %s", ri->name, ri->why);
		}
	}
	return 0;
}
