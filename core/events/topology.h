/* core/events/topology.h - CPU topology from sysfs: package, die, core and L3 domain of each online CPU. */
#ifndef PS_TOPOLOGY_H
#define PS_TOPOLOGY_H

#include "error.h"

#define PS_TOPO_SYSFS "/sys/devices/system/cpu"

/**
 * struct ps_topo_cpu - where one online CPU sits.  A field is -1 when sysfs does not say
 * (virtual machines often lack die_id and the cache directories).
 * @cpu:     the CPU number.
 * @package: topology/physical_package_id.
 * @die:     topology/die_id.
 * @core:    topology/core_id (SMT siblings share it within a package).
 * @l3:      the L3 cache domain: cache/indexN/id of the level-3 cache, or else the first CPU
 *           of its shared_cpu_list.
 */
struct ps_topo_cpu {
	int cpu, package, die, core, l3;
};

/**
 * ps_topo_read() - read the topology of every online CPU.
 * @root: the sysfs CPU directory (PS_TOPO_SYSFS when NULL); tests pass a fake tree.
 * @out:  set to a malloc'd array in the order of @root/online (increasing); free() it.
 * @n:    set to the number of online CPUs.
 * @err:  filled on failure.
 *
 * Only @root/online is required; a missing per-CPU file gives -1 in that field.
 * Return: 0, or -1 (ENOENT when @root/online cannot be read, EINVAL when it does not parse,
 * ENOMEM).
 */
int ps_topo_read(const char *root, struct ps_topo_cpu **out, int *n, struct ps_error *err);

/**
 * ps_topo_parse_list() - parse a kernel CPU list such as "0-3,8-11\n".
 * @s:    the list (an empty list is allowed).
 * @cpus: filled with the CPU numbers in the order given, or NULL to count only.
 * @max:  room in @cpus.
 *
 * Return: the number of CPUs in the list (which may exceed @max: only @max are stored),
 * or -1 when @s is not a CPU list.
 */
int ps_topo_parse_list(const char *s, int *cpus, int max);

#endif
