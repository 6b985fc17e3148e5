/* job_end.h - the end of every pipeline (job_end.c): -u across the ranks' boundaries, the
 * checks before the commit (inputs unchanged, conservation, --verify) and the commit. Collective
 * and agreed unless marked local: on a failure every rank gets the failing rank's status, which
 * that rank printed, and nothing is committed.
 */
#ifndef DSORT_JOB_END_H
#define DSORT_JOB_END_H

#include <stdint.h>

#include "checksum.h"
#include "comm.h"
#include "format.h"
#include "io.h"

struct dsort_job_options;
struct dsort_job_stats;
struct dsort_output;

/* -u across ranks: drop our first record (of n in out, rec_size bytes each) if its key
 * equals the last key of the nearest non-empty rank before us. Collective; agrees. */
enum dsort_status dsort_job_unique_boundary(const struct dsort_comm *c,
                                            const struct dsort_format *fmt,
                                            const unsigned char *first, const unsigned char *last,
                                            uint64_t n, int *drop_first, struct dsort_error *err);

/* Collective: conservation, always on: the records handed to the writer are the records read
 * (count, and the sum of per-record CRC32C over all ranks; with -u, only that no more were
 * written than read). A mismatch is DSORT_EINTERNAL naming both figures: the caller commits
 * nothing. Agrees. */
enum dsort_status dsort_job_conserve(const struct dsort_comm *c, const struct dsort_job_options *o,
                                     const struct dsort_sum128 *in_sum, uint64_t n_in,
                                     const struct dsort_sum128 *out_sum, uint64_t n_out,
                                     struct dsort_error *err);

/* What a pipeline read and handed to the writer, for the checks before the commit. */
struct dsort_job_sums {
    struct dsort_sum128 sum_in, sum_out; /* valsort's CRC-32 sums (--verify, -O manifests) */
    struct dsort_sum128 con_in, con_out; /* conservation, always: CRC32C sums */
    uint64_t n_in, n_out;                /* records (lines) read and written */
    uint64_t bytes_out;                  /* bytes of this rank's output */
};
/* Local: the mapped pipelines read the input through its mapping to the end, so an input
 * rewritten meanwhile shows up as data that contradicts what was read before (splitters that do
 * not settle, an entry that no longer matches its record or line: DSORT_EINTERNAL). When st is
 * DSORT_EINTERNAL and an input changed since it was opened (dsort_inputs_check_unchanged), err
 * gets that finding instead, which names the file and says that it changed, and its status is
 * returned; else st, err unchanged. Call before agreeing, so that the line printed is this one. */
enum dsort_status dsort_job_blame_input(const struct dsort_inputs *in, enum dsort_status st,
                                        struct dsort_error *err);

/* Collective: the end of every pipeline. The inputs unchanged since they were opened (first:
 * a changed input is why the checks after it would fail), conservation, --verify, then the
 * commit; on any failure the output is abandoned (nothing committed). Returns the exit code:
 * 0, or 2 after an agreed error. */
int dsort_job_finish(const struct dsort_comm *c, const struct dsort_job_options *o,
                     const struct dsort_inputs *in, struct dsort_output *out,
                     const struct dsort_job_sums *s, struct dsort_job_stats *stats,
                     struct dsort_error *err);

/* Collective: check the input and output checksums and counts (--verify). Agrees. */
enum dsort_status dsort_job_verify(const struct dsort_comm *c, const struct dsort_job_options *o,
                                   const struct dsort_sum128 *in_sum, uint64_t n_in,
                                   const struct dsort_sum128 *out_sum, uint64_t n_out,
                                   struct dsort_error *err);

#endif
