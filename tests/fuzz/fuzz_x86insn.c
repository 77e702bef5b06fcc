/* tests/fuzz/fuzz_x86insn.c - the instruction decoder (core/binary/x86/x86insn.c) and the preparation of
 * a displaced instruction (emulated or copied out of line, rip-relative operand rewritten) on
 * any bytes, as a breakpoint may be placed on any address of a tracee; and the walk that
 * finds where instructions begin (ps_x86_find_boundary). */
#include <string.h>

#include "fuzz.h"
#include "ptrace_priv.h"
#include "x86insn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ps_x86_insn in;
	struct ps_error err;
	struct bp b;

	if (ps_x86_decode(data, size, &in) == 0) {
		/* every part it reports lies inside the instruction, inside the bytes given */
		if (in.len < 1 || in.len > 15 || in.len > size || in.opc_off >= in.len ||
		    (in.has_modrm && in.modrm_off >= in.len) || in.disp_off + in.disp_len > in.len ||
		    in.imm_off + in.imm_len > in.len || (in.riprel && (!in.has_modrm || in.disp_len != 4)) ||
		    (in.rex && in.rex_off >= in.opc_off) || (in.vex && in.vex_off + in.vex > in.len))
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
