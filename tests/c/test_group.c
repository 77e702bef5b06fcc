/* tests/c/test_group.c - perf event groups on this thread and on children. */
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctest.h"
#include "group.h"
#include "run.h"

static int resolve_all(const char *const *names, int n, struct ps_event *ev)
{
	struct ps_error err;
	for (int i = 0; i < n; i++)
		if (ps_event_resolve(names[i], &ev[i], &err))
			return -1;
	return 0;
}

/* 2*n + 3 user instructions (see core.spin in lua/lrun.c). */
static void spin(unsigned long n)
{
	__asm__ volatile("mov %0, %%rcx\n\ttest %%rcx, %%rcx\n\tjz 2f\n1:\n\tdec %%rcx\n\tjnz 1b\n2:\n"
			 :
			 : "r"(n)
			 : "rcx", "cc");
}

TEST(group_software_counts)
{
	const char *names[] = {"task-clock", "page-faults", "context-switches"};
	struct ps_event ev[3];
	struct ps_group g;
	struct ps_reading r0, r1;
	struct ps_error err;

	CHECK(resolve_all(names, 3, ev) == 0);
	CHECK(ps_group_open(&g, ev, 3, 0, -1, 0, &err) == 0);
	CHECK(ps_group_read(&g, &r0, &err) == 0);
	CHECK_EQ_INT(r0.n, 3);
	CHECK_EQ_INT(r0.val[0], 0); /* opened disabled */
	CHECK_EQ_INT(r0.time_enabled, 0);
	CHECK(ps_group_enable(&g, &err) == 0);
	spin(20000000);
	CHECK(ps_group_disable(&g, &err) == 0);
	CHECK(ps_group_read(&g, &r1, &err) == 0);
	CHECK(r1.val[0] > 1000000); /* more than 1 ms of task-clock */
	CHECK(r1.time_enabled > 0);
	CHECK_EQ_INT(r1.time_running, r1.time_enabled); /* software events never multiplex */
	CHECK(ps_group_reset(&g, &err) == 0);
	CHECK(ps_group_read(&g, &r0, &err) == 0);
	CHECK_EQ_INT(r0.val[0], 0);
	ps_group_close(&g);
	ps_group_close(&g); /* twice is harmless */
	CHECK(ps_group_read(&g, &r0, &err) == -1);
	CHECK_STR(err.msg, "read: the group is closed");
}

/* Faults beyond one per page written: AddressSanitizer faults in the shadow of what a test
   writes too (an eighth of it at most). */
#if defined(__SANITIZE_ADDRESS__)
#define SHADOW_FAULTS(pages) ((pages) / 8 + 16)
#else
#define SHADOW_FAULTS(pages) 0
#endif

/* A group a thread opens on itself, enabled at once: each member counts from the start. A member
   added to an enabled group of a running task counted nothing until the task was next scheduled
   in, so page-faults under a task-clock leader lost a varying share (all of them, at times). */
