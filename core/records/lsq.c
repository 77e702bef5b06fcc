/* core/records/lsq.c - least squares: column scaling, LAPACKE_dgelsd, and naming dependent columns. */
#include "lsq.h"

#include <errno.h>
#include <lapacke.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append printf-style text to @buf (of @size), truncating quietly. */
static void append(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* Reject NaN and infinite input, naming the first bad cell. */
static int check_finite(int m, int n, const double *a, const double *b, struct ps_error *err)
{
	for (int r = 0; r < m; r++) {
		for (int c = 0; c < n; c++)
			if (!isfinite(a[(size_t)r * n + c]))
				return ps_error_set(err, PS_EUSAGE, "%s in row %d, column %d",
						    isnan(a[(size_t)r * n + c]) ? "NaN" : "infinite value", r + 1,
						    c + 1);
		if (!isfinite(b[r]))
			return ps_error_set(err, PS_EUSAGE, "%s in the observed value of row %d",
					    isnan(b[r]) ? "NaN" : "infinite value", r + 1);
	}
	return 0;
}

/* Append "column J is (nearly) proportional to column K" (or a combination of several, or
 * all zeros) to @text, from the coefficients @z of column @j in the accepted columns @acc. */
static void describe(char *text, size_t size, int j, const double *z, const int *acc, int na)
{
	int nz = 0, seen = 0;

	for (int k = 0; k < na; k++)
		nz += fabs(z[k]) > 1e-6;
	append(text, size, "%scolumn %d ", text[0] ? "; " : "", j + 1);
	if (nz == 0) {
		append(text, size, "is (nearly) all zeros");
		return;
	}
	append(text, size, "%s",
	       nz == 1 ? "is (nearly) proportional to column" : "is (nearly) a linear combination of columns");
	for (int k = 0; k < na; k++) {
		const char *sep;

		if (fabs(z[k]) <= 1e-6)
			continue;
		seen++;
		sep = seen == 1 ? "" : seen == nz ? " and" : ",";
		append(text, size, "%s %d", sep, acc[k] + 1);
	}
}

/*
 * Which columns depend on earlier ones: Gram-Schmidt (twice, for stability) over the columns
 * of the scaled @w in order; a column whose residual is below @tol is dependent, and its
 * coordinates in the accepted columns (R z = Q^T col) name what it is a combination of.
 * Appends "(column 3 is (nearly) proportional to column 2; ...)" to @msg when exactly @want
 * columns are found; leaves @msg alone otherwise or when out of memory.
 */
static void explain(int m, int n, const double *w, double tol, int want, char *msg, size_t size)
{
	double *q = malloc((size_t)m * n * sizeof *q), *r = calloc((size_t)n * n, sizeof *r);
	double *v = malloc((size_t)m * sizeof *v), *c = malloc((size_t)n * sizeof *c);
	int *acc = malloc((size_t)n * sizeof *acc);
	int na = 0, nd = 0;
	char text[1024] = "";

	if (!q || !r || !v || !c || !acc)
		goto out;
	for (int j = 0; j < n; j++) {
		double norm = 0;

		for (int i = 0; i < m; i++)
			v[i] = w[(size_t)i * n + j];
		memset(c, 0, (size_t)n * sizeof *c);
		for (int pass = 0; pass < 2; pass++)
			for (int k = 0; k < na; k++) {
				double d = 0;
				for (int i = 0; i < m; i++)
					d += q[(size_t)k * m + i] * v[i];
				for (int i = 0; i < m; i++)
					v[i] -= d * q[(size_t)k * m + i];
				c[k] += d;
			}
		for (int i = 0; i < m; i++)
			norm += v[i] * v[i];
		norm = sqrt(norm);
		if (norm > tol) {
			for (int k = 0; k < na; k++)
				r[(size_t)k * n + na] = c[k];
			r[(size_t)na * n + na] = norm;
			for (int i = 0; i < m; i++)
				q[(size_t)na * m + i] = v[i] / norm;
			acc[na++] = j;
			continue;
		}
		/* column j ~ Q c = A_acc z with R z = c: back substitution, z in place of c */
		for (int k = na - 1; k >= 0; k--) {
			for (int l = k + 1; l < na; l++)
				c[k] -= r[(size_t)k * n + l] * c[l];
			c[k] /= r[(size_t)k * n + k];
		}
		nd++;
		describe(text, sizeof text, j, c, acc, na);
	}
	if (nd == want)
		append(msg, size, " (%s)", text);
out:
	free(q);
	free(r);
	free(v);
	free(c);
	free(acc);
}

int ps_lsq_solve(int m, int n, const double *a, const double *b, double rcond, double *x, double *sv,
		 struct ps_lsq_info *info, struct ps_error *err)
{
	double *w = NULL, *bb = NULL, *s = NULL, *scale = NULL;
	lapack_int rank = 0, rc;
	int ret = -1;

	memset(info, 0, sizeof *info);
	if (n < 1)
		return ps_error_set(err, PS_EUSAGE, "no unknowns: the design has no columns");
	if (m < n)
		return ps_error_set(err, PS_EUSAGE, "too few hits: %d observations for %d unknowns", m, n);
	if (check_finite(m, n, a, b, err))
		return -1;
	if (rcond <= 0)
		rcond = PS_LSQ_RCOND;
	w = malloc((size_t)m * n * sizeof *w);
	bb = malloc((size_t)m * sizeof *bb);
	s = malloc((size_t)n * sizeof *s);
	scale = malloc((size_t)n * sizeof *scale);
	if (!w || !bb || !s || !scale) {
		ps_error_set(err, ENOMEM, "least squares: out of memory for %d x %d", m, n);
		goto out;
	}
	/* unit-norm columns; an all-zero column stays zero (and makes the rank short) */
	for (int j = 0; j < n; j++) {
		double sq = 0;
		for (int i = 0; i < m; i++)
			sq += a[(size_t)i * n + j] * a[(size_t)i * n + j];
		scale[j] = sq > 0 ? 1 / sqrt(sq) : 1;
	}
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++)
			w[(size_t)i * n + j] = a[(size_t)i * n + j] * scale[j];
	memcpy(bb, b, (size_t)m * sizeof *bb);
	rc = LAPACKE_dgelsd(LAPACK_ROW_MAJOR, m, n, 1, w, n, bb, 1, s, rcond, &rank);
	if (rc != 0) {
		ps_error_set(err, rc < 0 ? PS_EUSAGE : EDOM, "least squares: dgelsd failed (info %d)%s", (int)rc,
			     rc > 0 ? ": the SVD did not converge" : "");
		goto out;
	}
	if (sv)
		memcpy(sv, s, (size_t)n * sizeof *sv);
	info->rank = (int)rank;
	info->cond = s[n - 1] > 0 ? s[0] / s[n - 1] : INFINITY;
	if (rank < n) {
		ps_error_set(err, PS_EUSAGE, "rank deficient: rank %d of %d columns", (int)rank, n);
		/* dgelsd overwrote w: scale a again for the explanation */
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++)
				w[(size_t)i * n + j] = a[(size_t)i * n + j] * scale[j];
		if (err)
			explain(m, n, w, 10 * sqrt((double)n) * rcond * s[0], n - (int)rank, err->msg, sizeof err->msg);
		goto out;
	}
	for (int j = 0; j < n; j++)
		x[j] = bb[j] * scale[j];
	for (int i = 0; i < m; i++) {
		double e = -b[i];
		for (int j = 0; j < n; j++)
			e += a[(size_t)i * n + j] * x[j];
		info->rss += e * e;
	}
	ret = 0;
out:
	free(w);
	free(bb);
	free(s);
	free(scale);
	return ret;
}
