/* bench/report_big.c - a large .psnap file, as perfsh stat --save writes one for a function
 * called 1,000,000 times (events task-clock,page-faults: 120-byte records, 120 MB), for
 * measuring perfsh report on it:
 *
 *   bench/report_big [FILE [RECORDS]]   (default: a temporary file, removed at the end)
 *   /usr/bin/time -v ./perfsh report FILE
 *
 * Without FILE it times the statistics (core/records/analysis.c) over the file it wrote, then runs
 * ./perfsh report on it, plain and with --hits-csv (output to /dev/null), and prints the time
 * and peak RSS of each (the file's mapped pages count in RSS), then removes the file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"
#include "psnap.h"
#include "snapshot.h"

#define NVALS 2
#define BATCH 4096

static uint64_t rng = 42;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Hit @i: 4 threads on 2 CPUs, a few migrations, times of ~2 us with a tail, every 1000th
 * hit unwound. */
static void fill(struct ps_snap *r, uint64_t i, uint64_t *clock)
{
	uint64_t t = 1500 + rnd() % 1000 + (rnd() % 100 == 0 ? rnd() % 50000 : 0);

	memset(r, 0, ps_snap_size(NVALS, 0));
	r->region = 0;
	r->tid = 1000 + (uint32_t)(i % 4);
	r->seq = i;
	r->hit = i;
	r->t_start = *clock;
	r->t_end = *clock + t + 20000;
	*clock += t + 30000;
	r->enabled_start = r->running_start = i * 4000;
	r->enabled_end = r->running_end = i * 4000 + t;
	r->cpu_start = (int16_t)(i % 2);
	r->cpu_end = (int16_t)(rnd() % 50 == 0 ? 1 - i % 2 : i % 2);
	r->flags = i % 1000 == 999 ? PS_SNAP_UNWOUND : 0;
	r->nvals = NVALS;
	ps_snap_start(r)[0] = i * 4000;
	ps_snap_end(r)[0] = i * 4000 + t;
	ps_snap_start(r)[1] = i;
	ps_snap_end(r)[1] = i + (rnd() % 20 == 0);
}

static int write_file(const char *path, uint64_t n)
{
	static const char *const events[] = {"task-clock", "page-faults"}, *const regions[] = {"sum"};
	static const struct ps_psnap_meta meta[] = {{"groups", "2"},	    {"command", "examples/sum 1000000"},
						    {"pid", "1"},	    {"entries.0", "1000000"},
						    {"kind.0", "function"}, {"counter.0", "int3"}};
	struct ps_psnap_info info = {NVALS, 0, 2, events, 1, regions, sizeof meta / sizeof *meta, meta};
	size_t rs = ps_snap_size(NVALS, 0);
	unsigned char *buf = malloc(BATCH * rs);
	struct ps_psnap_writer *w;
	struct ps_error err;
	uint64_t clock = 1000000;
	int rc = 0;

	if (!buf)
		return -1;
	w = ps_psnap_create(path, &info, &err);
	if (!w) {
		fprintf(stderr, "%s\n", err.msg);
		free(buf);
		return -1;
	}
	for (uint64_t i = 0; i < n && !rc; i += BATCH) {
		size_t m = n - i < BATCH ? (size_t)(n - i) : BATCH;
		for (size_t k = 0; k < m; k++)
			fill((struct ps_snap *)(buf + k * rs), i + k, &clock);
		rc = ps_psnap_write(w, buf, m, &err);
	}
	if (ps_psnap_close(w, &err) || rc) {
		fprintf(stderr, "%s\n", err.msg);
		rc = -1;
	}
	free(buf);
	return rc;
}

static const struct ps_snap *record_of(const void *r, uint64_t i)
{
	return ps_psnap_record(r, i);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Time each split of the statistics of region 0 over the file, as perfsh report computes them. */
static int time_stats(const char *path)
{
	static const char *const split_name[] = {"region", "thread", "cpu"};
	struct ps_psnap_reader *r;
	struct ps_view v = {0};
	struct ps_error err;
	double t0 = now();

	if (ps_psnap_open(path, &r, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	printf("open and check %llu records: %.3f s\n", (unsigned long long)ps_psnap_count(r), now() - t0);
	v.n = ps_psnap_count(r);
	v.get = record_of;
	v.ctx = r;
	v.nev = (int)ps_psnap_nevents(r);
	for (int k = 0; k < v.nev; k++)
		v.names[k] = ps_psnap_event(r, (size_t)k);
	ps_view_set_groups(&v, ps_psnap_meta_get(r, "groups"), ps_psnap_nvals(r));
	for (int split = PS_SPLIT_NONE; split <= PS_SPLIT_CPU; split++) {
		struct ps_hit_stats *st;
		size_t n;

		t0 = now();
		if (ps_view_stats(&v, 0, (enum ps_split)split, &st, &n)) {
			perror("ps_view_stats");
			ps_psnap_reader_close(r);
			return -1;
		}
		printf("statistics by %s (%zu groups, p50 of the first %.0f ns): %.3f s\n", split_name[split], n,
		       n ? st[0].time.p50 : 0.0, now() - t0);
		free(st);
	}
	ps_psnap_reader_close(r);
	return 0;
}

/* Time and peak RSS of `./perfsh report [OPT] PATH`, its output to /dev/null. fork, not vfork
   (posix_spawn): a vfork child's peak RSS counts its parent's. */
static void time_report(const char *path, const char *opt)
{
	struct rusage ru;
	double t0 = now();
	int status = -1;
	pid_t pid;

	if (access("./perfsh", X_OK) != 0) {
		printf("perfsh report: no ./perfsh here (run from the source tree)\n");
		return;
	}
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		if (opt[0])
			execl("./perfsh", "./perfsh", "report", opt, path, (char *)NULL);
		else
			execl("./perfsh", "./perfsh", "report", path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0 && wait4(pid, &status, 0, &ru) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		printf("perfsh report%s%s: %.3f s, peak RSS %ld KB\n", opt[0] ? " " : "", opt, now() - t0,
		       ru.ru_maxrss);
	else
		printf("perfsh report%s%s: failed (status %d)\n", opt[0] ? " " : "", opt, status);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/perfsh-big-XXXXXX";
	const char *path = argc > 1 ? argv[1] : tmp;
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	int rc;

	if (argc <= 1) {
		int fd = mkstemp(tmp);
		if (fd < 0)
			return perror("mkstemp"), 1;
		close(fd);
	}
	if (write_file(path, n))
		return 1;
	printf("wrote %llu records to %s\n", (unsigned long long)n, path);
	if (argc > 1)
		return 0;
	rc = time_stats(tmp);
	time_report(tmp, "");
	time_report(tmp, "--hits-csv");
	unlink(tmp);
	return rc ? 1 : 0;
}
