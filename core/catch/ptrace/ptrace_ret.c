/* core/catch/ptrace/ptrace_ret.c - catching returns: the return address at [rsp] is swapped for a
 * trampoline (the ELF entry point, holding an int3) and kept on a per-thread shadow stack
 * (the comment at the top of ptrace_trap.c describes the scheme and its limits). */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>

#include "ptrace_trap_priv.h"

/* Report open frames whose entry rsp is below @sp as unwound and drop them. */
void ps__tr_unwind_below(struct ps_tracer *t, struct ps_tr_thread *th, uint64_t sp)
{
	while (nfr(th) && fr_at(th, nfr(th) - 1)->sp < sp) {
		struct frame f = fr_pop(th);
		if (!quiet(t, th) && t->ops.ret)
			cbres(t, t->ops.ret(t->ud, th->tid, f.bp, f.cookie, 1), "ret");
	}
}

int ps__tr_fr_push(struct ps_tr_thread *th, const struct frame *f)
{
	struct pt_thread *s = th->trap;

	if (!s || s->nfr == s->capfr) {
		int ncap = s ? s->capfr * 2 : 16;
		struct pt_thread *n = realloc(s, sizeof *n + (size_t)ncap * sizeof n->fr[0]);
		if (!n)
			return -1;
		if (!s)
			n->nfr = 0;
		n->capfr = ncap;
		th->trap = s = n;
	}
	s->fr[s->nfr++] = *f;
	return 0;
}

/* Install the trampoline int3 at the entry point of @p. */
static int tramp_on(struct ps_tracer *t, struct ps_tr_proc *p)
{
	uint8_t code[16], cc = INT3;
	struct pt_proc *pp = pt_proc_get(p);
	ssize_t n;

	if (!pp)
		return ps_error_set(t->err, ENOMEM, "out of memory");
	if (pp->tramp_on)
		return 0;
	if (!p->entry && !(p->entry = ps__tr_read_auxv(p->pid, AT_ENTRY)))
		return ps_error_set(t->err, ENOENT, "no AT_ENTRY in /proc/%d/auxv", (int)p->pid);
	n = ps__tr_code_read(t, p, p->entry, code, sizeof code);
	memset(&pp->tramp, 0, sizeof pp->tramp);
	pp->tramp.addr = p->entry;
	pp->tramp.kind = PS_BP_ADDR;
	if (n <= 0 || ps__tr_bp_prepare(&pp->tramp, code, (size_t)n, t->err))
		return -1;
	pp->tramp.orig = code[0];
	if (mem_wr(p, p->entry, &cc, 1))
		return ps_error_set(t->err, errno, "cannot write the entry point of %d: %s", (int)p->pid,
				    strerror(errno));
	pp->tramp_on = 1;
	return 0;
}

/* Swap the return address at [rsp] for the trampoline and push a frame. */
int ps__tr_catch_return(struct ps_tracer *t, struct ps_tr_thread *th, const struct user_regs_struct *r, int id,
			uint64_t cookie)
{
	struct ps_tr_proc *p = th->proc;
	struct frame f = {0, r->rsp, cookie, id, 0};
	uint64_t cur;

	if (tramp_on(t, p))
		return -1;
	if (th->pre_stop == t->stops && th->pre_rsp == r->rsp && th->pre_nw == p->nwrites)
		cur = th->pre_ret; /* read ahead with the CPU */
	else if (mem_rd(p, r->rsp, &cur, 8))
		return -1;
	f.ret = cur;
	if (cur == p->entry) {
		/* a tail call from a caught function: the slot is already swapped */
		int i = nfr(th) - 1;
		while (i >= 0 && fr_at(th, i)->sp != r->rsp)
			i--;
		if (i < 0)
			return -1;
		f.ret = fr_at(th, i)->ret;
	} else if (mem_wr(p, r->rsp, &p->entry, 8)) {
		return -1;
	}
	if (ps__tr_fr_push(th, &f)) {
		mem_wr(p, r->rsp, &cur, 8);
		return -1;
	}
	return 0;
}

/* The thread trapped at the trampoline. */
int ps__tr_on_tramp(struct ps_tracer *t, struct ps_tr_thread *th, struct user_regs_struct *r)
{
	struct ps_tr_proc *p = th->proc;
	uint64_t sp = r->rsp - 8;
	int fsig = 0, rc;

	ps__tr_unwind_below(t, th, sp);
	if (nfr(th) && fr_at(th, nfr(th) - 1)->sp == sp) {
		uint64_t ret = 0;
		while (nfr(th) && fr_at(th, nfr(th) - 1)->sp == sp) {
			struct frame f = fr_pop(th);
			ret = f.ret;
			if (!quiet(t, th) && t->ops.ret)
				cbres(t, t->ops.ret(t->ud, th->tid, f.bp, f.cookie, 0), "ret");
		}
		r->rip = ret;
	} else {
		/* the program itself runs _start */
		r->rip = p->entry;
		rc = ps__tr_displaced(t, th, &pt_proc(p)->tramp, SLOT_TRAMP, -1, r, &fsig);
		if (rc == 1 && !fsig)
			return 0;
		if (rc < 0)
			return -1;
	}
	if (ptrace(PTRACE_SETREGS, th->tid, 0, r) && errno != ESRCH)
		return ps_error_set(t->err, errno, "ptrace(SETREGS, %d): %s", (int)th->tid, strerror(errno));
	ps__tr_resume(t, th, fsig);
	return 0;
}

/* Put back, in @p's memory, the real return address of each open frame of @th whose slot is
 * at or above @sp and still holds the trampoline. */
void ps__tr_frames_unswap(struct ps_tr_proc *p, const struct ps_tr_thread *th, uint64_t sp)
{
	for (int i = 0; i < nfr(th); i++) {
		const struct frame *f = fr_at(th, i);
		uint64_t v;
		if (f->sp >= sp && !mem_rd(p, f->sp, &v, 8) && v == p->entry)
			mem_wr(p, f->sp, &f->ret, 8);
	}
}

int ps_tracer_frames_restore(struct ps_tracer *t, pid_t tid)
{
	struct ps_tr_thread *th = ps__tr_th_find(t, tid);

	if (!th || !th->proc)
		return -1;
	for (int i = 0; i < nfr(th); i++) {
		struct frame *f = fr_at(th, i);
		if (!f->restored && !mem_wr(th->proc, f->sp, &f->ret, 8))
			f->restored = 1;
	}
	return 0;
}

int ps_tracer_frames_reswap(struct ps_tracer *t, pid_t tid)
{
	struct ps_tr_thread *th = ps__tr_th_find(t, tid);
	struct user_regs_struct r;

	if (!th || !th->proc || ptrace(PTRACE_GETREGS, tid, 0, &r))
		return -1;
	ps__tr_unwind_below(t, th, r.rsp); /* the frames the exception went through */
	for (int i = 0; i < nfr(th); i++) {
		struct frame *f = fr_at(th, i);
		uint64_t v;
		if (f->restored && !mem_rd(th->proc, f->sp, &v, 8) && v == f->ret &&
		    !mem_wr(th->proc, f->sp, &th->proc->entry, 8))
			f->restored = 0;
	}
	return 0;
}
