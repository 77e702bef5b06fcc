/* core/base/suggest.c - ranking known names by closeness to a misspelt one. */
#include "suggest.h"

#include <stdio.h>
#include <string.h>

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[129];

	if (la > 128 || lb > 128)
		return 1000;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int cur = row[j];
			int sub = prev + (lower(a[i - 1]) != lower(b[j - 1]));
			int del = row[j] + 1, ins = row[j - 1] + 1;
			row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			prev = cur;
		}
	}
	return row[lb];
}

/* 1 when every character of @a appears in @b in order (an abbreviation). */
static int subsequence(const char *a, const char *b)
{
	for (; *b && *a; b++)
		if (lower(*a) == lower(*b))
			a++;
	return *a == '\0';
}

/* Distance in quarter steps: abbreviations rank by how much they leave out, others by edits. */
static int distance(const char *typed, const char *known)
{
	int lt = (int)strlen(typed), lk = (int)strlen(known);
	if (subsequence(typed, known))
		return lk - lt;
	return 4 * levenshtein(typed, known);
}

void ps_suggest_init(struct ps_suggest *s, const char *typed, char (*out)[128], int max)
{
	memset(s, 0, sizeof *s);
	s->out = out;
	s->max = max > PS_SUGGEST_MAX ? PS_SUGGEST_MAX : max < 0 ? 0 : max;
	s->typed = typed;
}

void ps_suggest_add(struct ps_suggest *s, const char *name)
{
	int d = distance(s->typed, name), i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->out[i], name))
			return;
	for (i = s->n; i > 0 && s->score[i - 1] > d; i--) {
		if (i < s->max) {
			s->score[i] = s->score[i - 1];
			memcpy(s->out[i], s->out[i - 1], 128);
		}
	}
	if (i >= s->max)
		return;
	s->score[i] = d;
	snprintf(s->out[i], 128, "%s", name);
	if (s->n < s->max)
		s->n++;
}

void ps_suggest_text(const struct ps_suggest *s, char *buf, size_t n)
{
	size_t len;

	if (!n)
		return;
	buf[0] = '\0';
	if (s->n == 0)
		return;
	snprintf(buf, n, "; did you mean ");
	for (int i = 0; i < s->n; i++) {
		len = strlen(buf);
		snprintf(buf + len, n - len, "%s'%s'", i == 0 ? "" : i == s->n - 1 ? " or " : ", ", s->out[i]);
	}
	len = strlen(buf);
	snprintf(buf + len, n - len, "?");
}
