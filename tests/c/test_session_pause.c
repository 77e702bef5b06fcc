/* tests/c/test_session_pause.c - a pause of ps_session_run() holds the program under every
 * catcher: each thread ptrace-stopped, no CPU time used, nothing lost, and the hits go on at the
 * next run; a held process that a fatal signal ends while held ends once let go. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctest.h"
#include "fixtures.h"
#include "run.h"
#include "session.h"
#include "tracer.h"

/* The threads of @pid: how many, how many are stopped (t or T), and their CPU time in ticks. */
struct threads {
	int n, stopped;
	unsigned long long ticks;
};

static struct threads threads_of(pid_t pid)
{
	struct threads th = {0, 0, 0};
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return th;
	while ((de = readdir(d))) {
		char stat[512], state;
		unsigned long long ut, st;
		FILE *f;
		char *p;

		if (de->d_name[0] == '.')
			continue;
		snprintf(stat, sizeof stat, "/proc/%d/task/%s/stat", (int)pid, de->d_name);
		if (!(f = fopen(stat, "re")))
			continue;
		p = fgets(stat, sizeof stat, f) ? strrchr(stat, ')') : NULL;
		fclose(f);
		/* after ") ": state, then 10 fields, then utime and stime */
		if (p && sscanf(p + 2, "%c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &state, &ut, &st) == 3) {
			th.n++;
			th.stopped += state == 't' || state == 'T';
			th.ticks += ut + st;
		}
	}
	closedir(d);
	return th;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

/* examples/threads under catcher @how: two threads calling work far longer than the test (it
   is killed at the end), paused once both run (after 0.3 s or more) for 1 s, then run until it
   has had 5 ticks of CPU more. */
static void pause_holds(struct ctest *ctest_self, enum ps_catcher how)
{
	char *argv[] = {"examples/threads", "10000000", "100000", "2", NULL};
	struct ps_session *s;
	struct ps_event ev;
	struct ps_error err;
	struct threads a, b, c;
	const struct ps_region_info *ri;

	CHECK(ps_event_resolve("task-clock", &ev, &err) == 0);
	if (ps_session_spawn_by(&s, argv, &ev, 1, how, &err)) {
		CHECK(!"spawn");
		fprintf(stderr, "  %s\n", err.msg);
		return;
	}
	CHECK_EQ_INT(ps_session_region_func(s, "work", 0, &err), 0);
	if (how == PS_CATCH_UPROBE) /* 16 MiB a thread: it holds every record of the test */
		CHECK(ps_session_uprobe_ring(s, 4096, &err) == 0);
	/* until both workers run (a loaded machine may take more than a run of 0.3 s to start them) */
	for (int i = 0; i < 30; i++) {
		CHECK_EQ_INT(ps_session_run(s, 0, ps_now_ns() + 300000000u, &err), 0);
		a = threads_of(ps_session_pid(s));
		if (a.n == 3)
			break;
	}
	sleep_ms(1000);
	b = threads_of(ps_session_pid(s));
	CHECK_EQ_INT(a.n, 3); /* main and the two workers */
	CHECK_EQ_INT(a.stopped, a.n);
	CHECK_EQ_INT(b.stopped, b.n);
	CHECK(b.ticks - a.ticks <= 1);
	/* it runs again: 5 ticks of CPU, in runs of 0.3 s (a loaded machine gives it less a run) */
	for (int i = 0; i < 30; i++) {
		CHECK_EQ_INT(ps_session_run(s, 0, ps_now_ns() + 300000000u, &err), 0);
		c = threads_of(ps_session_pid(s));
		if (c.ticks - b.ticks >= 5)
			break;
	}
	CHECK(c.ticks - b.ticks >= 5);
	ri = ps_session_region(s, 0);
	CHECK(ri->hits > 0);
	/* every call entered was recorded or is still running: none lost */
	CHECK_EQ_INT(ps_session_entries(s, 0), ri->hits + ps_session_open_calls(s, 0));
	CHECK_EQ_INT(ps_session_lost(s), 0);
	ps_session_free(s);
}

TEST(session_pause_holds_the_program_ptrace)
{
	if (access("examples/threads", X_OK))
		SKIP("examples/threads is not built (make)");
	pause_holds(ctest_self, PS_CATCH_PTRACE);
}

TEST(session_pause_holds_the_program_uprobe)
{
	NEEDS_UPROBES("examples/threads");
	pause_holds(ctest_self, PS_CATCH_UPROBE);
}

/* A process held (attached: every thread ptrace-stopped) when a fatal signal comes ends of it
   once detached: the threads its end kills before they are detached are waited for, so none is
   left a traced zombie that keeps the process from ending (its parent would wait forever). */
TEST(tracer_detach_lets_a_held_process_end_of_a_fatal_signal)
{
	char *argv[] = {"examples/threads", "100000000", "100000", "4", NULL};
	struct ps_tracer *t;
	struct ps_error err;
	int st = 0, round, signo = 0;
	pid_t pid, w = 0;

	if (access("examples/threads", X_OK))
		SKIP("examples/threads is not built (make)");
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	sleep_ms(200); /* its threads are running */
	CHECK(ps_tracer_attach(&t, pid, NULL, NULL, &err) == 0);
	CHECK_EQ_INT(threads_of(pid).stopped, 5);
	kill(pid, SIGTERM);
	CHECK(ps_tracer_detach(t, &err) == 0);
	/* the tracer, its parent too here, may have waited for it as it died: then it says how */
	if (ps_tracer_status(t, NULL, NULL, &signo)) {
		CHECK_EQ_INT(signo, SIGTERM);
		CHECK_EQ_INT(waitpid(pid, &st, WNOHANG), -1);
		ps_tracer_free(t);
		return;
	}
	ps_tracer_free(t);
	for (round = 0; round < 500 && (w = waitpid(pid, &st, WNOHANG)) == 0; round++)
		sleep_ms(10);
	if (w != pid)
		kill(pid, SIGKILL);
	CHECK_EQ_INT(w, pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}
