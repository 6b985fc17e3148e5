/* budget.h - the memory budget of one rank, and why it is what it is.
 *
 * -S/--memory SIZE takes bytes with K/M/G/T suffixes, or "N%" of the memory the node's ranks
 * may use, shared by them. Without it: inside a Slurm allocation, 80% of the job's memory on
 * this node (SLURM_MEM_PER_NODE, or SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE) shared by the
 * node's ranks; elsewhere, 75% of physical memory shared by the node's ranks.
 *
 * The memory limit of the process's cgroup (a container, a Slurm step, a systemd slice: the
 * node's ranks share it) caps all of these: where it is below the memory the rule above starts
 * from (node memory, or Slurm's figure), the budget is 75% of the cgroup limit (N% for -S N%)
 * shared by the node's ranks, and `why` says so. -S SIZE is taken as given. Local.
 */
#ifndef DSORT_BUDGET_H
#define DSORT_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct dsort_budget {
    uint64_t bytes;
    char why[200]; /* e.g. "-S 512M", "default: 75% of 23.5 GiB node memory / 2 ranks" */
};

/* text may be NULL (no -S). node_memory is the node's physical memory in bytes. The cgroup
 * limit is read from the real /proc and /sys (dsort_budget_cgroup_limit(NULL, ...)). */
enum dsort_status dsort_budget_resolve(const char *text, uint64_t node_memory, int node_ranks,
                                       struct dsort_budget *b, struct dsort_error *err);

/* dsort_budget_resolve with the cgroup files read under root (see below; for tests). */
enum dsort_status dsort_budget_resolve_at(const char *root, const char *text, uint64_t node_memory,
                                          int node_ranks, struct dsort_budget *b,
                                          struct dsort_error *err);

/* The memory limit in bytes of the cgroup this process is in, the smallest of its own and its
 * ancestors'; 0 when there is none (no cgroup, no memory controller, "max", unreadable files).
 * Files are read under root: NULL or "" for the real ones, else a directory holding a fake
 * tree (root/proc/self/cgroup, root/proc/self/mountinfo, root/sys/fs/cgroup/...), in the way
 * of hwloc's HWLOC_FSROOT.
 *   cgroup v2: the "0::PATH" line of /proc/self/cgroup; PATH under the cgroup2 mount (from
 *     /proc/self/mountinfo; /sys/fs/cgroup without one); memory.max of PATH and of each parent
 *     up to the mount ("max": none).
 *   cgroup v1: the line of the memory controller ("N:memory:PATH", or with other controllers
 *     "N:cpu,memory:PATH"); PATH under the v1 memory mount (mountinfo; /sys/fs/cgroup/memory
 *     without one); memory.limit_in_bytes of PATH and of each parent up to the mount, and
 *     hierarchical_memory_limit in PATH's memory.stat (values of 2^62 and more: none).
 * Both are read when both are there; the smallest limit wins. If version is not NULL it
 * receives 1 or 2 (the version of the smallest limit) or 0. Local; never fails. */
uint64_t dsort_budget_cgroup_limit(const char *root, int *version);

#endif
