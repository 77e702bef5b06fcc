/* core/catch/marker/markblock.h - the block perfsh shares with the marker library, made. */
#ifndef PS_MARKBLOCK_H
#define PS_MARKBLOCK_H

#include <stddef.h>

#include "catcher.h"
#include "markshm.h"

/**
 * ps_mshm_make() - a memfd laid out as markshm.h says for @env's events, every slot's ring
 * empty, the policy "every hit", mapped.
 * @grow:   the rings have room for records of PS_MAX_EVENTS values, so that the events and
 *          groups may change before the program runs (ps_mshm_events())
 * @fdp, @ctlp, @bytesp: receive the memfd, the mapping and its size (set as soon as made:
 *          the caller releases them on every path)
 *
 * Return: 0, or -1 with @err set.
 */
int ps_mshm_make(const struct ps_catch_env *env, int grow, int *fdp, struct ps_mshm_ctl **ctlp, size_t *bytesp,
		 struct ps_error *err);

/**
 * ps_mshm_events() - @env's events and groups written into block @c ("a,b;c": groups split by
 * ';'), with the size of a record (every event's value, then the enabled and running times of
 * each group after the first), every slot's ring emptied for it. Before the program runs only.
 *
 * Return: 0, or -1 with @err set (rings with no room for such records).
 */
int ps_mshm_events(const struct ps_catch_env *env, struct ps_mshm_ctl *c, struct ps_error *err);

#endif
