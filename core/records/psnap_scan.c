/* core/records/psnap_scan.c - walking the blocks of a mapped .psnap file (format in psnap.h): every
 * block checked, damage skipped, a cut block read up to its last whole record.
 *
 * Two steps. The walk reads every name (events, regions, metadata) wherever its block is, and
 * lists the blocks of records with their checksums checked. The records are taken after it, by
 * their file index (the blocks' "first"), so that a block found before the names it uses, or a
 * copy of a block in another place, costs nothing that is still in the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "psnap_priv.h"

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

/* The first damage found (lowest offset) is the one the warning names. */
static void damaged(struct ps_psnap_reader *r, uint64_t off, const char *why, uint64_t bytes)
{
	if (r->ndamaged++ == 0 || off < r->damaged_at) {
		r->damaged_at = off;
		r->damage_why = why;
	}
	r->ignored += bytes;
}

static int add_extent(struct ps_psnap_reader *r, const unsigned char *p, uint64_t n)
{
	if (r->next && r->ext[r->next - 1].p + r->ext[r->next - 1].n * r->recsize == p) {
		r->ext[r->next - 1].n += n;
	} else {
		struct psnap_extent *e = ps_grow(r->ext, &r->cap_ext, r->next, sizeof *e, 16);

		if (!e)
			return -1;
		r->ext = e;
		r->ext[r->next++] = (struct psnap_extent){p, r->count, n};
	}
	r->count += n;
	return 0;
}

/* Keep the records of @p that can be what a catcher wrote; the others are skipped, counted by
   reason. */
static int take_records(struct ps_psnap_reader *r, const unsigned char *p, uint64_t n)
{
	uint64_t run = 0;

	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *s = p + i * r->recsize;
		int why = ps__psnap_check(r, (const struct ps_snap *)s);

		if (why < 0) {
			run++;
			continue;
		}
		if (run && add_extent(r, s - run * r->recsize, run))
			return -1;
		run = 0;
		r->skip[why]++;
		r->skipped++;
	}
	if (n)
		ps__psnap_release_before(r, p + n * r->recsize);
	return run ? add_extent(r, p + (n - run) * r->recsize, run) : 0;
}

static int add_recs(struct ps_psnap_reader *r, struct psnap_recs b)
{
	struct psnap_recs *nb = ps_grow(r->recs, &r->cap_recs, r->nrecs, sizeof *nb, 16);

	if (!nb)
		return -1;
	r->recs = nb;
	r->recs[r->nrecs++] = b;
	return 0;
}

/* A names or END block whose checksums passed. -1 on no memory. */
static int take_names(struct ps_psnap_reader *r, uint64_t off, const unsigned char *h)
{
	const unsigned char *p = h + PS_PSNAP_BLOCK_HEADER;
	uint32_t count = ps_rd32(h + PS_BH_COUNT), len = ps_rd32(h + PS_BH_LEN);
	uint64_t first = ps_rd64(h + PS_BH_FIRST);

	if (memcmp(h, PS_PSNAP_K_EVNT, 4) == 0) {
		if (r->events_seen || count > r->nvals || get_strs(p, len, &r->events, &r->nevents, count))
			damaged(r, off, "bad event names", len);
		else
			r->events_seen = 1;
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
	/* END: its count of records is checked once they are all taken */
	r->ended = 1;
	r->end_off = off;
	r->end_first = first;
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

/* A block at @off whose payload (@len bytes, @cut: fewer in the file) is whole or cut. */
static int block(struct ps_psnap_reader *r, uint64_t off, uint64_t len, int cut)
{
	const unsigned char *h = r->map + off, *p = h + PS_PSNAP_BLOCK_HEADER;
	struct psnap_recs b = {
	    off, ps_rd64(h + PS_BH_FIRST), ps_rd32(h + PS_BH_COUNT), ps_rd32(h + PS_BH_PCRC), cut ? 1 : -1, cut};

	if (memcmp(h, PS_PSNAP_K_RECS, 4) == 0) /* its payload is read once, with its records */
		return add_recs(r, b);
	if (cut) {
		r->truncated = 1;
		snprintf(r->cut, sizeof r->cut, "cut inside a block at byte %llu (truncated file)",
			 (unsigned long long)off);
		r->ignored += r->size - off;
		return 0;
	}
	if (!ps_crc_ok(ps_rd32(h + PS_BH_PCRC), p, len)) {
		damaged(r, off, "checksum mismatch", PS_PSNAP_BLOCK_HEADER + len);
		return 0;
	}
	return take_names(r, off, h);
}

/* Step 1: walk the blocks, taking names and listing blocks of records; -1 on no memory. */
static int walk(struct ps_psnap_reader *r)
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
		if (block(r, off, len, len > left - PS_PSNAP_BLOCK_HEADER))
			return -1;
		ps__psnap_release_before(r, r->map + off); /* the pages of the headers read so far */
		if (len > left - PS_PSNAP_BLOCK_HEADER)
			break;
		off += PS_PSNAP_BLOCK_HEADER + len;
	}
	if (r->ended && off < r->size) {
		r->ignored += r->size - off;
		snprintf(r->cut, sizeof r->cut, "%llu bytes after the END block", (unsigned long long)(r->size - off));
	}
	return 0;
}

