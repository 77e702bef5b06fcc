/* core/proc/inject_priv.h - the checks before an injection (inject_check.c), for inject.c. */
#ifndef PS_INJECT_PRIV_H
#define PS_INJECT_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* Where the process's libc.so.6 has its dlopen, dlerror and dlsym. */
struct ps_inject_target {
	uint64_t dlopen, dlerror, dlsym;
	char abspath[4096]; /* the library, absolute */
};

/* ps__inject_check() - every refusal that needs no ptrace (inject.h lists them), and the
 * addresses to call. 0, -1 with @err set, or 1 when the process's maps may not be read (not ours
 * to trace, most likely: the attach says why, or proves it may and the check is made again). */
int ps__inject_check(pid_t pid, const char *path, struct ps_inject_target *tg, struct ps_error *err);

#endif
