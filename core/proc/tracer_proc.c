/* core/proc/tracer_proc.c - the tracer's threads and processes: the thread table (a hash keyed by
 * tid), one struct ps_tr_proc per address space (its /proc/PID/mem), what happens to them on clone,
 * fork, vfork, exec and exit, and resuming a thread with the signals it is owed. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procmaps.h"
#include "tracer_priv.h"

/* A new address space of process @pid, with its /proc/PID/mem open; NULL (errno) if that
 * cannot be opened (the process died, /proc is not mounted). */
struct ps_tr_proc *ps__tr_proc_new(struct ps_tracer *t, pid_t pid)
{
	char path[64];
	struct ps_tr_proc *p = calloc(1, sizeof *p);

	if (!p)
		return NULL;
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	p->memfd = open(path, O_RDWR | O_CLOEXEC);
	if (p->memfd < 0) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->next = t->procs;
	t->procs = p;
	return p;
}

/* Take @p out of the tracer's list and release it. */
void ps__tr_proc_free(struct ps_tracer *t, struct ps_tr_proc *p)
{
	for (struct ps_tr_proc **pp = &t->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	close(p->memfd);
	free(p->trap);
	free(p);
}

/* One thread of @p less: @p goes with its last thread. */
static void proc_unref(struct ps_tracer *t, struct ps_tr_proc *p)
{
	if (--p->nthreads <= 0)
		ps__tr_proc_free(t, p);
}

static unsigned th_home(const struct ps_tracer *t, pid_t tid)
{
	return ((unsigned)tid * 2654435761u) & (t->thcap - 1);
}

struct ps_tr_thread *ps__tr_th_find(const struct ps_tracer *t, pid_t tid)
{
	if (!t->thcap)
		return NULL;
	for (unsigned i = th_home(t, tid);; i = (i + 1) & (t->thcap - 1)) {
		if (!t->th[i])
			return NULL;
		if (t->th[i]->tid == tid)
			return t->th[i];
	}
}

static int th_put(struct ps_tracer *t, struct ps_tr_thread *th)
{
	if ((t->nth + 1) * 2 > t->thcap) {
		unsigned ncap = t->thcap ? t->thcap * 2 : 16, ocap = t->thcap;
		struct ps_tr_thread **n = calloc(ncap, sizeof *n), **o = t->th;
		if (!n)
			return -1;
		t->th = n;
		t->thcap = ncap;
		t->nth = 0;
		for (unsigned i = 0; i < ocap; i++)
			if (o[i])
				th_put(t, o[i]);
		free(o);
	}
	unsigned i = th_home(t, th->tid);
	while (t->th[i])
		i = (i + 1) & (t->thcap - 1);
	t->th[i] = th;
	t->nth++;
	return 0;
}

static void th_del(struct ps_tracer *t, struct ps_tr_thread *th)
{
	unsigned m = t->thcap - 1, i = th_home(t, th->tid);
	while (t->th[i] != th)
		i = (i + 1) & m;
	t->th[i] = NULL;
	t->nth--;
	for (unsigned j = (i + 1) & m; t->th[j]; j = (j + 1) & m) {
		unsigned k = th_home(t, t->th[j]->tid);
		/* move back entries whose home is not cyclically in (i, j] */
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			t->th[i] = t->th[j];
			t->th[j] = NULL;
			i = j;
		}
	}
}

struct ps_tr_thread *ps__tr_th_new(struct ps_tracer *t, pid_t tid, struct ps_tr_proc *p, int state)
{
	struct ps_tr_thread *th = calloc(1, sizeof *th);

	if (!th)
		return NULL;
	th->tid = tid;
	th->state = state;
	th->statfd = -1;
	th->proc = p;
	if (th_put(t, th)) {
		free(th);
		return NULL;
	}
	if (p)
		p->nthreads++;
	return th;
}

void ps__tr_th_free(struct ps_tracer *t, struct ps_tr_thread *th)
{
	th_del(t, th);
	if (th->statfd >= 0)
		close(th->statfd);
	free(th->trap);
	if (th->proc)
		proc_unref(t, th->proc);
	free(th);
}

