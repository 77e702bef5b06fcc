/* tests/c/psnap_util.c - .psnap test files (see psnap_util.h). */
#include "psnap_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static const char *const events[] = {"instructions", "cycles", "cache-misses"};
static const char *const regions[] = {"sum", "main"};
static const struct ps_psnap_meta meta[] = {
    {"cmdline", "perfsh stat -f sum ./examples/sum"},
    {"host", "box"},
};
const struct ps_psnap_info psnap_test_info = {
    .nvals = NVALS,
    .nargs = NARGS,
    .nevents = 3,
    .events = events,
    .nregions = 2,
    .regions = regions,
    .nmeta = 2,
    .meta = meta,
};

void psnap_fill(struct ps_snap *s, uint64_t i)
{
	memset(s, 0, RECSIZE);
	s->region = (uint32_t)(i % 2);
	s->tid = (uint32_t)(1000 + i % 5);
	s->seq = i;
	s->hit = i / 2;
	s->t_start = 1000000000ull + i * 10;
	s->t_end = 1000000000ull + i * 10 + 7;
	s->enabled_start = i * 11;
	s->running_start = i * 11 - (i & 1);
	s->enabled_end = i * 13;
	s->running_end = i * 13 - (i & 3);
	s->cpu_start = (int16_t)(i % 8);
	s->cpu_end = (int16_t)(i % 9) - 1;
	s->flags = (uint16_t)(i % 16);
	s->nvals = NVALS;
	s->nargs = NARGS;
	s->depth = (uint32_t)(i % 4);
	for (unsigned a = 0; a < NARGS; a++)
		ps_snap_args(s)[a] = i * 100 + a;
	for (unsigned v = 0; v < NVALS; v++) {
		ps_snap_start(s)[v] = (i << 8) + v;
		ps_snap_end(s)[v] = (i << 8) + v + 1000 * (v + 1);
	}
}

int psnap_same(const struct ps_snap *s, uint64_t i)
{
	uint64_t buf[64];

	psnap_fill((struct ps_snap *)buf, i);
	return memcmp(s, buf, RECSIZE) == 0;
}

void psnap_tmp_path(char *path)
{
	int fd;

	strcpy(path, "/tmp/perfsh-psnap-XXXXXX");
	fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
}

int psnap_write_file(const char *path, uint64_t n, uint64_t flush_every, int late_names, struct ps_error *err)
{
	static const size_t batches[] = {1, 7, 1000, 9000, 13};
	struct ps_psnap_writer *w = ps_psnap_create(path, &psnap_test_info, err);
	uint64_t *buf;
	uint64_t i = 0, flushed = 0;
	int rc = 0;

	if (!w)
		return -1;
	buf = malloc(9000 * RECSIZE);
	for (size_t b = 0; buf && i < n && rc == 0; b = (b + 1) % 5) {
		size_t k = batches[b];

		if (k > n - i)
			k = (size_t)(n - i);
		if (flush_every && k > flush_every - (i - flushed))
			k = (size_t)(flush_every - (i - flushed));
		for (size_t j = 0; j < k; j++)
			psnap_fill((struct ps_snap *)((char *)buf + j * RECSIZE), i + j);
		rc = ps_psnap_write(w, buf, k, err);
		i += k;
		if (rc == 0 && flush_every && i - flushed == flush_every) {
			rc = ps_psnap_flush(w, err);
			flushed = i;
		}
	}
	free(buf);
	if (late_names && rc == 0) {
		rc |= ps_psnap_add_region(w, "late", err) != 2;
		rc |= ps_psnap_add_meta(w, "end", "12:00", err);
	}
	if (ps_psnap_close(w, err))
		rc = -1;
	return rc;
}

off_t psnap_file_size(const char *path)
{
	int fd = open(path, O_RDONLY);
	off_t n = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);

	if (fd >= 0)
		close(fd);
	return n;
}

void psnap_patch(const char *path, off_t off, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (pwrite(fd, p, n, off) != (ssize_t)n)
			perror("pwrite");
		close(fd);
	}
}

unsigned char *psnap_slurp(const char *path, size_t *n)
{
	off_t size = psnap_file_size(path);
	unsigned char *p = size >= 0 ? malloc((size_t)size + 1) : NULL;
	int fd = open(path, O_RDONLY);

	if (!p || fd < 0 || pread(fd, p, (size_t)size, 0) != size) {
		free(p);
		p = NULL;
	}
	if (fd >= 0)
		close(fd);
	*n = p ? (size_t)size : 0;
	return p;
}

int psnap_spit(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int rc = fd >= 0 && write(fd, p, n) == (ssize_t)n ? 0 : -1;

	if (fd >= 0)
		close(fd);
	return rc;
}

void psnap_fix_header_crc(const char *path)
{
	size_t n;
	unsigned char *p = psnap_slurp(path, &n);

	if (p && n >= 32) {
		uint32_t crc = (uint32_t)crc32(0L, p, 28);

		psnap_patch(path, 28, &crc, 4);
	}
	free(p);
}

off_t psnap_block_at(const char *path, const char *kind, int nth)
{
	size_t n, off = 32;
	unsigned char *p = psnap_slurp(path, &n);
	off_t at = -1;

	while (p && off + 32 <= n) {
		uint32_t len;

		memcpy(&len, p + off + 16, 4);
		if (memcmp(p + off, kind, 4) == 0 && nth-- == 0) {
			at = (off_t)off;
			break;
		}
		off += 32 + len;
	}
	free(p);
	return at;
}

void psnap_fix_block_crcs(const char *path, off_t off)
{
	size_t n;
	unsigned char *p = psnap_slurp(path, &n);
	uint32_t len, crc;

	if (p && (size_t)off + 32 <= n) {
		memcpy(&len, p + off + 16, 4);
		if ((size_t)off + 32 + len <= n) {
			crc = (uint32_t)crc32(0L, p + off + 32, len);
			memcpy(p + off + 20, &crc, 4);
			crc = (uint32_t)crc32(0L, p + off, 28);
			memcpy(p + off + 28, &crc, 4);
			psnap_patch(path, off, p + off, 32);
		}
	}
	free(p);
}

size_t psnap_block_size(const char *path, off_t off)
{
	size_t n;
	unsigned char *p = psnap_slurp(path, &n);
	size_t size = 0;
	uint32_t len;

	if (p && (size_t)off + 32 <= n) {
		memcpy(&len, p + off + 16, 4);
		size = 32 + (size_t)len;
	}
	free(p);
	return size;
}
