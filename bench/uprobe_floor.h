/* bench/uprobe_floor.h - the uprobe floor: the least a kernel-side catcher can do per hit, with
 * raw perf_event_open + mmap and no perfsh code (a task-clock leader, a uprobe at the entry and
 * one for the exit as members with sample_period 1 sampling the group into one ring, the
 * exit's output redirected there, the ring drained while the target runs). The exit is caught
 * as perfsh's uprobe catcher catches it (core/catch/uprobe/upsites.c): a leaf's returns by a
 * uretprobe (nothing can unwind through a frame that calls nothing), any other function's by a
 * plain uprobe at its ret, never touching its return address; so the floor is that
 * mechanism's own cost. Shared by bench/uprobe_floor.c, bench/hit_table.c and
 * bench/default_path.c; static functions, one copy per benchmark.
 */
#ifndef PS_BENCH_UPROBE_FLOOR_H
#define PS_BENCH_UPROBE_FLOOR_H

#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "machine.h"
#include "retsites.h"
#include "run.h"
#include "uprobe.h"

#define UF_TARGET "bench/hit_target"
#define PAGES 2048 /* 8 MiB: every record of a run fits even if the reader never runs */

struct fn {
	const char *prog; /* the target (NULL: UF_TARGET), run as PROG N MODE */
	const char *mode, *sym;
	char path[4096];
	uint64_t off;
	int nop5;
};

static char nbuf[32];	      /* the target's call count, argv[1] */
static uint64_t floor_cpu_ns; /* the last run_floor()'s CPU time: the target's and its reader's */

static void die(const char *what)
{
	fprintf(stderr, "uprobe_floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Fork @prog (NULL: UF_TARGET) held on a pipe before its exec; *@go releases it. */
static pid_t spawn_held(const char *prog, const char *mode, int *go)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		char b, *argv[] = {(char *)(prog ? prog : UF_TARGET), nbuf, (char *)mode, NULL};
		close(p[1]);
		if (read(p[0], &b, 1) != 1)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

static void release(int go)
{
	if (write(go, "g", 1) != 1)
		die("write");
	close(go);
}

static int sys_open(struct perf_event_attr *a, pid_t pid, int group)
{
	int fd = (int)syscall(SYS_perf_event_open, a, pid, -1, group, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		die("perf_event_open");
	return fd;
}

/* The floor's reader: count samples and lost records, free the space. */
static void floor_drain(struct perf_event_mmap_page *mp, uint64_t *samples, uint64_t *lost)
{
	const unsigned char *data = (const unsigned char *)mp + mp->data_offset;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail;
	uint64_t mask = mp->data_size - 1;

	while (tail < head) {
		struct perf_event_header h;
		memcpy(&h, data + (tail & mask), sizeof h);
		if (h.type == PERF_RECORD_SAMPLE)
			(*samples)++;
		else if (h.type == PERF_RECORD_LOST) {
			uint64_t rec[3];
			size_t at = (size_t)((tail + 8) & mask), first = mp->data_size - at;
			if (first >= 16)
				memcpy(rec, data + at, 16);
			else {
				memcpy(rec, data + at, first);
				memcpy((char *)rec + first, data, 16 - first);
			}
			*lost += rec[1];
		}
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

static void *close_fd(void *fd)
{
	close(*(int *)fd);
	return NULL;
}

/* Close the leader @fds[0] and its two probes. Closing a uprobe event waits for RCU grace
   periods (tens of ms, hundreds under load): the probes are closed side by side, so the
   waits overlap (a run's tear-down cancels in N - N/10; this only makes it shorter). */
static void close_probes(int *fds)
{
	pthread_t t;
	int th = pthread_create(&t, NULL, close_fd, &fds[2]) == 0;

	if (!th)
		close(fds[2]);
	close(fds[1]);
	if (th)
		pthread_join(t, NULL);
	close(fds[0]);
}

/* How perfsh's uprobe catcher catches the returns of @f: a uretprobe (1) where it is a leaf,
   else a plain uprobe at its one exit, a ret, at file offset *@exit. */
static int floor_exit(const struct fn *f, uint64_t *exit_off)
{
	struct ps_retsites rs;
	struct ps_error err;

	if (ps_retsites_find(f->path, f->off, &rs, &err) || rs.n != 1) {
		fprintf(stderr, "uprobe floor: %s: %s\n", f->sym, rs.n != 1 ? "not one exit" : err.msg);
		exit(1);
	}
	*exit_off = rs.site[0].offset;
	return ps_retsites_leaf(&rs);
}

static uint64_t run_floor(const struct fn *f, uint64_t n)
{
	uint64_t t0 = ps_now_ns(), samples = 0, lost = 0;
	int go, st = 0, fds[3];
	struct rusage self0, self, child;
	getrusage(RUSAGE_SELF, &self0);
	pid_t pid = spawn_held(f->prog, f->mode, &go);
	struct perf_event_attr a;
	size_t len = (size_t)(PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.read_format =
	    PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fds[0] = sys_open(&a, pid, -1);
	a.type = (uint32_t)ps_machine_uprobe_type();
	a.config1 = (uint64_t)(uintptr_t)f->path;
	a.config2 = f->off;
	a.sample_period = 1;
	a.sample_type =
	    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_READ;
	fds[1] = sys_open(&a, pid, fds[0]);
	uint64_t exit_off;
	int uret = floor_exit(f, &exit_off);
	a.config = uret ? 1ull << ps_uprobe_retprobe_bit() : 0; /* a uretprobe, or a uprobe at the ret */
	a.config2 = uret ? f->off : exit_off;
	fds[2] = sys_open(&a, pid, fds[0]);
	struct perf_event_mmap_page *mp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	if (mp == MAP_FAILED)
		die("mmap");
	if (ioctl(fds[2], PERF_EVENT_IOC_SET_OUTPUT, fds[1]) < 0)
		die("PERF_EVENT_IOC_SET_OUTPUT");
	release(go);
	while (wait4(pid, &st, WNOHANG, &child) == 0) {
		struct pollfd p = {fds[1], POLLIN, 0};
		poll(&p, 1, 50);
		floor_drain(mp, &samples, &lost);
	}
	floor_drain(mp, &samples, &lost);
	munmap(mp, len);
	close_probes(fds);
	getrusage(RUSAGE_SELF, &self);
	floor_cpu_ns = bench_cpu_ns(&child) + bench_cpu_ns(&self) - bench_cpu_ns(&self0);
	if (samples != 2 * n || lost) /* the reader fell behind a full ring: said, not fatal */
		fprintf(stderr, "uprobe floor: saw %llu records (%llu lost), expected %llu\n",
			(unsigned long long)samples, (unsigned long long)lost, (unsigned long long)(2 * n));
	return ps_now_ns() - t0;
}

#endif
