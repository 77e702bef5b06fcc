/* bench/ptrace_floor.h - the ptrace floor: the least a ptrace tracer can do per call of a
 * function (an int3 at the entry, the displaced instruction done on the registers, an int3 at
 * the return address, one group read at each stop). Recursion and threads are not its
 * business (the targets have neither). Shared by bench/ptrace_hit.c and bench/hit_table.c.
 */
#ifndef PS_BENCH_PTRACE_FLOOR_H
#define PS_BENCH_PTRACE_FLOOR_H

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "group.h"
#include "run.h"
#include "symbols.h"

/* What the instruction at the entry is: the floor does it itself. */
enum floor_entry {
	FLOOR_ENDBR64, /* a no-op, 4 bytes */
	FLOOR_MOVSLQ,  /* movslq %edi,%rax, 3 bytes */
	FLOOR_NOP5,    /* a no-op, 5 bytes */
};

static void floor_fail(const char *what)
{
	fprintf(stderr, "ptrace floor: %s\n", what);
	exit(1);
}

/* Run @argv (@argv[0] the program) traced by the floor, @nev events of @ev counted; the
   function at link-time address @entry_link must return @n times. The run's time in ns. */
static uint64_t ptrace_floor_run(char *const argv[], const struct ps_event *ev, int nev, uint64_t entry_link,
				 enum floor_entry kind, uint64_t n)
{
	uint64_t t0 = ps_now_ns(), entry, ret = 0, hits = 0, bias;
	unsigned char int3 = 0xcc, saved_entry, saved_ret = 0;
	struct ps_group g = {0};
	struct ps_reading rd;
	struct ps_error err;
	char path[64], exe[4096];
	int st, memfd;
	pid_t pid = fork();

	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, &st, 0); /* the exec stop */
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_EXITKILL);
	if ((nev && ps_group_open(&g, ev, nev, pid, -1, PS_GROUP_ENABLED, &err)) ||
	    ps_sym_find_mapping(pid, NULL, exe, sizeof exe, &bias, &err))
		floor_fail(err.msg);
	entry = entry_link + bias;
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	memfd = open(path, O_RDWR | O_CLOEXEC);
	if (pread(memfd, &saved_entry, 1, (off_t)entry) != 1 || pwrite(memfd, &int3, 1, (off_t)entry) != 1)
		floor_fail("cannot write the breakpoint");
	for (;;) {
		struct user_regs_struct r;
		ptrace(PTRACE_CONT, pid, 0, 0);
		if (waitpid(pid, &st, 0) < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			break;
		if (WSTOPSIG(st) != SIGTRAP) {
			ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st));
			continue;
		}
		ptrace(PTRACE_GETREGS, pid, 0, &r);
		if (nev)
			ps_group_read(&g, &rd, NULL);
		if (r.rip - 1 == entry) {
			/* the displaced instruction, then trap the return address */
			if (kind == FLOOR_MOVSLQ)
				r.rax = (unsigned long long)(int64_t)(int32_t)r.rdi;
			r.rip = entry + (kind == FLOOR_ENDBR64 ? 4 : kind == FLOOR_MOVSLQ ? 3 : 5);
			if (pread(memfd, &ret, 8, (off_t)r.rsp) != 8 || pread(memfd, &saved_ret, 1, (off_t)ret) != 1 ||
			    pwrite(memfd, &int3, 1, (off_t)ret) != 1)
				floor_fail("cannot write the return breakpoint");
		} else if (r.rip - 1 == ret) {
			if (pwrite(memfd, &saved_ret, 1, (off_t)ret) != 1)
				floor_fail("cannot remove the return breakpoint");
			r.rip = ret;
			hits++;
		}
		ptrace(PTRACE_SETREGS, pid, 0, &r);
	}
	close(memfd);
	ps_group_close(&g);
	if (hits != n) {
		fprintf(stderr, "ptrace floor: saw %llu returns, expected %llu\n", (unsigned long long)hits,
			(unsigned long long)n);
		exit(1);
	}
	return ps_now_ns() - t0;
}

#endif
