/* core/proc/tracer.c - the tracer's life: spawn or attach, run, detach, free.
 *
 * The tracer is process control, split by concern, all behind core/proc/tracer.h and sharing
 * core/proc/tracer_priv.h (and tracer_traps.h, what a trap layer above may use):
 *   tracer.c       spawn/attach, the run loop, detach and free
 *   tracer_stop.c  handling each stop, settling (holding) every thread
 *   tracer_proc.c  threads and processes: clone, fork, vfork, exec, exit; resuming a thread
 *   tracer_wait.c  waiting for the next stop (sigtimedwait, deadline, interrupt)
 * Each calls only the files below it in this list. Breakpoints, displaced instructions and
 * caught returns are the ptrace catcher's (core/catch/ptrace/): it registers trap hooks
 * (struct ps_tracer_traps), which the tracer calls for SIGTRAPs, thread ends, forks, execs and
 * the detach, without knowing what they do.
 *
 * Choices:
 *
 * - Threads live in an open-addressing hash keyed by tid; the per-stop path allocates
 *   nothing and uses GETREGS/SETREGS/CONT.
 * - One struct ps_tr_proc per address space, with its /proc/PID/mem open: the trap layer reads and
 *   writes the program's memory through it (pread/pwrite).
 * - A spawned program gets PR_SET_PDEATHSIG(SIGKILL) and PTRACE_O_EXITKILL: it never outlives
 *   perfsh; a program attached to by pid is detached, unharmed, when the tracer is freed.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "procmaps.h"
#include "tracer_priv.h"

static struct ps_tracer *tracer_new(const struct ps_tracer_ops *ops, void *ud)
{
	struct ps_tracer *t = calloc(1, sizeof *t);

	if (!t)
		return NULL;
	if (ops)
		t->ops = *ops;
	t->ud = ud;
	t->code = -1;
	t->err = &t->errbuf;
	return t;
}

/* The file execvp() would run for @prog, in @path; 0, or -1 with errno (ENOENT). */
static int find_program(const char *prog, char *path, size_t size)
{
	const char *dirs = getenv("PATH");

	if (strchr(prog, '/'))
		return snprintf(path, size, "%s", prog) < (int)size ? 0 : (errno = ENAMETOOLONG, -1);
	for (const char *d = dirs ? dirs : "/usr/local/bin:/usr/bin:/bin"; d;
	     d = strchr(d, ':') ? strchr(d, ':') + 1 : NULL) {
		int len = (int)strcspn(d, ":");
		if (snprintf(path, size, "%.*s%s%s", len, d, len ? "/" : "", prog) < (int)size &&
		    access(path, X_OK) == 0)
			return 0;
	}
	errno = ENOENT;
	return -1;
}

/* One line on why @prog cannot be traced (missing, a directory, not executable, a script,
 * not ELF), or 0 when it is an executable ELF file. */
static int check_program(const char *prog, struct ps_error *err)
{
	char path[4096], head[128] = {0};
	struct stat sb;
	ssize_t n;
	int fd;

	if (find_program(prog, path, sizeof path) || stat(path, &sb)) {
		if (!strchr(prog, '/') && access(prog, F_OK) == 0)
			return ps_error_set(err, ENOENT, "cannot run '%s': it is not in PATH; give its path, ./%s",
					    prog, prog);
		return ps_error_set(err, ENOENT, "cannot run '%s': no such program; give the path of a program", prog);
	}
	if (S_ISDIR(sb.st_mode))
		return ps_error_set(err, EISDIR, "cannot run '%s': it is a directory; give the program to run", prog);
	if (access(path, X_OK))
		return ps_error_set(err, EACCES, "cannot run '%s': it is not executable (chmod +x it)", prog);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return ps_error_set(err, errno, "cannot run '%s': %s", prog, strerror(errno));
	n = read(fd, head, sizeof head - 1);
	close(fd);
	if (n >= 2 && head[0] == '#' && head[1] == '!') {
		head[strcspn(head, "\n")] = '\0';
		return ps_error_set(err, ENOEXEC,
				    "'%s' is a script (%s); perfsh traces the ELF program itself: give that program "
				    "and its arguments instead",
				    prog, head);
	}
	if (n < 4 || memcmp(head, ELFMAG, SELFMAG))
		return ps_error_set(err, ENOEXEC, "cannot run '%s': it is not an ELF program; give a compiled program",
				    prog);
	return 0;
}

/* In the child of ps_tracer_spawn()'s fork: wait stopped until the tracer seized it, then exec
 * @argv; the errno of a failed exec goes to @fd. Never returns. */
