/* core/records/psnap_write.c - writing .psnap files (format in psnap.h): append-only blocks. */
#include "psnap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "outfile.h"
#include "psnap_priv.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "psnap_write.c writes the host's integers as little-endian"
#endif

struct ps_psnap_writer {
	int fd;
	char *path;
	size_t recsize;
	unsigned char *buf; /* PS_PSNAP_BUFSIZE bytes of whole blocks, the last maybe open */
	size_t len;	    /* bytes in buf */
	size_t open;	    /* offset in buf of the open RECS block's header, or SIZE_MAX */
	uint32_t open_n;    /* records in the open block */
	unsigned nvals, nargs;
	uint64_t count;		  /* records given to ps_psnap_write */
	uint32_t nregions;	  /* region ids handed out so far */
	int failed;		  /* sticky: @fail_code and @fail_what say why */
	int finished;		  /* END written by ps_psnap_finish() */
	int fail_code;		  /* errno of the failure, or PS_EUSAGE once finished */
	const char *fail_what;	  /* what failed ("write", "close"), a constant string */
	struct ps_outfile *whole; /* ps_psnap_replace(): the temporary file, renamed at close */
};

/* A growable byte string, for names payloads. */
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

static int bytes_str(struct bytes *b, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);

	return bytes_put(b, &n, 4) || bytes_put(b, s, n);
}

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
	if (in->nevents > in->nvals)
		return ps_error_set(err, PS_EUSAGE, "psnap: %zu event names for %u values", in->nevents, in->nvals);
	if (in->nregions > INT32_MAX / 2 || in->nmeta > UINT16_MAX)
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

/* @s appended to the @size bytes at @buf holding *@len and a NUL (cut to fit). */
static void put_text(char *buf, size_t size, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (n > size - 1 - *len)
		n = size - 1 - *len;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = '\0';
}

/* "PATH: WHAT: DESCRIPTION" (errno) or "PATH: WHAT" of the writer's failure into @err: with
   strlen, memcpy and glibc's strerrordesc_np (a lookup in a constant table: no locale, no
   allocation, no lock), so that a signal handler may fail and be told why. */
static int sticky(struct ps_psnap_writer *w, struct ps_error *err)
{
	const char *desc;
	char num[24], *p = num + sizeof num;
	size_t len = 0;
	unsigned u;

	if (!err)
		return -1;
	err->code = w->fail_code;
	err->msg[0] = '\0';
	put_text(err->msg, sizeof err->msg, &len, w->path);
	put_text(err->msg, sizeof err->msg, &len, ": ");
	put_text(err->msg, sizeof err->msg, &len, w->fail_what);
	if (w->fail_code <= 0)
		return -1;
	put_text(err->msg, sizeof err->msg, &len, ": ");
	if ((desc = strerrordesc_np(w->fail_code))) {
		put_text(err->msg, sizeof err->msg, &len, desc);
		return -1;
	}
	*--p = '\0';
	u = (unsigned)w->fail_code;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	put_text(err->msg, sizeof err->msg, &len, "error ");
	put_text(err->msg, sizeof err->msg, &len, p);
	return -1;
}

/* Record a failure in the writer (sticky) and in @err. Async-signal-safe (see sticky()). */
static int fail(struct ps_psnap_writer *w, struct ps_error *err, int code, const char *what)
{
	w->failed = 1;
	w->fail_code = code;
	w->fail_what = what;
	return sticky(w, err);
}

