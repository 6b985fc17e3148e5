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
 * shared by the node's ranks, and `why` says so. -S SIZE is taken as given up to what the node
 * has for each rank (see dsort_budget_resolve). Local.
 */
#ifndef DSORT_BUDGET_H
#define DSORT_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct dsort_budget {
    uint64_t bytes;
    char why[200]; /* e.g. "-S 512M", "default: 75% of 23.5 GiB node memory / 2 ranks" */
    /* A warning for stderr (printed once a node by the caller), "" if none: -S clamped to what
     * the node, the cgroup or the process's limits can give; a Slurm figure that is not a
     * memory size, so not used. */
    char note[400];
};

/* What the budget must fit besides the node: the process's own limits. A limit of 0 is none.
 * used: what the process holds against it now (the MPI library's mappings, which are large
 * under Open MPI), so the budget is resolved after MPI_Init. */
struct dsort_budget_env {
    uint64_t node_memory;           /* the node's physical memory in bytes (0: unknown) */
    int node_ranks;                 /* the ranks on this node, which share it */
    uint64_t as_limit, as_used;     /* RLIMIT_AS (ulimit -v; PBS/Torque's vmem) and VmSize */
    uint64_t data_limit, data_used; /* RLIMIT_DATA (ulimit -d) and VmData + VmStk */
};

/* The process's RLIMIT_AS and RLIMIT_DATA and its use of them now (/proc/self/statm) into env
 * (the other fields are left alone). Local; never fails (unknown: 0). */
void dsort_budget_process_limits(struct dsort_budget_env *env);

/* text may be NULL (no -S). node_memory is the node's physical memory in bytes. The cgroup
 * limit is read from the real /proc and /sys (dsort_budget_cgroup_limit(NULL, ...)), the
 * process's limits by dsort_budget_process_limits.
 *
 * Every budget fits the process's address-space and data limits (RLIMIT_AS, RLIMIT_DATA, as
 * GNU sort's does): at most 3/4 of what they leave beyond what is in use and a reserve for
 * threads and the MPI library (DSORT_BUDGET_RESERVE). -S SIZE beyond the memory that the node
 * (or its cgroup) has for each of its ranks, the default rule's budget is taken instead;
 * beyond what the process's limits leave, the most they allow. Either way `note` says so.
 * SLURM_MEM_PER_NODE (or SLURM_MEM_PER_CPU) that is not a memory size (negative, no number,
 * too large to be one) or is more than the node has is not used; `note` says so. */
enum dsort_status dsort_budget_resolve(const char *text, uint64_t node_memory, int node_ranks,
                                       struct dsort_budget *b, struct dsort_error *err);

/* dsort_budget_resolve with the cgroup files read under root (see below; for tests). */
enum dsort_status dsort_budget_resolve_at(const char *root, const char *text, uint64_t node_memory,
                                          int node_ranks, struct dsort_budget *b,
                                          struct dsort_error *err);

/* dsort_budget_resolve_at with the node and the process's limits given (for tests). */
enum dsort_status dsort_budget_resolve_env(const char *root, const char *text,
                                           const struct dsort_budget_env *env,
                                           struct dsort_budget *b, struct dsort_error *err);

#define DSORT_BUDGET_RESERVE ((uint64_t)64 << 20)

/* A clause naming the process's memory limits that are set now, e.g. "the address-space
 * limit of this process is 1.00 GiB (ulimit -v 1048576), 210 MiB of it in use", into buf;
 * "" if none. For messages about a failed allocation. Local. */
char *dsort_budget_limits_text(char *buf, size_t len);

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
