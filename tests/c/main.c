/* tests/c/main.c - runs every registered TEST; "c: N passed, N failed, N skipped". */
#include "ctest.h"

#include <stdlib.h>

static struct ctest *head, **tailp = &head;

void ctest_register(struct ctest *t)
{
	*tailp = t;
	tailp = &t->next;
}

enum ctest_verdict ctest_verdict(const struct ctest *t)
{
	if (t->failed)
		return CTEST_FAILED;
	return t->skipped[0] ? CTEST_SKIPPED : CTEST_PASSED;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;

	for (struct ctest *t = head; t; t = t->next) {
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		t->fn(t);
		switch (ctest_verdict(t)) {
		case CTEST_FAILED:
			if (t->skipped[0])
				printf("FAIL %s (then skipped: %s)\n", t->name, t->skipped);
			else
				printf("FAIL %s\n", t->name);
			failed++;
			break;
		case CTEST_SKIPPED:
			printf("skip %s (%s)\n", t->name, t->skipped);
			skipped++;
			break;
		case CTEST_PASSED:
			printf("ok   %s\n", t->name);
			passed++;
			break;
		}
	}
	printf("c: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
