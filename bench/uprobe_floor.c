/* bench/uprobe_floor.c - what a function region costs per hit when the kernel catches it.
 *
 * Runs bench/hit_target (a function called N times, default 20,000) plain, under a minimal
 * uprobe tracer written here with raw perf_event_open + mmap (the floor: a task-clock leader,
 * a uprobe and a uretprobe as members with sample_period 1 sampling the group into one ring,
 * the uretprobe's output redirected there, the ring drained while the target runs), and under
 * perfsh's core/uprobe.c layer doing the same. Two functions: hit_movslq (entry
 * `movslq %edi,%rax`: an int3 and a single-step per probe) and hit_nop5 (entry
 * 0f 1f 44 00 00: the kernel turns the probe into a call). Medians of 5 interleaved runs;
 * prints the cost per hit in microseconds and the ratio layer / floor.
 * Needs root or CAP_PERFMON: without the uprobe PMU it says why and exits 0.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "machine.h"
#include "run.h"
#include "symbols.h"
#include "uprobe.h"

#define TARGET "bench/hit_target"
#define REPS 5
#define PAGES 2048 /* 8 MiB: every record of a run fits even if the reader never runs */

struct fn {
	const char *mode, *sym;
	char path[4096];
	uint64_t off;
	int nop5;
};

static char nbuf[32];

static void die(const char *what)
{
	fprintf(stderr, "uprobe_floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Fork the target held on a pipe before its exec; *@go releases it. */
static pid_t spawn_held(const char *mode, int *go)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		char b, *argv[] = {TARGET, nbuf, (char *)mode, NULL};
		close(p[1]);
		if (read(p[0], &b, 1) != 1)
			_exit(126);
		execv(TARGET, argv);
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

static uint64_t run_plain(const char *mode)
{
	uint64_t t0 = ps_now_ns();
	int go, st;
	pid_t pid = spawn_held(mode, &go);

	release(go);
	waitpid(pid, &st, 0);
	return ps_now_ns() - t0;
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

static uint64_t run_floor(const struct fn *f, uint64_t n)
{
	uint64_t t0 = ps_now_ns(), samples = 0, lost = 0;
	int go, st = 0, fds[3];
	pid_t pid = spawn_held(f->mode, &go);
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
	a.config = 1ull << ps_uprobe_retprobe_bit();
	fds[2] = sys_open(&a, pid, fds[0]);
	struct perf_event_mmap_page *mp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	if (mp == MAP_FAILED)
		die("mmap");
	if (ioctl(fds[2], PERF_EVENT_IOC_SET_OUTPUT, fds[1]) < 0)
		die("PERF_EVENT_IOC_SET_OUTPUT");
	release(go);
	while (waitpid(pid, &st, WNOHANG) == 0) {
		struct pollfd p = {fds[1], POLLIN, 0};
		poll(&p, 1, 50);
		floor_drain(mp, &samples, &lost);
	}
	floor_drain(mp, &samples, &lost);
	munmap(mp, len);
	for (int i = 2; i >= 0; i--)
		close(fds[i]);
	if (samples != 2 * n || lost) {
		fprintf(stderr, "uprobe_floor: the floor saw %llu records (%llu lost), expected %llu\n",
			(unsigned long long)samples, (unsigned long long)lost, (unsigned long long)(2 * n));
		exit(1);
	}
	return ps_now_ns() - t0;
}

static int count_hit(const struct ps_uprobe_hit *h, void *ud)
{
	(void)h;
	(*(uint64_t *)ud)++;
	return 0;
}

static uint64_t run_layer(const struct fn *f, const struct ps_event *ev, uint64_t n)
{
	uint64_t t0 = ps_now_ns(), hits = 0;
	struct ps_uprobe_site site = {.path = f->path, .offset = f->off, .ret = 1};
	struct ps_uprobe_opts o = {.ev = ev, .nev = 1, .sites = &site, .nsites = 1, .ring_pages = PAGES, .enabled = 1};
	struct ps_uprobe *u;
	struct ps_error err;
	int go, st = 0;
	pid_t pid = spawn_held(f->mode, &go);

	if (ps_uprobe_open(&u, pid, &o, &err)) {
		fprintf(stderr, "uprobe_floor: %s\n", err.msg);
		kill(pid, SIGKILL);
		exit(1);
	}
	release(go);
	while (waitpid(pid, &st, WNOHANG) == 0) {
		struct pollfd p = {ps_uprobe_fd(u), POLLIN, 0};
		poll(&p, 1, 50);
		ps_uprobe_drain(u, count_hit, &hits);
	}
	ps_uprobe_drain(u, count_hit, &hits);
	long lost = ps_uprobe_missing(u, &err);
	ps_uprobe_close(u);
	if (hits != 2 * n || lost) {
		fprintf(stderr, "uprobe_floor: the layer saw %llu records (%ld lost), expected %llu\n",
			(unsigned long long)hits, lost, (unsigned long long)(2 * n));
		exit(1);
	}
	return ps_now_ns() - t0;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 20000;
	struct fn fns[] = {{.mode = "movslq", .sym = "hit_movslq"}, {.mode = "nop5", .sym = "hit_nop5"}};
	struct ps_event ev;
	struct ps_error err;
	struct ps_symtab *st;
	char why[256], path[4096];

	snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
	if (!ps_uprobe_available(why, sizeof why)) {
		printf("uprobe_floor: skipped: %s\n", why);
		return 0;
	}
	if (!realpath(TARGET, path) || ps_sym_open(&st, TARGET, &err)) {
		fprintf(stderr, "uprobe_floor: cannot read %s (run make bench)\n", TARGET);
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		const struct ps_sym *sym;
		snprintf(fns[i].path, sizeof fns[i].path, "%s", path);
		if (ps_sym_lookup(st, fns[i].sym, &sym, &err) ||
		    ps_uprobe_file_offset(fns[i].path, sym->addr, &fns[i].off, &err) ||
		    (fns[i].nop5 = ps_uprobe_site_is_nop5(fns[i].path, fns[i].off, &err)) < 0) {
			fprintf(stderr, "uprobe_floor: %s\n", err.msg);
			ps_sym_close(st);
			return 1;
		}
	}
	ps_sym_close(st);
	if (ps_event_resolve("task-clock", &ev, &err)) {
		fprintf(stderr, "uprobe_floor: %s\n", err.msg);
		return 1;
	}
	printf("uprobe_floor: %llu calls; uprobe + uretprobe in a task-clock group, sampled into a %d-page ring\n",
	       (unsigned long long)n, PAGES);
	printf("%-12s %6s %12s %14s %14s %8s\n", "function", "nop5", "plain ms", "floor us/hit", "perfsh us/hit",
	       "ratio");
	for (int i = 0; i < 2; i++) {
		uint64_t plain[REPS], fl[REPS], ly[REPS];
		for (int r = 0; r < REPS; r++) {
			plain[r] = run_plain(fns[i].mode);
			fl[r] = run_floor(&fns[i], n);
			ly[r] = run_layer(&fns[i], &ev, n);
		}
		uint64_t base = median(plain, REPS);
		double pf = (double)(median(fl, REPS) - base) / (double)n / 1000.0;
		double pl = (double)(median(ly, REPS) - base) / (double)n / 1000.0;
		printf("%-12s %6s %12.3f %14.2f %14.2f %8.2f\n", fns[i].sym, fns[i].nop5 ? "yes" : "no", base / 1e6, pf,
		       pl, pl / pf);
	}
	return 0;
}
