/* agent/agent_unwind.c - exceptions and panics through patched functions. An unwinder walking
 * a stack meets return addresses: one swapped for the exit trampoline (agent_hooks.c) has no
 * unwind information, and the program would terminate. The agent, preloaded, interposes the
 * unwinder's entry points (libgcc_s: _Unwind_RaiseException, _Unwind_Resume,
 * _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind), which put the thread's real return
 * addresses back before the walk, and _Unwind_SetIP, through which every personality routine
 * (C++'s in libstdc++, Rust's in the program's std) installs a landing pad: there the frames
 * below the landing frame's are gone (their hits end as unwound) and the live frames' return
 * addresses are swapped again; a cleanup pad goes on by _Unwind_Resume, which puts them back.
 * So a Rust catch_unwind, which lands by a landing pad alone, is met as a C++ catch is. C++'s
 * __cxa_begin_catch (libstdc++) does the same again where the exception is caught, for a
 * personality whose _Unwind_SetIP is not called through the PLT. _Unwind_Backtrace (Rust's
 * backtraces, RUST_BACKTRACE) walks the stack without unwinding it: the real return addresses
 * are put back for the walk and swapped again after; so does glibc's backtrace(), which calls
 * the one of a libgcc_s it opened itself, not through the PLT. pthread_exit starts its forced unwind
 * inside glibc. perfsh refuses programs whose unwinder it cannot interpose (one linked into
 * the program). A thread cancelled inside a measured function ends at the first swapped
 * return address: the cleanups of the frames above it do not run (glibc's cancellation unwinds
 * from inside itself). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent_hooks.h"

struct _Unwind_Exception;
struct _Unwind_Context;
typedef int (*stop_fn)(int, int, uint64_t, struct _Unwind_Exception *, struct _Unwind_Context *, void *);
typedef int (*trace_fn)(struct _Unwind_Context *, void *);

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
void _Unwind_SetIP(struct _Unwind_Context *c, uint64_t ip);
int _Unwind_Backtrace(trace_fn trace, void *arg);
int backtrace(void **buf, int size);
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

/* A personality routine installs a landing pad in the frame of context @c: the frames below it
   (below its return address, 8 bytes under its canonical frame address) were unwound. */
__attribute__((visibility("default"))) void _Unwind_SetIP(struct _Unwind_Context *c, uint64_t ip)
{
	static void (*real)(struct _Unwind_Context *, uint64_t);
	static uint64_t (*cfa)(struct _Unwind_Context *);

	if (!cfa)
		cfa = next("_Unwind_GetCFA");
	if (!real)
		real = next("_Unwind_SetIP");
	pa_hooks_unwind(cfa(c) - 8, 1);
	real(c, ip);
}

/* A walk of the stack that leaves it as it is: the real return addresses for its length. No
   frame ends here (stack pointer 0): the walk may run on a signal's stack, above the thread's. */
__attribute__((visibility("default"))) int _Unwind_Backtrace(trace_fn trace, void *arg)
{
	static int (*real)(trace_fn, void *);
	int rc;

	pa_hooks_unwind(0, 0);
	if (!real)
		real = next("_Unwind_Backtrace");
	rc = real(trace, arg);
	pa_hooks_unwind(0, 1);
	return rc;
}

/* glibc's walk (execinfo.h), the same way. */
__attribute__((visibility("default"))) int backtrace(void **buf, int size)
{
	static int (*real)(void **, int);
	int n;

	pa_hooks_unwind(0, 0);
	if (!real)
		real = next("backtrace");
	n = real(buf, size);
	pa_hooks_unwind(0, 1);
	return n;
}
