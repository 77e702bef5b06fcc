/* core/psnap.c - writing and reading .psnap files (layout in psnap.h). */
#include "psnap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "psnap.c writes the host's integers as little-endian"
#endif

/* header field offsets */
enum {
	OFF_VERSION = 8,
	OFF_HSIZE = 12,
	OFF_RECSIZE = 16,
	OFF_NVALS = 20,
	OFF_NARGS = 22,
	OFF_TRAILER = 24,
	OFF_COUNT = 32,
	OFF_NEVENTS = 40,
	OFF_NREGIONS = 44,
	OFF_NMETA = 48,
	OFF_SNAPSIZE = 52,
	FIXED_HEADER = 56,
	FIXED_TRAILER = 16,
};

/* A growable byte string, for the header and the trailer's entries. */
struct bytes {
	unsigned char *p;
	size_t len, cap;
};

static int bytes_put(struct bytes *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		unsigned char *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static int bytes_u32(struct bytes *b, uint32_t v)
{
	return bytes_put(b, &v, sizeof v);
}

static int bytes_str(struct bytes *b, const char *s)
{
	size_t n = strlen(s);

	return bytes_u32(b, (uint32_t)n) || bytes_put(b, s, n);
}

/* Writer ---------------------------------------------------------------------- */

struct ps_psnap_writer {
	int fd;
	char *path;
	size_t recsize;
	unsigned char *buf;		  /* PS_PSNAP_BUFSIZE bytes */
	size_t len;			  /* bytes in buf */
	uint64_t off;			  /* bytes already written to the file */
	uint64_t count;			  /* records given to ps_psnap_write */
	uint32_t nregions;		  /* region ids handed out so far */
	struct bytes tr_regions, tr_meta; /* trailer entries */
	uint32_t n_tr_regions, n_tr_meta;
	int failed; /* sticky: @error says why */
	struct ps_error error;
};

static int check_str(const char *s, const char *what, struct ps_error *err)
{
	if (!s)
		return ps_error_set(err, PS_EUSAGE, "psnap: %s is NULL", what);
	if (strlen(s) > PS_PSNAP_MAX_STR)
		return ps_error_set(err, PS_EUSAGE, "psnap: %s is longer than %u bytes", what, PS_PSNAP_MAX_STR);
	return 0;
}

static int check_info(const struct ps_psnap_info *in, struct ps_error *err)
{
	if (in->nvals > PS_MAX_EVENTS)
		return ps_error_set(err, PS_EUSAGE, "psnap: %u values, at most %d", in->nvals, PS_MAX_EVENTS);
	if (in->nargs > PS_MAX_ARGS)
		return ps_error_set(err, PS_EUSAGE, "psnap: %u arguments, at most %d", in->nargs, PS_MAX_ARGS);
	if (in->nevents > UINT16_MAX || in->nregions > INT32_MAX / 2 || in->nmeta > UINT16_MAX)
		return ps_error_set(err, PS_EUSAGE, "psnap: too many names");
	for (size_t i = 0; i < in->nevents; i++)
		if (check_str(in->events[i], "an event name", err))
			return -1;
	for (size_t i = 0; i < in->nregions; i++)
		if (check_str(in->regions[i], "a region name", err))
			return -1;
	for (size_t i = 0; i < in->nmeta; i++)
		if (check_str(in->meta[i].key, "a metadata key", err) ||
		    check_str(in->meta[i].value, "a metadata value", err))
			return -1;
	return 0;
}

/* The header as it is first written (trailer offset and count 0). */
static int build_header(struct bytes *h, const struct ps_psnap_info *in)
{
	static const unsigned char zero[8];
	uint32_t u32;
	uint16_t u16;
	int bad = 0;

	bad |= bytes_put(h, PS_PSNAP_MAGIC, 8);
	bad |= bytes_u32(h, PS_PSNAP_VERSION);
	bad |= bytes_u32(h, 0); /* header size, set below */
	bad |= bytes_u32(h, (uint32_t)ps_snap_size(in->nvals, in->nargs));
	u16 = (uint16_t)in->nvals;
	bad |= bytes_put(h, &u16, 2);
	u16 = (uint16_t)in->nargs;
	bad |= bytes_put(h, &u16, 2);
	bad |= bytes_put(h, zero, 8); /* trailer offset */
	bad |= bytes_put(h, zero, 8); /* record count */
	bad |= bytes_u32(h, (uint32_t)in->nevents);
	bad |= bytes_u32(h, (uint32_t)in->nregions);
	bad |= bytes_u32(h, (uint32_t)in->nmeta);
	bad |= bytes_u32(h, (uint32_t)sizeof(struct ps_snap));
	for (size_t i = 0; i < in->nevents; i++)
		bad |= bytes_str(h, in->events[i]);
	for (size_t i = 0; i < in->nregions; i++)
		bad |= bytes_str(h, in->regions[i]);
	for (size_t i = 0; i < in->nmeta; i++)
		bad |= bytes_str(h, in->meta[i].key) | bytes_str(h, in->meta[i].value);
	if (!bad && h->len % 8)
		bad |= bytes_put(h, zero, 8 - h->len % 8);
	if (bad || h->len > UINT32_MAX)
		return -1;
	u32 = (uint32_t)h->len;
	memcpy(h->p + OFF_HSIZE, &u32, 4);
	return 0;
}

/* Record a failure in the writer (sticky) and in @err. */
static int fail(struct ps_psnap_writer *w, struct ps_error *err, int code, const char *what)
{
	w->failed = 1;
	ps_error_set(&w->error, code, "%s: %s: %s", w->path, what, strerror(code));
	if (err)
		*err = w->error;
	return -1;
}

static int write_all(struct ps_psnap_writer *w, const void *p, size_t n, struct ps_error *err)
{
	const unsigned char *c = p;

	while (n) {
		ssize_t k = write(w->fd, c, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return fail(w, err, errno, "write");
		}
		if (k == 0)
			return fail(w, err, EIO, "write");
		c += k;
		n -= (size_t)k;
		w->off += (uint64_t)k;
	}
	return 0;
}

static int flush_buf(struct ps_psnap_writer *w, struct ps_error *err)
{
	size_t n = w->len;

	w->len = 0;
	return write_all(w, w->buf, n, err);
}

/* Append bytes through the buffer; large pieces bypass it. */
static int put(struct ps_psnap_writer *w, const void *p, size_t n, struct ps_error *err)
{
	if (n == 0)
		return 0;
	if (w->len + n > PS_PSNAP_BUFSIZE && flush_buf(w, err))
		return -1;
	if (n >= PS_PSNAP_BUFSIZE)
		return write_all(w, p, n, err);
	memcpy(w->buf + w->len, p, n);
	w->len += n;
	return 0;
}

static void writer_free(struct ps_psnap_writer *w)
{
	free(w->tr_regions.p);
	free(w->tr_meta.p);
	free(w->buf);
	free(w->path);
	free(w);
}

struct ps_psnap_writer *ps_psnap_create(const char *path, const struct ps_psnap_info *info, struct ps_error *err)
{
	struct ps_psnap_writer *w;
	struct bytes h = {0};

	if (check_info(info, err))
		return NULL;
	w = calloc(1, sizeof *w);
	if (!w || !(w->path = strdup(path)) || !(w->buf = malloc(PS_PSNAP_BUFSIZE)) || build_header(&h, info)) {
		ps_error_set(err, ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	w->recsize = ps_snap_size(info->nvals, info->nargs);
	w->nregions = (uint32_t)info->nregions;
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (w->fd < 0) {
		ps_error_set(err, errno, "%s: open: %s", path, strerror(errno));
		goto fail;
	}
	if (lseek(w->fd, 0, SEEK_CUR) < 0) {
		ps_error_set(err, errno, "%s: not seekable (a snapshot file is patched at close): %s", path,
			     strerror(errno));
		close(w->fd);
		goto fail;
	}
	if (put(w, h.p, h.len, err)) {
		close(w->fd);
		goto fail;
	}
	free(h.p);
	return w;
fail:
	free(h.p);
	if (w)
		writer_free(w);
	return NULL;
}

static int sticky(struct ps_psnap_writer *w, struct ps_error *err)
{
	if (err)
		*err = w->error;
	return -1;
}

int ps_psnap_add_region(struct ps_psnap_writer *w, const char *name, struct ps_error *err)
{
	if (check_str(name, "a region name", err))
		return -1;
	if (w->nregions >= INT32_MAX)
		return ps_error_set(err, PS_EUSAGE, "%s: too many regions", w->path);
	if (bytes_str(&w->tr_regions, name))
		return ps_error_set(err, ENOMEM, "%s: out of memory", w->path);
	w->n_tr_regions++;
	return (int)w->nregions++;
}

int ps_psnap_add_meta(struct ps_psnap_writer *w, const char *key, const char *value, struct ps_error *err)
{
	if (check_str(key, "a metadata key", err) || check_str(value, "a metadata value", err))
		return -1;
	if (bytes_str(&w->tr_meta, key) || bytes_str(&w->tr_meta, value))
		return ps_error_set(err, ENOMEM, "%s: out of memory", w->path);
	w->n_tr_meta++;
	return 0;
}

int ps_psnap_write(struct ps_psnap_writer *w, const void *recs, size_t n, struct ps_error *err)
{
	if (w->failed)
		return sticky(w, err);
	if (n > SIZE_MAX / w->recsize)
		return ps_error_set(err, PS_EUSAGE, "%s: %zu records is too many", w->path, n);
	if (put(w, recs, n * w->recsize, err))
		return -1;
	w->count += n;
	return 0;
}

int ps_psnap_flush(struct ps_psnap_writer *w, struct ps_error *err)
{
	if (w->failed)
		return sticky(w, err);
	return flush_buf(w, err);
}

size_t ps_psnap_writer_recsize(const struct ps_psnap_writer *w)
{
	return w->recsize;
}

uint64_t ps_psnap_writer_count(const struct ps_psnap_writer *w)
{
	return w->count;
}

static int pwrite_all(struct ps_psnap_writer *w, const void *p, size_t n, off_t at, struct ps_error *err)
{
	const unsigned char *c = p;

	while (n) {
		ssize_t k = pwrite(w->fd, c, n, at);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return fail(w, err, errno, "pwrite");
		}
		if (k == 0)
			return fail(w, err, EIO, "pwrite");
		c += k;
		n -= (size_t)k;
		at += k;
	}
	return 0;
}

/* Trailer, then the header's trailer offset and count. */
static int finish(struct ps_psnap_writer *w, struct ps_error *err)
{
	uint64_t trailer, count = w->count;
	uint32_t nr = w->n_tr_regions, nm = w->n_tr_meta;

	trailer = w->off + w->len;
	if (put(w, PS_PSNAP_TRAILER_MAGIC, 8, err) || put(w, &nr, 4, err) || put(w, &nm, 4, err) ||
	    put(w, w->tr_regions.p, w->tr_regions.len, err) || put(w, w->tr_meta.p, w->tr_meta.len, err) ||
	    flush_buf(w, err))
		return -1;
	if (pwrite_all(w, &trailer, 8, OFF_TRAILER, err) || pwrite_all(w, &count, 8, OFF_COUNT, err))
		return -1;
	return 0;
}

int ps_psnap_close(struct ps_psnap_writer *w, struct ps_error *err)
{
	int rc;

	if (!w)
		return 0;
	rc = w->failed ? sticky(w, err) : finish(w, err);
	if (close(w->fd) < 0 && rc == 0)
		rc = fail(w, err, errno, "close");
	writer_free(w);
	return rc;
}

/* Reader ---------------------------------------------------------------------- */

struct ps_psnap_reader {
	char *path;
	const unsigned char *map;
	size_t size;
	size_t recsize;
	unsigned nvals, nargs;
	uint64_t first;	  /* offset of record 0 */
	uint64_t count;	  /* whole records */
	uint64_t ignored; /* bytes after them not used */
	uint64_t pos;	  /* read cursor */
	int complete, truncated;
	char **events;
	size_t nevents;
	char **regions; /* nregions entries */
	size_t nregions;
	char **meta; /* key, value, key, value ... */
	size_t nmeta_strs;
	size_t nmeta; /* whole pairs */
};

/* Bounded parsing of the header and the trailer. */
struct cursor {
	const unsigned char *p;
	size_t left;
};

static int get_u32(struct cursor *c, uint32_t *v)
{
	if (c->left < 4)
		return -1;
	memcpy(v, c->p, 4);
	c->p += 4;
	c->left -= 4;
	return 0;
}

static char *get_str(struct cursor *c)
{
	uint32_t n;
	char *s;

	if (get_u32(c, &n) || n > c->left)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	memcpy(s, c->p, n);
	s[n] = '\0';
	c->p += n;
	c->left -= n;
	return s;
}

/* Append @n strings to the array *@v of *@len entries; -1 when they run out. */
static int get_strs(struct cursor *c, char ***v, size_t *len, size_t n)
{
	char **nv;

	if (n > c->left / 4) /* every entry takes at least 4 bytes */
		return -1;
	nv = realloc(*v, (*len + n + 1) * sizeof *nv);
	if (!nv)
		return -1;
	*v = nv;
	for (size_t i = 0; i < n; i++) {
		nv[*len] = get_str(c);
		if (!nv[*len])
			return -1;
		++*len;
	}
	return 0;
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
	free_strs(r->meta, r->nmeta_strs);
	free(r->path);
	free(r);
}

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

/* Fill @r from the mapped header; -1 with @err set. */
static int parse_header(struct ps_psnap_reader *r, struct ps_error *err)
{
	const unsigned char *m = r->map;
	const char *path = r->path;
	uint32_t version, hsize, recsize, nev, nreg, nmeta, snapsize;
	struct cursor c;

	if (r->size == 0)
		return ps_error_set(err, PS_EUSAGE, "%s: not a perfsh snapshot file (empty)", path);
	if (r->size < 8 || memcmp(m, PS_PSNAP_MAGIC, 8) != 0)
		return ps_error_set(err, PS_EUSAGE, "%s: not a perfsh snapshot file (bad magic)", path);
	if (r->size < FIXED_HEADER)
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt header (file ends at byte %zu)", path, r->size);
	version = rd32(m + OFF_VERSION);
	if (version != PS_PSNAP_VERSION)
		return ps_error_set(err, PS_EUSAGE, "%s: snapshot version %u is not supported (this perfsh reads %u)",
				    path, version, PS_PSNAP_VERSION);
	hsize = rd32(m + OFF_HSIZE);
	recsize = rd32(m + OFF_RECSIZE);
	r->nvals = rd16(m + OFF_NVALS);
	r->nargs = rd16(m + OFF_NARGS);
	nev = rd32(m + OFF_NEVENTS);
	nreg = rd32(m + OFF_NREGIONS);
	nmeta = rd32(m + OFF_NMETA);
	snapsize = rd32(m + OFF_SNAPSIZE);
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
	if (hsize < FIXED_HEADER || hsize % 8 || hsize > r->size)
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt header (header size %u, file size %zu)", path, hsize,
				    r->size);
	c.p = m + FIXED_HEADER;
	c.left = hsize - FIXED_HEADER;
	if (get_strs(&c, &r->events, &r->nevents, nev) || get_strs(&c, &r->regions, &r->nregions, nreg) ||
	    get_strs(&c, &r->meta, &r->nmeta_strs, 2 * (size_t)nmeta))
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt header (names run past its end)", path);
	r->nmeta = nmeta;
	r->first = hsize;
	return 0;
}

/* Read the trailer at @off (whole, inside the file); -1 with @err set. */
static int parse_trailer(struct ps_psnap_reader *r, uint64_t off, struct ps_error *err)
{
	struct cursor c = {r->map + off + 8, r->size - off - 8};
	uint32_t nreg, nmeta;

	if (memcmp(r->map + off, PS_PSNAP_TRAILER_MAGIC, 8) != 0)
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt trailer (bad magic at byte %llu)", r->path,
				    (unsigned long long)off);
	if (get_u32(&c, &nreg) || get_u32(&c, &nmeta) || get_strs(&c, &r->regions, &r->nregions, nreg) ||
	    get_strs(&c, &r->meta, &r->nmeta_strs, 2 * (size_t)nmeta)) {
		r->nmeta = r->nmeta_strs / 2;
		return 1; /* ran past the end of the file: truncated */
	}
	r->nmeta = r->nmeta_strs / 2;
	if (c.left)
		return ps_error_set(err, PS_EUSAGE, "%s: corrupt trailer (%zu bytes after its end)", r->path, c.left);
	return 0;
}

