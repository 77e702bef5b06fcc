/* tests/c/test_grow.c - arrays that grow by doubling (core/base/grow.c). */
#include <stdint.h>
#include <stdlib.h>

#include "ctest.h"
#include "grow.h"

TEST(grow_doubles_from_first_and_keeps_the_elements)
{
	int *v = NULL;
	size_t cap = 0, n;

	for (n = 0; n < 100; n++) {
		int *p = ps_grow(v, &cap, n, sizeof *v, 8);

		CHECK(p != NULL);
		if (!p)
			break;
		v = p;
		v[n] = (int)n;
		/* 8, 16, 32, 64, 128: the capacity only ever doubles */
		CHECK(cap == 8 || cap == 16 || cap == 32 || cap == 64 || cap == 128);
		CHECK(cap > n);
	}
	CHECK_EQ_INT(cap, 128);
	for (n = 0; n < 100; n++)
		CHECK_EQ_INT(v[n], (long long)n);
	CHECK(ps_grow(v, &cap, 50, sizeof *v, 8) == v); /* room left: the same array */
	free(v);
}

TEST(grow_refuses_a_size_that_would_overflow_and_leaves_the_array)
{
	char *v = malloc(4);
	size_t cap = 4;

	CHECK(v != NULL);
	CHECK(ps_grow(v, &cap, 4, SIZE_MAX / 4, 4) == NULL);
	CHECK_EQ_INT(cap, 4);
	free(v);
}
