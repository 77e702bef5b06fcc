/* tests/c/test_inject.c - ps_inject_library() (core/proc/inject.c) against real processes:
 * tests/fixtures/inject_lib.c loaded into tests/fixtures/inject_target.c while it runs (its main
 * thread blocked in read or in nanosleep, three threads computing), and the refusals. The target
 * must end as an untraced run of it does: same output, exit status 7. */
#include "ctest.h"
#include "fixtures.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"

#define TARGET "inject_target.c"

struct target {
	pid_t pid;
	int in, out; /* its stdin (ours to write), its stdout (ours to read) */
};

static const char *lib(void)
{
	return fixtures_cc("inject_lib.c", "libinject_fx.so", "-O2 -shared -fPIC -pthread");
}

static const char *marker(void)
{
	static char path[600];

	snprintf(path, sizeof path, "%s/inject_marker", fixtures_tmpdir());
	return path;
}

static int finish(struct target *tg, const char *line, char *buf, size_t n);

/* Start @prog @arg (NULL: none) with pipes, and wait for its "ready". 0, or -1. */
static int start(struct target *tg, const char *prog, const char *arg)
{
	int in[2], out[2];
	char buf[16] = "";

	if (pipe(in) || pipe(out))
		return -1;
	unlink(marker());
	if ((tg->pid = fork()) == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		setenv("INJECT_MARKER", marker(), 1);
		execl(prog, prog, arg, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	tg->in = in[1];
	tg->out = out[0];
	if (read(tg->out, buf, 6) != 6 || strncmp(buf, "ready\n", 6)) {
		kill(tg->pid, SIGKILL);
		finish(tg, NULL, buf, sizeof buf);
		return -1;
	}
	struct timespec ts = {0, 50000000}; /* the main thread into its read or nanosleep */
	nanosleep(&ts, NULL);
	return 0;
}

/* Send it @line (NULL: nothing), read all it prints into @buf, reap it: its wait status. */
static int finish(struct target *tg, const char *line, char *buf, size_t n)
{
	size_t k = 0;
	ssize_t r;
	int st = -1;

	if (line && write(tg->in, line, strlen(line)) < 0)
		kill(tg->pid, SIGKILL);
	close(tg->in);
	while (k + 1 < n && (r = read(tg->out, buf + k, n - 1 - k)) > 0)
		k += (size_t)r;
	buf[k] = '\0';
	close(tg->out);
	waitpid(tg->pid, &st, 0);
	return st;
}

/* What an untraced run of @prog @arg prints given @line. */
static void untraced(const char *prog, const char *arg, const char *line, char *buf, size_t n)
{
	struct target tg;

	buf[0] = '\0';
	if (!start(&tg, prog, arg))
		finish(&tg, line, buf, n);
}

/* /proc/@pid/maps names @path. */
static int mapped(pid_t pid, const char *path)
{
	char cmd[800], out[16];

	snprintf(cmd, sizeof cmd, "grep -c ' %s$' /proc/%d/maps", path, (int)pid);
	return atoi(fixtures_first_line(out, sizeof out, cmd)) > 0;
}

/* The registers of thread @tid (general and the whole FPU/SSE/AVX state) seen from a ptrace stop of
 * our own, in @buf: their size, 0 on failure. */
static size_t thread_state(pid_t tid, uint8_t *buf, size_t n)
{
	struct user_regs_struct r;
	struct iovec iov = {buf + sizeof r, n - sizeof r};
	int st;
	size_t got = 0;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0))
		return 0;
	if (!ptrace(PTRACE_INTERRUPT, tid, 0, 0) && waitpid(tid, &st, __WALL) == tid &&
	    !ptrace(PTRACE_GETREGS, tid, 0, &r) && !ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov)) {
		memcpy(buf, &r, sizeof r);
		got = sizeof r + iov.iov_len;
	}
	ptrace(PTRACE_DETACH, tid, 0, 0);
	return got;
}

