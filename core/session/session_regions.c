/* core/session/session_regions.c - from names to the points the catcher arms: functions (ELF
 * symbols, shared libraries, inlined copies), line ranges (DWARF) and markers, re-resolved after
 * exec. Where the code is comes from session_find.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regionspec.h"
#include "session_priv.h"

int ps__arm_addr(struct ps_session *s, uint64_t addr, int kind, int region, enum ps_catch_role role,
		 struct ps_error *err)
{
	struct ps_catch_point p = {.addr = addr, .bp_kind = kind, .region = region, .role = role};

	return s->cat->ops->arm(s->cat, &p, err);
}

struct ps_region_info *ps__new_region(struct ps_session *s, enum ps_region_kind kind, const char *name,
				      const char *spec, unsigned flags, struct ps_error *err)
{
	struct ps_region_info *ri;

	if (s->env->nreg == PS_MAX_REGIONS) {
		ps_error_set(err, PS_EUSAGE, "at most %d regions", PS_MAX_REGIONS);
		return NULL;
	}
	ri = &s->env->reg[s->env->nreg];
	memset(ri, 0, sizeof *ri);
	ri->id = s->env->nreg;
	ri->kind = kind;
	ri->flags = flags;
	snprintf(ri->name, sizeof ri->name, "%s", name);
	snprintf(ri->spec, sizeof ri->spec, "%s", spec);
	return ri;
}

int ps__arms_code(struct ps_session *s, const char *name, struct ps_error *err)
{
	if (ps__caps(s) & PS_CATCH_CODE)
		return 0;
	return ps_error_set(err, PS_EUSAGE,
			    "region '%s': the %s catcher measures the program's markers only; arm functions, lines "
			    "and SDT probes with --backend uprobe or ptrace",
			    name, s->cat->ops->name);
}

/* A function of a library not mapped yet (loaded at start, or later with dlopen), armed in the
   file the loader will map; pending until the catcher sees that file mapped. */
static int arm_lib_file(struct ps_session *s, struct ps_region_info *ri, const char *lib, const char *fn,
			struct ps_error *err)
{
	char path[PATH_MAX];
	struct ps_catch_point p = {.path = path, .region = ri->id, .role = PS_ROLE_ENTRY};

	if (ps__lib_func_file(s, lib, fn, path, &p.offset, err))
		return -1;
	ri->pending = 1;
	return s->cat->ops->arm(s->cat, &p, err);
}

/* Arm a function region at its entry. */
static int arm_func(struct ps_session *s, struct ps_region_info *ri, uint64_t addr, struct ps_error *err)
{
	ri->addr = addr;
	ri->pending = 0;
	return ps__arm_addr(s, addr, PS_BP_FUNC, ri->id, PS_ROLE_ENTRY, err) < 0 ? -1 : 0;
}

/* A break at main() arms library regions once the dynamic loader has mapped the libraries. */
static int want_main(struct ps_session *s, struct ps_error *err)
{
	uint64_t addr;
	const struct ps_sym *sym;

	if (ps__symtab(s, err) || ps_sym_lookup(s->sym, "main", &sym, NULL))
		return ps_error_set(err, PS_EUSAGE,
				    "the library is not mapped yet and %s has no 'main' to wait for; attach to the "
				    "running program instead (-p PID)",
				    s->exe);
	addr = sym->addr + ps__main_bias(s);
	s->main_bp = ps__arm_addr(s, addr, PS_BP_FUNC, -1, PS_ROLE_MAIN, err); /* armed again: enabled again */
	return s->main_bp < 0 ? -1 : 0;
}

/*
 * Returns are caught by swapping the return address for a trampoline, which a C++ or Rust
 * unwinder cannot read past. Breakpoints on the unwinder's entry points put the real
 * addresses back before it walks the stack; one on __cxa_begin_catch, and on Rust's
 * __rust_panic_cleanup (in the program: a catch_unwind calls it, never __cxa_begin_catch),
 * swaps them again for the frames that are still alive. Armed once the libraries are mapped;
 * a program without an unwinder gets none.
 */
