/* core/binary/sdt.c - read the .note.stapsdt notes of an ELF file (see sdt.h).
 *
 * Each note (owner "stapsdt", type 3) holds three addresses of the file's class (the site, the
 * .stapsdt.base the note was written against, the semaphore) and three NUL-terminated strings
 * (provider, name, arguments). As systemtap does, a site and a semaphore move by however far
 * .stapsdt.base moved since the note was written (prelink).
 */
#include "sdt.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elffile.h"
#include "grow.h"
#include "procmaps.h"
#include "suggest.h"

#define NT_STAPSDT 3

/* The section named @name, with its header in @sh; NULL when there is none. */
static Elf_Scn *section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *s;
		if (!gelf_getshdr(scn, sh))
			continue;
		s = elf_strptr(elf, shstrndx, sh->sh_name);
		if (s && !strcmp(s, name))
			return scn;
	}
	return NULL;
}

/* An address of @width bytes (4 or 8) at @p, in the file's byte order (@swap: not the host's). */
static uint64_t get_addr(const unsigned char *p, int width, int swap)
{
	uint64_t v = 0;

	if (width == 4) {
		uint32_t w;
		memcpy(&w, p, 4);
		v = swap ? __builtin_bswap32(w) : w;
	} else {
		memcpy(&v, p, 8);
		if (swap)
			v = __builtin_bswap64(v);
	}
	return v;
}

/* The next NUL-terminated string of at most @max - 1 bytes in [*p, end) copied to @out. */
static int get_str(const unsigned char **p, const unsigned char *end, char *out, size_t max)
{
	const unsigned char *z = memchr(*p, 0, (size_t)(end - *p));

	if (!z || (size_t)(z - *p) >= max)
		return -1;
	memcpy(out, *p, (size_t)(z - *p) + 1);
	*p = z + 1;
	return 0;
}

/* One note's descriptor [d, d + n) into @pr; -1 with @why set when it is malformed. */
static int parse_desc(const unsigned char *d, size_t n, int width, int swap, struct ps_sdt_probe *pr, const char **why)
{
	const unsigned char *p = d + 3 * (size_t)width, *end = d + n;

	if (n < 3 * (size_t)width + 3) {
		*why = "shorter than its three addresses and three strings";
		return -1;
	}
	pr->addr = get_addr(d, width, swap);
	pr->base = get_addr(d + width, width, swap);
	pr->sema = get_addr(d + 2 * width, width, swap);
	if (get_str(&p, end, pr->provider, sizeof pr->provider) || !pr->provider[0]) {
		*why = "its provider is empty, unterminated or longer than 63 bytes";
		return -1;
	}
	if (get_str(&p, end, pr->name, sizeof pr->name) || !pr->name[0]) {
		*why = "its name is empty, unterminated or longer than 63 bytes";
		return -1;
	}
	if (get_str(&p, end, pr->argstr, sizeof pr->argstr)) {
		*why = "its argument string is unterminated or longer than 511 bytes";
		return -1;
	}
	return 0;
}

/* Grow @s by one probe; NULL when out of memory. */
static struct ps_sdt_probe *append(struct ps_sdt_set *s, size_t *cap)
{
	struct ps_sdt_probe *np = ps_grow(s->probes, cap, s->n, sizeof *np, 16);

	if (!np)
		return NULL;
	s->probes = np;
	memset(&s->probes[s->n], 0, sizeof s->probes[s->n]);
	return &s->probes[s->n++];
}

/* Every note of section @scn (an SHT_NOTE) into @out. */
static int read_notes(Elf *elf, Elf_Scn *scn, const char *what, struct ps_sdt_set *out, struct ps_error *err)
{
	GElf_Shdr bsh;
	uint64_t base_addr = 0;
	int has_base = section(elf, ".stapsdt.base", &bsh) != NULL;
	int width = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
	const char *ident = elf_getident(elf, NULL);
	int host_le = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
	int swap = ident && (ident[EI_DATA] == ELFDATA2LSB) != host_le;
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, next, name_off, desc_off, cap = 0;
	int idx = 0;
	GElf_Nhdr nh;

	if (has_base)
		base_addr = bsh.sh_addr;
	if (!data)
		return ps_error_set(err, PS_EUSAGE, "%s: cannot read .note.stapsdt: %s", what, elf_errmsg(-1));
	while (off < data->d_size && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *why = NULL;
		struct ps_sdt_probe *pr;

		off = next;
		if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
		    memcmp((const char *)data->d_buf + name_off, "stapsdt", 8))
			continue;
		idx++;
		if (!(pr = append(out, &cap)))
			return ps_error_set(err, ENOMEM, "%s: out of memory reading its SDT notes", what);
		if (parse_desc((const unsigned char *)data->d_buf + desc_off, nh.n_descsz, width, swap, pr, &why))
			return ps_error_set(err, PS_EUSAGE, "%s: SDT note #%d in .note.stapsdt is malformed: %s", what,
					    idx, why);
		if (has_base && pr->base) {
			pr->addr += base_addr - pr->base;
			if (pr->sema)
				pr->sema += base_addr - pr->base;
		}
		if (ps_elf_file_offset(elf, pr->addr, &pr->offset))
			return ps_error_set(
			    err, PS_EUSAGE,
			    "%s: SDT note #%d (%s:%s) is malformed: its site 0x%llx is in no loaded part "
			    "of the file",
			    what, idx, pr->provider, pr->name, (unsigned long long)pr->addr);
		if (pr->sema && ps_elf_file_offset(elf, pr->sema, &pr->sema_offset))
			return ps_error_set(
			    err, PS_EUSAGE,
			    "%s: SDT note #%d (%s:%s) is malformed: its semaphore 0x%llx is in no loaded "
			    "part of the file",
			    what, idx, pr->provider, pr->name, (unsigned long long)pr->sema);
		pr->nargs = ps_sdt_parse_args(pr->argstr, pr->args, PS_SDT_MAX_ARGS, NULL);
	}
	if (off < data->d_size && data->d_size - off >= sizeof(Elf32_Nhdr))
		return ps_error_set(
		    err, PS_EUSAGE,
		    "%s: SDT note #%d in .note.stapsdt is malformed: its sizes run past the section's end", what,
		    idx + 1);
	return 0;
}