static _Noreturn void spawn_child(char *const argv[], int fd, pid_t parent)
{
	int e;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	raise(SIGSTOP);
	execvp(argv[0], argv);
	e = errno;
	if (write(fd, &e, sizeof e) < 0)
		_exit(126);
	_exit(127);
}

/* Seize the stopped child t->pid and let it run to its exec (the PTRACE_EVENT_EXEC stop); @fd
 * reads the errno of an exec that failed. 0, or -1 with @err set. */
static int seize_to_exec(struct ps_tracer *t, const char *prog, int fd, struct ps_error *err)
{
	pid_t pid = t->pid;
	int st = 0, e;

	while (waitpid(pid, &st, WUNTRACED) < 0 && errno == EINTR)
		;
	if (!WIFSTOPPED(st))
		return ps_error_set(err, ECHILD, "cannot run '%s': the child died before exec", prog);
	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_OPTS)) {
		e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return ps_error_set(err, e, "ptrace(SEIZE, %d): %s", (int)pid, strerror(e));
	}
	t->attached = 1;
	kill(pid, SIGCONT);
	for (;;) {
		pid_t w = waitpid(pid, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			/* the child's exec failed (it wrote errno into the pipe), or it died */
			t->attached = 0;
			if (read(fd, &e, sizeof e) == (ssize_t)sizeof e)
				return ps_error_set(err, e, "cannot run '%s': %s", prog, strerror(e));
			return ps_error_set(err, ECHILD, "cannot run '%s': it died before exec", prog);
		}
		int ev = st >> 16, sig = WSTOPSIG(st);
		if (ev == PTRACE_EVENT_EXEC)
			return 0;
		ptrace(PTRACE_CONT, pid, 0, ev ? 0 : (long)(sig == SIGSTOP ? 0 : sig));
	}
}

int ps_tracer_spawn(struct ps_tracer **tp, char *const argv[], const struct ps_tracer_ops *ops, void *ud,
		    struct ps_error *err)
{
	struct ps_tracer *t;
	struct ps_tr_proc *p;
	int fds[2] = {-1, -1}, e = 0;
	pid_t pid, parent = getpid();

	*tp = NULL;
	if (!argv || !argv[0])
		return ps_error_set(err, PS_EUSAGE, "spawn: no program given");
	if (check_program(argv[0], err))
		return -1;
	if (!(t = tracer_new(ops, ud)))
		return ps_error_set(err, ENOMEM, "out of memory");
	if (pipe2(fds, O_CLOEXEC)) {
		e = errno;
		ps_error_set(err, e, "pipe: %s", strerror(e));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		ps_error_set(err, e, "fork: %s", strerror(e));
		goto fail;
	}
	if (pid == 0) {
		close(fds[0]);
		spawn_child(argv, fds[1], parent);
	}
	close(fds[1]);
	fds[1] = -1;
	t->pid = pid;
	t->spawned = 1;
	if (seize_to_exec(t, argv[0], fds[0], err))
		goto fail;
	close(fds[0]);
	fds[0] = -1;
	errno = 0;
	if (!(p = ps__tr_proc_new(t, pid)) || !ps__tr_th_new(t, pid, p, TH_HELD)) {
		e = errno ? errno : ENOMEM;
		ps_error_set(err, e, "cannot open /proc/%d/mem: %s", (int)pid, strerror(e));
		goto fail; /* ps_tracer_free() kills the child */
	}
	p->writes_bps = p->sees_bps = 1;
	*tp = t;
	return 0;
fail:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	ps_tracer_free(t);
	return -1;
}

/* Why ptrace(SEIZE) of @pid failed with @e: another user's process, one traced already, or
 * (where the yama module is loaded) its ptrace_scope. */
static int attach_denied(pid_t pid, int e, struct ps_error *err)
{
	char v[128];
	long uid = -1, tracer = 0;

	if (e != EPERM)
		return ps_error_set(err, e, "ptrace(SEIZE, %d): %s", (int)pid, strerror(e));
	if (!ps_proc_status(pid, "Uid", v, sizeof v))
		uid = strtol(v, NULL, 10); /* the real uid, first of four */
	if (!ps_proc_status(pid, "TracerPid", v, sizeof v))
		tracer = strtol(v, NULL, 10);
	if (tracer > 0)
		return ps_error_set(err, e,
				    "attach %d: the process is traced already (by pid %ld); end that tracer first",
				    (int)pid, tracer);
	if (uid >= 0 && uid != (long)geteuid() && geteuid() != 0)
		return ps_error_set(err, e,
				    "attach %d: the process belongs to another user (uid %ld); run perfsh as that "
				    "user (or as root)",
				    (int)pid, uid);
	if (access("/proc/sys/kernel/yama/ptrace_scope", F_OK) == 0)
		return ps_error_set(err, e,
				    "attach %d: not permitted by /proc/sys/kernel/yama/ptrace_scope; set it to 0 "
				    "or run perfsh as root",
				    (int)pid);
	return ps_error_set(err, e, "attach %d: not permitted (ptrace: %s); run perfsh as root", (int)pid, strerror(e));
}