/* By file index, then by place in the file. */
static int by_first(const void *a, const void *b)
{
	const struct psnap_recs *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Whether the payload of block @b matches its CRC (checked the first time it is asked). */
static int intact(struct ps_psnap_reader *r, struct psnap_recs *b)
{
	if (b->ok < 0) {
		const unsigned char *p = r->map + b->off + PS_PSNAP_BLOCK_HEADER;

		b->ok = ps_crc_ok(b->pcrc, p, ps_rd32(r->map + b->off + PS_BH_LEN));
	}
	return b->ok;
}

/* Of the blocks from @i on with the same first, an intact one goes first (a copy stands in for
   a damaged block). */
static void intact_first(struct ps_psnap_reader *r, size_t i)
{
	for (size_t j = i; j < r->nrecs && r->recs[j].first == r->recs[i].first; j++)
		if (intact(r, &r->recs[j])) {
			struct psnap_recs t = r->recs[j];

			r->recs[j] = r->recs[i];
			r->recs[i] = t;
			return;
		}
}

/* The block that goes back over records already taken: the same block again (its copy), or damage. */
static void overlap(struct ps_psnap_reader *r, struct psnap_recs *b, const struct psnap_recs *prev, uint64_t len)
{
	int ok = intact(r, b);

	/* prev was taken whole (a cut block is never prev) */
	if (prev && ok && prev->ok == 1 && prev->first == b->first && prev->count == b->count &&
	    prev->pcrc == b->pcrc) {
		if (r->nrepeats++ == 0 || b->off < r->repeat_at)
			r->repeat_at = b->off;
		r->ignored += PS_PSNAP_BLOCK_HEADER + len;
		return;
	}
	damaged(r, b->off, ok ? "records out of order" : "checksum mismatch", PS_PSNAP_BLOCK_HEADER + len);
}

/* The records of a block the end of the file cut: its whole ones, when its header holds. */
static int cut_recs(struct ps_psnap_reader *r, const struct psnap_recs *b, int sound)
{
	uint64_t avail = r->size - b->off - PS_PSNAP_BLOCK_HEADER, whole = avail / r->recsize;

	r->truncated = 1;
	if (!sound) {
		snprintf(r->cut, sizeof r->cut, "cut inside a block at byte %llu (truncated file)",
			 (unsigned long long)b->off);
		r->ignored += r->size - b->off;
		return 0;
	}
	snprintf(r->cut, sizeof r->cut, "cut after record %llu of a block of %u (truncated file)",
		 (unsigned long long)whole, b->count);
	r->ignored += avail - whole * r->recsize + PS_PSNAP_BLOCK_HEADER * !whole;
	r->lost += b->first - r->next_rec + b->count - whole;
	r->next_rec = b->first + b->count;
	return take_records(r, r->map + b->off + PS_PSNAP_BLOCK_HEADER, whole);
}

/* Step 2: the listed blocks' records, in file index order; gaps are records lost. */
static int take_all(struct ps_psnap_reader *r)
{
	const struct psnap_recs *prev = NULL;

	if (r->nrecs) /* qsort's array must not be NULL, even empty */
		qsort(r->recs, r->nrecs, sizeof *r->recs, by_first);
	for (size_t i = 0; i < r->nrecs; i++) {
		struct psnap_recs *b = &r->recs[i];
		uint64_t len = ps_rd32(r->map + b->off + PS_BH_LEN);
		int sized = (uint64_t)b->count * r->recsize == len, placed = b->first <= r->size / r->recsize;

		if (b->cut) {
			if (cut_recs(r, b, sized && placed && b->first >= r->next_rec))
				return -1;
			continue;
		}
		if (!sized || !placed) {
			damaged(r, b->off,
				sized ? "records out of order" : "record count disagrees with the block size",
				PS_PSNAP_BLOCK_HEADER + len);
			continue;
		}
		if (b->first < r->next_rec) {
			overlap(r, b, prev, len);
			continue;
		}
		if (i == 0 || r->recs[i - 1].first != b->first)
			intact_first(r, i);
		r->lost += b->first - r->next_rec;
		r->next_rec = b->first + b->count;
		prev = b;
		if (!intact(r, b)) {
			damaged(r, b->off, "checksum mismatch", PS_PSNAP_BLOCK_HEADER + len);
			r->lost += b->count;
		} else if (take_records(r, r->map + b->off + PS_PSNAP_BLOCK_HEADER, b->count)) {
			return -1;
		}
	}
	return 0;
}

/* Walk the blocks; -1 on no memory. */
int ps_psnap_scan(struct ps_psnap_reader *r)
{
	if (walk(r) || take_all(r) || ps__psnap_recover_events(r))
		return -1;
	if (r->ended) {
		if (r->end_first > r->size / r->recsize)
			damaged(r, r->end_off, "bad record count", 0);
		else if (r->end_first > r->next_rec)
			r->lost += r->end_first - r->next_rec;
	}
	return 0;
}
