/* core/binary/lines_graph.c - the flow graph of one function's machine code (x86insn.h): instructions,
 * their successors, gcc's jump tables, and what the entry reaches. */
#include <dwarf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "lines_graph.h"
#include "x86insn.h"

static int cmp_insn(const void *pa, const void *pb)
{
	const struct insn *a = pa, *b = pb;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

int ps__graph_subprogram(Dwarf *dw, uint64_t addr, Dwarf_Die *sp)
{
	Dwarf_Die cu, *scopes = NULL;
	int ns, found = 0;

	if (!dwarf_addrdie(dw, addr, &cu) || (ns = dwarf_getscopes(&cu, addr, &scopes)) <= 0)
		return 0;
	for (int k = 0; k < ns && !found; k++)
		if (dwarf_tag(&scopes[k]) == DW_TAG_subprogram) {
			*sp = scopes[k];
			found = 1;
		}
	free(scopes);
	return found;
}

/* The concrete subprogram under @die (through namespaces and classes) whose code holds @addr. */
static int holder_under(Dwarf_Die *die, uint64_t addr, Dwarf_Die *sp)
{
	Dwarf_Die child;

	if (dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram && dwarf_haspc(&child, addr) == 1) {
			*sp = child;
			return 1;
		}
		if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		     tag == DW_TAG_union_type) &&
		    holder_under(&child, addr, sp))
			return 1;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

int ps__graph_holder(Dwarf *dw, uint64_t addr, Dwarf_Die *sp)
{
	Dwarf_Die cu;

	return dwarf_addrdie(dw, addr, &cu) && holder_under(&cu, addr, sp);
}

void ps__graph_fn_of(Dwarf_Die *sp, struct fn *f)
{
	Dwarf_Addr base, lo, hi, entry;
	ptrdiff_t off = 0;

	memset(f, 0, sizeof *f);
	while ((off = dwarf_ranges(sp, off, &base, &lo, &hi)) > 0 && f->nr < MAX_RANGES) {
		f->lo[f->nr] = lo;
		f->hi[f->nr++] = hi;
	}
	f->entry = dwarf_entrypc(sp, &entry) == 0 ? entry : f->lo[0];
	f->name = dwarf_diename(sp);
	if (!f->name)
		f->name = "?";
}

int ps__graph_find(const struct fn *f, uint64_t addr)
{
	int lo = 0, hi = f->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (f->in[mid].addr == addr)
			return mid;
		if (f->in[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* The bytes of link-time range [lo, hi) in a section of @elf (@exec: an executable one). */
static const uint8_t *elf_bytes(Elf *elf, uint64_t lo, uint64_t hi, bool exec)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_ALLOC) ||
		    (exec && !(sh.sh_flags & SHF_EXECINSTR)) || lo < sh.sh_addr || hi > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < hi - sh.sh_addr)
			return NULL;
		return (const uint8_t *)d->d_buf + (lo - sh.sh_addr);
	}
	return NULL;
}

static void classify(struct insn *in, const struct ps_x86_insn *x)
{
	static const uint8_t kind[] = {
	    [PS_X86_JCC] = K_JCC,	[PS_X86_LOOP] = K_JCC,	  [PS_X86_XBEGIN] = K_JCC,   [PS_X86_JMP] = K_JMP,
	    [PS_X86_JMP_IND] = K_IND,	[PS_X86_FAR_JMP] = K_IND, [PS_X86_CALL] = K_CALL,    [PS_X86_CALL_IND] = K_CALL,
	    [PS_X86_FAR_CALL] = K_CALL, [PS_X86_RET] = K_STOP,	  [PS_X86_FAR_RET] = K_STOP, [PS_X86_STOP] = K_STOP,
	    [PS_X86_IRET] = K_STOP,	[PS_X86_XEND] = K_JCC,	  [PS_X86_XABORT] = K_IND,
	};
	const struct ps_x86_opnd *m = &x->opnd[x->op == PS_X86_LEA ? 1 : 0];

	in->kind = x->flow < sizeof kind ? kind[x->flow] : K_PLAIN;
	in->flow = x->flow;
	in->target = x->target;
	if (x->op == PS_X86_LEA && m->riprel && m->index == PS_X86_NOREG) {
		in->lea = 1;
		in->reg = x->opnd[0].reg;
		in->target = in->addr + x->len + (uint64_t)m->val;
	}
	/* jmp *TABLE(,%reg,8): a table of absolute addresses (non-PIE) */
	if (in->kind == K_IND && m->kind == PS_X86_OPND_MEM && !m->riprel && m->base == PS_X86_NOREG && m->scale == 8)
		in->table = (uint64_t)m->val | 1; /* bit 0: absolute entries */
}

