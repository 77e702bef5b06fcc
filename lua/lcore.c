/* lua/lcore.c - the module perfsh.core: luaopen_perfsh_core registers every binding. */
#include "lhelp.h"

int luaopen_perfsh_core(lua_State *L)
{
	lua_newtable(L);
	lua_pushliteral(L, PS_VERSION);
	lua_setfield(L, -2, "version");
	ps_l_open_group(L);
	ps_l_open_events(L);
	ps_l_open_run(L);
	ps_l_open_tracee(L);
	ps_l_open_stats(L);
	ps_l_open_snapset(L);
	ps_l_open_hist(L);
	ps_l_open_topo(L);
	ps_l_open_lsq(L);
	ps_l_open_signal(L);
	ps_l_open_outfile(L);
	ps_l_open_errors(L);
	ps_l_open_sdt(L);
	ps_l_open_syms(L);
	return 1;
}
