/* core/hitpath/holds.h - the program's clock: CLOCK_MONOTONIC less the time perfsh held the program.
 *
 * Between two runs (a pause, an interrupt) perfsh keeps the traced program stopped; the time
 * it sat held is no part of any hit. A hit's times are taken on the program's clock, so a
 * hit that spans a pause leaves the pause out of its wall time, and the order of any two times
 * is kept. A time is mapped by when it was taken, not by when it arrives, so a record written
 * by the program before a pause and read after it (the marker catcher's) is mapped right too.
 */
#ifndef PS_HOLDS_H
#define PS_HOLDS_H

#include <stddef.h>
#include <stdint.h>

struct ps_hold_span {
	uint64_t from, to; /* CLOCK_MONOTONIC ns: the program was held from @from to @to */
	uint64_t before;   /* ns held before @from */
};

/* The spans so far, in time order (zero-initialised: none). */
struct ps_holds {
	struct ps_hold_span *v;
	size_t n, cap;
};

/**
 * ps_holds_add() - the program was held from @from to @to (CLOCK_MONOTONIC ns, after every
 * earlier span). An empty or out-of-order span is ignored. Return: 0, or -1 when out of
 * memory (the span is then left out: times after it keep it).
 */
int ps_holds_add(struct ps_holds *h, uint64_t from, uint64_t to);

/* ps_holds_map() - @t (CLOCK_MONOTONIC ns) on the program's clock: less the time held before
 * it; a time inside a span is its start. */
uint64_t ps_holds_map(const struct ps_holds *h, uint64_t t);

/* ps_holds_total() - ns held so far. */
uint64_t ps_holds_total(const struct ps_holds *h);

void ps_holds_free(struct ps_holds *h);

#endif
