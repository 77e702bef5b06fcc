/* core/proc/inject.h - load a shared library into a running process: its own dlopen, called by one
 * of its threads from a ptrace stop while every other thread is held, then detach.
 *
 * Nothing else of the process changes: every thread's registers (general, x87/SSE/AVX state) are
 * put back, the bytes written on the stack are put back, a system call the calling thread was
 * stopped in restarts as it would have, and the signals that arrive meanwhile are delivered at
 * the detach. What the loaded library's constructors do is the library's business.
 */
#ifndef PS_INJECT_H
#define PS_INJECT_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/**
 * struct ps_inject_info - what an injection did.
 * @handle:     what dlopen returned in the process (its handle of the library)
 * @tid:        the thread that made the call
 * @in_syscall: that thread was stopped inside a system call (restarted after the call)
 * @threads:    threads of the process held meanwhile (the caller included)
 * @call_ns:    how long the dlopen call ran (CLOCK_MONOTONIC)
 * @held_ns:    how long the process was traced: attach, call, detach
 * @total_ns:   the checks before, and @held_ns
 */
struct ps_inject_info {
	uint64_t handle;
	pid_t tid;
	int in_syscall;
	int threads;
	uint64_t call_ns, held_ns, total_ns;
};

/**
 * ps_inject_library() - dlopen(@path, RTLD_NOW) inside running process @pid.
 * @path: the library (made absolute here; the process must see it at that path)
 * @info: filled on success (NULL allowed)
 * @err:  one line on failure
 *
 * Refused before the process is touched (code PS_EUSAGE unless said): a @path that is not a
 * readable file (ENOENT and the like); a process without libc.so.6 or without dlopen in it (a
 * static program, a libc older than 2.34: PS_ENOTFOUND); a process under seccomp (its filter may
 * kill the loader's system calls); a sanitizer build (its runtime wraps dlopen, and a library
 * loaded past the wrapper is one it does not know of); one that cannot be traced (EPERM, with what
 * to do). Refused once attached: a process stopped by a stop signal (EAGAIN; it is left stopped).
 * A dlopen that fails reports dlerror()'s text (fetched by a second call), the process left as it
 * was. A fault inside the call (a constructor's) is reported (EFAULT) and never delivered: the
 * thread goes on from where it was stopped, though the loader's lock may stay taken by it.
 * libc.so.6 is read through /proc/PID/root (the process's mount namespace may not be ours).
 *
 * The caller is chosen among the held threads: the first (main thread first) stopped inside a
 * system call, which is restarted afterwards exactly as the stop would have (its saved orig_rax
 * and -ERESTART* result are put back, so the kernel rewinds it); else the main thread. The call
 * returns to address 0: its SIGSEGV is caught as a signal-delivery stop and never delivered. A
 * call still running after 2 s (waiting for a lock a held thread owns) has the other threads let
 * run until it returns; they are held again before the detach.
 *
 * Return: 0, or -1 with @err set.
 */
int ps_inject_library(pid_t pid, const char *path, struct ps_inject_info *info, struct ps_error *err);

/**
 * ps_inject_check() - the refusals of ps_inject_library() found without touching process @pid
 * (the library, static, no dlopen, seccomp, sanitizer), for a caller that checks before it
 * starts anything.
 *
 * Return: 0, 1 when the process's maps may not be read (whether it may be traced is known only
 * by trying), or -1 with @err set.
 */
int ps_inject_check(pid_t pid, const char *path, struct ps_error *err);

/**
 * struct ps_inject_call - a function of the library to call once it is loaded, int @sym(const
 * char *@arg), by the thread that called dlopen, the others still held.
 * @sym:  its name, found by the process's dlsym on the library's handle
 * @arg:  a string, copied on the calling thread's stack for the call
 * @held: called first (NULL: not) with the instruction pointers of every thread of the process,
 *        each held where it was stopped (the calling one's too): 0 to make the call, or -1 with
 *        @err to make no more calls
 * @ud:   for @held
 * @ret:  what the function returned
 */
struct ps_inject_call {
	const char *sym, *arg;
	int (*held)(void *ud, const uint64_t *ip, int n, struct ps_error *err);
	void *ud;
	int ret;
};

/**
 * ps_inject_library_call() - ps_inject_library(), then @ncalls functions of the library called
 * in turn (@calls), in the same stop of the process: as the dlopen call, each runs in the
 * calling thread alone unless it waits 2 s for a lock a held thread owns, and the thread's
 * registers and stack are put back after the last one. A function that is not found is refused
 * (PS_ENOTFOUND, with dlerror()'s text); the library stays loaded whatever a call returns.
 *
 * Return: 0 (each call's @ret set), or -1 with @err set.
 */
int ps_inject_library_call(pid_t pid, const char *path, struct ps_inject_call *calls, int ncalls,
			   struct ps_inject_info *info, struct ps_error *err);

#endif
