/* core/records/psnap_read.c - reading .psnap files (format in psnap.h): open, map, check the header,
 * then psnap_scan.c walks the blocks; the accessors. */
#include "psnap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

#include "psnap_priv.h"

#define PROC_MAGIC 0x9fa0
#define SYSFS_MAGIC 0x62656572

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void ps_psnap_reader_close(struct ps_psnap_reader *r)
{
	if (!r)
		return;
	if (r->map)
		munmap((void *)r->map, r->size);
	free_strs(r->events, r->nevents);
	free_strs(r->regions, r->nregions);
	free_strs(r->meta, 2 * r->nmeta);
	free(r->ext);
	free(r->recs);
	free(r->path);
	free(r);
}

/* A file cut inside its header: what its bytes still say (unchecked: the checksum is cut off). */
static int cut_header(const struct ps_psnap_reader *r, struct ps_error *err)
{
	const unsigned char *m = r->map;
	char got[160] = "part of the magic number";

	if (r->size >= PS_FH_SNAPSIZE)
		snprintf(got, sizeof got, "version %u", ps_rd32(m + PS_FH_VERSION));
	if (r->size >= PS_FH_RECSIZE)
		snprintf(got + strlen(got), sizeof got - strlen(got), ", %u values and %u arguments per record",
			 ps_rd16(m + PS_FH_NVALS), ps_rd16(m + PS_FH_NARGS));
	else if (r->size >= 8 && r->size < PS_FH_SNAPSIZE)
		snprintf(got, sizeof got, "the magic number");
	return ps_error_set(err, PS_EUSAGE,
			    "%s: no readable records (cut at byte %zu, inside the %u-byte file header (truncated "
			    "file)); what survived: %s (unchecked: the header's checksum was cut off)",
			    r->path, r->size, PS_PSNAP_HEADER, got);
}

/* Check the file header; -1 with @err set. */
static int parse_header(struct ps_psnap_reader *r, struct ps_error *err)
{
	const unsigned char *m = r->map;
	const char *path = r->path;
	uint32_t version, recsize, snapsize;
	size_t have = r->size < 8 ? r->size : 8;

	if (memcmp(m, PS_PSNAP_MAGIC, have) != 0)
		return ps_error_set(err, PS_EUSAGE, "%s: not a perfsh snapshot file (bad magic)", path);
	if (r->size < PS_PSNAP_HEADER)
		return cut_header(r, err);
	version = ps_rd32(m + PS_FH_VERSION);
	if (version != PS_PSNAP_VERSION)
		return ps_error_set(err, PS_EUSAGE, "%s: snapshot version %u is not supported (this perfsh reads %u)",
				    path, version, PS_PSNAP_VERSION);
	if (!ps_crc_ok(ps_rd32(m + PS_FH_CRC), m, PS_FH_CRC))
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt header (checksum mismatch)", path);
	recsize = ps_rd32(m + PS_FH_RECSIZE);
	r->nvals = ps_rd16(m + PS_FH_NVALS);
	r->nargs = ps_rd16(m + PS_FH_NARGS);
	snapsize = ps_rd32(m + PS_FH_SNAPSIZE);
	if (snapsize != sizeof(struct ps_snap))
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt header (record header of %u bytes, expected %zu)",
				    path, snapsize, sizeof(struct ps_snap));
	if (r->nvals > PS_MAX_EVENTS || r->nargs > PS_MAX_ARGS)
		return ps_error_set(err, PS_EUSAGE,
				    "%s: corrupt header (%u values and %u arguments, at most %d and %d)", path,
				    r->nvals, r->nargs, PS_MAX_EVENTS, PS_MAX_ARGS);
	r->recsize = ps_snap_size(r->nvals, r->nargs);
	if (recsize != r->recsize)
		return ps_error_set(err, PS_EUSAGE,
				    "%s: corrupt header (record size %u, expected %zu for %u values and %u arguments)",
				    path, recsize, r->recsize, r->nvals, r->nargs);
	return 0;
}

/* A file that is not a plain file on a disk (pipe, directory, /proc or /sys entry). */
static int not_regular(int fd, const struct stat *st)
{
	struct statfs fs;
	char c;

	if (!S_ISREG(st->st_mode))
		return 1;
	if (fstatfs(fd, &fs) == 0 && (fs.f_type == PROC_MAGIC || fs.f_type == SYSFS_MAGIC))
		return 1;
	return st->st_size == 0 && read(fd, &c, 1) > 0; /* a size of 0 and yet contents */
}

