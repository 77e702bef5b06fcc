/* tests/c/test_psnap_stream.c - perfsh report streams the hits of a file: the peak memory of
 * `perfsh report --hits-csv` does not grow with the hits. Runs the perfsh executable ($PERFSH,
 * as tests/run.sh sets it, else ./perfsh) on files written here, and reads each run's peak RSS
 * from wait4(2). */
#include "ctest.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "psnap_util.h"

#define BOUND_KB (64 * 1024) /* peak RSS of a report of 1,000,000 hits, the file's pages included */
#define GROWTH_KB (8 * 1024) /* more for 1,000,000 hits than for 100,000 */

/* Run `PERFSH report OPT PATH`, counting the lines it writes; its peak RSS in KiB, or -1 when it
   did not exit with 0. fork, not vfork (posix_spawn): a vfork child's peak counts its parent's;
   a forked one's starts from the pages it shares with this small process. */
static long report_peak_kb(const char *perfsh, const char *opt, const char *path, uint64_t *lines)
{
	char buf[1 << 16];
	struct rusage ru;
	int fd[2], status;
	ssize_t n;
	pid_t pid;

	*lines = 0;
	if (pipe(fd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl(perfsh, perfsh, "report", opt, path, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while ((n = read(fd[0], buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++)
			*lines += buf[i] == '\n';
	close(fd[0]);
	if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return ru.ru_maxrss;
}

/* The case: 1.63 GB for the CSV of 1,000,000 hits, 1.6 KB a hit. Now one hit at a time,
   and the file's pages let go behind: under 64 MB, and within 8 MB of the peak for 100,000. */
TEST(report_hits_csv_memory_does_not_grow_with_the_hits)
{
	static const uint64_t counts[] = {100000, 1000000};
	const char *perfsh = getenv("PERFSH") ? getenv("PERFSH") : "./perfsh";
	char path[64];
	struct ps_error err = {0};
	long peak[2];

#if defined(__SANITIZE_ADDRESS__)
	SKIP("AddressSanitizer keeps freed memory in quarantine (up to 256 MB): the peak RSS measures that");
#endif
	if (access(perfsh, X_OK) != 0)
		SKIP("%s is not built", perfsh);
	psnap_tmp_path(path);
	for (int k = 0; k < 2; k++) {
		uint64_t lines;

		CHECK_EQ_INT(psnap_write_file(path, counts[k], 0, 0, &err), 0);
		peak[k] = report_peak_kb(perfsh, "--hits-csv", path, &lines);
		CHECK(peak[k] > 0);
		CHECK_EQ_INT(lines, counts[k] + 1); /* the header, then one row per hit */
		fprintf(stderr, "  perfsh report --hits-csv of %llu hits (%llu MB): peak RSS %ld KB\n",
			(unsigned long long)counts[k], (unsigned long long)(counts[k] * RECSIZE >> 20), peak[k]);
	}
	CHECK(peak[1] < BOUND_KB);
	CHECK(peak[1] - peak[0] < GROWTH_KB);
	unlink(path);
}
