/* examples/writes.c - exactly N write(2) calls, for counting syscall tracepoints.
 *
 *   usage: writes [N]     default N = 100; each call writes one line to stdout
 *
 * write(2) is called directly (no stdio buffering), so the command makes exactly N write
 * system calls from its exec to its exit:
 *   perfsh count -e syscalls:sys_enter_write ./examples/writes 100 >/dev/null   -> 100
 */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100;

	for (long i = 0; i < n; i++)
		if (write(1, "w\n", 2) != 2)
			return 1;
	return 0;
}