/* One pass over /proc/@t->pid/task: seize each thread not traced yet (@*changed when one was).
 * @*p is the process, opened at the first thread. 0, or -1 with @err set. */
static int attach_pass(struct ps_tracer *t, struct ps_tr_proc **p, int *changed, struct ps_error *err)
{
	pid_t pid = t->pid;
	char path[64];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	*changed = 0;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if (!(d = opendir(path))) {
		int e = errno == ENOENT ? ESRCH : errno;
		return ps_error_set(err, e, "attach %d: %s", (int)pid, e == ESRCH ? "no such process" : strerror(e));
	}
	while (!rc && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || ps__tr_th_find(t, tid))
			continue;
		/* no PTRACE_O_EXITKILL: a process perfsh did not start outlives it */
		if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_OPTS & ~PTRACE_O_EXITKILL)) {
			if (tid == pid && !t->attached)
				rc = attach_denied(pid, errno, err);
			continue;
		}
		t->attached = 1;
		if (!*p && !(*p = ps__tr_proc_new(t, pid))) {
			int e = errno;
			ptrace(PTRACE_DETACH, tid, 0, 0);
			t->attached = 0;
			rc = ps_error_set(err, e, "cannot open /proc/%d/mem: %s", (int)pid, strerror(e));
			continue;
		}
		(*p)->writes_bps = (*p)->sees_bps = 1;
		if (!ps__tr_th_new(t, tid, *p, TH_RUN)) {
			ptrace(PTRACE_DETACH, tid, 0, 0);
			continue;
		}
		*changed = 1;
	}
	closedir(d);
	if (!rc && !t->attached)
		rc = ps_error_set(err, ESRCH, "attach %d: no such process", (int)pid);
	return rc;
}

int ps_tracer_attach(struct ps_tracer **tp, pid_t pid, const struct ps_tracer_ops *ops, void *ud, struct ps_error *err)
{
	struct ps_tracer *t;
	struct ps_tr_proc *p = NULL;
	int changed;

	*tp = NULL;
	if (!(t = tracer_new(ops, ud)))
		return ps_error_set(err, ENOMEM, "out of memory");
	t->pid = pid;
	t->err = err ? err : &t->errbuf;
	/* threads started meanwhile appear in the next pass */
	do {
		if (attach_pass(t, &p, &changed, err) || ps__tr_settle(t)) {
			ps_tracer_free(t);
			return -1;
		}
	} while (changed);
	t->err = &t->errbuf;
	*tp = t;
	return 0;
}

pid_t ps_tracer_pid(const struct ps_tracer *t)
{
	return t->pid;
}

int ps_tracer_set_follow_fork(struct ps_tracer *t, int follow)
{
	t->follow = !!follow;
	return 0;
}

/* Forget every thread (they are gone, or detached). */
static void th_free_all(struct ps_tracer *t)
{
	while (t->nth)
		for (unsigned i = 0; i < t->thcap; i++)
			if (t->th[i]) {
				ps__tr_th_free(t, t->th[i]);
				break;
			}
}

static int run_loop(struct ps_tracer *t, struct ps_error *err)
{
	int st;

	t->err = err ? err : &t->errbuf;
	t->pause = 0;
	t->abort = NULL;
	if (!t->attached)
		return t->nth ? ps_error_set(err, PS_EUSAGE, "the tracer is detached") : 1;
	/* threads found at spawn/attach are announced now; held threads (first run, or
	 * paused by a callback) go on */
	for (unsigned i = 0; i < t->thcap; i++) {
		struct ps_tr_thread *th = t->th[i];
		if (th && th->state == TH_HELD && th->proc && !th->announced) {
			if (!th->proc->silent && t->ops.thread_new)
				cbres(t, t->ops.thread_new(t->ud, th->tid), "thread_new");
			th->announced = 1;
		}
	}
	t->pause = 0;
	for (unsigned i = 0; i < t->thcap; i++)
		if (t->th[i] && t->th[i]->state == TH_HELD && t->th[i]->proc)
			ps__tr_resume(t, t->th[i], 0);
	for (;;) {
		if (t->abort)
			return ps_error_set(err, PS_EUSAGE, "stopped: the %s callback returned -1", t->abort);
		if (t->pause)
			return 0;
		if (!t->nth)
			return 1;
		if (t->intr) {
			t->intr = 0;
			return 0;
		}
		pid_t w = ps__tr_wait(t, &st);
		if (w == 0)
			continue; /* interrupted, or the deadline passed */
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD) {
				th_free_all(t);
				return 1;
			}
			return ps_error_set(err, errno, "waitpid: %s", strerror(errno));
		}
		t->stops++;
		if (ps__tr_handle(t, w, st))
			return -1;
	}
}