/* Open and map @r->path; -1 with @err set. */
static int map_file(struct ps_psnap_reader *r, struct ps_error *err)
{
	const char *path = r->path;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ps_error_set(err, errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		ps_error_set(err, errno, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (not_regular(fd, &st)) {
		close(fd);
		return ps_error_set(err, PS_EUSAGE, "%s: not a regular file", path);
	}
	if (st.st_size == 0) {
		close(fd);
		return ps_error_set(err, PS_EUSAGE, "%s: not a perfsh snapshot file (empty)", path);
	}
	r->size = (size_t)st.st_size;
	r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		ps_error_set(err, errno, "%s: mmap: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int ps_psnap_open(const char *path, struct ps_psnap_reader **rp, struct ps_error *err)
{
	struct ps_psnap_reader *r;

	*rp = NULL;
	r = calloc(1, sizeof *r);
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return ps_error_set(err, ENOMEM, "%s: out of memory", path);
	}
	if (map_file(r, err) || parse_header(r, err))
		goto fail;
	if (ps_psnap_scan(r)) {
		ps_error_set(err, ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	ps_psnap_summarize(r);
	if (r->count == 0 && !r->complete) { /* nothing readable, and the file says it held more */
		char survived[320];

		ps__psnap_survived(r, survived, sizeof survived);
		ps_error_set(err, PS_EUSAGE, "%s: no readable records (%s)%s", path, r->what, survived);
		goto fail;
	}
	*rp = r;
	return 0;
fail:
	ps_psnap_reader_close(r);
	return -1;
}

unsigned ps_psnap_nvals(const struct ps_psnap_reader *r)
{
	return r->nvals;
}

unsigned ps_psnap_nargs(const struct ps_psnap_reader *r)
{
	return r->nargs;
}

size_t ps_psnap_recsize(const struct ps_psnap_reader *r)
{
	return r->recsize;
}

size_t ps_psnap_nevents(const struct ps_psnap_reader *r)
{
	return r->nevents;
}

const char *ps_psnap_event(const struct ps_psnap_reader *r, size_t i)
{
	return i < r->nevents ? r->events[i] : NULL;
}

size_t ps_psnap_nregions(const struct ps_psnap_reader *r)
{
	return r->nregions;
}

const char *ps_psnap_region(const struct ps_psnap_reader *r, size_t id)
{
	return id < r->nregions ? r->regions[id] : NULL;
}

size_t ps_psnap_nmeta(const struct ps_psnap_reader *r)
{
	return r->nmeta;
}

const char *ps_psnap_meta_key(const struct ps_psnap_reader *r, size_t i)
{
	return i < r->nmeta ? r->meta[2 * i] : NULL;
}

const char *ps_psnap_meta_value(const struct ps_psnap_reader *r, size_t i)
{
	return i < r->nmeta ? r->meta[2 * i + 1] : NULL;
}

const char *ps_psnap_meta_get(const struct ps_psnap_reader *r, const char *key)
{
	return ps__psnap_meta(r, key);
}

uint64_t ps_psnap_count(const struct ps_psnap_reader *r)
{
	return r->count;
}

int ps_psnap_complete(const struct ps_psnap_reader *r)
{
	return r->complete;
}

int ps_psnap_truncated(const struct ps_psnap_reader *r)
{
	return r->truncated;
}

uint64_t ps_psnap_ignored_bytes(const struct ps_psnap_reader *r)
{
	return r->ignored;
}

uint64_t ps_psnap_lost(const struct ps_psnap_reader *r)
{
	return r->lost;
}

uint64_t ps_psnap_skipped(const struct ps_psnap_reader *r)
{
	return r->skipped;
}

enum ps_psnap_events_from ps_psnap_events_from(const struct ps_psnap_reader *r)
{
	return r->events_from;
}

const char *ps_psnap_warning(const struct ps_psnap_reader *r)
{
	return r->warning[0] ? r->warning : NULL;
}

const struct ps_snap *ps_psnap_record(const struct ps_psnap_reader *r, uint64_t i)
{
	size_t lo = 0, hi = r->next;

	if (i >= r->count)
		return NULL;
	while (hi - lo > 1) { /* the last extent whose first is <= i */
		size_t mid = lo + (hi - lo) / 2;

		if (r->ext[mid].first <= i)
			lo = mid;
		else
			hi = mid;
	}
	return (const struct ps_snap *)(r->ext[lo].p + (i - r->ext[lo].first) * r->recsize);
}

void ps_psnap_release(struct ps_psnap_reader *r, uint64_t i)
{
	if (r->count)
		ps__psnap_release_before(r, (const unsigned char *)ps_psnap_record(r, i < r->count ? i : r->count - 1));
}

ssize_t ps_psnap_read(struct ps_psnap_reader *r, void *dst, size_t max, struct ps_error *err)
{
	unsigned char *d = dst;
	size_t n = 0;

	(void)err;
	if (max > SSIZE_MAX)
		max = SSIZE_MAX;
	while (n < max && r->pos < r->count) {
		memcpy(d + n * r->recsize, ps_psnap_record(r, r->pos), r->recsize);
		r->pos++;
		n++;
	}
	ps_psnap_release(r, r->pos);
	return (ssize_t)n;
}

void ps_psnap_rewind(struct ps_psnap_reader *r)
{
	r->pos = 0;
}
