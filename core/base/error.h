/* core/base/error.h - error reports of the core: an errno-style code and one line of text.
 *
 * The base room (core/base/): what every other room uses and nothing of theirs: errors, output
 * files written whole (outfile.h), arrays that grow (grow.h), names suggested for a misspelt one
 * (suggest.h). */
#ifndef PS_ERROR_H
#define PS_ERROR_H

#include <stddef.h>

/**
 * struct ps_error - what went wrong, for the caller to show.
 * @code: errno value (or a negative PS_E* code for errors that are not the OS's).
 * @msg:  one line that names the thing that failed and what to do.
 */
struct ps_error {
	int code;
	char msg[512];
};

/* Codes for failures that are not the OS's: the caller's mistake, or what the request needs.
   Lua sees them as core.errors (lua/lerrors.c) and branches on them, never on the text. */
enum {
	PS_EUSAGE = -1,	       /* bad input: unknown event, bad syntax, unknown symbol */
	PS_ENOTFOUND = -2,     /* a name that does not resolve */
	PS_ENEEDS_PTRACE = -3, /* the uprobe catcher cannot do it; the ptrace catcher can */
	PS_ENEEDS_UPROBE = -4  /* the in-process or marker catcher cannot do it (yet); the uprobe catcher can */
};

/* Fill @err (if not NULL) and return -1; printf-style. */
int ps_error_set(struct ps_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reset @err to "no error". */
void ps_error_clear(struct ps_error *err);

#endif
