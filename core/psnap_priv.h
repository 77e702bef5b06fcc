/* core/psnap_priv.h - the .psnap format's byte offsets (format in psnap.h), shared by the
 * writer and the reader, and the reader's state (psnap_read.c, psnap_scan.c). */
#ifndef PS_PSNAP_PRIV_H
#define PS_PSNAP_PRIV_H

#include <stdint.h>
#include <string.h>
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
/* Set r->complete, r->what and r->warning from what the scan found. */
void ps_psnap_summarize(struct ps_psnap_reader *r);

#endif