/* Where the records end, from the header's trailer offset and count. */
static int locate_records(struct ps_psnap_reader *r, struct ps_error *err)
{
	uint64_t trailer = rd64(r->map + OFF_TRAILER);
	uint64_t count = rd64(r->map + OFF_COUNT);
	uint64_t end = r->size;
	int rc;

	if (trailer) {
		if (trailer < r->first || (trailer - r->first) % r->recsize ||
		    (trailer - r->first) / r->recsize != count)
			return ps_error_set(err, PS_EUSAGE,
					    "%s: corrupt header (trailer at byte %llu does not follow %llu records)",
					    r->path, (unsigned long long)trailer, (unsigned long long)count);
		if (trailer + FIXED_TRAILER <= r->size) {
			rc = parse_trailer(r, trailer, err);
			if (rc < 0)
				return -1;
			r->complete = rc == 0;
		}
		r->truncated = !r->complete;
		if (trailer < end)
			end = trailer;
	}
	r->count = (end - r->first) / r->recsize;
	r->ignored = r->size - (r->first + r->count * r->recsize);
	if (r->ignored && !r->complete)
		r->truncated = 1;
	if (r->complete)
		r->ignored = 0;
	return 0;
}

int ps_psnap_open(const char *path, struct ps_psnap_reader **rp, struct ps_error *err)
{
	struct ps_psnap_reader *r;
	struct stat st;
	int fd;

	*rp = NULL;
	r = calloc(1, sizeof *r);
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return ps_error_set(err, ENOMEM, "%s: out of memory", path);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ps_error_set(err, errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		ps_error_set(err, errno, "%s: %s", path, strerror(errno));
		close(fd);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ps_error_set(err, PS_EUSAGE, "%s: not a regular file", path);
		close(fd);
		goto fail;
	}
	r->size = (size_t)st.st_size;
	if (r->size) {
		void *m = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED) {
			ps_error_set(err, errno, "%s: mmap: %s", path, strerror(errno));
			close(fd);
			goto fail;
		}
		r->map = m;
	}
	close(fd);
	if (parse_header(r, err) || locate_records(r, err))
		goto fail;
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

