/* job_copy.h - the copying path in memory (records read, sent and merged) without a second
 * buffer of the share: at several ranks, splitters from a sample of every share, then the
 * share's first quarter read, its entries sorted (a bucket of the first key byte at a time, as
 * they are wanted) and sent while the rest is read; then the rest sent while the merge writes.
 * The records for the other ranks are gathered in sorted order into a small stage as they are
 * sent (dsort_exchange_gather), the received pieces land in one region beside the entries, and
 * the kept records (through their entries) and the received pieces are merged straight into
 * the output's writer (outsink.h). Memory and layout: job_copy.c's head.
 *
 * For the job_mem.c pipeline's cases without -u (its boundary check wants the whole output in
 * memory) and without typed keys; the exchange is the direct one (the node-aware exchange
 * stages whole pieces: dsort_job_copy_usable says no when it would be taken).
 */
#ifndef DSORT_JOB_COPY_H
#define DSORT_JOB_COPY_H

#include "job.h"

/* Local, the same on every rank: whether dsort_job_sort_copy serves the job. */
int dsort_job_copy_usable(const struct dsort_job_options *o);

/* Collective: as dsort_job_sort_memory (job.h). Returns the exit code after agreeing. */
int dsort_job_sort_copy(const struct dsort_comm *c, const struct dsort_job_options *o,
                        const struct dsort_inputs *in, const struct dsort_share *sh,
                        struct dsort_job_stats *stats);

#endif
