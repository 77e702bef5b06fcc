/* marker/marker_say.c - what the marker library says: one line on stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "marker_say.h"

#define LINE 640

/* @s after the *@len bytes of @line, cut to leave room for the newline. */
static void add(char *line, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (n > LINE - 1 - *len)
		n = LINE - 1 - *len;
	memcpy(line + *len, s, n);
	*len += n;
}

void pm_say(const char *what, const char *then)
{
	char line[LINE];
	size_t len = 0;

	add(line, &len, "perfsh marker: ");
	add(line, &len, what);
	add(line, &len, then);
	line[len++] = '\n';
	if (write(2, line, len) < 0) {
		/* nowhere else to say it */
	}
}

void pm_warn(const char *fmt, ...)
{
	char what[LINE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	pm_say(what, "");
}
