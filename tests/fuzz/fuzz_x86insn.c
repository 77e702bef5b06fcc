/* tests/fuzz/fuzz_x86insn.c - the instruction decoder (core/binary/x86/x86insn.c) and the preparation of
 * a displaced instruction (emulated or copied out of line, rip-relative operand rewritten) on
 * any bytes (what it reports stays inside the instruction), as a breakpoint may be placed on any address of a tracee; and the walk that
 * finds where instructions begin (ps_x86_find_boundary). */
#include <string.h>

#include "fuzz.h"
#include "ptrace_trap_priv.h"
#include "x86insn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_x86_insn in;
	struct ps_error err;
	struct bp b;

	if (ps_x86_decode(data, size, 0x401000, &in) == 0) {
		/* every part it reports lies inside the instruction, inside the bytes given */
		if (in.len < 1 || in.len > 15 || in.len > size || in.nopnd > 4 || (in.riprel && in.modrm_off >= in.len) ||
		    ((in.prefixes & PS_X86_REX) && in.rex_off >= in.len) || (in.vex && in.vex_off + in.vex > in.len))
			__builtin_trap();
		/* a relocated rip-relative operand names a register the instruction does not use */
		uint8_t copy[15];
		int xreg = ps_x86_relocate(&in, data, copy);
		if ((xreg >= 0) != !!in.riprel || (xreg >= 0 && ((in.reads | in.writes) & 1u << xreg)))
			__builtin_trap();
	}
	/* the walk to the last byte: a boundary there, inside an instruction within the bytes, or
	   bytes that do not decode at or before it */
	uint64_t base = 0x401000, last = base + size - 1, at, next;
	int rc = size ? ps_x86_find_boundary(data, size, base, last, &at, &next) : 0;
	if ((rc == 0 && size && at != last) || (rc == 1 && !(at < last && last < next && next <= base + size)) ||
	    (rc < 0 && at > last))
		__builtin_trap();
	memset(&b, 0, sizeof b);
	b.addr = 0x401000;
	if (ps__tr_bp_prepare(&b, data, size, &err) == 0 && (b.len != in.len || b.xol_len != in.len + 1))
		__builtin_trap();
	return 0;
}
