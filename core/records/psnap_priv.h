/* core/records/psnap_priv.h - the .psnap format's byte offsets (format in psnap.h), shared by the
 * writer and the reader, and the reader's state (psnap_read.c, psnap_scan.c). */
#ifndef PS_PSNAP_PRIV_H
#define PS_PSNAP_PRIV_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "psnap.h"

/* file header */
enum {
	PS_FH_VERSION = 8,
	PS_FH_SNAPSIZE = 12,
	PS_FH_NVALS = 16,
	PS_FH_NARGS = 18,
	PS_FH_RECSIZE = 20,
	PS_FH_ZERO = 24,
	PS_FH_CRC = 28,
};

/* block header */
enum {
	PS_BH_KIND = 0,
	PS_BH_COUNT = 4,
	PS_BH_FIRST = 8,
	PS_BH_LEN = 16,
	PS_BH_PCRC = 20,
	PS_BH_ZERO = 24,
	PS_BH_HCRC = 28,
};

/* A run of kept records, contiguous in the mapping. */
struct psnap_extent {
	const unsigned char *p;
	uint64_t first; /* index of its first record among the kept ones */
	uint64_t n;
};

/* Why a record that passed its block's checksum is skipped (psnap_check.c says what a record can be). */
enum psnap_skip {
	PS_SKIP_LAYOUT,	 /* values or arguments other than the header's */
	PS_SKIP_REGION,	 /* a region no REGN block names */
	PS_SKIP_FLAGS,	 /* flags this reader does not know */
	PS_SKIP_TID,	 /* a thread id of 0 or beyond PS_PSNAP_MAX_TID */
	PS_SKIP_CPU,	 /* a CPU below -1 or from PS_PSNAP_MAX_CPU on */
	PS_SKIP_TIME,	 /* a clock or group time that runs backwards */
	PS_SKIP_COUNTER, /* a counter value that runs backwards */
	PS_SKIP_N
};

/* A RECS block found by the walk; its records are taken once every name is known. */
struct psnap_recs {
	uint64_t off;
	uint64_t first;
	uint32_t count;
	uint32_t pcrc;
	int ok; /* the payload's CRC matched (1 for a cut block: its payload has no CRC to check) */
	int cut;
};

struct ps_psnap_reader {
	char *path;
	const unsigned char *map;
	size_t size;
	size_t recsize;
	unsigned nvals, nargs;
	struct psnap_extent *ext;
	size_t next, cap_ext;
	uint64_t count;	  /* records kept */
	uint64_t pos;	  /* read cursor */
	uint64_t ignored; /* bytes not used */
	uint64_t lost;	  /* records known lost */
	uint64_t skipped; /* records read whole and skipped for what they hold */
	uint64_t skip[PS_SKIP_N];
	int complete, truncated, ended;
	int events_seen; /* an EVNT block was read */
	enum ps_psnap_events_from events_from;
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
	uint64_t next_rec;	 /* file index of the record expected next */
	struct psnap_recs *recs; /* the RECS blocks, in file order, then sorted by first */
	size_t nrecs, cap_recs;
	unsigned nrepeats; /* RECS blocks that repeat one already taken */
	uint64_t repeat_at;
	uint64_t end_off, end_first; /* the END block, when ended */
	size_t resident_from;	     /* pages of the mapping from here on may be resident */
	char cut[96];		     /* what the end of the file cut, "" if nothing */
	char what[400];		     /* what was lost, "" if nothing */
	char warning[480];	     /* "PATH: WHAT; N records kept" */
};

/* Little-endian fields (the host is x86-64). */
static inline uint32_t ps_rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t ps_rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint16_t ps_rd16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* The last value of metadata @key, or NULL (ps_psnap_meta_get). */
static inline const char *ps__psnap_meta(const struct ps_psnap_reader *r, const char *key)
{
	for (size_t i = r->nmeta; i-- > 0;)
		if (strcmp(r->meta[2 * i], key) == 0)
			return r->meta[2 * i + 1];
	return NULL;
}

/* Bytes of the mapping read in order before the pages behind are let go. */
#define PS_PSNAP_RESIDENT (8u << 20)

/* The pages of the mapping before @p will not be read soon: let them go from this process,
   but for the last PS_PSNAP_RESIDENT bytes; cheap to call at every step. The mapping is
   read-only and private: a page let go is read again from the file (the page cache) when it
   is touched again, so a reader walking a large file in order keeps a window of it in its
   memory, not the whole file. */
static inline void ps__psnap_release_before(struct ps_psnap_reader *r, const unsigned char *p)
{
	size_t at = (size_t)(p - r->map), page;

	if (at >= r->resident_from && at - r->resident_from < PS_PSNAP_RESIDENT)
		return;
	page = (size_t)sysconf(_SC_PAGESIZE);
	at = at / page * page;
	if (at > r->resident_from) /* else a new pass from an earlier record */
		madvise((void *)(r->map + r->resident_from), at - r->resident_from, MADV_DONTNEED);
	r->resident_from = at;
}

/* 1 when @want is the CRC32 of @n bytes at @p. A fuzzing build (the macro libFuzzer's
   conventions define) takes any checksum, so that its mutations reach the parsers. */
static inline int ps_crc_ok(uint32_t want, const unsigned char *p, size_t n)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	(void)want, (void)p, (void)n;
	return 1;
#else
	return want == (uint32_t)crc32(0L, p, (uInt)n);
#endif
}

/* Walk the blocks after the file header of a mapped file, filling @r (psnap_scan.c); -1 on
   no memory. */
int ps_psnap_scan(struct ps_psnap_reader *r);

/* Why record @s cannot be what a catcher wrote, or -1 when it can (psnap_check.c). */
int ps__psnap_check(const struct ps_psnap_reader *r, const struct ps_snap *s);
/* Event names when the EVNT block was lost: from their copy, else event1 .. eventN; -1 on no
   memory (psnap_check.c). */
int ps__psnap_recover_events(struct ps_psnap_reader *r);
/* Set r->complete, r->what and r->warning from what the scan found (psnap_check.c). */
void ps_psnap_summarize(struct ps_psnap_reader *r);
/* "; what survived: ..." of a reader with no record: its header and names (psnap_check.c). */
void ps__psnap_survived(const struct ps_psnap_reader *r, char *buf, size_t size);

#endif
