/* core/catch/ptrace/threads.c - the ptrace catcher's threads: each gets its counter groups (and
 * its sampled regions' events) before it runs its first instruction; they count all the time
 * and are only read, never toggled, at a hit. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ptrace_priv.h"

struct thr *ps__thr_find(struct ps_ptrace *p, pid_t tid)
{
	for (struct thr *th = p->threads[(unsigned)tid % THR_BUCKETS]; th; th = th->next)
		if (th->tid == tid)
			return th;
	return NULL;
}

static void thr_free(struct thr *th)
{
	for (int g = 0; g < PS_MAX_GROUPS; g++)
		ps_group_close(&th->g[g]);
	free(th);
}

/* The thread's record, made (with its groups opened on it) the first time it is seen. */
struct thr *ps__thr_get(struct ps_ptrace *p, pid_t tid, struct ps_error *err)
{
	const struct ps_catch_env *env = p->env;
	struct thr *th = ps__thr_find(p, tid);

	if (th)
		return th;
	th = calloc(1, sizeof *th);
	if (!th) {
		ps_error_set(err, ENOMEM, "out of memory for thread %d", (int)tid);
		return NULL;
	}
	th->tid = tid;
	for (int k = 0; k < PS_MAX_HW; k++)
		th->hwfd[k] = -1;
	for (int g = 0, first = 0; g < env->ngroups; first += env->gsize[g++]) {
		if (ps_group_open(&th->g[g], env->ev + first, env->gsize[g], tid, -1, PS_GROUP_ENABLED, err)) {
			while (g-- > 0)
				ps_group_close(&th->g[g]);
			free(th);
			return NULL;
		}
	}
	if (ps__hw_open_thread(p, th, err)) {
		ps__hw_close_thread(p, th);
		thr_free(th);
		return NULL;
	}
	th->next = p->threads[(unsigned)tid % THR_BUCKETS];
	p->threads[(unsigned)tid % THR_BUCKETS] = th;
	return th;
}

void ps__thr_remove(struct ps_ptrace *p, pid_t tid)
{
	struct thr **pp = &p->threads[(unsigned)tid % THR_BUCKETS];

	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->tid == tid) {
			struct thr *th = *pp;
			*pp = th->next;
			ps__hw_close_thread(p, th);
			thr_free(th);
			return;
		}
	}
}

void ps__thr_free_all(struct ps_ptrace *p)
{
	for (unsigned b = 0; b < THR_BUCKETS; b++)
		while (p->threads[b]) {
			struct thr *th = p->threads[b];
			p->threads[b] = th->next;
			ps__hw_close_thread(p, th);
			thr_free(th);
		}
}

void ps__thr_read(const struct ps_ptrace *p, struct thr *th, struct ps_reading *r)
{
	const struct ps_catch_env *env = p->env;
	struct ps_reading gr;
	int off = 0, extra = env->nev;

	r->n = env->nev + 2 * (env->ngroups > 1 ? env->ngroups - 1 : 0);
	if (env->ngroups == 1) {
		if (ps_group_read(&th->g[0], r, NULL))
			memset(r, 0, sizeof *r);
		r->n = env->nev;
		return;
	}
	r->time_enabled = r->time_running = 0;
	for (int g = 0; g < env->ngroups; off += env->gsize[g++]) {
		if (ps_group_read(&th->g[g], &gr, NULL))
			memset(&gr, 0, sizeof gr);
		memcpy(r->val + off, gr.val, (size_t)env->gsize[g] * sizeof gr.val[0]);
		if (g == 0) {
			r->time_enabled = gr.time_enabled;
			r->time_running = gr.time_running;
		} else {
			r->val[extra++] = gr.time_enabled;
			r->val[extra++] = gr.time_running;
		}
	}
}
