/* core/binary/codeaddr.c - is an address a user typed the start of an instruction in code (see
 * codeaddr.h)? */
#include "codeaddr.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elffile.h"
#include "x86insn.h"

/* The allocated section that holds an address, and where the file's code lies. */
struct where {
	Elf_Scn *scn; /* NULL: no section holds it */
	GElf_Shdr sh;
	const char *name;
	uint64_t code_lo, code_hi; /* from the lowest executable section to the end of the highest */
	int nalloc;		   /* allocated sections seen */
};

static void find_section(Elf *elf, uint64_t addr, struct where *w)
{
	size_t shstrndx = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	memset(w, 0, sizeof *w);
	w->code_lo = UINT64_MAX;
	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		/* .tbss occupies no addresses of its own: it overlaps the sections after it */
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size ||
		    ((sh.sh_flags & SHF_TLS) && sh.sh_type == SHT_NOBITS))
			continue;
		w->nalloc++;
		if (sh.sh_flags & SHF_EXECINSTR) {
			if (sh.sh_addr < w->code_lo)
				w->code_lo = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > w->code_hi)
				w->code_hi = sh.sh_addr + sh.sh_size;
		}
		if (!w->scn && addr >= sh.sh_addr && addr - sh.sh_addr < sh.sh_size) {
			const char *name = shstrndx ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
			w->scn = scn;
			w->sh = sh;
			w->name = name && *name ? name : "a section without a name";
		}
	}
}

/* "; its code is at 0xLO-0xHI", or "" when it has none. */
static const char *code_span(const struct where *w, char *buf, size_t n)
{
	if (w->code_lo >= w->code_hi)
		return "";
	snprintf(buf, n, "; its code is at 0x%" PRIx64 "-0x%" PRIx64, w->code_lo, w->code_hi);
	return buf;
}

/* The nearest function symbol that starts at or below @addr and at or above @lo, or NULL. */
static const struct ps_sym *sym_below(const struct ps_symtab *st, uint64_t lo, uint64_t addr)
{
	size_t a = 0, b = st ? ps_sym_count(st) : 0;

	while (a < b) { /* the first symbol above @addr */
		size_t mid = a + (b - a) / 2;
		if (ps_sym_at(st, mid)->addr <= addr)
			a = mid + 1;
		else
			b = mid;
	}
	if (a == 0 || ps_sym_at(st, a - 1)->addr < lo)
		return NULL;
	return ps_sym_at(st, a - 1);
}

static const char *sym_name(const struct ps_sym *s)
{
	return s->demangled ? s->demangled : s->name;
}

/* "sum (sum+0)" for @a in function @fn, else "SECTION (SECTION+0x51)". */
static const char *place(char *buf, size_t n, const struct ps_sym *fn, const struct where *w, uint64_t a)
{
	const char *name = fn ? sym_name(fn) : w->name;

	snprintf(buf, n, "%s (%s+%#" PRIx64 ")", name, name, a - (fn ? fn->addr : w->sh.sh_addr));
	return buf;
}

/* Where the return address is at @addr, from the call frame information: 1 at the stack pointer
   (CFA = rsp + 8, as at every entry, and before a ret that keeps the stack pointer), 0
   elsewhere, -1 where .eh_frame says nothing. A function region swaps the return address at
   the stack pointer, so it may start only where it is there. */
static int ret_at_sp(Elf *elf, uint64_t addr)
{
	Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
	Dwarf_Frame *frame = NULL;
	Dwarf_Op *ops;
	size_t nops = 0;
	int rc = -1;

	if (cfi && dwarf_cfi_addrframe(cfi, addr, &frame) == 0 && dwarf_frame_cfa(frame, &ops, &nops) == 0 &&
	    nops == 1 && ops[0].atom == DW_OP_bregx)
		rc = ops[0].number == 7 && ops[0].number2 == 8; /* DWARF register 7: rsp */
	free(frame);
	if (cfi)
		dwarf_cfi_end(cfi);
	return rc;
}

