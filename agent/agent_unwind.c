/* agent/agent_unwind.c - exceptions through patched functions. A C++ unwinder walking a stack
 * meets return addresses: one swapped for the exit trampoline (agent_hooks.c) has no unwind
 * information, and the program would terminate. The agent, preloaded, interposes the
 * unwinder's entry points (libgcc_s: _Unwind_RaiseException, _Unwind_Resume,
 * _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind), which put the thread's real return
 * addresses back before the walk, and C++'s __cxa_begin_catch (libstdc++), which, where the
 * exception is caught, ends the hits of the frames it unwound (their records flagged unwound)
 * and swaps the live frames' return addresses again; and pthread_exit, whose forced unwind glibc
 * starts inside itself. perfsh refuses programs whose unwinder it cannot interpose: one linked
 * into the program, or Rust's (no __cxa_begin_catch). A thread cancelled inside a measured
 * function ends at the first swapped return address: the cleanups of the frames above it do
 * not run (glibc's cancellation unwinds from inside itself). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent_hooks.h"

struct _Unwind_Exception;
struct _Unwind_Context;
typedef int (*stop_fn)(int, int, uint64_t, struct _Unwind_Exception *, struct _Unwind_Context *, void *);

/* The caller's stack pointer before its call here (this call's canonical frame address): the
   frames of the thread below it are gone, whether an unwinder left them or not yet begun. */
#define CALLER_SP ((uint64_t)__builtin_frame_address(0) + 16)

/* The next definition of @name (libgcc_s's, libstdc++'s); the program cannot go on without it. */
static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f)
		abort();
	return f;
}

int _Unwind_RaiseException(struct _Unwind_Exception *e);
void _Unwind_Resume(struct _Unwind_Exception *e);
int _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e);
int _Unwind_ForcedUnwind(struct _Unwind_Exception *e, stop_fn stop, void *arg);
void *__cxa_begin_catch(void *e);
void pthread_exit(void *ret);

__attribute__((visibility("default"))) int _Unwind_RaiseException(struct _Unwind_Exception *e)
{
	static int (*real)(struct _Unwind_Exception *);

	pa_hooks_unwind(CALLER_SP, 0);
	if (!real)
		real = next("_Unwind_RaiseException");
	return real(e);
}

__attribute__((visibility("default"))) void _Unwind_Resume(struct _Unwind_Exception *e)
{
	static void (*real)(struct _Unwind_Exception *);

	pa_hooks_unwind(CALLER_SP, 0);
	if (!real)
		real = next("_Unwind_Resume");
	real(e);
	abort(); /* not reached: _Unwind_Resume does not return */
}

__attribute__((visibility("default"))) int _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e)
{
	static int (*real)(struct _Unwind_Exception *);

	pa_hooks_unwind(CALLER_SP, 0);
	if (!real)
		real = next("_Unwind_Resume_or_Rethrow");
	return real(e);
}

__attribute__((visibility("default"))) int _Unwind_ForcedUnwind(struct _Unwind_Exception *e, stop_fn stop, void *arg)
{
	static int (*real)(struct _Unwind_Exception *, stop_fn, void *);

	pa_hooks_unwind(CALLER_SP, 0);
	if (!real)
		real = next("_Unwind_ForcedUnwind");
	return real(e, stop, arg);
}

/* The thread ends by a forced unwind that glibc starts inside itself (not through the
   interposed _Unwind_ForcedUnwind): its real return addresses back first, so the frames above
   the measured ones run their cleanups. */
__attribute__((visibility("default"), noreturn)) void pthread_exit(void *ret)
{
	static void (*real)(void *);

	pa_hooks_unwind(CALLER_SP, 0);
	if (!real)
		real = next("pthread_exit");
	real(ret);
	abort(); /* not reached */
}

/* Called by the catching frame: the frames below its stack pointer (this call's canonical
   frame address) were unwound. */
__attribute__((visibility("default"))) void *__cxa_begin_catch(void *e)
{
	static void *(*real)(void *);

	pa_hooks_unwind(CALLER_SP, 1);
	if (!real)
		real = next("__cxa_begin_catch");
	return real(e);
}
