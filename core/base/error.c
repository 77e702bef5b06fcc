/* core/base/error.c - filling struct ps_error. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int ps_error_set(struct ps_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

void ps_error_clear(struct ps_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}
