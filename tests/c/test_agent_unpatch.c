/* tests/c/test_agent_unpatch.c - the agent's restore of patched sites (agent/agent_unpatch.c),
 * built into tests/fixtures/unpatch_int3.c and run there: the SIGTRAP handler sends a thread at
 * a site's int3 on to the copies of its instructions, the original bytes come back, and the
 * program's own SIGTRAPs (raise, an int3 of its own) reach the handler it installed before. */
#include "ctest.h"
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

TEST(agent_unpatch_sends_int3_to_copies_restores_bytes_and_passes_other_sigtraps_on)
{
	char flags[2600], cmd[800], out[512] = "";
	const char *d = fixtures_dir("unpatch_int3.c"), *prog;
	size_t k = 0;
	FILE *p;
	int st;

	snprintf(flags, sizeof flags,
		 "-O2 -D_GNU_SOURCE -I%s/../../agent -I%s/../../core/catch/marker "
		 "-I%s/../../core/hitpath -I%s/../../core/base %s/../../agent/agent_unpatch.c",
		 d, d, d, d, d);
	if (!(prog = fixtures_cc("unpatch_int3.c", "unpatch_int3", flags)))
		SKIP("cannot build the fixture (cc)");
	snprintf(cmd, sizeof cmd, "%s", prog);
	CHECK((p = popen(cmd, "r")) != NULL);
	if (!p)
		return;
	while (k + 1 < sizeof out && fgets(out + k, (int)(sizeof out - k), p))
		k = strlen(out);
	st = pclose(p);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		SKIP("this kernel has no membarrier SYNC_CORE");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_STR(out, "through the int3: 1016\n"
		       "bytes back: yes\n"
		       "restored: 16\n"
		       "the program's own SIGTRAPs to its handler: 2\n");
}