int ps_tracer_run(struct ps_tracer *t, struct ps_error *err)
{
	ps__tr_wait_begin(t);
	int rc = run_loop(t, err);
	ps__tr_wait_end(t);
	return rc;
}

int ps_tracer_status(const struct ps_tracer *t, int *exited, int *code, int *signo)
{
	if (exited)
		*exited = t->ended;
	if (code)
		*code = t->ended ? t->code : -1;
	if (signo)
		*signo = t->ended ? t->signo : 0;
	return t->ended;
}

/* Whether a SIGTRAP waits in thread @tid's own queue (SigPnd of its status). */
static int sigtrap_pending(pid_t tid)
{
	char v[64];
	unsigned long long mask;

	if (ps_proc_status(tid, "SigPnd", v, sizeof v))
		return 0;
	mask = strtoull(v, NULL, 16);
	return !!(mask & (1ull << (SIGTRAP - 1)));
}

/*
 * A thread that executed one of our int3s just as PTRACE_INTERRUPT stopped it reports the
 * interrupt first and keeps the SIGTRAP pending; detached like that, it would die of it.
 * Let each such thread take its SIGTRAP now, while the breakpoints and frames are still
 * known, so that settle_stop() rewinds it (or pops its frame at the trampoline).
 */
static int drain_traps(struct ps_tracer *t)
{
	t->settling = 1;
	for (unsigned i = 0; i < t->thcap; i++) {
		struct ps_tr_thread *th = t->th[i];
		for (int round = 0; th && round < 4 && th->state == TH_HELD && sigtrap_pending(th->tid); round++) {
			pid_t tid = th->tid;
			int st;
			th->state = TH_RUN;
			if (ptrace(PTRACE_CONT, tid, 0, 0) || waitpid(tid, &st, __WALL) != tid)
				break;
			t->stops++;
			if (ps__tr_handle(t, tid, st)) {
				t->settling = 0;
				return -1;
			}
			th = t->th[i]; /* gone if it exited */
		}
	}
	t->settling = 0;
	return 0;
}

int ps_tracer_detach(struct ps_tracer *t, struct ps_error *err)
{
	if (!t->attached)
		return 0;
	t->err = err ? err : &t->errbuf;
	if (ps__tr_settle(t) || drain_traps(t) || ps__tr_settle(t))
		return -1;
	if (t->traps)
		t->traps->detach(t);
	ps__tr_detach_all(t);
	t->attached = 0;
	return 0;
}

void ps_tracer_free(struct ps_tracer *t)
{
	int st;

	if (!t)
		return;
	t->ops = (struct ps_tracer_ops){0}; /* no callback from here on */
	if (t->attached && t->spawned) {
		for (unsigned i = 0; i < t->thcap; i++)
			if (t->th[i])
				kill(t->th[i]->tid, SIGKILL);
		kill(t->pid, SIGKILL);
		while (t->nth) {
			pid_t w = waitpid(-1, &st, __WALL);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			struct ps_tr_thread *th = ps__tr_th_find(t, w);
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				if (th)
					ps__tr_thread_gone(t, th, st);
			} else if (!th) {
				kill(w, SIGKILL); /* a new tracee born meanwhile */
			}
		}
	} else if (t->attached) {
		ps_tracer_detach(t, NULL);
	}
	th_free_all(t);
	while (t->procs)
		ps__tr_proc_free(t, t->procs);
	if (t->traps)
		t->traps->free(t);
	free(t->th);
	free(t);
}

uint64_t ps_tracer_entry(struct ps_tracer *t)
{
	struct ps_tr_proc *p = ps__tr_main_proc(t);

	if (p && !p->entry)
		p->entry = ps__tr_read_auxv(p->pid, AT_ENTRY);
	return p ? p->entry : 0;
}

uint64_t ps_tracer_load_bias(struct ps_tracer *t, const char *path_or_null)
{
	char path[1024];
	uint64_t bias;
	struct ps_error err;

	if (ps_maps_find(t->pid, path_or_null, PS_MAPS_EXACT, path, sizeof path, &err) ||
	    ps_maps_bias(t->pid, path, &bias, &err))
		return PS_TRACER_NO_BIAS;
	return bias;
}

void ps__tr_set_traps(struct ps_tracer *t, const struct ps_tracer_traps *traps, void *ud)
{
	t->traps = traps;
	t->traps_ud = ud;
}

uint64_t ps_tracer_stops(const struct ps_tracer *t)
{
	return t->stops;
}
