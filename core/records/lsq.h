/* core/records/lsq.h - linear least squares by SVD (LAPACKE dgelsd), for cost attribution.
 *
 * Columns are scaled to unit 2-norm before the SVD (and x scaled back), so that the rank
 * test and the condition number do not depend on the units of each column: counts in the
 * millions beside a constant column of ones are not "ill-conditioned" for that reason alone.
 * The singular values and cond reported are those of the column-scaled matrix.
 */
#ifndef PS_LSQ_H
#define PS_LSQ_H

#include "error.h"

/* Default relative threshold below which a (scaled) singular value counts as zero. */
#define PS_LSQ_RCOND 1e-10

/**
 * struct ps_lsq_info - what the solve found besides x.
 * @rss:  the residual sum of squares ||A x - b||^2.
 * @cond: s_max / s_min of the column-scaled A.
 * @rank: the effective rank (n on success).
 */
struct ps_lsq_info {
	double rss;
	double cond;
	int rank;
};

/**
 * ps_lsq_solve() - minimise ||A x - b|| for a full-rank A with m >= n.
 * @m:     rows (observations).
 * @n:     columns (unknowns).
 * @a:     A, m x n, row-major; not modified.
 * @b:     b, m values; not modified.
 * @rcond: singular values below rcond * s_max count as zero; <= 0 means PS_LSQ_RCOND.
 * @x:     out: n coefficients.
 * @sv:    out: the n singular values, largest first (may be NULL).
 * @info:  out: rss, cond, rank.
 * @err:   filled on failure with a one-line message (code PS_EUSAGE, or ENOMEM):
 *         "too few hits: M observations for N unknowns", "NaN in row R, column C",
 *         "rank deficient: rank R of N columns (column 3 is a linear combination of
 *         column 2)"; columns and rows are numbered from 1.
 *
 * When the rank is short, @sv and @info are still filled (x is not), so a caller can show them.
 * Return: 0, or -1.
 */
int ps_lsq_solve(int m, int n, const double *a, const double *b, double rcond, double *x, double *sv,
		 struct ps_lsq_info *info, struct ps_error *err);

#endif
