/* core/binary/x86/x86reloc.h - the instructions at a patch site of a function, moved to a
 * trampoline so a jmp can be written over them: what an in-process catcher does at a
 * function's entry (or where a line range starts or ends).
 *
 * The bytes from the patch site (the entry, or just after an endbr64 there, which stays so
 * indirect branches still land on one; or an instruction boundary inside the function) are
 * displaced in whole instructions until at least the patch length is covered. Each is copied
 * for the trampoline's address, decoded through x86insn.h:
 *   - a rip-relative memory operand gets the displacement that reaches the same address from
 *     the copy (refused beyond +-2 GB);
 *   - jcc (rel8 or rel32) becomes jcc rel32, jmp rel8/rel32 jmp rel32, loop/jrcxz a rel8 over
 *     two jumps; a target beyond +-2 GB of the copy is reached with jmp *0(%rip) and the
 *     8-byte address after it; a jump to the patch site (or the entry before it) goes to
 *     the first copy, so a loop through the site does not run what precedes the copies at
 *     the trampoline (the hook) again (but see PS_X86_RELOC_POINT);
 *   - a call (direct, or through a register or memory that is not addressed by rsp) becomes a
 *     push of its original return address and a jump to its target: the callee returns into
 *     the original code, where unwinders find the frame they expect. That needs the call to
 *     be the last instruction displaced (a direct call always is: it takes 5 bytes), and no
 *     shadow stack (PS_X86_RELOC_SHADOW_STACK);
 *   - everything else is copied unchanged.
 * The copies are followed by a jmp rel32 back to the first instruction not displaced.
 *
 * Refused, with one line naming the function and the offset: code that does not decode, a
 * function shorter than the patch, an instruction displaced that leaves the function before
 * the patch is covered (ret, jmp, ud2, int3), one that cannot run elsewhere (far transfers,
 * int, syscall, iret, hlt, system instructions, xbegin/xend/xabort, a relative operand of any
 * other kind, a 66-prefixed branch), a call that is not the last one displaced, a direct
 * branch anywhere in the function that lands inside the displaced bytes (the first byte is
 * fine: the jmp is there), and an indirect jump that may (see PS_X86_RELOC_IND_CHECKED), a
 * trampoline the patch cannot reach with a jmp rel32.
 *
 * Where the displaced bytes are all no-ops (-pg -mfentry -mnop-mcount, or
 * -fpatchable-function-entry), nothing is moved: the patch may replace them outright.
 */
#ifndef PS_X86RELOC_H
#define PS_X86RELOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PS_X86_RELOC_MAX_PATCH 16 /* the longest patch asked for */
#define PS_X86_RELOC_CODE 256	  /* room for the copies: each at most 14 + 16 bytes, and the jmp */

/* ps_x86_reloc() flags */
enum {
	/* The caller has checked where every indirect jump of the function goes (its jump tables,
	   read from the file): none lands inside the displaced bytes. Without it an indirect jump
	   through a register, or through memory with an index register (a jump table), refuses the
	   site; one through memory without an index (a tail call through a pointer) does not: a
	   code pointer never holds an address inside a function's first bytes. */
	PS_X86_RELOC_IND_CHECKED = 1,
	/* The program runs with a shadow stack (CET; "x86_Thread_features: shstk" in
	   /proc/PID/status): a call displaced is refused, since its push and jump put no return
	   address on the shadow stack and the callee's ret would fault. */
	PS_X86_RELOC_SHADOW_STACK = 2,
	/* The patch is a point inside the function (where a line range starts or ends), whose hook
	   runs each time control reaches it, as a breakpoint there would fire: a jump displaced to
	   the site goes back through the patch, not on in the copies. */
	PS_X86_RELOC_POINT = 4,
};

/**
 * struct ps_x86_reloc - a function's displaced prologue, made for a trampoline.
 * @site:  the address the patch goes at: the entry, or just after an endbr64 there
 * @len:   bytes displaced from @site: whole instructions, at least the patch length
 * @nop:   those bytes are all no-ops: nothing is relocated (@n and @size are 0)
 * @n:     instructions displaced
 * @from:  each one's offset from @site
 * @to:    the offset of its copy in @code (a thread stopped at @site + @from[i] goes on at
 *         the trampoline + @to[i])
 * @size:  bytes of @code: the copies, then a jmp rel32 to @site + @len
 * @code:  what the trampoline holds at its address
 * @entry: where a jump counts as one to @site: the function's entry when the patch is there
 *         (an endbr64 before @site), else @site
 * @again: the address of a jump of the function (outside the displaced bytes) back to @site
 *         or @entry, or 0: a loop through the patch would run the hook on each turn (a jump
 *         displaced goes to the copies instead)
 */
struct ps_x86_reloc {
	uint64_t site, entry, again;
	unsigned len;
	bool nop;
	int n;
	uint8_t from[PS_X86_RELOC_MAX_PATCH], to[PS_X86_RELOC_MAX_PATCH];
	size_t size;
	uint8_t code[PS_X86_RELOC_CODE];
};

/**
 * ps_x86_reloc() - displace the first instructions of a function for a patch of @patch bytes,
 * copied to run at address @tramp.
 * @code:  the function's bytes (all of them: branches into the displaced bytes are looked for
 *         in every one), @n of them, the first at address @addr
 * @patch: bytes the patch takes (5 for a jmp rel32), at most PS_X86_RELOC_MAX_PATCH
 * @tramp: where the copies will run; the patch at @site must reach it with a jmp rel32
 * @flags: PS_X86_RELOC_IND_CHECKED or 0
 * @name:  the function's name, for @err
 * @out:   filled on success
 * @err:   PS_EUSAGE and one line: "NAME+0x2: a jump at +0x1c lands inside the 5 bytes
 *         displaced for the patch"
 *
 * Return: 0, or -1 with @err set.
 */
int ps_x86_reloc(const uint8_t *code, size_t n, uint64_t addr, unsigned patch, uint64_t tramp, unsigned flags,
		 const char *name, struct ps_x86_reloc *out, struct ps_error *err);

/**
 * ps_x86_reloc_at() - ps_x86_reloc() for a patch at @at, an instruction boundary of the function
 * (its entry, or inside it: where a line range starts or ends).
 *
 * Return: 0, or -1 with @err set (also when no instruction of the function begins at @at).
 */
int ps_x86_reloc_at(const uint8_t *code, size_t n, uint64_t addr, uint64_t at, unsigned patch, uint64_t tramp,
		    unsigned flags, const char *name, struct ps_x86_reloc *out, struct ps_error *err);

#endif
