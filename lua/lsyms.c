/* lua/lsyms.c - what a program file names, for completion: core.symbols, core.source_files; and
 * whether an address a region names is code: core.code_check. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdw.h>

#include "codeaddr.h"
#include "lhelp.h"
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

/* core.source_files(path): the source files of an ELF file's line tables (an empty table
   without DWARF), or nil, message. */
static int l_source_files(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		lua_pushnil(L);
		lua_pushfstring(L, "cannot open %s: %s", path, strerror(errno));
		return 2;
	}
	lua_newtable(L);
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	lua_Integer k = 0;
	if (dw) {
		Dwarf_Off off = 0, next;
		size_t hsize;
		while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die die;
			Dwarf_Files *files;
			size_t nfiles;
			if (dwarf_offdie(dw, off + hsize, &die) && dwarf_getsrcfiles(&die, &files, &nfiles) == 0) {
				for (size_t i = 1; i < nfiles; i++) {
					const char *f = dwarf_filesrc(files, i, NULL, NULL);
					if (f) {
						lua_pushstring(L, f);
						lua_rawseti(L, -2, ++k);
					}
				}
			}
			off = next;
		}
		dwarf_end(dw);
	}
	close(fd);
	return 1;
}

/* core.code_check(pid | path, region): true when every address region @region names (0xA as a
   function's entry, 0xA-0xB) begins an instruction in the code of the program process @pid runs
   (or of ELF file @path), and for any other region; else nil, message, code (core/codeaddr.h).
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

void ps_l_open_syms(lua_State *L)
{
	lua_pushcfunction(L, l_code_check);
	lua_setfield(L, -2, "code_check");
	lua_pushcfunction(L, l_symbols);
	lua_setfield(L, -2, "symbols");
	lua_pushcfunction(L, l_source_files);
	lua_setfield(L, -2, "source_files");
}
