/* core/catch/marker/inproc_lib.h - a function of a shared library as a site of the agent
 * (--backend inproc), checked before the program runs (inproc_lib.c). */
#ifndef PS_INPROC_LIB_H
#define PS_INPROC_LIB_H

#include <sys/types.h>

#include "catcher.h"
#include "markshm.h"

/**
 * ps_inproc_lib_site() - the site for point @p of process @pid (held before its loader has
 * run): the entry of a function in the library file @p->path its loader will map, checked as
 * the agent will patch it (ps_site_reloc()).
 * @out: on success, its link-time address and size, the file's device and inode, the flag
 *       PS_MSHM_SITE_LIB and the name (the region's spec); the agent finds the library among
 *       those mapped before main() and patches the entry there
 * @err: PS_ENEEDS_UPROBE and one line ending in what to use instead for what the agent does
 *       not do: a program or library with an unwinder linked in, a sanitizer build, a site the
 *       relocation refuses
 *
 * Return: 0, or -1 with @err set.
 */
int ps_inproc_lib_site(const struct ps_catch_env *env, pid_t pid, const struct ps_catch_point *p,
		       struct ps_mshm_site *out, struct ps_error *err);

#endif
