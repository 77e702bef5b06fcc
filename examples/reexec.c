/* examples/reexec.c - a program that calls a function, then execs a new image.
 *
 *   reexec           work(1), then exec itself as "reexec again", which calls work(2)
 *   reexec true      work(1), then exec /bin/true (which has no work())
 *
 * So a region on work has one hit per image when regions are re-armed after exec.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int __attribute__((noinline)) work(int who)
{
	volatile unsigned x = 0;

	for (int i = 0; i < 10000; i++)
		x += (unsigned)i;
	printf("work %d\n", who);
	fflush(stdout);
	return (int)(x & 1);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "again"))
		return work(2);
	work(1);
	if (argc > 1 && !strcmp(argv[1], "true"))
		execl("/bin/true", "true", (char *)NULL);
	else
		execl("/proc/self/exe", argv[0], "again", (char *)NULL);
	perror("exec");
	return 1;
}
