/* core/catch/uprobe/upframes.c - the open frames of each thread, matched by stack pointer
 * (core/catch/uprobe/upframes.h): per thread, a stack of frames innermost last. */
#include "upframes.h"

#include <stdlib.h>

#include "grow.h"

struct frame {
	uint64_t sp;
	int region, handle, uret;
};

struct fthread {
	pid_t tid;
	struct frame *v;
	size_t n, cap;
};

struct ps_upframes {
	struct fthread *th;
	size_t n, cap;
	size_t last; /* the thread found last */
};

struct ps_upframes *ps_upframes_new(void)
{
	return calloc(1, sizeof(struct ps_upframes));
}

void ps_upframes_free(struct ps_upframes *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->th[i].v);
	free(f->th);
	free(f);
}

static struct fthread *find(const struct ps_upframes *f, pid_t tid)
{
	struct ps_upframes *m = (struct ps_upframes *)f;

	if (f->last < f->n && f->th[f->last].tid == tid)
		return &f->th[f->last];
	for (size_t i = 0; i < f->n; i++)
		if (f->th[i].tid == tid) {
			m->last = i;
			return &f->th[i];
		}
	return NULL;
}

int ps_upframes_push(struct ps_upframes *f, pid_t tid, uint64_t sp, int region, int handle, int uret)
{
	struct fthread *t = find(f, tid);
	struct frame *v;

	if (!t) {
		struct fthread *th = ps_grow(f->th, &f->cap, f->n, sizeof *th, 8);
		if (!th)
			return -1;
		f->th = th;
		t = &f->th[f->n++];
		*t = (struct fthread){.tid = tid};
	}
	if (!(v = ps_grow(t->v, &t->cap, t->n, sizeof *v, 16)))
		return -1;
	t->v = v;
	t->v[t->n++] = (struct frame){sp, region, handle, uret};
	return 0;
}

int ps_upframes_left(struct ps_upframes *f, pid_t tid, uint64_t sp, int entry, int *region, int *handle)
{
	struct fthread *t = find(f, tid);
	struct frame *top;

	if (!t || t->n == 0)
		return 0;
	top = &t->v[t->n - 1];
	if (top->sp > sp || (top->sp == sp && (!entry || top->uret == PS_UPFRAME_URET)))
		return 0;
	*region = top->region;
	*handle = top->handle;
	t->n--;
	return 1;
}

int ps_upframes_pop(struct ps_upframes *f, pid_t tid, uint64_t sp, int region, int *handle)
{
	struct fthread *t = find(f, tid);

	if (!t || t->n == 0 || t->v[t->n - 1].sp != sp || t->v[t->n - 1].region != region)
		return 0;
	*handle = t->v[--t->n].handle;
	return 1;
}

void ps_upframes_entry(struct ps_upframes *f, struct ps_hitpath *hp, struct ps_hit *h, uint64_t sp, int uret)
{
	int handle = ps_hitpath_hit(hp, h);

	if (handle >= 0 && sp)
		ps_upframes_push(f, h->tid, sp, h->region, handle, uret);
}

void ps_upframes_exit(struct ps_upframes *f, struct ps_hitpath *hp, const struct ps_hit *h, uint64_t sp)
{
	struct ps_hit r = *h;

	if (!ps_upframes_pop(f, h->tid, sp, h->region, &r.handle))
		return; /* its entry was not seen, or opened nothing */
	r.kind = PS_HIT_RETURN;
	ps_hitpath_hit(hp, &r);
}

void ps_upframes_unwound(struct ps_upframes *f, struct ps_hitpath *hp, const struct ps_hit *h, uint64_t sp, int entry)
{
	struct ps_hit r = *h;

	r.kind = PS_HIT_RETURN;
	r.flags = PS_SNAP_UNWOUND;
	r.args = NULL;
	while (ps_upframes_left(f, h->tid, sp, entry, &r.region, &r.handle))
		ps_hitpath_hit(hp, &r);
}

void ps_upframes_forget(struct ps_upframes *f, pid_t tid)
{
	struct fthread *t = find(f, tid);

	if (!t)
		return;
	free(t->v);
	*t = f->th[--f->n];
}

void ps_upframes_forget_all(struct ps_upframes *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->th[i].v);
	f->n = 0;
}

int ps_upframes_depth(const struct ps_upframes *f, pid_t tid)
{
	const struct fthread *t = find(f, tid);

	return t ? (int)t->n : 0;
}
