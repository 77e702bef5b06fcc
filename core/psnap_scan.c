/* core/psnap_scan.c - walking the blocks of a mapped .psnap file (format in psnap.h): every
 * block and record checked, damage skipped, a cut block read up to its last whole record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psnap_priv.h"

#define KNOWN_FLAGS (PS_SNAP_UNWOUND | PS_SNAP_EXITED | PS_SNAP_SAMPLED | PS_SNAP_NESTED)

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
	n = ps_rd32(c->p);
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
			struct psnap_extent *e = realloc(r->ext, cap * sizeof *e);

			if (!e)
				return -1;
			r->ext = e;
			r->cap_ext = cap;
		}
		r->ext[r->next++] = (struct psnap_extent){p, r->count, n};
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
   lost; a block that goes back, or further than the file's size allows, is damage. 1 when it
   is to be skipped. */
static int recs_order(struct ps_psnap_reader *r, uint64_t off, uint64_t first, uint64_t len)
{
	if (first < r->next_rec || first > r->size / r->recsize) {
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
	uint32_t count = ps_rd32(h + PS_BH_COUNT), len = ps_rd32(h + PS_BH_LEN);
	uint64_t first = ps_rd64(h + PS_BH_FIRST);

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

		if (first < had || first - had > r->size / 4) { /* a lost name took 4 bytes at least */
			damaged(r, off, "regions out of order", len);
			return 0;
		}
		if (first > had) { /* names of a lost block stay NULL */
			char **nv = realloc(r->regions, (first + 1) * sizeof *nv);

			if (!nv)
				return -1;
			r->regions = nv;
			while (r->nregions < first)
				nv[r->nregions++] = NULL;
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
	if (first > r->size / r->recsize)
		damaged(r, off, "bad record count", len);
	else if (first > r->next_rec)
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
	return known && ps_crc_ok(ps_rd32(h + PS_BH_HCRC), h, PS_BH_HCRC) && ps_rd32(h + PS_BH_LEN) % 8 == 0 &&
	       ps_rd32(h + PS_BH_LEN) <= PS_PSNAP_MAX_BLOCK && ps_rd32(h + PS_BH_ZERO) == 0;
}

/* The end of the file cut the block at @off: keep its whole records. */
static int cut_block(struct ps_psnap_reader *r, uint64_t off)
{
	const unsigned char *h = r->map + off;
	uint64_t avail = r->size - off - PS_PSNAP_BLOCK_HEADER, whole;
	uint32_t count = ps_rd32(h + PS_BH_COUNT);

	r->truncated = 1;
	if (memcmp(h, PS_PSNAP_K_RECS, 4) != 0 || (uint64_t)count * r->recsize != ps_rd32(h + PS_BH_LEN) ||
	    recs_order(r, off, ps_rd64(h + PS_BH_FIRST), 0)) {
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
	r->next_rec = ps_rd64(h + PS_BH_FIRST) + count;
	return take_records(r, h + PS_PSNAP_BLOCK_HEADER, whole);
}

/* A block whose header is sound and payload damaged: its records (the header says how many)
   are lost. */
static void bad_payload(struct ps_psnap_reader *r, uint64_t off, const unsigned char *h)
{
	uint64_t first = ps_rd64(h + PS_BH_FIRST);
	uint32_t count = ps_rd32(h + PS_BH_COUNT);

	if (memcmp(h, PS_PSNAP_K_RECS, 4) == 0 && first >= r->next_rec && first <= r->size / r->recsize) {
		r->lost += first - r->next_rec + count;
		r->next_rec = first + count;
	}
	damaged(r, off, "checksum mismatch", PS_PSNAP_BLOCK_HEADER + ps_rd32(h + PS_BH_LEN));
}

/* Walk the blocks; -1 on no memory. */
int ps_psnap_scan(struct ps_psnap_reader *r)
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
		len = ps_rd32(r->map + off + PS_BH_LEN);
		if (len > left - PS_PSNAP_BLOCK_HEADER) {
			if (cut_block(r, off))
				return -1;
			break;
		}
		if (!ps_crc_ok(ps_rd32(r->map + off + PS_BH_PCRC), r->map + off + PS_PSNAP_BLOCK_HEADER, len))
			bad_payload(r, off, r->map + off);
		else if (take_block(r, off, r->map + off))
			return -1;
		off += PS_PSNAP_BLOCK_HEADER + len;
	}
	if (r->ended && off < r->size) {
		r->ignored += r->size - off;
		snprintf(r->cut, sizeof r->cut, "%llu bytes after the END block", (unsigned long long)(r->size - off));
	}
	return 0;
}

/* The one-line summary of what was lost; "" for an intact file. */
void ps_psnap_summarize(struct ps_psnap_reader *r)
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
