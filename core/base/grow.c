/* core/base/grow.c - arrays that grow by doubling (see grow.h). */
#include "grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

void *ps_grow(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t ncap = *cap;
	void *p;

	if (n < ncap)
		return v;
	while (ncap <= n)
		ncap = ncap ? 2 * ncap : (first ? first : 1);
	if (ncap > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(p = realloc(v, ncap * size)))
		return NULL;
	*cap = ncap;
	return p;
}