static int read_elf(Elf *elf, const char *what, struct ps_sdt_set *out, struct ps_error *err)
{
	GElf_Shdr sh;
	Elf_Scn *scn;

	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) == ELFCLASSNONE)
		return ps_error_set(err, PS_EUSAGE, "%s is not an ELF file", what);
	scn = section(elf, ".note.stapsdt", &sh);
	if (!scn)
		return 0;
	if (sh.sh_type != SHT_NOTE)
		return ps_error_set(err, PS_EUSAGE, "%s: .note.stapsdt is malformed: it is not a note section", what);
	return read_notes(elf, scn, what, out, err);
}

/* Finish a read: on failure nothing stays allocated. */
static int finish(int rc, struct ps_sdt_set *out)
{
	if (rc < 0)
		ps_sdt_free(out);
	return rc < 0 ? -1 : 0;
}

int ps_sdt_read(const char *path, struct ps_sdt_set *out, struct ps_error *err)
{
	struct ps_elf_file *f;
	int rc;

	memset(out, 0, sizeof *out);
	if (ps_elf_open(&f, path, err))
		return -1;
	rc = read_elf(f->elf, path, out, err);
	ps_elf_close(f);
	return finish(rc, out);
}

int ps_sdt_read_mem(const void *data, size_t size, const char *what, struct ps_sdt_set *out, struct ps_error *err)
{
	Elf *elf;
	int rc;

	memset(out, 0, sizeof *out);
	if (elf_version(EV_CURRENT) == EV_NONE)
		return ps_error_set(err, PS_EUSAGE, "libelf: %s", elf_errmsg(-1));
	elf = elf_memory((char *)data, size);
	rc = read_elf(elf, what, out, err);
	elf_end(elf);
	return finish(rc, out);
}

void ps_sdt_free(struct ps_sdt_set *s)
{
	free(s->probes);
	s->probes = NULL;
	s->n = 0;
}

size_t ps_sdt_count(const struct ps_sdt_set *s, const char *provider, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += !strcmp(s->probes[i].provider, provider) && !strcmp(s->probes[i].name, name);
	return n;
}

const struct ps_sdt_probe *ps_sdt_find(const struct ps_sdt_set *s, const char *provider, const char *name,
				       const char *path, struct ps_error *err)
{
	char typed[2 * PS_SDT_NAME_MAX + 2], known[2 * PS_SDT_NAME_MAX + 2], out[4][128], hint[600];
	struct ps_suggest sg;

	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->probes[i].provider, provider) && !strcmp(s->probes[i].name, name))
			return &s->probes[i];
	if (!s->n) {
		ps_error_set(err, PS_ENOTFOUND,
			     "%s has no SDT probes (no .note.stapsdt: it was built without <sys/sdt.h> probes)", path);
		return NULL;
	}
	snprintf(typed, sizeof typed, "%s:%s", provider, name);
	ps_suggest_init(&sg, typed, out, 4);
	for (size_t i = 0; i < s->n; i++) {
		struct ps_sdt_set before = {s->probes, i};
		if (ps_sdt_count(&before, s->probes[i].provider, s->probes[i].name))
			continue; /* a probe with several sites is offered once */
		snprintf(known, sizeof known, "%s:%s", s->probes[i].provider, s->probes[i].name);
		ps_suggest_add(&sg, known);
	}
	ps_suggest_text(&sg, hint, sizeof hint);
	ps_error_set(err, PS_ENOTFOUND, "no SDT probe '%s' in %s%s (perfsh --list sdt %s lists them)", typed, path,
		     hint, path);
	return NULL;
}
