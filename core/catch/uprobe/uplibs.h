/* core/catch/uprobe/uplibs.h - the uprobe catcher's regions in libraries the program has not
 * mapped yet (uplibs.c). Private to core/catch/uprobe/. */
#ifndef PS_UPLIBS_H
#define PS_UPLIBS_H

#include <stdint.h>

#include "error.h"
#include "uprobe.h"

struct ps_upcatch;

/* Region @region (pending: the session found it in the file its loader will map) is probed in
   @path at @offset: watch for the program to map that file. 0, or -1 with @err. */
int ps__up_lib_await(struct ps_upcatch *u, const char *path, uint64_t offset, int region, struct ps_error *err);

/* Forget what region @region awaits (its points are disarmed). */
void ps__up_lib_forget(struct ps_upcatch *u, int region);

/* Whether the catcher awaits the mapping of a file. */
int ps__up_lib_awaits(const struct ps_upcatch *u);

/* A thread mapped code of a file (@m): a region awaiting it is no longer pending. */
void ps__up_lib_mapped(struct ps_upcatch *u, const struct ps_uprobe_map *m);

/* After a run or a detach: a region still pending whose name the program gave to another file
   it mapped is dropped, with why (its hits were not caught). */
void ps__up_lib_verdict(struct ps_upcatch *u);

/* Forget the awaited files (the catcher is freed). */
void ps__up_lib_free(struct ps_upcatch *u);

#endif
