/* core/base/grow.h - arrays that grow by doubling: one home for the realloc step. */
#ifndef PS_GROW_H
#define PS_GROW_H

#include <stddef.h>

/**
 * ps_grow() - room for one more element in an array of @n elements of @size bytes.
 * @v:     the array (NULL for none yet)
 * @cap:   its capacity in elements; doubled (or set to @first) when @n has reached it
 * @n:     the elements in use
 * @size:  the size of one element
 * @first: the capacity of a new array
 *
 * Return: the array with room for element @n (@v itself when it had room), or NULL when out of
 * memory (or the size would overflow), @v and @cap then unchanged and still valid.
 */
void *ps_grow(void *v, size_t *cap, size_t n, size_t size, size_t first);

#endif