struct ps_tr_proc *ps__tr_main_proc(struct ps_tracer *t)
{
	for (struct ps_tr_proc *p = t->procs; p; p = p->next)
		if (p->pid == t->pid)
			return p;
	return NULL;
}

uint64_t ps__tr_read_auxv(pid_t pid, unsigned long type)
{
	char path[64];
	uint64_t av[2], v = 0;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, av, sizeof av) == (ssize_t)sizeof av && av[0] != AT_NULL)
		if (av[0] == type) {
			v = av[1];
			break;
		}
	close(fd);
	return v;
}

static pid_t read_tgid(pid_t tid)
{
	char v[32];

	return ps_proc_status(tid, "Tgid", v, sizeof v) ? -1 : (pid_t)atoi(v);
}

void ps__tr_thread_gone(struct ps_tracer *t, struct ps_tr_thread *th, int st)
{
	struct ps_tr_proc *p = th->proc;

	if (t->traps)
		t->traps->thread_end(t, th);
	if (th->announced && !quiet(t, th) && t->ops.thread_exit)
		t->ops.thread_exit(t->ud, th->tid);
	if (p && th->tid == t->pid && p->pid == t->pid && !t->ended) {
		t->ended = 1;
		t->code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		t->signo = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	}
	ps__tr_th_free(t, th);
}

/* A thread that could not be detached (it is dying): its id, and whether it leads its process. */
struct dying {
	pid_t tid;
	int leader;
};

/* How long a dying thread's end is waited for, in 1 ms steps. */
#define DYING_WAIT_MS 2000

/* Wait for the end of dying thread @tid, still traced (the main process's end is kept as
   ps_tracer_status() tells it). */
static void reap_dying(struct ps_tracer *t, pid_t tid)
{
	const struct timespec ms = {0, 1000000};

	for (int i = 0; i < DYING_WAIT_MS; i++) {
		int st;
		pid_t w = waitpid(tid, &st, __WALL | WNOHANG);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return; /* not ours to wait for any more */
		if (w == 0) {
			nanosleep(&ms, NULL);
			continue;
		}
		if (WIFSTOPPED(st)) { /* one more stop on its way out: let it go */
			ptrace(PTRACE_DETACH, tid, 0, 0);
			continue;
		}
		if (tid == t->pid && !t->ended) {
			t->ended = 1;
			t->code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			t->signo = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		}
		return;
	}
}

/*
 * PTRACE_DETACH every thread (all held), each with the signals it is owed. A thread that can no
 * longer be detached is dying: a fatal signal taken by a thread detached before it ends the whole
 * group. It is still traced, so its end is the tracer's to wait for; left alone it would stay a
 * zombie, and its process would never end for its parent. Leaders are waited for last (a
 * leader's end comes after its other threads').
 */
void ps__tr_detach_all(struct ps_tracer *t)
{
	struct dying *dying = malloc((t->nth ? t->nth : 1) * sizeof *dying);
	unsigned n = 0;

	while (t->nth) {
		for (unsigned i = 0; i < t->thcap; i++) {
			struct ps_tr_thread *th = t->th[i];
			if (!th)
				continue;
			int sig = th->nsig ? th->sig[0] : 0;
			for (int j = 1; j < th->nsig; j++)
				syscall(SYS_tgkill, th->proc ? th->proc->pid : th->tid, th->tid, th->sig[j]);
			if (ptrace(PTRACE_DETACH, th->tid, 0, (long)sig) && errno == ESRCH && dying)
				dying[n++] = (struct dying){th->tid, th->proc && th->proc->pid == th->tid};
			ps__tr_th_free(t, th);
			break;
		}
	}
	for (int leaders = 0; leaders < 2; leaders++)
		for (unsigned i = 0; i < n; i++)
			if (dying[i].leader == leaders)
				reap_dying(t, dying[i].tid);
	free(dying);
}

/* Resume a stopped thread, delivering @sig (or the first stashed signal; more stashed
 * signals are re-sent with tgkill). */
