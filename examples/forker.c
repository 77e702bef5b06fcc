/* examples/forker.c - a process that forks; both sides run the same function.
 *
 * main forks: the child calls task(1) once and exits 0, the parent calls
 * task(2) once, waits for the child and exits 0 (1 if the child failed). So task
 * is entered twice: once in the parent pid, once in the child pid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int __attribute__((noinline)) task(int who)
{
	volatile unsigned x = 0;

	for (int i = 0; i < 100000; i++)
		x += (unsigned)i;
	fprintf(stderr, "task %d in pid %d\n", who, (int)getpid());
	return (int)(x & 1) + who;
}

int main(void)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		task(1);
		_exit(0);
	}
	task(2);
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