/* Write every byte of @iov (modified), short writes and EINTR handled. */
static int writev_all(struct ps_psnap_writer *w, struct iovec *iov, int n, struct ps_error *err)
{
	while (n > 0) {
		ssize_t k = writev(w->fd, iov, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return fail(w, err, errno, "write");
		}
		if (k == 0)
			return fail(w, err, EIO, "write");
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

/* Fill the block header at @h for @len payload bytes whose CRC32 is @pcrc. */
static void block_header(unsigned char *h, const char *kind, uint32_t count, uint64_t first, uint32_t len,
			 uint32_t pcrc)
{
	uint32_t zero = 0, hcrc;

	memcpy(h + PS_BH_KIND, kind, 4);
	memcpy(h + PS_BH_COUNT, &count, 4);
	memcpy(h + PS_BH_FIRST, &first, 8);
	memcpy(h + PS_BH_LEN, &len, 4);
	memcpy(h + PS_BH_PCRC, &pcrc, 4);
	memcpy(h + PS_BH_ZERO, &zero, 4);
	hcrc = (uint32_t)crc32(0L, h, PS_BH_HCRC);
	memcpy(h + PS_BH_HCRC, &hcrc, 4);
}

/* Seal the open RECS block in the buffer (its header was reserved when it opened). */
static void close_recs(struct ps_psnap_writer *w)
{
	unsigned char *h;
	uint32_t len;

	if (w->open == SIZE_MAX)
		return;
	h = w->buf + w->open;
	len = (uint32_t)(w->open_n * w->recsize);
	block_header(h, PS_PSNAP_K_RECS, w->open_n, w->count - w->open_n, len,
		     (uint32_t)crc32(0L, h + PS_PSNAP_BLOCK_HEADER, len));
	w->open = SIZE_MAX;
	w->open_n = 0;
}

/* Write out the buffer: whole blocks only. */
static int flush_buf(struct ps_psnap_writer *w, struct ps_error *err)
{
	struct iovec iov = {w->buf, w->len};

	close_recs(w);
	w->len = 0;
	return iov.iov_len ? writev_all(w, &iov, 1, err) : 0;
}

/* Append one whole block: into the buffer, or straight to the file when it is large. */
static int put_block(struct ps_psnap_writer *w, const char *kind, uint32_t count, uint64_t first, const void *payload,
		     size_t len, struct ps_error *err)
{
	static const unsigned char zero[8];
	size_t pad = (8 - len % 8) % 8;
	unsigned char h[PS_PSNAP_BLOCK_HEADER];
	struct iovec iov[3];
	uint32_t crc = (uint32_t)crc32(crc32(0L, payload, (uInt)len), zero, (uInt)pad);

	close_recs(w);
	if (w->len + sizeof h + len + pad > PS_PSNAP_BUFSIZE && flush_buf(w, err))
		return -1;
	if (sizeof h + len + pad <= PS_PSNAP_BUFSIZE) {
		unsigned char *p = w->buf + w->len + sizeof h;

		if (len)
			memcpy(p, payload, len);
		memset(p + len, 0, pad);
		block_header(w->buf + w->len, kind, count, first, (uint32_t)(len + pad), crc);
		w->len += sizeof h + len + pad;
		return 0;
	}
	/* a payload larger than the buffer: only names can be (one is up to 2 MiB) */
	block_header(h, kind, count, first, (uint32_t)(len + pad), crc);
	iov[0] = (struct iovec){h, sizeof h};
	iov[1] = (struct iovec){(void *)payload, len};
	iov[2] = (struct iovec){(void *)zero, pad};
	return writev_all(w, iov, 3, err);
}

/* Names as blocks of @kind of at most about PS_PSNAP_BUFSIZE bytes each; @per entry is
   1 string (events, regions) or 2 (metadata pairs). */
static int put_names(struct ps_psnap_writer *w, const char *kind, uint64_t first, const char *const *s, size_t n,
		     size_t per, struct ps_error *err)
{
	struct bytes b = {0};
	size_t i = 0;
	int rc = 0;

	while (rc == 0 && i < n) {
		uint32_t k = 0;

		b.len = 0;
		for (; rc == 0 && i < n; i++, k++) {
			size_t need = 0;

			for (size_t j = 0; j < per; j++)
				need += 4 + strlen(s[i * per + j]);
			if (k > 0 && b.len + need > PS_PSNAP_BUFSIZE - PS_PSNAP_BLOCK_HEADER - 8)
				break;
			for (size_t j = 0; j < per; j++)
				if (bytes_str(&b, s[i * per + j]))
					rc = ps_error_set(err, ENOMEM, "%s: out of memory", w->path);
		}
		if (rc == 0)
			rc = put_block(w, kind, k, first, b.p, b.len, err);
		first += k;
	}
	free(b.p);
	return rc;
}

static void writer_free(struct ps_psnap_writer *w)
{
	free(w->whole);
	free(w->buf);
	free(w->path);
	free(w);
}

/* A copy of the event names in metadata pairs event.K = name (psnap.h): a reader whose EVNT
   block is damaged takes the names from there. */
static int put_event_copy(struct ps_psnap_writer *w, const struct ps_psnap_info *in, struct ps_error *err)
{
	const char **kv;
	char(*keys)[32];
	int rc;

	if (in->nevents == 0)
		return 0;
	kv = malloc(2 * in->nevents * sizeof *kv);
	keys = malloc(in->nevents * sizeof *keys);
	if (!kv || !keys) {
		free(kv);
		free(keys);
		return ps_error_set(err, ENOMEM, "%s: out of memory", w->path);
	}
	for (size_t i = 0; i < in->nevents; i++) {
		snprintf(keys[i], sizeof keys[i], PS_PSNAP_EVENT_KEY "%zu", i);
		kv[2 * i] = keys[i];
		kv[2 * i + 1] = in->events[i];
	}
	rc = put_names(w, PS_PSNAP_K_META, 0, kv, in->nevents, 2, err);
	free(kv);
	free(keys);
	return rc;
}

/* Header and the names of @in, written out. */
static int start_file(struct ps_psnap_writer *w, const struct ps_psnap_info *in, struct ps_error *err)
{
	unsigned char *h = w->buf;
	uint32_t v32, crc;
	uint16_t v16;
	const char **meta = NULL;
	int rc;

	memset(h, 0, PS_PSNAP_HEADER);
	memcpy(h, PS_PSNAP_MAGIC, 8);
	v32 = PS_PSNAP_VERSION;
	memcpy(h + PS_FH_VERSION, &v32, 4);
	v32 = (uint32_t)sizeof(struct ps_snap);
	memcpy(h + PS_FH_SNAPSIZE, &v32, 4);
	v16 = (uint16_t)in->nvals;
	memcpy(h + PS_FH_NVALS, &v16, 2);
	v16 = (uint16_t)in->nargs;
	memcpy(h + PS_FH_NARGS, &v16, 2);
	v32 = (uint32_t)w->recsize;
	memcpy(h + PS_FH_RECSIZE, &v32, 4);
	crc = (uint32_t)crc32(0L, h, PS_FH_CRC);
	memcpy(h + PS_FH_CRC, &crc, 4);
	w->len = PS_PSNAP_HEADER;
	if (in->nmeta) {
		meta = malloc(2 * in->nmeta * sizeof *meta);
		if (!meta)
			return ps_error_set(err, ENOMEM, "%s: out of memory", w->path);
		for (size_t i = 0; i < in->nmeta; i++) {
			meta[2 * i] = in->meta[i].key;
			meta[2 * i + 1] = in->meta[i].value;
		}
	}
	/* EVNT comes first even when empty: a reader knows the events from there on */
	rc = (in->nevents == 0 ? put_block(w, PS_PSNAP_K_EVNT, 0, 0, NULL, 0, err)
			       : put_names(w, PS_PSNAP_K_EVNT, 0, in->events, in->nevents, 1, err)) ||
	     put_names(w, PS_PSNAP_K_REGN, 0, in->regions, in->nregions, 1, err) ||
	     put_names(w, PS_PSNAP_K_META, 0, meta, in->nmeta, 2, err) || put_event_copy(w, in, err) ||
	     flush_buf(w, err);
	free(meta);
	return rc ? -1 : 0;
}

/* A writer of @path (in place, or whole when @whole: see ps_psnap_replace()). */
static struct ps_psnap_writer *create(const char *path, const struct ps_psnap_info *info, int whole,
				      struct ps_error *err)
{
	struct ps_psnap_writer *w;

	if (check_info(info, err))
		return NULL;
	w = calloc(1, sizeof *w);
	if (!w || !(w->path = strdup(path)) || !(w->buf = malloc(PS_PSNAP_BUFSIZE)) ||
	    (whole && !(w->whole = malloc(sizeof *w->whole)))) {
		ps_error_set(err, ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	w->recsize = ps_snap_size(info->nvals, info->nargs);
	w->nvals = info->nvals;
	w->nargs = info->nargs;
	w->nregions = (uint32_t)info->nregions;
	w->open = SIZE_MAX;
	if (whole) {
		w->fd = ps_outfile_open(w->whole, path, err);
		if (w->fd < 0)
			goto fail;
	} else {
		w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (w->fd < 0) {
			ps_error_set(err, errno, "%s: open: %s", path, strerror(errno));
			goto fail;
		}
	}
	if (start_file(w, info, err)) {
		close(w->fd);
		if (whole)
			ps_outfile_discard(w->whole);
		goto fail;
	}
	return w;
fail:
	if (w)
		writer_free(w);
	return NULL;
}

struct ps_psnap_writer *ps_psnap_create(const char *path, const struct ps_psnap_info *info, struct ps_error *err)
{
	return create(path, info, 0, err);
}

struct ps_psnap_writer *ps_psnap_replace(const char *path, const struct ps_psnap_info *info, struct ps_error *err)
{
	return create(path, info, 1, err);
}

int ps_psnap_add_region(struct ps_psnap_writer *w, const char *name, struct ps_error *err)
{
	if (w->failed)
		return sticky(w, err);
	if (check_str(name, "a region name", err))
		return -1;
	if (w->nregions >= INT32_MAX)
		return ps_error_set(err, PS_EUSAGE, "%s: too many regions", w->path);
	if (put_names(w, PS_PSNAP_K_REGN, w->nregions, &name, 1, 1, err))
		return -1;
	return (int)w->nregions++;
}

int ps_psnap_add_meta(struct ps_psnap_writer *w, const char *key, const char *value, struct ps_error *err)
{
	const char *kv[2] = {key, value};

	if (w->failed)
		return sticky(w, err);
	if (check_str(key, "a metadata key", err) || check_str(value, "a metadata value", err))
		return -1;
	return put_names(w, PS_PSNAP_K_META, 0, kv, 1, 2, err);
}

/* The writer's own checks of what it is given (a reader would drop such records). */
static int check_recs(struct ps_psnap_writer *w, const unsigned char *p, size_t n, struct ps_error *err)
{
	for (size_t i = 0; i < n; i++, p += w->recsize) {
		const struct ps_snap *s = (const struct ps_snap *)p;

		if (s->nvals != w->nvals || s->nargs != w->nargs)
			return ps_error_set(
			    err, PS_EUSAGE, "%s: record %llu has %u values and %u arguments, the file %u and %u",
			    w->path, (unsigned long long)(w->count + i), s->nvals, s->nargs, w->nvals, w->nargs);
		if (s->region >= w->nregions)
			return ps_error_set(err, PS_EUSAGE, "%s: record %llu has region %u, not named yet", w->path,
					    (unsigned long long)(w->count + i), s->region);
	}
	return 0;
}

/* A batch too large for the buffer: whole blocks straight from the caller's memory. */
static int write_direct(struct ps_psnap_writer *w, const unsigned char *p, size_t n, struct ps_error *err)
{
	size_t per = (PS_PSNAP_BUFSIZE - PS_PSNAP_BLOCK_HEADER) / w->recsize;

	if (flush_buf(w, err))
		return -1;
	while (n) {
		size_t k = n < per ? n : per;
		unsigned char h[PS_PSNAP_BLOCK_HEADER];
		struct iovec iov[2] = {{h, sizeof h}, {(void *)p, k * w->recsize}};

		block_header(h, PS_PSNAP_K_RECS, (uint32_t)k, w->count, (uint32_t)(k * w->recsize),
			     (uint32_t)crc32(0L, p, (uInt)(k * w->recsize)));
		if (writev_all(w, iov, 2, err))
			return -1;
		w->count += k;
		p += k * w->recsize;
		n -= k;
	}
	return 0;
}

int ps_psnap_write(struct ps_psnap_writer *w, const void *recs, size_t n, struct ps_error *err)
{
	const unsigned char *p = recs;

	if (w->failed)
		return sticky(w, err);
	if (n > SIZE_MAX / w->recsize / 2)
		return ps_error_set(err, PS_EUSAGE, "%s: %zu records is too many", w->path, n);
	if (check_recs(w, p, n, err))
		return -1;
	if (n * w->recsize >= PS_PSNAP_BUFSIZE)
		return write_direct(w, p, n, err);
	while (n) {
		size_t room, k;

		if (w->open == SIZE_MAX) {
			if (w->len + PS_PSNAP_BLOCK_HEADER + w->recsize > PS_PSNAP_BUFSIZE && flush_buf(w, err))
				return -1;
			w->open = w->len;
			w->len += PS_PSNAP_BLOCK_HEADER;
		}
		room = (PS_PSNAP_BUFSIZE - w->len) / w->recsize;
		if (room == 0) {
			if (flush_buf(w, err))
				return -1;
			continue;
		}
		k = n < room ? n : room;
		memcpy(w->buf + w->len, p, k * w->recsize);
		w->len += k * w->recsize;
		w->open_n += (uint32_t)k;
		w->count += k;
		p += k * w->recsize;
		n -= k;
	}
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

int ps_psnap_finish(struct ps_psnap_writer *w, struct ps_error *err)
{
	if (w->failed)
		return sticky(w, err);
	if (put_block(w, PS_PSNAP_K_END, w->nregions, w->count, NULL, 0, err) || flush_buf(w, err))
		return -1;
	w->finished = 1;
	w->failed = 1; /* later calls: "PATH: the file is finished (END written)" */
	w->fail_code = PS_EUSAGE;
	w->fail_what = "the file is finished (END written)";
	return 0;
}

int ps_psnap_close(struct ps_psnap_writer *w, struct ps_error *err)
{
	int rc;

	if (!w)
		return 0;
	if (w->finished)
		rc = 0;
	else if (w->failed)
		rc = sticky(w, err);
	else
		rc = put_block(w, PS_PSNAP_K_END, w->nregions, w->count, NULL, 0, err) || flush_buf(w, err) ? -1 : 0;
	if (close(w->fd) < 0 && rc == 0)
		rc = fail(w, err, errno, "close");
	if (w->whole && rc == 0)
		rc = ps_outfile_commit(w->whole, err);
	else if (w->whole)
		ps_outfile_discard(w->whole);
	writer_free(w);
	return rc;
}
