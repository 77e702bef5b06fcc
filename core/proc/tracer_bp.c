/* core/proc/tracer_bp.c - the breakpoint table: int3 bytes written into the tracee, found by
 * address in an open-addressing hash. What runs in place of the displaced instruction is
 * tracer_xol.c's. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer_priv.h"

static unsigned bp_home(const struct ps_tracer *t, uint64_t a)
{
	return (unsigned)((a * 0x9e3779b97f4a7c15ull) >> 32) & (t->bphcap - 1);
}

int ps__tr_bp_find(const struct ps_tracer *t, uint64_t a)
{
	if (!t->bphcap)
		return -1;
	for (unsigned i = bp_home(t, a);; i = (i + 1) & (t->bphcap - 1)) {
		int k = t->bph[i];
		if (k < 0 || t->bp[k].addr == a)
			return k;
	}
}

int ps__tr_bph_rebuild(struct ps_tracer *t, unsigned cap)
{
	int *n = malloc(cap * sizeof *n);

	if (!n)
		return -1;
	for (unsigned i = 0; i < cap; i++)
		n[i] = -1;
	free(t->bph);
	t->bph = n;
	t->bphcap = cap;
	for (int k = 0; k < t->nbp; k++) {
		unsigned i = bp_home(t, t->bp[k].addr);
		while (t->bph[i] >= 0)
			i = (i + 1) & (cap - 1);
		t->bph[i] = k;
	}
	return 0;
}

/* Write the armed/unarmed byte of @b into every process that carries breakpoints. */
void ps__tr_bp_write(struct ps_tracer *t, const struct bp *b, int armed)
{
	uint8_t c = armed ? INT3 : b->orig;

	for (struct proc *p = t->procs; p; p = p->next)
		if (p->writes_bps)
			mem_wr(p, b->addr, &c, 1);
}

/* Put the original byte of every armed breakpoint back into @p's memory. */
void ps__tr_bp_unwrite(struct ps_tracer *t, struct proc *p)
{
	for (int k = 0; k < t->nbp; k++)
		if (t->bp[k].enabled)
			mem_wr(p, t->bp[k].addr, &t->bp[k].orig, 1);
}

/* Forget every breakpoint, restoring its byte in each process that carries breakpoints but
 * @except (an exec gave @except a new address space: nothing of ours is in it). */
void ps__tr_bp_drop_all(struct ps_tracer *t, struct proc *except)
{
	for (struct proc *p = t->procs; p; p = p->next)
		if (p->writes_bps && p != except)
			ps__tr_bp_unwrite(t, p);
	t->nbp = 0;
	for (unsigned i = 0; i < t->bphcap; i++)
		t->bph[i] = -1;
	for (struct proc *p = t->procs; p; p = p->next)
		if (p->slot)
			for (int i = 0; i < SLOT_USER; i++)
				p->slot[i] = 0;
}

/* Read @n bytes of code at @a from @p with our int3s replaced by the original bytes. */
ssize_t ps__tr_code_read(struct ps_tracer *t, struct proc *p, uint64_t a, uint8_t *buf, size_t n)
{
	ssize_t got = pread(p->memfd, buf, n, (off_t)a);

	for (ssize_t i = 0; i < got; i++) {
		int k = ps__tr_bp_find(t, a + (uint64_t)i);
		if (k >= 0)
			buf[i] = t->bp[k].orig;
		if (p->tramp_on && a + (uint64_t)i == p->entry)
			buf[i] = p->tramp.orig;
	}
	return got;
}

struct proc *ps__tr_main_proc(struct ps_tracer *t)
{
	for (struct proc *p = t->procs; p; p = p->next)
		if (p->pid == t->pid)
			return p;
	return NULL;
}

int ps_tracer_bp_add(struct ps_tracer *t, uint64_t addr, int kind, struct ps_error *err)
{
	struct proc *p = ps__tr_main_proc(t);
	uint8_t code[16];
	struct bp b;
	int k;

	if (kind != PS_BP_FUNC && kind != PS_BP_ADDR)
		return ps_error_set(err, PS_EUSAGE, "breakpoint kind %d is not PS_BP_FUNC or PS_BP_ADDR", kind);
	if (!p || !t->attached)
		return ps_error_set(err, ESRCH, "process %d is not traced any more", (int)t->pid);
	if ((k = ps__tr_bp_find(t, addr)) >= 0) {
		/* one site serves both: a function's entry is a plain address too */
		if (kind == PS_BP_FUNC)
			t->bp[k].kind = PS_BP_FUNC;
		return k;
	}
	if (!p->entry)
		p->entry = ps__tr_read_auxv(p->pid, AT_ENTRY);
	if (addr == p->entry)
		return ps_error_set(err, PS_EUSAGE,
				    "cannot place a breakpoint at the entry point 0x%llx: it is the "
				    "return trampoline",
				    (unsigned long long)addr);
	ssize_t n = ps__tr_code_read(t, p, addr, code, sizeof code);
	if (n <= 0)
		return ps_error_set(err, EFAULT, "cannot read code at 0x%llx in process %d: %s",
				    (unsigned long long)addr, (int)p->pid, n < 0 ? strerror(errno) : "not mapped");
	memset(&b, 0, sizeof b);
	b.addr = addr;
	b.kind = kind;
	b.orig = code[0];
	if (ps__tr_bp_prepare(&b, code, (size_t)n, err))
		return -1;
	if (t->nbp == t->capbp) {
		int ncap = t->capbp ? t->capbp * 2 : 16;
		struct bp *nb = realloc(t->bp, (size_t)ncap * sizeof *nb);
		if (!nb)
			return ps_error_set(err, ENOMEM, "out of memory");
		t->bp = nb;
		t->capbp = ncap;
	}
	uint8_t cc = INT3;
	if (mem_wr(p, addr, &cc, 1))
		return ps_error_set(err, errno, "cannot write a breakpoint at 0x%llx in %d: %s",
				    (unsigned long long)addr, (int)p->pid, strerror(errno));
	b.enabled = 1;
	k = t->nbp++;
	t->bp[k] = b;
	if ((unsigned)t->nbp * 2 > t->bphcap) {
		if (ps__tr_bph_rebuild(t, t->bphcap * 2)) {
			t->nbp--;
			mem_wr(p, addr, &b.orig, 1);
			return ps_error_set(err, ENOMEM, "out of memory");
		}
	} else {
		unsigned i = bp_home(t, addr);
		while (t->bph[i] >= 0)
			i = (i + 1) & (t->bphcap - 1);
		t->bph[i] = k;
	}
	ps__tr_bp_write(t, &t->bp[k], 1); /* followed children too */
	return k;
}

int ps_tracer_bp_enable(struct ps_tracer *t, int id, int on, struct ps_error *err)
{
	if (id < 0 || id >= t->nbp)
		return ps_error_set(err, PS_EUSAGE, "no breakpoint %d", id);
	on = !!on;
	if (t->bp[id].enabled != on) {
		t->bp[id].enabled = on;
		ps__tr_bp_write(t, &t->bp[id], on);
	}
	return 0;
}
