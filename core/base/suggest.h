/* core/base/suggest.h - "did you mean ...?": the known names closest to a misspelt one. */
#ifndef PS_SUGGEST_H
#define PS_SUGGEST_H

#include <stddef.h>

#define PS_SUGGEST_MAX 8

/**
 * struct ps_suggest - the best candidates seen so far, best first.
 * @out:   caller's array of @max names
 * @score: their distances (lower is closer)
 * @typed: the name the user wrote
 */
struct ps_suggest {
	char (*out)[128];
	int score[PS_SUGGEST_MAX];
	int n, max;
	const char *typed;
};

/* Start a search for names close to @typed, keeping up to @max (at most PS_SUGGEST_MAX) in @out. */
void ps_suggest_init(struct ps_suggest *s, const char *typed, char (*out)[128], int max);

/* Offer one known name; kept when it is among the closest so far (abbreviations rank first). */
void ps_suggest_add(struct ps_suggest *s, const char *name);

/* Write "; did you mean 'a', 'b' or 'c'?" (or "" when there is no candidate) to @buf. */
void ps_suggest_text(const struct ps_suggest *s, char *buf, size_t n);

#endif
