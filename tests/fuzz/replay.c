/* tests/fuzz/replay.c - run a fuzz target on saved inputs without libFuzzer.
 *
 * Linked with one tests/fuzz/fuzz_NAME.c, it calls LLVMFuzzerTestOneInput on every file named
 * on the command line (a directory: on every file in it), so `make check` replays each corpus.
 * A crash ends the process; the last "replay: FILE" line names the input that caused it.
 * Exit status 0 when every input ran, 1 when one could not be read.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path, int *count)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f) {
		perror(path);
		return -1;
	}
	/* exactly n bytes, as libFuzzer passes them, so a read past the end is caught */
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(buf = malloc(n ? (size_t)n : 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	printf("replay: %s\n", path);
	fflush(stdout);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	(*count)++;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **more = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
			if (!more) {
				rc = -1;
				break;
			}
			names = more;
		}
		if (!(names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2))) {
			rc = -1;
			break;
		}
		sprintf(names[n++], "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && replay_file(names[i], count))
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int count = 0, rc = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			perror(argv[i]);
			rc = 1;
		} else if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) : replay_file(argv[i], &count)) {
			rc = 1;
		}
	}
	printf("replayed %d inputs\n", count);
	return rc;
}
