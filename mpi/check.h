/* check.h - distributed validation of a record sequence (dsort -c, dsort-validate).
 *
 * The inputs, concatenated in order, are cut into near-equal record ranges, one per rank.
 * Each rank reads its range in large blocks and summarises it (src/validate.h); rank 0
 * appends the summaries in rank order, which also checks the boundaries between ranges, and
 * broadcasts the total. Collective over c->comm; agrees internally, so every rank returns
 * the same status (the lowest failing rank has printed the error line).
 */
#ifndef DSORT_CHECK_H
#define DSORT_CHECK_H

#include "comm.h"
#include "io.h"
#include "validate.h"

/* total must be initialised (dsort_vsum_init) for fmt. block is the read size in bytes. */
enum dsort_status dsort_check_inputs(const struct dsort_comm *c, const struct dsort_inputs *in,
                                     const struct dsort_format *fmt, const struct dsort_order *ord,
                                     size_t block, struct dsort_vsum *total,
                                     struct dsort_error *err);

/* One file's figures: its records and their valsort checksum (what a -O manifest lists). */
struct dsort_file_sum {
    uint64_t records;
    struct dsort_sum128 sum;
};

/* dsort_check_inputs that also gives each input file's figures in files (in->count entries,
 * the same on every rank; NULL: not wanted). The data is read once. */
enum dsort_status dsort_check_inputs_files(const struct dsort_comm *c,
                                           const struct dsort_inputs *in,
                                           const struct dsort_format *fmt,
                                           const struct dsort_order *ord, size_t block,
                                           struct dsort_vsum *total, struct dsort_file_sum *files,
                                           struct dsort_error *err);

/* Collective: add up the ranks' figures of n files (each rank saw some records of some files)
 * into f on every rank. */
void dsort_check_sum_files(const struct dsort_comm *c, struct dsort_file_sum *f, size_t n);

/* Node-local layout (dsort-validate --local-inputs): each node has some of the paths (a
 * directory stands for its part-* files); the sequence is all nodes' files in (path index,
 * name) order. Each file is checked whole by a rank of the node that has it; rank 0 appends
 * the summaries in order. A name found on two nodes, or a path found on none, is an error.
 * Collective; agrees. */
enum dsort_status dsort_check_local(const struct dsort_comm *c, char *const *paths, size_t n,
                                    const struct dsort_format *fmt, const struct dsort_order *ord,
                                    size_t block, struct dsort_vsum *total, uint64_t *files,
                                    struct dsort_error *err);

#endif
