/* core/psnap_read.c - reading .psnap files (format in psnap.h): every block checked, damage
 * skipped, a cut file read up to its last whole record. */
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

#define KNOWN_FLAGS (PS_SNAP_UNWOUND | PS_SNAP_EXITED | PS_SNAP_SAMPLED | PS_SNAP_NESTED)

/* A run of kept records, contiguous in the mapping. */
struct extent {
	const unsigned char *p;
	uint64_t first; /* index of its first record among the kept ones */
	uint64_t n;
};

struct ps_psnap_reader {
	char *path;
	const unsigned char *map;
	size_t size;
	size_t recsize;
	unsigned nvals, nargs;
	struct extent *ext;
	size_t next, cap_ext;
	uint64_t count;	  /* records kept */
	uint64_t pos;	  /* read cursor */
	uint64_t ignored; /* bytes not used */
	uint64_t lost;	  /* records known lost */
	int complete, truncated, ended;
	char **events;
	size_t nevents;
	char **regions; /* nregions entries, NULL for a lost name */
	size_t nregions;
	char **meta; /* key, value, key, value ... */
	size_t nmeta;
	/* damage seen while scanning */
	unsigned ndamaged;
	uint64_t damaged_at;
	const char *damage_why;
	uint64_t next_rec; /* file index of the record expected next */
	char cut[96];	   /* what the end of the file cut, "" if nothing */
	char what[224];	   /* what was lost, "" if nothing */
	char warning[320]; /* "PATH: WHAT; N records kept" */
};

/* Little-endian fields (the host is x86-64). */
static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

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
	free(r->path);
	free(r);
}

/* Check the file header; -1 with @err set. */
static int parse_header(struct ps_psnap_reader *r, struct ps_error *err)
{
	const unsigned char *m = r->map;
	const char *path = r->path;
	uint32_t version, recsize, snapsize;

	if (r->size < 8 || memcmp(m, PS_PSNAP_MAGIC, 8) != 0)
		return ps_error_set(err, PS_EUSAGE, "%s: not a perfsh snapshot file (bad magic)", path);
	if (r->size < PS_PSNAP_HEADER)
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt header (file ends at byte %zu)", path, r->size);
	version = rd32(m + PS_FH_VERSION);
	if (version != PS_PSNAP_VERSION)
		return ps_error_set(err, PS_EUSAGE, "%s: snapshot version %u is not supported (this perfsh reads %u)",
				    path, version, PS_PSNAP_VERSION);
	if (rd32(m + PS_FH_CRC) != (uint32_t)crc32(0L, m, PS_FH_CRC))
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt header (checksum mismatch)", path);
	recsize = rd32(m + PS_FH_RECSIZE);
	r->nvals = rd16(m + PS_FH_NVALS);
	r->nargs = rd16(m + PS_FH_NARGS);
	snapsize = rd32(m + PS_FH_SNAPSIZE);
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

/* Bounded parsing of a names payload. */
struct cursor {
	const unsigned char *p;
	size_t left;
};

static char *get_str(struct cursor *c)
{
	uint32_t n;
	char *s;

	if (c->left < 4)
		return NULL;
	n = rd32(c->p);
	if (n > c->left - 4 || n > PS_PSNAP_MAX_STR)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	memcpy(s, c->p + 4, n);
	s[n] = '\0';
	c->p += 4 + (size_t)n;
	c->left -= 4 + (size_t)n;
	return s;
}

/* Append @n strings of the payload to the array *@v of *@len entries, all or none: -1 when
   they run out or do not fill it (padding aside). */
static int get_strs(const unsigned char *p, size_t len, char ***v, size_t *vlen, size_t n)
{
	struct cursor c = {p, len};
	size_t had = *vlen;
	char **nv;

	if (n > len / 4) /* every entry takes at least 4 bytes */
		return -1;
	nv = realloc(*v, (*vlen + n + 1) * sizeof *nv);
	if (!nv)
		return -1;
	*v = nv;
	for (size_t i = 0; i < n; i++) {
		nv[*vlen] = get_str(&c);
		if (!nv[*vlen])
			goto undo;
		++*vlen;
	}
	if (c.left < 8)
		return 0;
undo:
	while (*vlen > had)
		free(nv[--*vlen]);
	return -1;
}

static void damaged(struct ps_psnap_reader *r, uint64_t off, const char *why, uint64_t bytes)
{
	if (r->ndamaged++ == 0) {
		r->damaged_at = off;
		r->damage_why = why;
	}
	r->ignored += bytes;
}

static int record_ok(const struct ps_psnap_reader *r, const struct ps_snap *s)
{
	return s->nvals == r->nvals && s->nargs == r->nargs && s->region < r->nregions && !(s->flags & ~KNOWN_FLAGS) &&
	       s->cpu_start >= -1 && s->cpu_end >= -1;
}

static int add_extent(struct ps_psnap_reader *r, const unsigned char *p, uint64_t n)
{
	if (r->next && r->ext[r->next - 1].p + r->ext[r->next - 1].n * r->recsize == p) {
		r->ext[r->next - 1].n += n;
	} else {
		if (r->next == r->cap_ext) {
			size_t cap = r->cap_ext ? 2 * r->cap_ext : 16;
			struct extent *e = realloc(r->ext, cap * sizeof *e);

			if (!e)
				return -1;
			r->ext = e;
			r->cap_ext = cap;
		}
		r->ext[r->next++] = (struct extent){p, r->count, n};
	}
	r->count += n;
	return 0;
}

/* Keep the records of @p that pass the checks; the others count as lost. */
static int take_records(struct ps_psnap_reader *r, const unsigned char *p, uint64_t n)
{
	uint64_t run = 0;

	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *s = p + i * r->recsize;

		if (record_ok(r, (const struct ps_snap *)s)) {
			run++;
			continue;
		}
		if (run && add_extent(r, s - run * r->recsize, run))
			return -1;
		run = 0;
		r->lost++;
	}
	return run ? add_extent(r, p + (n - run) * r->recsize, run) : 0;
}