static void arm_unwind_hooks(struct ps_session *s)
{
	static const struct {
		const char *lib, *fn;
		enum ps_catch_role role;
	} hooks[] = {
	    {"libgcc_s", "_Unwind_RaiseException", PS_ROLE_UNWIND},
	    {"libgcc_s", "_Unwind_Resume_or_Rethrow", PS_ROLE_UNWIND},
	    {"libgcc_s", "_Unwind_ForcedUnwind", PS_ROLE_UNWIND},
	    {"libstdc++", "__cxa_begin_catch", PS_ROLE_CATCH},
	    {NULL, "__rust_panic_cleanup", PS_ROLE_CATCH},
	};
	for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
		struct ps_error err;
		uint64_t addr;
		const struct ps_sym *sym;

		if (s->unwind_hooks & (1u << i))
			continue;
		/* linked in statically, or in the shared library */
		if (ps__symtab(s, &err) == 0 && ps_sym_lookup(s->sym, hooks[i].fn, &sym, NULL) == 0 &&
		    (!strcmp(sym->name, hooks[i].fn) || !hooks[i].lib)) /* Rust's: a mangled name */
			addr = sym->addr + ps__main_bias(s);
		else if (!hooks[i].lib || ps__find_function(s, hooks[i].lib, hooks[i].fn, &addr, &err) != 1)
			continue;
		s->unwind_hooks |= 1u << i;
		if (ps__arm_addr(s, addr, PS_BP_ADDR, -1, hooks[i].role, &err) < 0)
			ps_catch_notice(s->env,
					"%s not watched (%s): an exception through a region may end the program",
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
	arm_unwind_hooks(s);
	for (int i = 0; i < s->env->nreg; i++) {
		struct ps_region_info *ri = &s->env->reg[i];
		char lib[256], fn[256];
		uint64_t addr;
		struct ps_error err;

		if (!ri->pending)
			continue;
		ps_sym_lib_split(ri->spec, lib, sizeof lib, fn, sizeof fn);
		int rc = ps__find_function(s, lib, fn, &addr, &err);
		if (rc == 1 && arm_func(s, ri, addr, &err) == 0)
			continue;
		if (rc == 0 && !final)
			continue; /* not loaded yet */
		ri->pending = 0;
		ri->dropped = 1;
		snprintf(ri->why, sizeof ri->why, "%s", rc == 0 ? "its library was never mapped" : err.msg);
		ps_catch_notice(s->env, "region '%s' dropped: %s", ri->name, ri->why);
	}
	return 0;
}

/* Each inlined copy of @fn becomes a range region: from its entry to where control leaves it
   (ps_lines_inline_ends()), the same points for every catcher. */
static int add_inlined(struct ps_session *s, const char *fn, unsigned flags, struct ps_error *err)
{
	struct ps_inline inl[64];
	uint64_t ends[PS_LINES_MAX_ARMS];
	struct ps_lines *l = ps__lines(s, NULL);
	int n, nends, again, added = 0;
	uint64_t bias = ps__main_bias(s);

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
		struct ps_region_info *ri = ps__new_region(s, PS_REGION_RANGE, name, "", flags | PS_REGION_FRAME, err);
		if (!ri)
			return -1;
		ri->addr = inl[i].entry + bias;
		if (ps__arm_addr(s, ri->addr, PS_BP_ADDR, ri->id, PS_ROLE_START, err) < 0) {
			ps_catch_notice(s->env, "inlined copy %s not armed: %s", name, err->msg);
			continue;
		}
		/* with its entry, at most PS_LINES_MAX_ARMS points, as a line range */
		if ((nends = ps_lines_inline_ends(l, inl, n, inl[i].copy, ends, PS_LINES_MAX_ARMS - 1, &again, err)) <
		    0)
			ps_catch_notice(s->env, "inlined copy %s: its ends not armed: %s", name, err->msg);
		if (nends >= 0 && !again)
			ri->flags |= PS_REGION_ONCE;
		for (int k = 0; k < nends; k++)
			if (ps__arm_addr(s, ends[k] + bias, PS_BP_ADDR, ri->id, PS_ROLE_END, err) < 0)
				ps_catch_notice(s->env, "inlined copy %s: an end not armed: %s", name, err->msg);
		s->env->nreg++;
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

	if (s->loader_bp < 0 && ps__find_function(s, "ld-linux-x86-64.so.2", "_dl_debug_state", &addr, &e) == 1)
		s->loader_bp = ps__arm_addr(s, addr, PS_BP_ADDR, -1, PS_ROLE_LOAD, &e);
	ps__arm_pending(s, 0);
	if (s->loader_bp >= 0)
		return 0;
	return want_main(s, err);
}

/*
 * A catcher that does not stop the program leaves return addresses in place, and a frame an
 * exception unwound ends at the thread's next probe above it. A probe where the program catches
 * the exception ends such frames there when it is called from the catching frame itself, as
 * C++'s __cxa_begin_catch is (Rust's __rust_panic_cleanup mostly from a frame below it). Armed
 * once (bits 8 and 9 of unwind_hooks), in the program or where its loader will map libstdc++.
 */
static void watch_catches(struct ps_session *s)
{
	static const char *const lib[] = {"libstdc++", NULL}, *const fn[] = {"__cxa_begin_catch",
									     "__rust_panic_cleanup"};

	for (int i = 0; i < 2; i++) {
		char path[PATH_MAX];
		struct ps_catch_point p = {.path = path, .region = -1, .role = PS_ROLE_CATCH};
		const struct ps_sym *sym;
		struct ps_error e;

		if (s->unwind_hooks & (1u << (8 + i)))
			continue;
		s->unwind_hooks |= 1u << (8 + i);
		if (ps__symtab(s, &e) == 0 && ps_sym_lookup(s->sym, fn[i], &sym, NULL) == 0)
			ps__arm_addr(s, sym->addr + ps__main_bias(s), PS_BP_ADDR, -1, PS_ROLE_CATCH, &e);
		else if (lib[i] && ps__lib_func_file(s, lib[i], fn[i], path, &p.offset, &e) == 0)
			s->cat->ops->arm(s->cat, &p, &e);
	}
}

static void watch_unwinder(struct ps_session *s)
{
	struct ps_error e;
	if (watch_loader(s, &e) < 0 && !s->unwind_hooks)
		ps_catch_notice(
		    s->env, "no dynamic loader and no main to wait for: exceptions through regions are not watched");
}

/* A catcher that arms no inlined copies (the in-process one) measures a function that has some
   only where the caller leaves them out (PS_REGION_NO_INLINE): else one line, PS_ENEEDS_UPROBE,
   rather than hits silently missing. */
static int copies_unarmed(struct ps_session *s, const char *name, struct ps_error *err)
{
	struct ps_lines *l = ps__lines(s, NULL);
	struct ps_inline inl[1];
	struct ps_error e;

	if (!l || ps_lines_inlined(l, name, inl, 1, &e) <= 0)
		return 0;
	return ps_error_set(err, PS_ENEEDS_UPROBE,
			    "region '%s': the %s catcher does not measure a function's inlined copies yet; use "
			    "--backend uprobe",
			    name, s->cat->ops->name);
}

int ps_session_region_func(struct ps_session *s, const char *name, unsigned flags, struct ps_error *err)
{
	char lib[256], fn[256];
	int islib = ps_sym_lib_split(name, lib, sizeof lib, fn, sizeof fn);
	uint64_t addr = 0;
	struct ps_region_info *ri;
	int rc, first;

	if (ps__arms_code(s, name, err))
		return -1;
	if (islib < 0)
		return ps_error_set(err, PS_EUSAGE, "bad function name '%s'", name);
	if (!(ps__caps(s) & PS_CATCH_INLINED)) {
		if (!islib && !(flags & PS_REGION_NO_INLINE) && copies_unarmed(s, name, err))
			return -1;
		flags |= PS_REGION_NO_INLINE; /* an inlined copy has no entry to probe */
	}
	for (int i = 0; i < s->env->nreg; i++)
		if (s->env->reg[i].kind == PS_REGION_FUNC && !strcmp(s->env->reg[i].spec, name) &&
		    !s->env->reg[i].dropped && s->env->reg[i].flags == flags)
			return i; /* the same function twice is one region */
	rc = ps__find_function(s, islib ? lib : NULL, islib ? fn : name, &addr, err);
	if (rc >= 0 && !(ps__caps(s) & PS_CATCH_STOPS) && (s->env->unwinds = ps__unwinds(s)))
		watch_catches(s); /* and the catcher refuses a uretprobe there */
	if (rc < 0) {
		/* A function inlined everywhere has no symbol of its own but may have copies. */
		struct ps_error e2;
		int save = s->env->nreg;
		if (!islib && !(flags & PS_REGION_NO_INLINE) && add_inlined(s, name, flags, &e2) > 0)
			return save;
		return -1;
	}
	first = s->env->nreg;
	ri = ps__new_region(s, PS_REGION_FUNC, name, name, flags, err);
	if (!ri)
		return -1;
	if (rc == 0 && !(ps__caps(s) & PS_CATCH_STOPS)) {
		if (arm_lib_file(s, ri, lib, fn, err))
			return -1;
		s->env->nreg++;
		return first;
	}
	if (rc == 0) {
		ri->pending = 1;
		ri->addr = 0;
		s->env->nreg++;
		if (watch_loader(s, err)) {
			s->env->nreg--;
			return -1;
		}
		return first;
	}
	if (arm_func(s, ri, addr, err))
		return -1;
	s->env->nreg++;
	if (!islib && !(flags & PS_REGION_NO_INLINE) && add_inlined(s, name, flags, err) < 0)
		return -1;
	if (ps__caps(s) & PS_CATCH_STOPS) /* the kernel's return probes need no help from the unwinder */
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
	uint64_t bias = ps__main_bias(s);
	int n;

	if ((n = ps_lines_range_arms(l, file, &r, err)) == 0)
		snprintf(ri->reading, sizeof ri->reading,
			 "hits run from each start of line %d to the next of line %d (its code was not decoded)", l1,
			 l2);
	if (n <= 0)
		return n < 0 ? -1 : 1;
	if (r.l1 != l1)
		ps_catch_notice(s->env, "%s: line %d has no code; the range starts at line %d", ri->name, l1, r.l1);
	if (r.l2 != l2)
		ps_catch_notice(s->env, "%s: line %d has no code; the range ends at line %d", ri->name, l2, r.l2);
	ri->addr = r.arm[n - 1].addr + bias; /* a start: they come after the ends */
	for (int i = 0; i < n; i++)
		if (ps__arm_addr(s, r.arm[i].addr + bias, PS_BP_ADDR, ri->id,
				 r.arm[i].end ? PS_ROLE_END : PS_ROLE_START, err) < 0)
			return -1;
	if (r.note[0])
		ps_catch_notice(s->env, "%s", r.note);
	if (r.end_idle && !(ps__caps(s) & PS_CATCH_STOPS))
		ps_catch_notice(
		    s->env,
		    "%s: control also reaches its end where no hit is open (a loop after the hit, say): the "
		    "uprobe catcher takes a probe there each time, the inproc catcher a call of its hook (the "
		    "ptrace catcher disarms it between hits)",
		    ri->name);
	snprintf(ri->reading, sizeof ri->reading, "%s", r.reading);
	return 0;
}

static int arm_range(struct ps_session *s, struct ps_region_info *ri, struct ps_error *err)
{
	struct ps_region_spec rs;
	int a1, a2, n1, n2, rc;
	uint64_t from[32], to[32], bias = ps__main_bias(s);
	struct ps_lines *l;

	if (ps_region_spec_parse(ri->spec, &rs, err))
		return -1;
	if (rs.kind == PS_RSPEC_ADDR_RANGE) {
		if (ps__code_addr(s, rs.addr1, 0, err) || ps__code_addr(s, rs.addr2, 0, err))
			return -1;
		n1 = n2 = 1;
		from[0] = rs.addr1 + bias;
		to[0] = rs.addr2 + bias;
	} else if (rs.kind != PS_RSPEC_LINE_RANGE) {
		return ps_error_set(err, PS_EUSAGE, "bad range '%s': expected FILE:L1-L2, FILE:L1-FILE:L2 or 0xA-0xB",
				    ri->spec);
	} else {
		if (!(l = ps__lines(s, err)))
			return -1;
		if (!strcmp(rs.file1, rs.file2) && (rc = flow_range(s, ri, l, rs.file1, rs.line1, rs.line2, err)) <= 0)
			return rc;
		if ((n1 = ps_lines_addrs(l, rs.file1, rs.line1, from, 32, &a1, err)) < 0 ||
		    (n2 = ps_lines_addrs(l, rs.file2, rs.line2, to, 32, &a2, err)) < 0)
			return -1;
		if (a1 != rs.line1)
			ps_catch_notice(s->env, "%s: line %d has no code; the range starts at line %d", ri->name,
					rs.line1, a1);
		if (a2 != rs.line2)
			ps_catch_notice(s->env, "%s: line %d has no code; the range ends at line %d", ri->name,
					rs.line2, a2);
		for (int i = 0; i < n1; i++)
			from[i] += bias;
		for (int i = 0; i < n2; i++)
			to[i] += bias;
	}
	ri->addr = from[0];
	for (int i = 0; i < n1; i++)
		if (ps__arm_addr(s, from[i], PS_BP_ADDR, ri->id, PS_ROLE_START, err) < 0)
			return -1;
	for (int i = 0; i < n2; i++)
		if (ps__arm_addr(s, to[i], PS_BP_ADDR, ri->id, PS_ROLE_END, err) < 0)
			return -1;
	return 0;
}

int ps_session_region_range(struct ps_session *s, const char *spec, unsigned flags, struct ps_error *err)
{
	struct ps_region_info *ri =
	    ps__arms_code(s, spec, err) ? NULL : ps__new_region(s, PS_REGION_RANGE, spec, spec, flags, err);
	if (!ri)
		return -1;
	if (arm_range(s, ri, err)) {
		s->cat->ops->disarm(s->cat, ri->id); /* its id is given to the next region */
		return -1;
	}
	return s->env->nreg++;
}

/* After exec: the old breakpoints are gone; look every region up again in the new image. */
int ps__exec_seen(void *owner)
{
	struct ps_session *s = owner;

	ps__forget_images(s);
	s->main_bp = -1;
	s->loader_bp = -1;
	s->unwind_hooks = 0;
	for (int i = 0; i < s->env->nreg; i++) {
		struct ps_region_info *ri = &s->env->reg[i];
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
			rc = ps__find_function(s, islib ? lib : NULL, islib ? fn : ri->spec, &addr, &err);
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
			ps_catch_notice(s->env, "region '%s' dropped %s", ri->name, ri->why);
		}
	}
	return 0;
}

