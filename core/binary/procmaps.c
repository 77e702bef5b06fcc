/* core/binary/procmaps.c - the one reader of /proc/PID/maps and /proc/PID/status, load biases, and
 * addresses to file offsets (see procmaps.h). */
#include "procmaps.h"

#include "elffile.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ps_map_parse(char *line, struct ps_map *m)
{
	unsigned long long lo, hi, off;
	int pos = 0;

	if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off, &pos) < 3 || !pos)
		return -1;
	line[strcspn(line, "\n")] = '\0';
	m->lo = lo;
	m->hi = hi;
	m->off = off;
	m->path = line + pos;
	return 0;
}

/* Call @fn for each mapping of process @pid (0: this one) until it returns nonzero. 0, or -1
   with @err set. */
static int maps_each(pid_t pid, int (*fn)(void *ud, const struct ps_map *m), void *ud, struct ps_error *err)
{
	char fname[64], *line = NULL;
	size_t cap = 0;
	struct ps_map m;
	FILE *f;

	if (pid)
		snprintf(fname, sizeof fname, "/proc/%d/maps", (int)pid);
	else
		snprintf(fname, sizeof fname, "/proc/self/maps");
	if (!(f = fopen(fname, "re"))) {
		int e = errno;
		return ps_error_set(err, e, "cannot read %s: %s", fname, strerror(e));
	}
	while (getline(&line, &cap, f) > 0)
		if (!ps_map_parse(line, &m) && fn(ud, &m))
			break;
	free(line);
	fclose(f);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* How well mapped file @path matches @want: 2 exactly, 1 as a prefix ("libc"), 0 not. */
static int lib_match(const char *path, const char *want, int by_path, int how)
{
	const char *b = base_name(path);
	size_t n = strlen(want);

	if (by_path)
		return strcmp(path, want) == 0 ? 2 : 0;
	if (strcmp(b, want) == 0)
		return 2;
	return how == PS_MAPS_PREFIX && strncmp(b, want, n) == 0 && (b[n] == '.' || b[n] == '-');
}

int ps_lib_name_match(const char *path, const char *want, int how)
{
	return lib_match(path, want, strchr(want, '/') != NULL, how);
}

/* Append basename of @path to @list unless present (a comma-separated list). */
static void list_add(char *list, size_t n, const char *path)
{
	const char *b = base_name(path);
	size_t blen = strlen(b), used = strlen(list);
	const char *p = list;

	while ((p = strstr(p, b))) {
		if ((p == list || p[-1] == ' ') && (p[blen] == ',' || p[blen] == '\0'))
			return;
		p += blen;
	}
	if (used + blen + 3 < n)
		snprintf(list + used, n - used, "%s%s", used ? ", " : "", b);
}

struct find {
	const char *want;
	int by_path, how, best_q;
	char best[1024], other[1024], libs[256];
};

static int find_one(void *ud, const struct ps_map *m)
{
	struct find *f = ud;
	int q;

	if (m->path[0] != '/')
		return 0;
	if (strstr(base_name(m->path), ".so"))
		list_add(f->libs, sizeof f->libs, m->path);
	if (m->off != 0 || (q = lib_match(m->path, f->want, f->by_path, f->how)) == 0 || q < f->best_q)
		return 0;
	if (q > f->best_q) {
		f->best_q = q;
		f->other[0] = '\0';
		snprintf(f->best, sizeof f->best, "%s", m->path);
	} else if (strcmp(m->path, f->best) != 0) {
		snprintf(f->other, sizeof f->other, "%s", m->path);
	}
	return 0;
}

int ps_maps_find(pid_t pid, const char *want, int how, char *path, size_t n, struct ps_error *err)
{
	struct find f = {.want = want, .by_path = 1, .how = how};
	char exe[1024];

	if (!want) {
		char fname[64];
		ssize_t k;
		snprintf(fname, sizeof fname, "/proc/%d/exe", (int)pid);
		if ((k = readlink(fname, exe, sizeof exe - 1)) < 0) {
			int e = errno;
			return ps_error_set(err, e, "cannot read %s: %s", fname, strerror(e));
		}
		exe[k] = '\0';
		f.want = exe;
	} else {
		f.by_path = strchr(want, '/') != NULL;
	}
	if (maps_each(pid, find_one, &f, err))
		return -1;
	if (!f.best_q)
		return ps_error_set(err, PS_ENOTFOUND, "'%s' is not mapped in process %d%s%s%s", f.want, (int)pid,
				    f.libs[0] ? " (mapped: " : "", f.libs, f.libs[0] ? ")" : "");
	if (f.other[0])
		return ps_error_set(err, PS_EUSAGE, "'%s' matches several mapped files: %s, %s (give the full name)",
				    f.want, base_name(f.best), base_name(f.other));
	if (strlen(f.best) >= n)
		return ps_error_set(err, ENAMETOOLONG, "path too long: %s", f.best);
	strcpy(path, f.best);
	return 0;
}

int ps_elf_load_base(const char *path, uint64_t *vaddr, uint64_t *off, struct ps_error *err)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct ps_elf_file *f;
	size_t nph = 0;
	int found = 0;

	if (ps_elf_open(&f, path, err))
		return -1;
	if (elf_getphdrnum(f->elf, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (!found || ph.p_vaddr < *vaddr)) {
				*vaddr = ph.p_vaddr;
				*off = ph.p_offset;
				found = 1;
			}
		}
	}
	ps_elf_close(f);
	if (!found)
		return ps_error_set(err, PS_EUSAGE, "%s is not an ELF file with loadable segments", path);
	*vaddr &= ~(page - 1);
	*off &= ~(page - 1);
	return 0;
}

