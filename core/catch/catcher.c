/* core/catch/catcher.c - what every catcher does alike with the session's env: notices and the
 * tests of when a run pauses (core/catch/catcher.h). */
#include "catcher.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "run.h"

void ps_catch_notice(struct ps_catch_env *env, const char *fmt, ...)
{
	size_t len = strlen(env->notice);
	va_list ap;

	if (len + 2 >= sizeof env->notice)
		return;
	if (len)
		env->notice[len++] = '\n';
	va_start(ap, fmt);
	vsnprintf(env->notice + len, sizeof env->notice - len, fmt, ap);
	va_end(ap);
}

int ps_catch_pause_due(const struct ps_catch_env *env, uint64_t now)
{
	return ps_hitpath_enough(env->hp) || (env->deadline && now >= env->deadline);
}

int ps_catch_window_edge(const struct ps_catch_env *env, uint64_t edge)
{
	uint64_t now = ps_now_ns();

	if (env->intr || ps_catch_pause_due(env, now))
		return 0;
	return now >= edge;
}
