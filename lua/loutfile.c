/* lua/loutfile.c - core.outfile: the temporary file an output is written to before it is
 * renamed over the destination (core/base/outfile.h; the Lua side is perfsh.outfile). */
#include "lhelp.h"
#include "outfile.h"

/* core.outfile(path) -> tmp, final | false, final (write final in place) | nil, msg, code.
   tmp exists, empty, with the mode the file will have; rename it to final once complete. */
static int l_outfile(lua_State *L)
{
	struct ps_outfile o;
	struct ps_error err;

	if (ps_outfile_prepare(&o, luaL_checkstring(L, 1), &err))
		return ps_l_fail(L, &err);
	if (o.tmp[0])
		lua_pushstring(L, o.tmp);
	else
		lua_pushboolean(L, 0);
	lua_pushstring(L, o.path);
	return 2;
}

void ps_l_open_outfile(lua_State *L)
{
	static const luaL_Reg funcs[] = {{"outfile", l_outfile}, {NULL, NULL}};
	luaL_setfuncs(L, funcs, 0);
}
