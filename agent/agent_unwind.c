/* agent/agent_unwind.c - exceptions through patched functions. A C++ unwinder walking a stack
 * meets return addresses: one swapped for the exit trampoline (agent_hooks.c) has no unwind
 * information, and the program would terminate. The agent, preloaded, interposes the
 * unwinder's entry points (libgcc_s: _Unwind_RaiseException, _Unwind_Resume,
 * _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind), which put the thread's real return
 * addresses back before the walk, and C++'s __cxa_begin_catch (libstdc++), which, where the
 * exception is caught, ends the hits of the frames it unwound (their records flagged unwound)
 * and swaps the live frames' return addresses again. perfsh refuses programs whose unwinder it
 * cannot interpose: one linked into the program, or Rust's (no __cxa_begin_catch). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent_hooks.h"

struct _Unwind_Exception;
struct _Unwind_Context;
typedef int (*stop_fn)(int, int, uint64_t, struct _Unwind_Exception *, struct _Unwind_Context *, void *);

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

__attribute__((visibility("default"))) int _Unwind_RaiseException(struct _Unwind_Exception *e)
{
	static int (*real)(struct _Unwind_Exception *);

	pa_hooks_unswap();
	if (!real)
		real = next("_Unwind_RaiseException");
	return real(e);
}

__attribute__((visibility("default"))) void _Unwind_Resume(struct _Unwind_Exception *e)
{
	static void (*real)(struct _Unwind_Exception *);

	pa_hooks_unswap();
	if (!real)
		real = next("_Unwind_Resume");
	real(e);
	abort(); /* not reached: _Unwind_Resume does not return */
}

__attribute__((visibility("default"))) int _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e)
{
	static int (*real)(struct _Unwind_Exception *);

	pa_hooks_unswap();
	if (!real)
		real = next("_Unwind_Resume_or_Rethrow");
	return real(e);
}

__attribute__((visibility("default"))) int _Unwind_ForcedUnwind(struct _Unwind_Exception *e, stop_fn stop, void *arg)
{
	static int (*real)(struct _Unwind_Exception *, stop_fn, void *);

	pa_hooks_unswap();
	if (!real)
		real = next("_Unwind_ForcedUnwind");
	return real(e, stop, arg);
}

/* Called by the catching frame: the frames below its stack pointer (this call's canonical
   frame address) were unwound. */
__attribute__((visibility("default"))) void *__cxa_begin_catch(void *e)
{
	static void *(*real)(void *);

	pa_hooks_reswap((uint64_t)__builtin_frame_address(0) + 16);
	if (!real)
		real = next("__cxa_begin_catch");
	return real(e);
}
