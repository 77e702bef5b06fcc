/* core/catch/marker/markblock.h - the block perfsh shares with the marker library, made. */
#ifndef PS_MARKBLOCK_H
#define PS_MARKBLOCK_H

#include <stddef.h>

#include "catcher.h"
#include "markshm.h"

/**
 * ps_mshm_make() - a memfd laid out as markshm.h says for @env's events, every slot's ring
 * empty, the policy "every hit", mapped.
 * @fdp, @ctlp, @bytesp: receive the memfd, the mapping and its size (set as soon as made:
 *          the caller releases them on every path)
 *
 * Return: 0, or -1 with @err set.
 */
int ps_mshm_make(const struct ps_catch_env *env, int *fdp, struct ps_mshm_ctl **ctlp, size_t *bytesp,
		 struct ps_error *err);

#endif
