/* lua/lsdt.c - SDT probes of a file (core/binary/sdt.c): core.sdt, core.sdt_check. */
#include "lhelp.h"

#include "regionspec.h"

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
	lua_pushinteger(L, v);
	lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v)
{
	lua_pushstring(L, v);
	lua_setfield(L, -2, k);
}

/* One argument: {size, signed, kind = "reg"|"mem"|"imm", text, reg, index, scale, sym, disp | value}. */
static void push_arg(lua_State *L, const struct ps_sdt_arg *a)
{
	static const char *kinds[] = {"", "reg", "mem", "imm"};

	lua_createtable(L, 0, 8);
	set_int(L, "size", a->size);
	lua_pushboolean(L, a->is_signed);
	lua_setfield(L, -2, "signed");
	set_str(L, "kind", kinds[a->kind]);
	set_str(L, "text", a->text);
	if (a->kind == PS_SDT_ARG_IMM) {
		set_int(L, "value", a->disp);
		return;
	}
	if (a->reg[0])
		set_str(L, "reg", a->reg);
	if (a->kind != PS_SDT_ARG_MEM)
		return;
	set_int(L, "disp", a->disp);
	if (a->index[0]) {
		set_str(L, "index", a->index);
		set_int(L, "scale", a->scale);
	}
	if (a->sym[0])
		set_str(L, "sym", a->sym);
}

static void push_probe(lua_State *L, const struct ps_sdt_probe *p)
{
	struct ps_sdt_arg args[PS_SDT_MAX_ARGS];
	struct ps_error err;

	lua_createtable(L, 0, 10);
	set_str(L, "provider", p->provider);
	set_str(L, "name", p->name);
	set_int(L, "addr", (lua_Integer)p->addr);
	set_int(L, "offset", (lua_Integer)p->offset);
	set_int(L, "semaphore", (lua_Integer)p->sema);
	set_int(L, "semaphore_offset", (lua_Integer)p->sema_offset);
	set_int(L, "base", (lua_Integer)p->base);
	set_str(L, "argstr", p->argstr);
	if (p->nargs < 0) {
		/* kept, but its arguments are not understood: say why instead */
		ps_sdt_parse_args(p->argstr, args, PS_SDT_MAX_ARGS, &err);
		set_str(L, "args_error", err.msg);
		return;
	}
	lua_createtable(L, p->nargs, 0);
	for (int i = 0; i < p->nargs; i++) {
		push_arg(L, &p->args[i]);
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "args");
}

/* core.sdt(path) -> {probe, ...} (note order) | nil, msg, code */
static int l_sdt(lua_State *L)
{
	struct ps_sdt_set s;
	struct ps_error err;

	if (ps_sdt_read(luaL_checkstring(L, 1), &s, &err))
		return ps_l_fail(L, &err);
	lua_createtable(L, (int)s.n, 0);
	for (size_t i = 0; i < s.n; i++) {
		push_probe(L, &s.probes[i]);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	ps_sdt_free(&s);
	return 1;
}

void ps_l_push_sdt_spec(lua_State *L, const struct ps_sdt_spec *sp)
{
	lua_createtable(L, sp->npoints, 0);
	for (int k = 0; k < sp->npoints; k++) {
		lua_createtable(L, 0, 2);
		set_str(L, "provider", sp->provider[k]);
		set_str(L, "name", sp->name[k]);
		lua_rawseti(L, -2, k + 1);
	}
}

/* core.sdt_check(path, "sdt:P:N[,...]" [, label]) -> {{provider, name, sites, probe}, ...} | nil, msg, code:
   the spec parsed and each of its probes found in the file (a missing one with "did you mean");
   messages name the file as @label (default: @path). */
static int l_sdt_check(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1), *label = luaL_optstring(L, 3, path);
	struct ps_sdt_spec sp;
	struct ps_sdt_set s;
	struct ps_error err;

	if (ps_sdt_spec_parse(luaL_checkstring(L, 2), &sp, &err))
		return ps_l_fail(L, &err);
	if (ps_sdt_read(path, &s, &err))
		return ps_l_fail(L, &err);
	lua_createtable(L, sp.npoints, 0);
	for (int k = 0; k < sp.npoints; k++) {
		const struct ps_sdt_probe *p = ps_sdt_find(&s, sp.provider[k], sp.name[k], label, &err);
		if (!p) {
			ps_sdt_free(&s);
			return ps_l_fail(L, &err);
		}
		lua_createtable(L, 0, 4);
		set_str(L, "provider", p->provider);
		set_str(L, "name", p->name);
		set_int(L, "sites", (lua_Integer)ps_sdt_count(&s, p->provider, p->name));
		push_probe(L, p);
		lua_setfield(L, -2, "probe");
		lua_rawseti(L, -2, k + 1);
	}
	ps_sdt_free(&s);
	return 1;
}

static const luaL_Reg funcs[] = {{"sdt", l_sdt}, {"sdt_check", l_sdt_check}, {NULL, NULL}};

void ps_l_open_sdt(lua_State *L)
{
	luaL_setfuncs(L, funcs, 0);
}
