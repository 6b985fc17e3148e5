/* job_space.h - what the job will need before it reads anything: in memory or out of core,
 * mapped or copied, and the bytes it will write to each file system (the output, the runs
 * spilled under the -T dirs) against what is free there. The preflight refuses a job that
 * cannot fit, within a second instead of after hours; --plan prints the same figures.
 *
 * Estimates (made from the input sizes and the memory plan alone, nothing read):
 *   - the output: the input's bytes (text lines: one eol more per file, which may lack its
 *     last one). -o FILE and -O DIR are on a file system that every rank sees: the whole size
 *     is needed there once. Node-local -O DIR (and standard output's node-local parts): each
 *     rank needs its share on its node's file system;
 *   - the spill, out of core only (fixed records: the budget does not hold the share; text
 *     lines: the share alone does not fit a third of the budget, see memplan.h; shorter lines
 *     are known only after sampling, so the estimate may say "in memory" where the job will
 *     spill): the rank's share as the runs hold it (typed keys: widened records, normkey ||
 *     record, job_typed.h; the output and the share read have the user's records), plus a 32nd
 *     and 1 MiB of margin, spread over the distinct file systems of its -T dirs as the runs are
 *     striped (tempdir.h). In memory or out of core, and mapped or not, are decided as the
 *     pipelines will (typed keys: by the widened records' need). Runs of short lines
 * with their positions (-s with keys) may take more than the input; the write then fails as before,
 * naming the file and ENOSPC.
 *   - Needs add up per file system: the ranks of a node that share a local file system (same
 *     host and st_dev), and every rank of the job on a network file system (NFS, Lustre,
 *     GPFS, BeeGFS, CephFS, CIFS: recognised by statfs's f_type, and told apart by its type
 *     and size), as well as the output and the temp dirs when they share one.
 * Free: statvfs's f_bavail (what an unprivileged writer may use). The -o file of fixed
 * records is also reserved when it is created (dsort_io_reserve in mpi/output.c), so that what
 * other jobs write meanwhile cannot take its space.
 *
 * DSORT_NO_SPACE_CHECK=1 in rank 0's environment skips the refusal (the figures are still
 * made for --plan): for file systems whose free space statvfs misreports, or a job known to
 * fit (e.g. -u on mostly duplicate lines).
 *
 * Collective over c->comm where marked; the gathered figures live on rank 0 only.
 */
#ifndef DSORT_JOB_SPACE_H
#define DSORT_JOB_SPACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "budget.h"
#include "comm.h"
#include "error.h"
#include "io.h"

struct dsort_job_options;
struct dsort_share;

/* One path the job writes, on one rank: the output (kind 1) or a -T dir (kind 2). */
struct dsort_job_space_use {
    int32_t kind;     /* 0: none, 1: the output, 2: a -T dir */
    int32_t rank;     /* the rank that uses it */
    int32_t errnum;   /* statvfs or stat failed (errno), or the output dir is not writable */
    int32_t writable; /* access(W_OK) of the directory */
    uint64_t need;    /* bytes this rank will write there */
    uint64_t avail;   /* bytes free for us on its file system */
    char key[128];    /* the file system: "HOST:MAJ:MIN" or "net:TYPE:SIZE" (shared) */
    char fstype[16];  /* "ext4", "tmpfs", "nfs", ... or "0x..." */
    char mount[256];  /* its mount point (the highest directory above path on it) */
    char path[256];   /* the output's directory, or the -T dir */
    char host[64];
};

/* One rank's estimate. */
struct dsort_job_space_rank {
    int32_t rank;
    char host[64];
    uint64_t budget; /* its own (the job plans with the smallest of all) */
    char why[200];   /* where the budget comes from: "-S 2M", "default: 75% of ...", cgroup */
    uint64_t share;  /* bytes of input it reads */
    uint64_t spill;  /* bytes of runs it will write (0 in memory; widened with typed keys) */
    uint64_t out;    /* bytes of output it will write */
};

/* One file system, its needs summed over the ranks and paths that use it (rank 0 only). */
struct dsort_job_space_fs {
    struct dsort_job_space_use first; /* the first use of it: path, mount, type, avail */
    uint64_t need;
    int32_t output;                   /* the output is on it */
    int32_t temps;                    /* uses of it as a -T dir (over all ranks) */
    int32_t lo_rank, hi_rank, nranks; /* the ranks that write to it */
};

struct dsort_job_space {
    int external;            /* out of core (agreed; text lines: estimated, see above) */
    int mapped;              /* in memory over the mapped input (job_map.c) */
    int skip;                /* DSORT_NO_SPACE_CHECK on rank 0 */
    uint64_t budget;         /* the smallest budget of all ranks */
    uint64_t output;         /* bytes of output, all ranks */
    const char *output_kind; /* "file", "dir", "node-local dir", "standard output" */
    /* rank 0 only */
    size_t nranks;
    struct dsort_job_space_rank *ranks;
    size_t nuses;
    struct dsort_job_space_use *uses; /* every rank's, in rank order */
    size_t nfs;
    struct dsort_job_space_fs *fs;
};

/* Collective: the estimate over sh (dsort_job_share), b this rank's budget. Fails only for
 * want of memory (agreed: DSORT_ENOMEM on every rank, the failing rank's err set). */
enum dsort_status dsort_job_space_create(const struct dsort_comm *c,
                                         const struct dsort_job_options *o,
                                         const struct dsort_budget *b,
                                         const struct dsort_inputs *in,
                                         const struct dsort_share *sh, struct dsort_job_space *sp,
                                         struct dsort_error *err);
void dsort_job_space_destroy(struct dsort_job_space *sp);

/* Collective: refuse a job that does not fit: 0, or 2 on every rank after one line from the
 * first rank that writes to the file system that lacks space, naming that rank, the file
 * system, the bytes needed and the bytes free. Nothing is created or written. */
int dsort_job_space_check(const struct dsort_comm *c, const struct dsort_job_space *sp);

/* Collective: create, check and destroy: 0, or 2 after the one line (job_space_check) or an
 * agreed failure to estimate. */
int dsort_job_space_preflight(const struct dsort_comm *c, const struct dsort_job_options *o,
                              const struct dsort_budget *b, const struct dsort_inputs *in,
                              const struct dsort_share *sh);

/* Rank 0, for --plan: the figures as text lines, or as the members of a JSON object
 * ("job": {...}, "space": [...], "budgets": [...]) followed by ",\n" (docs/plan.md). */
void dsort_job_space_print(FILE *f, const struct dsort_job_space *sp, int json);

#endif