int ps__graph_decode(Elf *elf, struct fn *f)
{
	size_t cap = 0;

	for (int r = 0; r < f->nr; r++)
		cap += f->hi[r] - f->lo[r];
	if (!(f->in = calloc(cap ? cap : 1, sizeof *f->in)))
		return -1;
	for (int r = 0; r < f->nr; r++) {
		const uint8_t *buf = elf_bytes(elf, f->lo[r], f->hi[r], true);
		uint64_t a = f->lo[r];

		if (!buf)
			return -1;
		while (a < f->hi[r]) {
			struct ps_x86_insn x;
			struct insn *in = &f->in[f->n];

			if (ps_x86_decode(buf + (a - f->lo[r]), f->hi[r] - a, a, &x))
				return -1;
			in->addr = a;
			in->len = x.len;
			classify(in, &x);
			a += x.len;
			f->n++;
		}
	}
	qsort(f->in, (size_t)f->n, sizeof *f->in, cmp_insn);
	return 0;
}

static int add_edge(struct fn *f, int from, int to)
{
	if (to < 0)
		return 0;
	for (int k = f->ne - 1; k >= 0 && f->e[k].from == from; k--)
		if (f->e[k].to == to)
			return 0;
	if (f->ne == f->cape) {
		int ncap = f->cape ? f->cape * 2 : 256;
		struct edge *e = realloc(f->e, (size_t)ncap * sizeof *e);
		if (!e)
			return -1;
		f->e = e;
		f->cape = ncap;
	}
	f->e[f->ne++] = (struct edge){from, to};
	f->in[from].nout++;
	return 0;
}

/*
 * The targets of the jump table of indirect jump @i: gcc's PIE form is "lea TABLE(%rip),%rX
 * ... movslq (%rX,%rY,4),%rY; add %rX,%rY; jmp *%rY" (32-bit offsets from TABLE), the
 * non-PIE one "jmp *TABLE(,%rY,8)". Entries are read while they land on instructions of the
 * function. Returns how many were found.
 */
static int table_edges(Elf *elf, struct fn *f, int i)
{
	uint64_t t = f->in[i].table & ~(uint64_t)1;
	bool abs = f->in[i].table & 1;
	int found = 0;

	if (!f->in[i].table)
		for (int k = i - 1; k >= 0 && k >= i - 12 && !t; k--)
			if (f->in[k].lea)
				t = f->in[k].target;
	if (!t)
		return 0;
	for (int k = 0; k < MAX_TABLE; k++) {
		const uint8_t *p =
		    elf_bytes(elf, t + (uint64_t)k * (abs ? 8 : 4), t + (uint64_t)(k + 1) * (abs ? 8 : 4), false);
		uint64_t to;
		int32_t off;
		int j;

		if (!p)
			break;
		if (abs) {
			memcpy(&to, p, 8);
		} else {
			memcpy(&off, p, 4);
			to = t + (uint64_t)(int64_t)off;
		}
		if ((j = ps__graph_find(f, to)) < 0 || add_edge(f, i, j) < 0)
			break;
		found++;
	}
	return found;
}

int ps__graph_edges(Elf *elf, struct fn *f)
{
	int *stack, sp = 0, entry = ps__graph_find(f, f->entry);

	for (int i = 0; i < f->n; i++) {
		struct insn *in = &f->in[i];
		bool falls = in->kind == K_PLAIN || in->kind == K_JCC || in->kind == K_CALL;
		int next = falls && i + 1 < f->n && f->in[i + 1].addr == in->addr + in->len ? i + 1 : -1;
		in->first = f->ne;
		if (add_edge(f, i, next) < 0 ||
		    add_edge(f, i, in->kind == K_JCC || in->kind == K_JMP ? ps__graph_find(f, in->target) : -1) < 0)
			return -1;
		if (in->kind == K_IND && table_edges(elf, f, i) == 0)
			f->unknown_ind = true;
	}
	if (entry < 0 || !(stack = malloc((size_t)f->n * sizeof *stack)))
		return -1;
	f->in[entry].reached = 1;
	stack[sp++] = entry;
	while (sp) {
		int i = stack[--sp];
		for (int k = f->in[i].first; k < f->in[i].first + f->in[i].nout; k++)
			if (!f->in[f->e[k].to].reached) {
				f->in[f->e[k].to].reached = 1;
				stack[sp++] = f->e[k].to;
			}
		if (f->in[i].kind == K_IND && f->unknown_ind)
			for (int j = 0; j < f->n; j++)
				if (f->in[j].rowstart && !f->in[j].reached) {
					f->in[j].reached = 1;
					stack[sp++] = j;
				}
	}
	free(stack);
	return 0;
}

int ps__graph_of(Elf *elf, const uint64_t *lo, const uint64_t *hi, int nr, uint64_t entry, struct fn *f)
{
	memset(f, 0, sizeof *f);
	if (nr > MAX_RANGES)
		return -1;
	f->nr = nr;
	f->entry = entry; /* an instruction must begin there */
	memcpy(f->lo, lo, (size_t)nr * sizeof *lo);
	memcpy(f->hi, hi, (size_t)nr * sizeof *hi);
	return ps__graph_decode(elf, f) || ps__graph_edges(elf, f) ? -1 : 0;
}