/* The catcher's callbacks (struct ps_catch_env). */
int ps__libs_mapped(void *owner, int final)
{
	struct ps_session *s = owner;

	if (final)
		s->main_bp = -1; /* main() is reached once: its point is gone */
	return ps__arm_pending(s, final);
}

int ps_session_region_marker(struct ps_session *s, const char *name, struct ps_error *err)
{
	struct ps_catch_point p = {.name = name, .region = s->env->nreg};
	char label[300];

	if (!(ps__caps(s) & PS_CATCH_MARKERS))
		return ps_error_set(err, PS_EUSAGE,
				    "region 'marker:%s': the marker catcher (backend marker) measures markers in the "
				    "program; with this one, arm them as an SDT pair",
				    name);
	for (int i = 0; i < s->env->nreg; i++)
		if (s->env->reg[i].kind == PS_REGION_MARKER && !strcmp(s->env->reg[i].spec, name))
			return ps_error_set(err, PS_EUSAGE, "region 'marker:%s' is armed already", name);
	snprintf(label, sizeof label, "marker:%.280s", name);
	if (!ps__new_region(s, PS_REGION_MARKER, label, name, 0, err))
		return -1;
	s->env->nreg++; /* counted first: the catcher maps the names the program published to it */
	if (s->cat->ops->arm(s->cat, &p, err)) {
		s->env->nreg--;
		return -1;
	}
	return p.region;
}