/* @addr lies in executable section @w: decode up to it. */
static int check_insn(Elf *elf, const struct ps_symtab *st, const struct where *w, uint64_t addr, unsigned flags,
		      struct ps_error *err)
{
	Elf_Data *d = elf_getdata(w->scn, NULL);
	const struct ps_sym *fn = st ? ps_sym_by_addr(st, addr) : NULL, *from;
	uint64_t lo = w->sh.sh_addr, at, next;
	char where[600];
	int rc;

	if (fn && fn->addr < lo)
		fn = NULL; /* a symbol of another section */
	from = fn ? fn : sym_below(st, lo, addr);
	if (!d || !d->d_buf || d->d_size < w->sh.sh_size || w->sh.sh_type == SHT_NOBITS)
		return ps_error_set(err, PS_EUSAGE, "0x%" PRIx64 " is in %s, which holds no code in the file", addr,
				    w->name);
	uint64_t start = from ? from->addr : lo;
	rc = ps_x86_find_boundary((const uint8_t *)d->d_buf + (start - lo), w->sh.sh_size - (start - lo), start, addr,
				  &at, &next);
	if (rc < 0)
		return ps_error_set(err, PS_EUSAGE,
				    "0x%" PRIx64 " is in %s, but the bytes at 0x%" PRIx64
				    " before it are no instruction perfsh can decode: it cannot tell where "
				    "instructions begin there",
				    addr, place(where, sizeof where, fn, w, addr), at);
	if (rc > 0)
		return ps_error_set(err, PS_EUSAGE,
				    "0x%" PRIx64 " is inside the instruction at 0x%" PRIx64 " in %s; boundaries near "
				    "it: 0x%" PRIx64 ", 0x%" PRIx64,
				    addr, at, place(where, sizeof where, fn, w, at), at, next);
	int sized = fn && fn->size; /* unsized: its end is unknown */
	if ((flags & PS_CODE_ENTRY) && sized && fn->addr != addr && ret_at_sp(elf, addr) != 1)
		return ps_error_set(err, PS_EUSAGE,
				    "0x%" PRIx64 " is inside %s, not at a function's entry (a function region "
				    "starts where the return address is at the stack pointer); give %s's entry "
				    "0x%" PRIx64 ", or a range 0x%" PRIx64 "-0xEND",
				    addr, place(where, sizeof where, fn, w, addr), sym_name(fn), fn->addr, addr);
	if ((flags & PS_CODE_ENTRY) && !sized && ret_at_sp(elf, addr) == 0)
		return ps_error_set(err, PS_EUSAGE,
				    "0x%" PRIx64 " in %s is not a function's entry (its .eh_frame puts the return "
				    "address away from the stack pointer there); give an entry, or a range "
				    "0x%" PRIx64 "-0xEND",
				    addr, place(where, sizeof where, fn, w, addr), addr);
	return 0;
}

static int check_elf(Elf *elf, const char *path, const struct ps_symtab *st, uint64_t addr, unsigned flags,
		     struct ps_error *err)
{
	struct where w;
	char span[80];

	find_section(elf, addr, &w);
	if (!w.nalloc)
		return ps_error_set(err, PS_EUSAGE,
				    "%s has no section headers: perfsh cannot tell whether an instruction begins at "
				    "0x%" PRIx64 "; name a function instead",
				    path, addr);
	if (!w.scn)
		return ps_error_set(err, PS_EUSAGE, "0x%" PRIx64 " is outside every section of %s%s", addr, path,
				    code_span(&w, span, sizeof span));
	if (!(w.sh.sh_flags & SHF_EXECINSTR))
		return ps_error_set(err, PS_EUSAGE, "0x%" PRIx64 " is in %s, not in code%s", addr, w.name,
				    code_span(&w, span, sizeof span));
	return check_insn(elf, st, &w, addr, flags, err);
}

int ps_code_check(const char *path, const struct ps_symtab *st, uint64_t addr, unsigned flags, struct ps_error *err)
{
	struct ps_symtab *own = NULL;
	struct ps_elf_file *f;
	struct ps_error e2;
	int rc;

	if (ps_elf_open(&f, path, err))
		return -1;
	if (!st && ps_sym_open(&own, path, &e2) == 0)
		st = own; /* without symbols, instructions are decoded from their section's start */
	rc = check_elf(f->elf, path, st, addr, flags, err);
	ps_sym_close(own);
	ps_elf_close(f);
	return rc;
}
