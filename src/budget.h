/* budget.h - the memory budget of one rank, and why it is what it is.
 *
 * -S/--memory SIZE takes bytes with K/M/G/T suffixes, or "N%" of the node's memory shared by
 * the node's ranks. Without it: inside a Slurm allocation, 80% of the job's memory on this
 * node (SLURM_MEM_PER_NODE, or SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE) shared by the node's
 * ranks; elsewhere, 75% of physical memory shared by the node's ranks. Local.
 */
#ifndef DSORT_BUDGET_H
#define DSORT_BUDGET_H

#include <stdint.h>

#include "error.h"

struct dsort_budget {
    uint64_t bytes;
    char why[200]; /* e.g. "-S 512M", "75% of 23.5 GiB node memory / 2 ranks" */
};

/* text may be NULL (no -S). node_memory is the node's physical memory in bytes. */
enum dsort_status dsort_budget_resolve(const char *text, uint64_t node_memory, int node_ranks,
                                       struct dsort_budget *b, struct dsort_error *err);

#endif
