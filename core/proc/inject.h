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

#endif
