/* core/psnap_priv.h - byte offsets of the .psnap headers (format in psnap.h), shared by
 * the writer and the reader. */
#ifndef PS_PSNAP_PRIV_H
#define PS_PSNAP_PRIV_H

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

#endif
