/* lua/lerrors.c - core.errors: the codes of core/base/error.h by name, for Lua to branch on the
   code a failure returns (nil, message, code), never on its text. */
#include "lhelp.h"

void ps_l_open_errors(lua_State *L)
{
	static const struct {
		const char *name;
		int code;
	} codes[] = {{"usage", PS_EUSAGE},
		     {"notfound", PS_ENOTFOUND},
		     {"needs_ptrace", PS_ENEEDS_PTRACE},
		     {"needs_uprobe", PS_ENEEDS_UPROBE}};

	lua_createtable(L, 0, (int)(sizeof codes / sizeof codes[0]));
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		lua_pushinteger(L, codes[i].code);
		lua_setfield(L, -2, codes[i].name);
	}
	lua_setfield(L, -2, "errors");
}
