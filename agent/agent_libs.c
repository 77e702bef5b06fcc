/* agent/agent_libs.c - functions of shared libraries. perfsh gives such a site as the entry's
 * link-time address in the library's file, with the file's device and inode (it starts the
 * program before its loader has mapped anything). The libraries the program links, and the
 * LD_PRELOADed ones, are mapped before any constructor runs, the agent's included: the agent
 * finds the one whose file is that one among the loaded objects (dl_iterate_phdr) and adds its
 * load bias, checking that the function lies in an executable segment. A library the program
 * loads later with dlopen is not mapped yet: its site is refused, and perfsh says so.
 *
 * The agent calls such functions too (the marker library calls libc's, and libpfm's call
 * more): a call from the agent's own code is not the program's, and the entry hook lets it
 * pass (agent_hooks.c), known by its return address in the agent's code, which is found here. */
#include <link.h>
#include <sys/stat.h>

#include "agent_libs.h"

struct find {
	const struct ps_mshm_site *s;
	uint64_t addr; /* the run-time entry, 0 not found */
	int file;      /* the file was found */
};

static int in_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find *f = data;
	const struct ps_mshm_site *s = f->s;
	struct stat st;

	(void)size;
	if (!info->dlpi_name || !info->dlpi_name[0] || stat(info->dlpi_name, &st) || (uint64_t)st.st_dev != s->dev ||
	    (uint64_t)st.st_ino != s->ino)
		return 0;
	f->file = 1;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && s->addr >= ph->p_vaddr &&
		    s->addr + s->size <= ph->p_vaddr + ph->p_memsz) {
			f->addr = info->dlpi_addr + s->addr;
			break;
		}
	}
	return 1;
}

uint64_t pa_agent_lo __attribute__((visibility("hidden")));
uint64_t pa_agent_len __attribute__((visibility("hidden")));

/* The agent's own executable segment: the one that holds this function. */
static int own_code(struct dl_phdr_info *info, size_t size, void *data)
{
	uint64_t here = (uint64_t)(uintptr_t)own_code;

	(void)size;
	(void)data;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && here >= lo && here - lo < ph->p_memsz) {
			pa_agent_lo = lo;
			pa_agent_len = ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

const char *pa_lib_site(struct ps_mshm_site *s)
{
	struct find f = {.s = s};

	if (!(s->flags & PS_MSHM_SITE_LIB))
		return NULL;
	if (!pa_agent_len)
		dl_iterate_phdr(own_code, NULL);
	dl_iterate_phdr(in_object, &f);
	if (!f.file)
		return "its library is not mapped before main(): one loaded later by dlopen is not patched";
	if (!f.addr)
		return "its entry is not in an executable segment of its library as mapped";
	s->addr = f.addr;
	return NULL;
}
