/* examples/forks.c - a process that forks children one after the other.
 *
 *   usage: forks [N]    default 20
 * Each of the N children calls step() once and exits 0; the parent waits for each before it
 * forks the next, then calls step() once itself. So step is entered N + 1 times, in N + 1
 * processes. Exits 0, or 1 if a fork or a child failed.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int __attribute__((noinline)) step(int n)
{
	volatile int x = 0;

	for (int i = 0; i < n; i++)
		x += i;
	return x;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;

	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(step(1000) < 0);
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	return step(1000) < 0;
}
