/* core/catch/ptrace/ptrace_bp.c - the breakpoint table: int3 bytes written into the tracee, found
 * by address in an open-addressing hash. What runs in place of the displaced instruction is
 * ptrace_xol.c's. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptrace_trap_priv.h"

static unsigned bp_home(const struct pt *pt, uint64_t a)
{
	return (unsigned)((a * 0x9e3779b97f4a7c15ull) >> 32) & (pt->bphcap - 1);
}

int ps__tr_bp_find(const struct ps_tracer *t, uint64_t a)
{
	const struct pt *pt = pt_of(t);

	if (!pt || !pt->bphcap)
		return -1;
	for (unsigned i = bp_home(pt, a);; i = (i + 1) & (pt->bphcap - 1)) {
		int k = pt->bph[i];
		if (k < 0 || pt->bp[k].addr == a)
			return k;
	}
}

int ps__tr_bph_rebuild(struct pt *pt, unsigned cap)
{
	int *n = malloc(cap * sizeof *n);

	if (!n)
		return -1;
	for (unsigned i = 0; i < cap; i++)
		n[i] = -1;
	free(pt->bph);
	pt->bph = n;
	pt->bphcap = cap;
	for (int k = 0; k < pt->nbp; k++) {
		unsigned i = bp_home(pt, pt->bp[k].addr);
		while (pt->bph[i] >= 0)
			i = (i + 1) & (cap - 1);
		pt->bph[i] = k;
	}
	return 0;
}

/* Write the armed/unarmed byte of @b into every process that carries breakpoints. */
void ps__tr_bp_write(struct ps_tracer *t, const struct bp *b, int armed)
{
	uint8_t c = armed ? INT3 : b->orig;

	for (struct ps_tr_proc *p = t->procs; p; p = p->next)
		if (p->writes_bps)
			mem_wr(p, b->addr, &c, 1);
}

/* Put the original byte of every armed breakpoint back into @p's memory. */
void ps__tr_bp_unwrite(struct ps_tracer *t, struct ps_tr_proc *p)
{
	const struct pt *pt = pt_of(t);

	for (int k = 0; k < pt->nbp; k++)
		if (pt->bp[k].enabled)
			mem_wr(p, pt->bp[k].addr, &pt->bp[k].orig, 1);
}

/* Forget every breakpoint, restoring its byte in each process that carries breakpoints but
 * @except (an exec gave @except a new address space: nothing of ours is in it). */
void ps__tr_bp_drop_all(struct ps_tracer *t, struct ps_tr_proc *except)
{
	struct pt *pt = pt_of(t);

	for (struct ps_tr_proc *p = t->procs; p; p = p->next)
		if (p->writes_bps && p != except)
			ps__tr_bp_unwrite(t, p);
	pt->nbp = 0;
	for (unsigned i = 0; i < pt->bphcap; i++)
		pt->bph[i] = -1;
	for (struct ps_tr_proc *p = t->procs; p; p = p->next)
		if (pt_proc(p))
			for (int i = 0; i < SLOT_USER; i++)
				pt_proc(p)->slot[i] = 0;
}

/* Read @n bytes of code at @a from @p with our int3s replaced by the original bytes. */
ssize_t ps__tr_code_read(struct ps_tracer *t, struct ps_tr_proc *p, uint64_t a, uint8_t *buf, size_t n)
{
	ssize_t got = pread(p->memfd, buf, n, (off_t)a);

	for (ssize_t i = 0; i < got; i++) {
		int k = ps__tr_bp_find(t, a + (uint64_t)i);
		if (k >= 0)
			buf[i] = pt_of(t)->bp[k].orig;
		if (tramp_is_on(p) && a + (uint64_t)i == p->entry)
			buf[i] = pt_proc(p)->tramp.orig;
	}
	return got;
}

/* ps_tracer_bp_add() (ptrace_bp.h), the tracer's traps registered. */
int ps__tr_bp_insert(struct ps_tracer *t, uint64_t addr, int kind, struct ps_error *err)
{
	struct pt *pt = pt_of(t);
	struct ps_tr_proc *p = ps__tr_main_proc(t);
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
			pt->bp[k].kind = PS_BP_FUNC;
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
	if (pt->nbp == pt->capbp) {
		int ncap = pt->capbp ? pt->capbp * 2 : 16;
		struct bp *nb = realloc(pt->bp, (size_t)ncap * sizeof *nb);
		if (!nb)
			return ps_error_set(err, ENOMEM, "out of memory");
		pt->bp = nb;
		pt->capbp = ncap;
	}
	uint8_t cc = INT3;
	if (mem_wr(p, addr, &cc, 1))
		return ps_error_set(err, errno, "cannot write a breakpoint at 0x%llx in %d: %s",
				    (unsigned long long)addr, (int)p->pid, strerror(errno));
	b.enabled = 1;
	k = pt->nbp++;
	pt->bp[k] = b;
	if ((unsigned)pt->nbp * 2 > pt->bphcap) {
		if (ps__tr_bph_rebuild(pt, pt->bphcap * 2)) {
			pt->nbp--;
			mem_wr(p, addr, &b.orig, 1);
			return ps_error_set(err, ENOMEM, "out of memory");
		}
	} else {
		unsigned i = bp_home(pt, addr);
		while (pt->bph[i] >= 0)
			i = (i + 1) & (pt->bphcap - 1);
		pt->bph[i] = k;
	}
	ps__tr_bp_write(t, &pt->bp[k], 1); /* followed children too */
	return k;
}

/* ps_tracer_bp_enable() (ptrace_bp.h), the tracer's traps registered. */
int ps__tr_bp_arm(struct ps_tracer *t, int id, int on, struct ps_error *err)
{
	struct pt *pt = pt_of(t);

	if (id < 0 || id >= pt->nbp)
		return ps_error_set(err, PS_EUSAGE, "no breakpoint %d", id);
	on = !!on;
	if (pt->bp[id].enabled != on) {
		pt->bp[id].enabled = on;
		ps__tr_bp_write(t, &pt->bp[id], on);
	}
	return 0;
}
