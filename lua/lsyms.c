/* lua/lsyms.c - what a program file names and is: core.symbols, core.source_files (completion);
 * core.code_check (whether an address a region names is code); core.build_id,
 * core.empty_hit_sites (perfsh check). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "codeaddr.h"
#include "emptyhit.h"
#include "lhelp.h"
#include "lines.h"
#include "regionspec.h"
#include "symbols.h"

/* core.symbols(path): the function names of an ELF file (demangled where mangled), or nil,
   message. */
static int l_symbols(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct ps_symtab *st;
	struct ps_error err;

	if (ps_sym_open(&st, path, &err) < 0)
		return ps_l_fail(L, &err);
	size_t n = ps_sym_count(st);
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		const struct ps_sym *s = ps_sym_at(st, i);
		lua_pushstring(L, s->demangled ? s->demangled : s->name);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	ps_sym_close(st);
	return 1;
}

static int push_file(void *ud, const char *file)
{
	lua_State *L = ud;

	lua_pushstring(L, file);
	lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
	return 0;
}

/* core.source_files(path): the source files of an ELF file's line tables (an empty table
   without DWARF), or nil, message. */
static int l_source_files(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct ps_error err;

	lua_newtable(L);
	if (ps_lines_source_files(path, push_file, L, &err)) {
		lua_pushnil(L);
		lua_pushstring(L, err.msg);
		return 2;
	}
	return 1;
}

/* core.code_check(pid | path, region): true when every address region @region names (0xA as a
   function's entry, 0xA-0xB) begins an instruction in the code of the program process @pid runs
   (or of ELF file @path), and for any other region; else nil, message, code (core/binary/codeaddr.h).
   A process whose program cannot be read gives true: attaching to it says why. */
static int l_code_check(lua_State *L)
{
	const char *region = luaL_checkstring(L, 2);
	char path[PATH_MAX];
	struct ps_region_spec rs;
	struct ps_error err;

	if (lua_type(L, 1) == LUA_TNUMBER) {
		char link[64];
		ssize_t n;
		snprintf(link, sizeof link, "/proc/%lld/exe", (long long)luaL_checkinteger(L, 1));
		if ((n = readlink(link, path, sizeof path - 1)) < 0 || access(link, R_OK)) {
			lua_pushboolean(L, 1);
			return 1;
		}
		path[n] = '\0';
	} else {
		snprintf(path, sizeof path, "%s", luaL_checkstring(L, 1));
	}
	if (ps_region_spec_parse(region, &rs, &err) == 0 &&
	    ((rs.kind == PS_RSPEC_ADDR && ps_code_check(path, NULL, rs.addr1, PS_CODE_ENTRY, &err)) ||
	     (rs.kind == PS_RSPEC_ADDR_RANGE &&
	      (ps_code_check(path, NULL, rs.addr1, 0, &err) || ps_code_check(path, NULL, rs.addr2, 0, &err)))))
		return ps_l_fail(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* core.build_id(path): the file's GNU build id in hex, false when it has none, or nil, message. */
static int l_build_id(lua_State *L)
{
	char hex[41];
	struct ps_error err;

	if (ps_build_id(luaL_checkstring(L, 1), hex, sizeof hex, &err) < 0)
		return ps_l_fail(L, &err);
	if (hex[0])
		lua_pushstring(L, hex);
	else
		lua_pushboolean(L, 0);
	return 1;
}

/* core.empty_hit_sites(path, func): {entry =, next = (nil: the first instruction branches),
   tails = {{at =, ret =}, ...}} (core/binary/emptyhit.h), or nil, message. */
static int l_empty_hit_sites(lua_State *L)
{
	struct ps_empty_hit e;
	struct ps_error err;

	if (ps_empty_hit_sites(luaL_checkstring(L, 1), luaL_checkstring(L, 2), &e, &err) < 0)
		return ps_l_fail(L, &err);
	lua_createtable(L, 0, 3);
	lua_pushinteger(L, (lua_Integer)e.entry);
	lua_setfield(L, -2, "entry");
	if (e.next) {
		lua_pushinteger(L, (lua_Integer)e.next);
		lua_setfield(L, -2, "next");
	}
	lua_createtable(L, e.ntails, 0);
	for (int i = 0; i < e.ntails; i++) {
		lua_createtable(L, 0, 2);
		lua_pushinteger(L, (lua_Integer)e.tail[i].at);
		lua_setfield(L, -2, "at");
		lua_pushinteger(L, (lua_Integer)e.tail[i].ret);
		lua_setfield(L, -2, "ret");
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "tails");
	return 1;
}

void ps_l_open_syms(lua_State *L)
{
	lua_pushcfunction(L, l_code_check);
	lua_setfield(L, -2, "code_check");
	lua_pushcfunction(L, l_build_id);
	lua_setfield(L, -2, "build_id");
	lua_pushcfunction(L, l_empty_hit_sites);
	lua_setfield(L, -2, "empty_hit_sites");
	lua_pushcfunction(L, l_symbols);
	lua_setfield(L, -2, "symbols");
	lua_pushcfunction(L, l_source_files);
	lua_setfield(L, -2, "source_files");
}
