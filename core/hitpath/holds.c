/* core/hitpath/holds.c - the program's clock: see holds.h. */
#include "holds.h"

#include <stdlib.h>

#include "grow.h"

int ps_holds_add(struct ps_holds *h, uint64_t from, uint64_t to)
{
	const struct ps_hold_span *last = h->n ? &h->v[h->n - 1] : NULL;

	if (to <= from || (last && from < last->to))
		return 0;
	if (h->n == h->cap) {
		struct ps_hold_span *v = ps_grow(h->v, &h->cap, h->n, sizeof *v, 16);

		if (!v)
			return -1;
		h->v = v;
		last = h->n ? &h->v[h->n - 1] : NULL;
	}
	h->v[h->n] = (struct ps_hold_span){from, to, last ? last->before + (last->to - last->from) : 0};
	h->n++;
	return 0;
}

uint64_t ps_holds_total(const struct ps_holds *h)
{
	const struct ps_hold_span *last = h->n ? &h->v[h->n - 1] : NULL;

	return last ? last->before + (last->to - last->from) : 0;
}

uint64_t ps_holds_map(const struct ps_holds *h, uint64_t t)
{
	size_t lo = 0, hi = h->n;

	if (h->n && t >= h->v[h->n - 1].to) /* the usual case: a time after the last pause */
		return t - ps_holds_total(h);
	/* the last span that starts at or before t */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->v[mid].from <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return t;
	const struct ps_hold_span *s = &h->v[lo - 1];
	if (t < s->to)
		return s->from - s->before;
	return t - s->before - (s->to - s->from);
}

void ps_holds_free(struct ps_holds *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