/* A RECS block whose first record is file index @first: records missing before it count as
   lost; a block that goes back is damage. 1 when it is to be skipped. */
static int recs_order(struct ps_psnap_reader *r, uint64_t off, uint64_t first, uint64_t len)
{
	if (first < r->next_rec) {
		damaged(r, off, "records out of order", len);
		return 1;
	}
	r->lost += first - r->next_rec;
	return 0;
}

/* One whole block whose checksums passed. -1 on no memory. */
static int take_block(struct ps_psnap_reader *r, uint64_t off, const unsigned char *h)
{
	const unsigned char *p = h + PS_PSNAP_BLOCK_HEADER;
	uint32_t count = rd32(h + PS_BH_COUNT), len = rd32(h + PS_BH_LEN);
	uint64_t first = rd64(h + PS_BH_FIRST);

	if (memcmp(h, PS_PSNAP_K_RECS, 4) == 0) {
		if ((uint64_t)count * r->recsize != len) {
			damaged(r, off, "record count disagrees with the block size", len);
			return 0;
		}
		if (recs_order(r, off, first, len))
			return 0;
		r->next_rec = first + count;
		return take_records(r, p, count);
	}
	if (memcmp(h, PS_PSNAP_K_EVNT, 4) == 0) {
		if (r->nevents || count > r->nvals || get_strs(p, len, &r->events, &r->nevents, count))
			damaged(r, off, "bad event names", len);
		return 0;
	}
	if (memcmp(h, PS_PSNAP_K_REGN, 4) == 0) {
		size_t had = r->nregions;

		if (first < had || first - had > INT32_MAX || count > INT32_MAX) {
			damaged(r, off, "regions out of order", len);
			return 0;
		}
		/* names of a lost block stay NULL */
		for (; r->nregions < first; r->nregions++) {
			char **nv = realloc(r->regions, (r->nregions + 1) * sizeof *nv);

			if (!nv)
				return -1;
			r->regions = nv;
			nv[r->nregions] = NULL;
		}
		if (get_strs(p, len, &r->regions, &r->nregions, count))
			damaged(r, off, "bad region names", len);
		return 0;
	}
	if (memcmp(h, PS_PSNAP_K_META, 4) == 0) {
		size_t n = 2 * r->nmeta;

		if (count > UINT32_MAX / 2 || get_strs(p, len, &r->meta, &n, 2 * (size_t)count))
			damaged(r, off, "bad metadata", len);
		r->nmeta = n / 2;
		return 0;
	}
	/* END */
	r->ended = 1;
	if (first > r->next_rec)
		r->lost += first - r->next_rec;
	return 0;
}

/* A valid block header at @off: known kind, its CRC, sane length. */
static int header_ok(const struct ps_psnap_reader *r, uint64_t off)
{
	const unsigned char *h = r->map + off;
	static const char kinds[] = PS_PSNAP_K_EVNT PS_PSNAP_K_REGN PS_PSNAP_K_META PS_PSNAP_K_RECS PS_PSNAP_K_END;
	int known = 0;

	for (size_t k = 0; k + 4 < sizeof kinds; k += 4)
		known |= memcmp(h, kinds + k, 4) == 0;
	return known && rd32(h + PS_BH_HCRC) == (uint32_t)crc32(0L, h, PS_BH_HCRC) && rd32(h + PS_BH_LEN) % 8 == 0 &&
	       rd32(h + PS_BH_LEN) <= PS_PSNAP_MAX_BLOCK && rd32(h + PS_BH_ZERO) == 0;
}

