/* marker/marker_file.h - file mode: the records' file (PERFSH_OUT, written with the core's psnap
 * writer), the threads whose buffers drain into it and the counts it ends with. Every function
 * but pm_file_open() and pm_file_enabled() is called with the lock held (marker_lock.h). */
#ifndef PS_MARKER_FILE_H
#define PS_MARKER_FILE_H

#include "marker_thread.h"

/* Create the file at @path with the configuration's events and facts. 0, or -1 after a warning. */
int pm_file_open(const char *path);
/* 1 while the file takes records (created, neither failed nor closed). */
int pm_file_enabled(void);

/* Thread @t writes into the file from now on. */
void pm_file_join(struct pm_thread *t);
/* Thread @t ends: its records to the file, its counts to the totals, it leaves the list. */
void pm_file_leave(struct pm_thread *t);
/* Copy @t's buffered records to the file (or count them lost when it cannot take them). */
void pm_file_drain(struct pm_thread *t);
/* The same for every thread. */
void pm_file_drain_all(void);
/* Region @id is @name: its REGN and its metadata. */
void pm_file_name_region(int id, const char *name);

/* Everything buffered written out (ps_marker_flush). 0, or -1. */
int pm_file_flush(void);
/* The counts of the run as metadata, then END: the file is closed. */
void pm_file_close(void);
/* A signal: what is buffered written out, and, when @last (the process dies of it), END.
   Async-signal-safe: nothing is allocated or formatted; a failure is said in one line. */
void pm_file_at_signal(int last);
/* In a forked child: the parent's file is not this process's. */
void pm_file_forget(void);

#endif
