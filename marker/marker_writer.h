/* marker/marker_writer.h - the background writer (file mode): a thread that drains the threads'
 * rings into the file (marker_file.h), so that the measured threads do not pay for it. */
#ifndef PS_MARKER_WRITER_H
#define PS_MARKER_WRITER_H

int pm_writer_start(void);   /* 0, or -1 with errno */
void pm_writer_wake(void);   /* a thread's buffer is half full */
void pm_writer_stop(void);   /* at exit: the thread joined */
void pm_writer_forget(void); /* in a forked child, where it does not exist */

#endif