static const char *dynamic_target(void)
{
	return fixtures_cc(TARGET, "inject_target", "-O2 -pthread");
}

TEST(inject_loads_library_into_thread_blocked_in_read)
{
	const char *prog = dynamic_target(), *so = lib();
	char want[256], got[256], line[64], sys_before[256], sys_after[256], cmd[64], cat[700];
	struct ps_inject_info in;
	struct ps_error err;
	struct target tg;

	if (!prog || !so)
		SKIP("cannot build the fixtures (cc)");
	untraced(prog, NULL, "hello\n", want, sizeof want);
	CHECK(strstr(want, "got hello sum ") != NULL);
	CHECK_EQ_INT(start(&tg, prog, NULL), 0);
	snprintf(cmd, sizeof cmd, "cat /proc/%d/syscall", (int)tg.pid);
	fixtures_first_line(sys_before, sizeof sys_before, cmd);
	static uint8_t regs_before[20000], regs_after[sizeof regs_before];
	size_t nregs = thread_state(tg.pid, regs_before, sizeof regs_before);
	int rc = ps_inject_library(tg.pid, so, &in, &err);
	if (rc && err.code == EPERM) {
		finish(&tg, "hello\n", got, sizeof got);
		SKIP("ptrace is not permitted here: %.200s", err.msg);
	}
	CHECK_EQ_INT(rc, 0);
	if (rc)
		fprintf(stderr, "  %s\n", err.msg);
	fixtures_first_line(sys_after, sizeof sys_after, cmd);
	CHECK_STR(sys_after, sys_before); /* still in the same read, same registers */
	CHECK(nregs > 0);
	CHECK_EQ_INT(thread_state(tg.pid, regs_after, sizeof regs_after), nregs);
	CHECK(!memcmp(regs_before, regs_after, nregs)); /* general, x87, SSE and AVX registers */
	CHECK(in.handle != 0);
	CHECK_EQ_INT(in.tid, tg.pid);
	CHECK_EQ_INT(in.in_syscall, 1);
	CHECK_EQ_INT(in.threads, 4);
	CHECK(mapped(tg.pid, so));
	snprintf(cmd, sizeof cmd, "loaded %d", (int)tg.pid);
	snprintf(cat, sizeof cat, "cat %s", marker());
	CHECK_STR(fixtures_first_line(line, sizeof line, cat), cmd);
	fprintf(stderr, "  inject: dlopen call %.0f us, traced %.0f us, with the checks %.0f us\n", in.call_ns / 1e3,
		in.held_ns / 1e3, in.total_ns / 1e3);
	CHECK(in.call_ns <= in.held_ns && in.held_ns <= in.total_ns);
	int st = finish(&tg, "hello\n", got, sizeof got);
	CHECK_STR(got, want); /* the read returned the line written after */
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

/* Start @prog @arg and load @so into it (*@in); with @usr2_s, a SIGUSR2 goes to its main thread
 * that many seconds into the load. Return 0 (the target runs), or 1 when ptrace is not permitted
 * here (the target was given @line and ended; @why says so). */
static int start_loaded(struct ctest *ctest_self, struct target *tg, const char *prog, const char *arg, const char *so,
			const char *line, unsigned usr2_s, struct ps_inject_info *in, char *why, size_t n)
{
	struct ps_error err;
	char got[256];
	pid_t sender = -1;

	CHECK_EQ_INT(start(tg, prog, arg), 0);
	if (usr2_s && (sender = fork()) == 0) {
		sleep(usr2_s);
		syscall(SYS_tgkill, tg->pid, tg->pid, SIGUSR2);
		_exit(0);
	}
	int rc = ps_inject_library(tg->pid, so, in, &err);
	if (sender > 0)
		waitpid(sender, NULL, 0);
	if (rc && err.code == EPERM) {
		finish(tg, line, got, sizeof got);
		snprintf(why, n, "ptrace is not permitted here: %.200s", err.msg);
		return 1;
	}
	CHECK_EQ_INT(rc, 0);
	if (rc)
		fprintf(stderr, "  %s\n", err.msg);
	return 0;
}

/* Load the test library into `inject_target @mode` (which reads nothing), called by its main
 * thread: it must print what an untraced run prints, starting with @prefix, and exit 7. *@in:
 * what the load did. Return 0, or 1 to skip (@why says why). */
static int loaded_run_ends_as_untraced(struct ctest *ctest_self, const char *mode, const char *prefix,
				       struct ps_inject_info *in, char *why, size_t n)
{
	const char *prog = dynamic_target(), *so = lib();
	char want[256], got[256];
	struct target tg;

	if (!prog || !so) {
		snprintf(why, n, "cannot build the fixtures (cc)");
		return 1;
	}
	untraced(prog, mode, NULL, want, sizeof want);
	CHECK(!strncmp(want, prefix, strlen(prefix)));
	if (start_loaded(ctest_self, &tg, prog, mode, so, NULL, 0, in, why, n))
		return 1;
	CHECK_EQ_INT(in->tid, tg.pid);
	CHECK(mapped(tg.pid, so));
	int st = finish(&tg, NULL, got, sizeof got);
	CHECK_STR(got, want);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	return 0;
}

TEST(inject_restarts_nanosleep_of_calling_thread)
{
	struct ps_inject_info in;
	char why[256];

	/* nanosleep goes on to its end and returns 0 */
	if (loaded_run_ends_as_untraced(ctest_self, "sleep", "got slept 0 long sum ", &in, why, sizeof why))
		SKIP("%s", why);
	CHECK_EQ_INT(in.in_syscall, 1);
}

TEST(inject_calls_from_only_thread_running_own_code)
{
	struct ps_inject_info in;
	char why[256];

	/* its registers, SSE ones included, as they were */
	if (loaded_run_ends_as_untraced(ctest_self, "spin", "got spun ", &in, why, sizeof why))
		SKIP("%s", why);
	CHECK_EQ_INT(in.threads, 1);
	CHECK_EQ_INT(in.in_syscall, 0); /* stopped in its loop: no system call to restart */
}

TEST(inject_lets_other_threads_run_when_call_waits_for_them_and_delivers_signals_after)
{
	const char *prog = dynamic_target();
	const char *so = fixtures_cc("inject_waitlib.c", "libinject_wait.so", "-O2 -shared -fPIC");
	char want[256], got[256], why[256];
	struct ps_inject_info in;
	struct target tg;

	if (!prog || !so)
		SKIP("cannot build the fixtures (cc)");
	/* the untraced run gets its SIGUSR2 too */
	CHECK_EQ_INT(start(&tg, prog, NULL), 0);
	kill(tg.pid, SIGUSR2);
	finish(&tg, "later\n", want, sizeof want);
	CHECK(strstr(want, " usr2 1\n") != NULL);
	/* and the calling (main) thread one while it runs the call, 1 s in */
	if (start_loaded(ctest_self, &tg, prog, NULL, so, "later\n", 1, &in, why, sizeof why))
		SKIP("%s", why);
	CHECK(in.call_ns >= 2000000000ull); /* alone for 2 s first */
	CHECK(in.call_ns < 15000000000ull); /* then the others ran, and the constructor saw them */
	CHECK(mapped(tg.pid, so));
	int st = finish(&tg, "later\n", got, sizeof got);
	CHECK_STR(got, want);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

/* Injecting @path into @prog @arg fails with @code and a message holding @words; the target then
 * runs to its normal end. */
static void refused(struct ctest *ctest_self, const char *prog, const char *arg, const char *path, int code,
		    const char *words)
{
	char want[256], got[256];
	struct ps_error err;
	struct target tg;

	untraced(prog, arg, "x\n", want, sizeof want);
	CHECK_EQ_INT(start(&tg, prog, arg), 0);
	CHECK_EQ_INT(ps_inject_library(tg.pid, path, NULL, &err), -1);
	CHECK_EQ_INT(err.code, code);
	CHECK(strstr(err.msg, words) != NULL);
	CHECK(!strchr(err.msg, '\n'));
	if (!strstr(err.msg, words))
		fprintf(stderr, "  got: %s\n", err.msg);
	int st = finish(&tg, "x\n", got, sizeof got);
	CHECK_STR(got, want);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

TEST(inject_refuses_stopped_process_and_leaves_it_stopped)
{
	const char *prog = dynamic_target();
	char want[256], got[256], state[64], cmd[64];
	struct ps_error err;
	struct target tg;

	if (!prog || !lib())
		SKIP("cannot build the fixtures (cc)");
	untraced(prog, NULL, "x\n", want, sizeof want);
	CHECK_EQ_INT(start(&tg, prog, NULL), 0);
	kill(tg.pid, SIGSTOP);
	snprintf(cmd, sizeof cmd, "cut -d' ' -f3 /proc/%d/stat", (int)tg.pid);
	for (int i = 0; i < 200 && strcmp(fixtures_first_line(state, sizeof state, cmd), "T"); i++)
		usleep(5000);
	CHECK_EQ_INT(ps_inject_library(tg.pid, lib(), NULL, &err), -1);
	CHECK_EQ_INT(err.code, EAGAIN);
	CHECK(strstr(err.msg, "it is stopped (by a stop signal)") != NULL);
	CHECK_STR(fixtures_first_line(state, sizeof state, cmd), "T"); /* still stopped */
	kill(tg.pid, SIGCONT);
	int st = finish(&tg, "x\n", got, sizeof got);
	CHECK_STR(got, want);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

TEST(inject_refuses_missing_library)
{
	const char *prog = dynamic_target();

	if (!prog)
		SKIP("cannot build the fixtures (cc)");
	refused(ctest_self, prog, NULL, "/nonexistent/libnothing.so", ENOENT, "No such file");
}

TEST(inject_refuses_static_program)
{
	const char *prog = fixtures_cc(TARGET, "inject_target_static", "-O2 -pthread -static");

	if (!prog)
		SKIP("cannot link a static program here (no static libc)");
	if (!lib())
		SKIP("cannot build the fixtures (cc)");
	refused(ctest_self, prog, NULL, lib(), PS_ENOTFOUND, "no libc.so.6");
}

TEST(inject_refuses_seccomp_process)
{
	const char *prog = dynamic_target();

	if (!prog || !lib())
		SKIP("cannot build the fixtures (cc)");
	refused(ctest_self, prog, "seccomp", lib(), PS_EUSAGE, "seccomp (mode 2)");
}

TEST(inject_refuses_sanitizer_build)
{
	const char *prog = fixtures_cc(TARGET, "inject_target_asan", "-O1 -pthread -fsanitize=address");

	if (!prog)
		SKIP("cannot build an AddressSanitizer program here");
	if (!lib())
		SKIP("cannot build the fixtures (cc)");
	refused(ctest_self, prog, NULL, lib(), PS_EUSAGE, "AddressSanitizer build");
}

TEST(inject_refuses_process_of_another_user)
{
	const char *prog = dynamic_target();
	char want[256], got[256], libm[512];
	struct target tg;
	int st = -1;

	if (!prog)
		SKIP("cannot build the fixtures (cc)");
	/* a library any user may read */
	if (access(fixtures_first_line(libm, sizeof libm, "cc -print-file-name=libm.so.6"), R_OK))
		SKIP("no libm.so.6 found by cc");
	if (geteuid() != 0)
		SKIP("needs root (to become another user that may not trace the target)");
	untraced(prog, NULL, "x\n", want, sizeof want);
	CHECK_EQ_INT(start(&tg, prog, NULL), 0);
	pid_t c = fork();
	if (c == 0) {
		struct ps_error err;
		if (setgid(65534) || setuid(65534))
			_exit(2);
		int rc = ps_inject_library(tg.pid, libm, NULL, &err);
		if (rc == -1 && err.code == EPERM && strstr(err.msg, "another user"))
			_exit(0);
		fprintf(stderr, "  as uid 65534: %s\n", rc ? err.msg : "loaded");
		_exit(1);
	}
	waitpid(c, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = finish(&tg, "x\n", got, sizeof got);
	CHECK_STR(got, want);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

TEST(inject_reports_fault_in_constructor_and_leaves_program_running)
{
	const char *prog = dynamic_target();
	const char *so = fixtures_cc("inject_faultlib.c", "libinject_fault.so", "-O0 -shared -fPIC");

	if (!prog || !so)
		SKIP("cannot build the fixtures (cc)");
	refused(ctest_self, prog, NULL, so, EFAULT, "the dlopen call faulted in thread");
}

TEST(inject_reports_dlerror_and_leaves_program_running)
{
	char notlib[700];
	const char *prog = dynamic_target();

	if (!prog)
		SKIP("cannot build the fixtures (cc)");
	snprintf(notlib, sizeof notlib, "%s/%s", fixtures_dir(TARGET), TARGET); /* a C file, not ELF */
	refused(ctest_self, prog, NULL, notlib, PS_EUSAGE, "invalid ELF header");
}

/* The held threads ps_inject_library_call() shows: how many, and whether each has an address. */
struct seen {
	int n, zero;
};

static int count_held(void *ud, const uint64_t *ip, int n, struct ps_error *err)
{
	struct seen *s = ud;

	(void)err;
	s->n = n;
	for (int i = 0; i < n; i++)
		s->zero += ip[i] == 0;
	return 0;
}

TEST(inject_calls_function_of_loaded_library_with_every_thread_held)
{
	const char *prog = dynamic_target(), *so = lib();
	char want[256], got[256];
	struct seen seen = {0, 0};
	struct ps_inject_call calls[2] = {{.sym = "inject_lib_call", .arg = "hello world"},
					  {.sym = "inject_lib_call", .arg = "", .held = count_held, .ud = &seen}};
	struct ps_error err;
	struct target tg;

	if (!prog || !so)
		SKIP("cannot build the fixtures (cc)");
	untraced(prog, NULL, "hello\n", want, sizeof want);
	CHECK_EQ_INT(start(&tg, prog, NULL), 0);
	int rc = ps_inject_library_call(tg.pid, so, calls, 2, NULL, &err);
	if (rc && err.code == EPERM) {
		finish(&tg, "hello\n", got, sizeof got);
		SKIP("ptrace is not permitted here: %.200s", err.msg);
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(calls[0].ret, 1011); /* strlen("hello world"), the constructor ran first */
	CHECK_EQ_INT(calls[1].ret, 1000);
	CHECK_EQ_INT(seen.n, 5); /* the target's 4 threads and the one the library started */
	CHECK_EQ_INT(seen.zero, 0);
	int st = finish(&tg, "hello\n", got, sizeof got);
	CHECK_STR(got, want);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

TEST(inject_refuses_call_of_function_the_library_lacks_and_leaves_program_running)
{
	const char *prog = dynamic_target(), *so = lib();
	struct ps_inject_call call = {.sym = "no_such_function", .arg = "x"};
	char want[256], got[256];
	struct ps_error err;
	struct target tg;

	if (!prog || !so)
		SKIP("cannot build the fixtures (cc)");
	untraced(prog, NULL, "hello\n", want, sizeof want);
	CHECK_EQ_INT(start(&tg, prog, NULL), 0);
	int rc = ps_inject_library_call(tg.pid, so, &call, 1, NULL, &err);
	if (rc && err.code == EPERM) {
		finish(&tg, "hello\n", got, sizeof got);
		SKIP("ptrace is not permitted here: %.200s", err.msg);
	}
	CHECK_EQ_INT(rc, -1);
	CHECK_EQ_INT(err.code, PS_ENOTFOUND);
	CHECK(strstr(err.msg, "has no function no_such_function") != NULL);
	int st = finish(&tg, "hello\n", got, sizeof got);
	CHECK_STR(got, want);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}