/* The end of the file cut the block at @off: keep its whole records. */
static int cut_block(struct ps_psnap_reader *r, uint64_t off)
{
	const unsigned char *h = r->map + off;
	uint64_t avail = r->size - off - PS_PSNAP_BLOCK_HEADER, whole;
	uint32_t count = rd32(h + PS_BH_COUNT);

	r->truncated = 1;
	if (memcmp(h, PS_PSNAP_K_RECS, 4) != 0 || (uint64_t)count * r->recsize != rd32(h + PS_BH_LEN) ||
	    recs_order(r, off, rd64(h + PS_BH_FIRST), 0)) {
		snprintf(r->cut, sizeof r->cut, "cut inside a block at byte %llu (truncated file)",
			 (unsigned long long)off);
		r->ignored += r->size - off;
		return 0;
	}
	whole = avail / r->recsize;
	snprintf(r->cut, sizeof r->cut, "cut after record %llu of a block of %u (truncated file)",
		 (unsigned long long)whole, count);
	r->ignored += avail - whole * r->recsize + PS_PSNAP_BLOCK_HEADER * !whole;
	r->lost += count - whole;
	r->next_rec = rd64(h + PS_BH_FIRST) + count;
	return take_records(r, h + PS_PSNAP_BLOCK_HEADER, whole);
}

/* Walk the blocks; -1 on no memory. */
static int scan(struct ps_psnap_reader *r)
{
	uint64_t off = PS_PSNAP_HEADER;

	while (off < r->size && !r->ended) {
		uint64_t left = r->size - off, len, skip;

		if (left < PS_PSNAP_BLOCK_HEADER) {
			r->truncated = 1;
			snprintf(r->cut, sizeof r->cut, "cut inside a block header (truncated file)");
			r->ignored += left;
			break;
		}
		if (!header_ok(r, off)) {
			/* look for the next valid block header */
			for (skip = off + 8; skip + PS_PSNAP_BLOCK_HEADER <= r->size && !header_ok(r, skip); skip += 8)
				;
			if (skip + PS_PSNAP_BLOCK_HEADER > r->size)
				skip = r->size;
			damaged(r, off, "bad block header", skip - off);
			off = skip;
			continue;
		}
		len = rd32(r->map + off + PS_BH_LEN);
		if (len > left - PS_PSNAP_BLOCK_HEADER) {
			if (cut_block(r, off))
				return -1;
			break;
		}
		if (rd32(r->map + off + PS_BH_PCRC) !=
		    (uint32_t)crc32(0L, r->map + off + PS_PSNAP_BLOCK_HEADER, (uInt)len)) {
			if (memcmp(r->map + off, PS_PSNAP_K_RECS, 4) == 0 &&
			    !recs_order(r, off, rd64(r->map + off + PS_BH_FIRST), 0)) {
				r->lost += rd32(r->map + off + PS_BH_COUNT);
				r->next_rec = rd64(r->map + off + PS_BH_FIRST) + rd32(r->map + off + PS_BH_COUNT);
			}
			damaged(r, off, "checksum mismatch", PS_PSNAP_BLOCK_HEADER + len);
		} else if (take_block(r, off, r->map + off)) {
			return -1;
		}
		off += PS_PSNAP_BLOCK_HEADER + len;
	}
	if (r->ended && off < r->size) {
		r->ignored += r->size - off;
		snprintf(r->cut, sizeof r->cut, "%llu bytes after the END block", (unsigned long long)(r->size - off));
	}
	return 0;
}

/* The one-line summary of what was lost; "" for an intact file. */
static void summarize(struct ps_psnap_reader *r)
{
	char *w = r->what, *end = r->what + sizeof r->what;
	const char *sep = "";

	if (r->ndamaged) {
		w += snprintf(w, (size_t)(end - w), "%u damaged block%s skipped (at byte %llu: %s)", r->ndamaged,
			      r->ndamaged > 1 ? "s" : "", (unsigned long long)r->damaged_at, r->damage_why);
		sep = ", ";
	}
	if (w < end && (r->cut[0] || !r->ended)) {
		w += snprintf(w, (size_t)(end - w), "%s%s", sep,
			      r->cut[0] ? r->cut : "no END block (the writer did not close it)");
		sep = ", ";
	}
	if (w < end && r->lost)
		snprintf(w, (size_t)(end - w), "%s%llu record%s lost", sep, (unsigned long long)r->lost,
			 r->lost == 1 ? "" : "s");
	r->complete = !r->what[0];
	if (!r->complete)
		snprintf(r->warning, sizeof r->warning, "%s: %s; %llu record%s kept", r->path, r->what,
			 (unsigned long long)r->count, r->count == 1 ? "" : "s");
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
	if (scan(r)) {
		ps_error_set(err, ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	summarize(r);
	if (r->count == 0 && (r->lost || r->ndamaged)) {
		ps_error_set(err, PS_EUSAGE, "%s: no readable records (%s)", path, r->what);
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
	for (size_t i = r->nmeta; i-- > 0;)
		if (strcmp(r->meta[2 * i], key) == 0)
			return r->meta[2 * i + 1];
	return NULL;
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
	return (ssize_t)n;
}

void ps_psnap_rewind(struct ps_psnap_reader *r)
{
	r->pos = 0;
}
