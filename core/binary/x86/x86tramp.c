/* core/binary/x86/x86tramp.c - entry and point trampolines and the jmp that reaches them
 * (x86tramp.h). */
#include "x86tramp.h"

#include <string.h>

int ps_x86_jmp32(uint8_t out[5], uint64_t from, uint64_t to)
{
	int64_t d = (int64_t)(to - (from + 5));
	int32_t rel = (int32_t)d;

	if (d != (int64_t)rel)
		return -1;
	out[0] = 0xe9;
	memcpy(out + 1, &rel, 4);
	return 0;
}

/* A trampoline of @head bytes (@pre, push $@idx, call through T+0, @post) at @tramp, then @r's
   displaced instructions or the jump back. */
static size_t tramp_of(uint8_t *out, uint64_t tramp, uint32_t idx, uint64_t hook, const struct ps_x86_reloc *r,
		       const uint8_t *pre, size_t npre, const uint8_t *post, size_t npost)
{
	size_t k = 0;
	int32_t rel;

	memcpy(out, &hook, 8);
	k += 8;
	if (npre)
		memcpy(out + k, pre, npre);
	k += npre;
	out[k++] = 0x68;
	memcpy(out + k, &idx, 4);
	k += 4;
	out[k++] = 0xff; /* call *disp32(%rip), back to T+0 */
	out[k++] = 0x15;
	rel = -(int32_t)(k + 4);
	memcpy(out + k, &rel, 4);
	k += 4;
	memcpy(out + k, post, npost);
	k += npost;
	if (r->nop)
		return ps_x86_jmp32(out + k, tramp + k, r->site + r->len) ? 0 : k + 5;
	memcpy(out + k, r->code, r->size);
	return k + r->size;
}

size_t ps_x86_tramp(uint8_t *out, uint64_t tramp, uint32_t idx, uint64_t hook, const struct ps_x86_reloc *r)
{
	static const uint8_t drop[5] = {0x48, 0x8d, 0x64, 0x24, 0x08}; /* lea 8(%rsp), %rsp */

	return tramp_of(out, tramp, idx, hook, r, NULL, 0, drop, sizeof drop);
}

size_t ps_x86_tramp_point(uint8_t *out, uint64_t tramp, uint32_t idx, uint64_t hook, const struct ps_x86_reloc *r)
{
	static const uint8_t below[5] = {0x48, 0x8d, 0x64, 0x24, 0x80}, /* lea -128(%rsp), %rsp */
	    drop[8] = {0x48, 0x8d, 0xa4, 0x24, 0x88, 0x00, 0x00, 0x00}; /* lea 136(%rsp), %rsp */

	return tramp_of(out, tramp, idx, hook, r, below, sizeof below, drop, sizeof drop);
}