void ps__tr_resume(struct ps_tracer *t, struct ps_tr_thread *th, int sig)
{
	if (t->pause && !t->settling) {
		/* a callback asked to pause: keep this thread stopped until the next run */
		if (sig)
			stash(th, sig);
		th->state = TH_HELD;
		return;
	}
	if (th->nsig) {
		int i = 0;
		if (!sig)
			sig = th->sig[i++];
		for (; i < th->nsig; i++)
			syscall(SYS_tgkill, th->proc ? th->proc->pid : th->tid, th->tid, th->sig[i]);
		th->nsig = 0;
	}
	if (th->group && !sig)
		ptrace(PTRACE_LISTEN, th->tid, 0, 0);
	else
		ptrace(PTRACE_CONT, th->tid, 0, (long)sig);
	th->group = 0;
	th->state = TH_RUN;
}

/* Both halves of a new tracee are known (its first stop, its parent's event). */
int ps__tr_born(struct ps_tracer *t, struct ps_tr_thread *ch, int sig, int ev)
{
	if (ch->release) {
		if (t->traps)
			t->traps->release(t, ch); /* its copy of memory as the program wrote it */
		ptrace(PTRACE_DETACH, ch->tid, 0, 0);
		ps__tr_th_free(t, ch);
		return 0;
	}
	ch->group = ev == PTRACE_EVENT_STOP && is_stopsig(sig);
	if (t->settling) {
		ch->state = TH_HELD;
		return 0;
	}
	if (!ch->proc->silent && t->ops.thread_new)
		cbres(t, t->ops.thread_new(t->ud, ch->tid), "thread_new");
	ch->announced = 1;
	ps__tr_resume(t, ch, 0);
	return 0;
}

/* PTRACE_EVENT_CLONE/FORK/VFORK stop of @th. */
int ps__tr_on_newchild(struct ps_tracer *t, struct ps_tr_thread *th, int ev)
{
	unsigned long msg = 0;
	struct ps_tr_proc *pp = th->proc, *p;

	if (ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg))
		return 0;
	pid_t c = (pid_t)msg;
	struct ps_tr_thread *ch = ps__tr_th_find(t, c);
	int early = ch && ch->state == TH_EARLY;
	if (!ch && !(ch = ps__tr_th_new(t, c, NULL, TH_AWAIT)))
		return ps_error_set(t->err, ENOMEM, "out of memory");
	if (ev == PTRACE_EVENT_CLONE && read_tgid(c) != pp->pid)
		ev = PTRACE_EVENT_FORK; /* clone() of a new process */
	ch->newkind = ev;
	if (ev == PTRACE_EVENT_CLONE) {
		ch->proc = pp;
		pp->nthreads++;
	} else {
		if (!(p = ps__tr_proc_new(t, c))) {
			/* the child died already, or /proc is not mounted: let it go */
			if (early)
				ptrace(PTRACE_DETACH, c, 0, 0);
			ps__tr_th_free(t, ch);
			goto parent;
		}
		p->nthreads = 1;
		ch->proc = p;
		p->entry = pp->entry;
		p->sees_bps = pp->sees_bps;
		if (t->follow) {
			p->writes_bps = pp->writes_bps;
		} else if (ev == PTRACE_EVENT_VFORK) {
			p->silent = 1; /* shares the parent's memory: keep it until exec/exit */
		} else {
			ch->release = 1;
		}
		if (t->traps)
			t->traps->fork(t, th, ch);
	}
	if (early)
		ps__tr_born(t, ch, 0, 0);
parent:
	if (t->settling)
		th->state = TH_HELD;
	else
		ps__tr_resume(t, th, 0);
	return 0;
}

