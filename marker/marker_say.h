/* marker/marker_say.h - what the marker library says: one line on stderr, "perfsh marker: ...". */
#ifndef PS_MARKER_SAY_H
#define PS_MARKER_SAY_H

/* One line, printf-style. Not for a signal handler (it formats). */
void pm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "perfsh marker: @what@then", one line in one write(2): async-signal-safe (nothing formatted,
   nothing allocated), for the file's failures, which a signal handler may meet. */
void pm_say(const char *what, const char *then);

#endif
