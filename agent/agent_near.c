/* agent/agent_near.c - trampoline memory near the code it serves: chunks mapped at free
 * addresses around a site (MAP_FIXED_NOREPLACE, tried outwards 1 MB at a time), handed out in
 * pieces, sealed read-only once written. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "agent_near.h"

#define CHUNK (64u << 10)
#define MAX_CHUNKS 16
#define REACH (3ull << 29) /* 1.5 GB: a jmp rel32 reaches every byte of a chunk from the site */
#define STEP (1ull << 20)

static struct {
	uint64_t base;
	size_t used;
} chunk[MAX_CHUNKS];
static int nchunks;

static int near(uint64_t a, uint64_t b)
{
	return (a > b ? a - b : b - a) < REACH;
}

static uint64_t map_near(uint64_t site)
{
	uint64_t base = site & ~(uint64_t)(STEP - 1);

	for (uint64_t k = 1; k * STEP < REACH; k++)
		for (int sign = -1; sign <= 1; sign += 2) {
			uint64_t hint = sign < 0 ? base - k * STEP : base + k * STEP;
			void *p;

			if (sign < 0 && base < k * STEP + STEP)
				continue;
			p = mmap((void *)hint, CHUNK, PROT_READ | PROT_WRITE | PROT_EXEC,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)p == hint && near(hint, site) && near(hint + CHUNK, site))
				return hint;
			munmap(p, CHUNK);
		}
	return 0;
}

uint64_t pa_near_alloc(uint64_t site, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	for (int i = 0; i < nchunks; i++)
		if (chunk[i].used + n <= CHUNK && near(chunk[i].base, site) && near(chunk[i].base + CHUNK, site)) {
			chunk[i].used += n;
			return chunk[i].base + chunk[i].used - n;
		}
	if (nchunks == MAX_CHUNKS || n > CHUNK || !(chunk[nchunks].base = map_near(site)))
		return 0;
	chunk[nchunks].used = n;
	return chunk[nchunks++].base;
}

void pa_near_seal(void)
{
	for (int i = 0; i < nchunks; i++)
		mprotect((void *)chunk[i].base, CHUNK, PROT_READ | PROT_EXEC);
}

int pa_prot_of(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int prot = -1;

	if (!f)
		return -1;
	while (prot < 0 && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perm[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) == 3 && addr >= lo && addr < hi)
			prot = (perm[0] == 'r' ? PROT_READ : 0) | (perm[1] == 'w' ? PROT_WRITE : 0) |
			       (perm[2] == 'x' ? PROT_EXEC : 0);
	}
	fclose(f);
	return prot;
}
