/* agent/agent_seccomp.c - a program that locks itself with seccomp: the agent sees it coming.
 *
 * A thread's first hit opens its counter group with perf_event_open(2); once the program has set
 * a seccomp filter (or strict mode), that call may be one the filter answers by killing the
 * process. So the two ways into seccomp a program goes through the C library for, prctl
 * (PR_SET_SECCOMP) and syscall (SYS_seccomp, libseccomp's way), are interposed here: the
 * marker library is told first (pm_seal(): no group is opened after), then the call is made as
 * the program asked. A program that enters seccomp by an inline system call is not seen; nor is
 * one into which the agent was injected (-p) rather than preloaded (its calls are bound to the C
 * library already).
 */
#include <dlfcn.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "marker_hit.h"

typedef long (*call6)(long, long, long, long, long, long, long);

/* The C library's own @name (the next definition after the agent's). */
static call6 next(const char *name)
{
	return (call6)dlsym(RTLD_NEXT, name);
}

int prctl(int option, ...)
{
	static call6 real;
	long a[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (option == PR_SET_SECCOMP)
		pm_seal();
	if (!real && !(real = next("prctl")))
		return (int)syscall(SYS_prctl, option, a[0], a[1], a[2], a[3]);
	return (int)real(option, a[0], a[1], a[2], a[3], 0, 0);
}

long syscall(long nr, ...)
{
	static call6 real;
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_seccomp || (nr == SYS_prctl && a[0] == PR_SET_SECCOMP))
		pm_seal();
	if (!real)
		real = next("syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