/* PTRACE_EVENT_EXEC stop of @th (now the leader of its process). */
int ps__tr_on_exec(struct ps_tracer *t, struct ps_tr_thread *th)
{
	unsigned long former = 0;
	struct ps_tr_proc *p = th->proc;
	char path[64];

	ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &former);
	if ((pid_t)former != th->tid) {
		struct ps_tr_thread *ft = ps__tr_th_find(t, (pid_t)former);
		if (ft) {
			if (t->traps)
				t->traps->thread_end(t, ft);
			if (ft->announced && !quiet(t, ft) && t->ops.thread_exit)
				t->ops.thread_exit(t->ud, ft->tid);
			ps__tr_th_free(t, ft);
		}
	}
	if (t->traps)
		t->traps->thread_end(t, th);
	if ((pid_t)former != th->tid && th->announced && !quiet(t, th) && t->ops.thread_exit) {
		t->ops.thread_exit(t->ud, th->tid);
		th->announced = 0;
	}
	/* a new address space */
	snprintf(path, sizeof path, "/proc/%d/mem", (int)p->pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		close(p->memfd);
		p->memfd = fd;
	}
	p->entry = 0;
	th->rseq_cpu = 0; /* exec unregisters the rseq area */
	th->rseq_wait = 0;
	if (t->traps)
		t->traps->exec(t, th); /* before it changes p->writes_bps */
	if (p->silent) {
		/* a released vfork child no longer shares our breakpoints */
		ptrace(PTRACE_DETACH, th->tid, 0, 0);
		ps__tr_th_free(t, th);
		return 0;
	}
	p->writes_bps = p->sees_bps = p->pid == t->pid;
	if (t->settling) {
		th->state = TH_HELD;
		return 0;
	}
	if (!th->announced) {
		if (t->ops.thread_new)
			cbres(t, t->ops.thread_new(t->ud, th->tid), "thread_new");
		th->announced = 1;
	}
	if (t->ops.exec)
		cbres(t, t->ops.exec(t->ud, p->pid), "exec");
	ps__tr_resume(t, th, 0);
	return 0;
}

/* Where the kernel keeps the CPU thread @th runs on, in its rseq area (glibc registers one for
   each thread): the address of cpu_id, or 0 if it has none (yet). */
static uint64_t rseq_cpu(struct ps_tr_thread *th)
{
	struct __ptrace_rseq_configuration c;

	if (th->rseq_cpu || th->rseq_wait-- > 0)
		return th->rseq_cpu;
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, th->tid, sizeof c, &c) == (long)sizeof c && c.rseq_abi_pointer &&
	    c.rseq_abi_size >= 8)
		th->rseq_cpu = c.rseq_abi_pointer + 4; /* struct rseq: u32 cpu_id_start, u32 cpu_id */
	else
		th->rseq_wait = 64; /* not registered yet (or at all): look again later */
	return th->rseq_cpu;
}

void ps__tr_prefetch(struct ps_tracer *t, struct ps_tr_thread *th, uint64_t rsp)
{
	uint64_t a = th->proc ? rseq_cpu(th) : 0, ret;
	int32_t cpu;
	struct iovec loc[2] = {{&ret, 8}, {&cpu, 4}}, rem[2] = {{(void *)(uintptr_t)rsp, 8}, {(void *)(uintptr_t)a, 4}};

	th->pre_stop = 0;
	if (!a || process_vm_readv(th->tid, loc, 2, rem, 2, 0) != 12 || cpu < 0)
		return; /* each read on its own, when asked */
	th->pre_stop = t->stops;
	th->pre_nw = th->proc->nwrites;
	th->pre_rsp = rsp;
	th->pre_ret = ret;
	th->pre_cpu = cpu;
}

int ps_tracer_cpu(struct ps_tracer *t, pid_t tid)
{
	struct ps_tr_thread *th = ps__tr_th_find(t, tid);
	char buf[1024], path[64];
	ssize_t n;
	int32_t cpu;

	if (!th)
		return -1;
	if (th->pre_stop == t->stops)
		return th->pre_cpu;
	uint64_t a = th->proc ? rseq_cpu(th) : 0;
	if (a && !mem_rd(th->proc, a, &cpu, sizeof cpu) && cpu >= 0)
		return cpu;
	if (th->statfd < 0) {
		snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)(th->proc ? th->proc->pid : tid), (int)tid);
		if ((th->statfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return -1;
	}
	n = pread(th->statfd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *s = strrchr(buf, ')');
	if (!s)
		return -1;
	/* after ')' comes field 3 (state); field 39 is 36 fields further */
	for (int field = 2; field < 39; field++) {
		s = strchr(s + 1, ' ');
		if (!s)
			return -1;
	}
	return atoi(s + 1);
}