TEST(group_enabled_on_self_counts_every_page_fault)
{
	const char *names[] = {"task-clock", "page-faults"};
	const size_t pages = 2048, pg = (size_t)sysconf(_SC_PAGESIZE);
	struct ps_event ev[2];
	struct ps_reading r0, r1;
	struct ps_error err;

	CHECK(resolve_all(names, 2, ev) == 0);
	for (int round = 0; round < 5; round++) {
		volatile char *mem = mmap(NULL, pages * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ps_group g;

		CHECK(mem != MAP_FAILED);
		if (mem == MAP_FAILED)
			return;
		CHECK(ps_group_open(&g, ev, 2, 0, -1, PS_GROUP_ENABLED, &err) == 0);
		CHECK(ps_group_read(&g, &r0, &err) == 0);
		for (size_t p = 0; p < pages; p++)
			mem[p * pg] = 1; /* one fault per page of a fresh mapping */
		CHECK(ps_group_read(&g, &r1, &err) == 0);
		CHECK(r1.val[1] - r0.val[1] >= pages && r1.val[1] - r0.val[1] <= pages + SHADOW_FAULTS(pages));
		CHECK(r1.val[0] > r0.val[0]);
		ps_group_close(&g);
		munmap((void *)mem, pages * pg);
	}
}

TEST(group_instructions_of_known_loop)
{
	const char *names[] = {"instructions"};
	struct ps_event ev[1];
	struct ps_group g;
	struct ps_reading r0, r1, base0, base1;
	struct ps_error err;
	const unsigned long n = 1000000;

	if (!ps_pmu_present())
		SKIP("no hardware PMU on this machine");
	CHECK(resolve_all(names, 1, ev) == 0);
	CHECK(ps_group_open(&g, ev, 1, 0, -1, PS_GROUP_ENABLED, &err) == 0);
	/* the probe effect: two reads around nothing */
	ps_group_read(&g, &base0, &err);
	ps_group_read(&g, &base1, &err);
	ps_group_read(&g, &r0, &err);
	spin(n);
	ps_group_read(&g, &r1, &err);
	uint64_t probe = base1.val[0] - base0.val[0];
	uint64_t got = r1.val[0] - r0.val[0] - probe;
	fprintf(stderr, "  spin(%lu): %llu instructions (expected %lu), probe %llu\n", n, (unsigned long long)got,
		2 * n + 3, (unsigned long long)probe);
	CHECK(probe < 2000);
	CHECK(got >= 2 * n + 3 - 2 * n / 100 && got <= 2 * n + 3 + 2 * n / 100);
	ps_group_close(&g);
}

TEST(group_no_pmu_message)
{
	const char *names[] = {"task-clock", "instructions"};
	struct ps_event ev[2];
	struct ps_group g;
	struct ps_error err;

	if (ps_pmu_present())
		SKIP("this machine has a hardware PMU");
	CHECK(resolve_all(names, 2, ev) == 0);
	CHECK(ps_group_open(&g, ev, 2, 0, -1, 0, &err) == -1);
	CHECK(strstr(err.msg, "perf_event_open(instructions): no hardware PMU on this machine") == err.msg);
	CHECK_EQ_INT(g.n, 0);
}

TEST(group_too_many_counters)
{
	const char *names[] = {"instructions", "cycles", "branches", "branch-misses", "cache-references",
			       "cache-misses", "instructions:k", "cycles:k", "branches:k", "branch-misses:k",
			       "cache-references:k", "cache-misses:k", "ref-cycles"};
	int counters = ps_pmu_counters(), n;
	struct ps_event ev[13];
	struct ps_group g;
	struct ps_error err;

	if (!ps_pmu_present())
		SKIP("no hardware PMU on this machine");
	if (counters <= 0 || counters >= 13)
		SKIP("CPUID does not report the number of counters");
	n = counters + 1;
	CHECK(resolve_all(names, n, ev) == 0);
	if (ps_group_open(&g, ev, n, 0, -1, 0, &err) == 0) {
		ps_group_close(&g);
		SKIP("a group of %d events opened (the kernel defers the check)", n);
	}
	char want[64];
	snprintf(want, sizeof want, "has %d generic counters", counters);
	CHECK(strstr(err.msg, want) != NULL);
}

TEST(group_permission_denied_names_paranoid)
{
	const char *names[] = {"task-clock"};
	struct ps_event ev[1];
	int st, p[2];

	if (geteuid() != 0)
		SKIP("needs root to become another user");
	CHECK(resolve_all(names, 1, ev) == 0);
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct ps_group g;
		struct ps_error err;
		close(p[0]);
		if (setgid(65534) || setuid(65534))
			_exit(3);
		int rc = ps_group_open(&g, ev, 1, 1, -1, 0, &err); /* pid 1 is not ours */
		if (write(p[1], err.msg, strlen(err.msg) + 1) < 0)
			_exit(4);
		_exit(rc == 0 ? 1 : 0);
	}
	close(p[1]);
	char msg[512] = "";
	ssize_t got = read(p[0], msg, sizeof msg - 1);
	close(p[0]);
	waitpid(pid, &st, 0);
	CHECK(got > 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(msg, "perf_event_open(task-clock): Permission denied (perf_event_paranoid is ") == msg);
	CHECK(strstr(msg, "CAP_PERFMON") != NULL);
}

/* ps_scale on synthetic values: value, enabled, running -> scaled, ratio. */
TEST(group_scale_arithmetic)
{
	static const struct {
		uint64_t v, en, run;
		double scaled, ratio;
	} rows[] = {
		{1000, 100, 100, 1000, 1.0}, {1000, 200, 100, 2000, 0.5}, {300, 400, 100, 1200, 0.25},
		{1000, 100, 0, 0, 0.0},      {0, 0, 0, 0, 1.0},           {7, 1000000, 999999, 7.000007, 0.999999},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		double ratio, s = ps_scale(rows[i].v, rows[i].en, rows[i].run, &ratio);
		CHECK(s > rows[i].scaled - 1e-6 && s < rows[i].scaled + 1e-6);
		CHECK(ratio > rows[i].ratio - 1e-9 && ratio < rows[i].ratio + 1e-9);
	}
}

TEST(run_counts_child_and_status)
{
	const char *names[] = {"task-clock"};
	struct ps_event ev[1];
	struct ps_run_result quick, busy;
	struct ps_error err;
	char *t[] = {"true", NULL};
	/* 100,000 shell steps (~0.1 s on the CPU) against true's fraction of a millisecond: more than
	   5x even where a loaded machine stretches a short program's start (20,000 once was not) */
	char *b[] = {"sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; exit 3", NULL};
	char *missing[] = {"/nonexistent/perfsh-test-program", NULL};

	CHECK(resolve_all(names, 1, ev) == 0);
	CHECK(ps_run(t, ev, 1, &quick, &err) == 0);
	CHECK(quick.exited && quick.code == 0);
	CHECK(ps_run(b, ev, 1, &busy, &err) == 0);
	CHECK(busy.exited && busy.code == 3);
	CHECK(busy.reading.val[0] > 5 * quick.reading.val[0]);
	CHECK(ps_run(missing, ev, 1, &quick, &err) == -1);
	CHECK_STR(err.msg, "cannot run '/nonexistent/perfsh-test-program': No such file or directory");
}
