/* marker/marker_lock.h - the lock on the marker library's file and thread list. */
#ifndef PS_MARKER_LOCK_H
#define PS_MARKER_LOCK_H

#include <stdint.h>

uint32_t pm_gettid(void);

/*
 * A spinlock holding its owner's tid, so that a signal handler (@in_signal) can tell that it
 * interrupted the holder (then it gives up rather than deadlock), and waits at most 2 s for
 * another thread. While it is held, SIGPIPE is blocked on its holder's thread and one raised
 * meanwhile dropped: a file that is a pipe whose reader has gone fails with EPIPE, it does not
 * kill the program. 0, or -1 (not taken).
 */
int pm_lock(int in_signal);
void pm_unlock(void);

/* In a forked child: the lock is free (its holder, if any, is not there). */
void pm_lock_forget(void);

#endif