int ps_elf_file_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
{
	Elf_Scn *scn = NULL;
	GElf_Phdr ph;
	GElf_Shdr sh;
	size_t n;

	if (elf_getphdrnum(elf, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
			    vaddr - ph.p_vaddr < ph.p_filesz) {
				*off = vaddr - ph.p_vaddr + ph.p_offset;
				return 0;
			}
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) && sh.sh_type != SHT_NOBITS &&
		    vaddr >= sh.sh_addr && vaddr - sh.sh_addr < sh.sh_size) {
			*off = vaddr - sh.sh_addr + sh.sh_offset;
			return 0;
		}
	return -1;
}

struct holder {
	uint64_t addr, off;
	char *path;
	size_t n;
	int found;
};

static int holder_one(void *ud, const struct ps_map *m)
{
	struct holder *h = ud;

	if (h->addr < m->lo || h->addr >= m->hi)
		return 0;
	if (m->path[0] == '/' && strlen(m->path) < h->n) {
		snprintf(h->path, h->n, "%s", m->path);
		h->off = h->addr - m->lo + m->off;
		h->found = 1;
	}
	return 1;
}

int ps_maps_file_offset(pid_t pid, uint64_t addr, char *path, size_t n, uint64_t *off, struct ps_error *err)
{
	struct holder h = {.addr = addr, .path = path, .n = n};

	if (maps_each(pid, holder_one, &h, err))
		return -1;
	if (!h.found)
		return ps_error_set(err, PS_ENOTFOUND, "0x%llx is not in a mapped file of process %d",
				    (unsigned long long)addr, (int)(pid ? pid : getpid()));
	*off = h.off;
	return 0;
}

struct lowest {
	const char *path;
	uint64_t off, lo;
	int found;
};

static int lowest_one(void *ud, const struct ps_map *m)
{
	struct lowest *l = ud;

	if (m->off == l->off && strcmp(m->path, l->path) == 0 && (!l->found || m->lo < l->lo)) {
		l->lo = m->lo;
		l->found = 1;
	}
	return 0;
}

int ps_maps_bias(pid_t pid, const char *path, uint64_t *bias, struct ps_error *err)
{
	struct lowest l = {.path = path};
	uint64_t vaddr = 0;

	if (ps_elf_load_base(path, &vaddr, &l.off, err) || maps_each(pid, lowest_one, &l, err))
		return -1;
	if (!l.found)
		return ps_error_set(err, PS_ENOTFOUND, "'%s' is not mapped in process %d", path, (int)pid);
	*bias = l.lo - vaddr;
	return 0;
}

int ps_proc_status(pid_t pid, const char *key, char *val, size_t n)
{
	char path[64], line[512];
	size_t klen = strlen(key);
	int rc = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (rc && fgets(line, sizeof line, f)) {
		if (strncmp(line, key, klen) != 0 || line[klen] != ':')
			continue;
		const char *v = line + klen + 1 + strspn(line + klen + 1, " \t");
		snprintf(val, n, "%.*s", (int)strcspn(v, "\n"), v);
		rc = 0;
	}
	fclose(f);
	return rc;
}
