/* tests/c/main.c - runs every registered TEST; "c: N passed, N failed, N skipped". */
#include "ctest.h"

#include <stdlib.h>

static struct ctest *head, **tailp = &head;

void ctest_register(struct ctest *t)
{
	*tailp = t;
	tailp = &t->next;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;

	for (struct ctest *t = head; t; t = t->next) {
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		t->fn(t);
		if (t->skipped[0]) {
			printf("skip %s (%s)\n", t->name, t->skipped);
			skipped++;
		} else if (t->failed) {
			printf("FAIL %s\n", t->name);
			failed++;
		} else {
			printf("ok   %s\n", t->name);
			passed++;
		}
	}
	printf("c: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
