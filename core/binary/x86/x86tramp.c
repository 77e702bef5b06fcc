/* core/binary/x86/x86tramp.c - entry trampolines and the jmp that reaches them (x86tramp.h). */
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

size_t ps_x86_tramp(uint8_t *out, uint64_t tramp, uint32_t idx, uint64_t hook, const struct ps_x86_reloc *r)
{
	static const uint8_t call[6] = {0xff, 0x15, 0xed, 0xff, 0xff, 0xff}, drop[5] = {0x48, 0x8d, 0x64, 0x24, 0x08};
	size_t k = 0;

	memcpy(out, &hook, 8);
	k += 8;
	out[k++] = 0x68;
	memcpy(out + k, &idx, 4);
	k += 4;
	memcpy(out + k, call, sizeof call); /* -19: from T+19 back to T+0 */
	k += sizeof call;
	memcpy(out + k, drop, sizeof drop);
	k += sizeof drop;
	if (r->nop)
		return ps_x86_jmp32(out + k, tramp + k, r->site + r->len) ? 0 : k + 5;
	memcpy(out + k, r->code, r->size);
	return k + r->size;
}
