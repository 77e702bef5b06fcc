/* tests/c/psnap_util.h - .psnap test files: records, writing, patching, walking blocks. */
#ifndef PSNAP_UTIL_H
#define PSNAP_UTIL_H

#include <stdint.h>
#include <sys/types.h>

#include "psnap.h"
#include "snapshot.h"

#define NVALS 3
#define NARGS 2
#define RECSIZE ps_snap_size(NVALS, NARGS)

extern const struct ps_psnap_info psnap_test_info; /* 3 events, regions "sum" and "main", 2 pairs */

/* A record with every field set from @i, each field different (region i % 2). */
void psnap_fill(struct ps_snap *s, uint64_t i);
/* 1 when @s is field by field psnap_fill(@i). */
int psnap_same(const struct ps_snap *s, uint64_t i);

void psnap_tmp_path(char *path); /* 64 bytes */
/* Write @n records in batches of varied size (1 .. beyond the 1 MiB buffer), a flush every
   @flush_every records (0: never); @late_names adds region "late" and pair end=12:00. */
int psnap_write_file(const char *path, uint64_t n, uint64_t flush_every, int late_names, struct ps_error *err);
off_t psnap_file_size(const char *path);
void psnap_patch(const char *path, off_t off, const void *p, size_t n);
/* Recompute the file header's CRC after a patch. */
void psnap_fix_header_crc(const char *path);

/* Recompute both CRCs of the block at @off after a patch of its payload or header. */
void psnap_fix_block_crcs(const char *path, off_t off);
/* Bytes of the block at @off, header included, or 0. */
size_t psnap_block_size(const char *path, off_t off);

/* Offset of the @nth (0-based) block of @kind ("RECS"), or -1. */
off_t psnap_block_at(const char *path, const char *kind, int nth);

/* Whole file in memory (malloc'd, *@n bytes), NULL on failure. */
unsigned char *psnap_slurp(const char *path, size_t *n);
int psnap_spit(const char *path, const void *p, size_t n);

#endif
