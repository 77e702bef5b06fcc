/* core/binary/x86/x86tramp.h - the bytes of an entry trampoline and of the jmp that patches a
 * site to reach it: what the in-process agent (agent/) writes, made here where it is pure.
 *
 * A trampoline at address T for site number I, entered at T+8 (no register is changed on the
 * way: a caller built with -fipa-ra may keep values in any register the function leaves alone):
 *   T+0   HOOK's address             8 bytes
 *   T+8   push $I                    68 imm32
 *   T+13  call *-19(%rip)            ff 15 imm32 (HOOK, read from T+0)
 *   T+19  lea 8(%rsp), %rsp          48 8d 64 24 08 (drops I; lea leaves the flags alone)
 *   T+24  the displaced instructions (ps_x86_reloc() made for T+24), which end with a jmp back;
 *         or, where the site is a 5-byte no-op, only a jmp rel32 back to the site's end.
 * HOOK sees I at 8(%rsp) and the function's return address at 16(%rsp).
 *
 * A point trampoline (where a line range starts or ends, inside a function) steps over the red
 * zone first: a leaf function may keep values in the 128 bytes below its stack pointer, which a
 * push there would overwrite.
 *   T+0   HOOK's address             8 bytes
 *   T+8   lea -128(%rsp), %rsp       48 8d 64 24 80
 *   T+13  push $I                    68 imm32
 *   T+18  call *-24(%rip)            ff 15 imm32 (HOOK, read from T+0)
 *   T+24  lea 136(%rsp), %rsp        48 8d a4 24 88 00 00 00 (drops I and the red zone's room)
 *   T+32  the displaced instructions, as above.
 * HOOK sees I at 8(%rsp); lea leaves the flags alone, which may be live at a point.
 */
#ifndef PS_X86TRAMP_H
#define PS_X86TRAMP_H

#include <stddef.h>
#include <stdint.h>

#include "x86reloc.h"

#define PS_X86_TRAMP_ENTRY 8	   /* where the patch jumps to */
#define PS_X86_TRAMP_HEAD 24	   /* bytes before the displaced instructions */
#define PS_X86_TRAMP_POINT_HEAD 32 /* a point trampoline's bytes before the displaced instructions */
#define PS_X86_TRAMP_MAX (PS_X86_TRAMP_POINT_HEAD + PS_X86_RELOC_CODE)

/**
 * ps_x86_jmp32() - a jmp rel32 at @from to @to into @out (5 bytes).
 * Return: 0, or -1 when @to is beyond the reach of a rel32 from @from.
 */
int ps_x86_jmp32(uint8_t out[5], uint64_t from, uint64_t to);

/**
 * ps_x86_tramp() - the trampoline for site number @idx at address @tramp, calling @hook, into
 * @out (PS_X86_TRAMP_MAX bytes).
 * @r: the site's displaced instructions, made by ps_x86_reloc() for @tramp + PS_X86_TRAMP_HEAD
 *     (or @r->nop: nothing displaced, the trampoline jumps back to @r->site + @r->len)
 *
 * Return: the trampoline's length, or 0 when the jump back does not reach.
 */
size_t ps_x86_tramp(uint8_t *out, uint64_t tramp, uint32_t idx, uint64_t hook, const struct ps_x86_reloc *r);

/**
 * ps_x86_tramp_point() - ps_x86_tramp() for a point inside a function: the red zone stepped
 * over around the call of @hook; @r made for @tramp + PS_X86_TRAMP_POINT_HEAD.
 *
 * Return: the trampoline's length, or 0 when the jump back does not reach.
 */
size_t ps_x86_tramp_point(uint8_t *out, uint64_t tramp, uint32_t idx, uint64_t hook, const struct ps_x86_reloc *r);

#endif