static int record_ok(const struct ps_psnap_reader *r, const struct ps_snap *s)
{
	return s->nvals == r->nvals && s->nargs == r->nargs;
}

const struct ps_snap *ps_psnap_record(const struct ps_psnap_reader *r, uint64_t i)
{
	const struct ps_snap *s;

	if (i >= r->count)
		return NULL;
	s = (const struct ps_snap *)(r->map + r->first + i * r->recsize);
	return record_ok(r, s) ? s : NULL;
}

ssize_t ps_psnap_read(struct ps_psnap_reader *r, void *dst, size_t max, struct ps_error *err)
{
	uint64_t n = r->count - r->pos;
	const unsigned char *src = r->map + r->first + r->pos * r->recsize;

	if (n > max)
		n = max;
	if (n > SSIZE_MAX)
		n = SSIZE_MAX;
	for (uint64_t i = 0; i < n; i++) {
		const struct ps_snap *s = (const struct ps_snap *)(src + i * r->recsize);

		if (!record_ok(r, s))
			return ps_error_set(
			    err, PS_EUSAGE,
			    "%s: corrupt record %llu (%u values and %u arguments, header says %u and %u)", r->path,
			    (unsigned long long)(r->pos + i), s->nvals, s->nargs, r->nvals, r->nargs);
	}
	if (n)
		memcpy(dst, src, (size_t)(n * r->recsize));
	r->pos += n;
	return (ssize_t)n;
}

void ps_psnap_rewind(struct ps_psnap_reader *r)
{
	r->pos = 0;
}
