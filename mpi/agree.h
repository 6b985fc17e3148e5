/* agree.h - the collectives the layers above mpi/ use, each entered by every rank of its
 * communicator whatever happened on that rank before it.
 *
 * A collective that one rank skips leaves the others waiting in it for ever. So a buffer that
 * a collective fills is allocated here, and the ranks agree that every one of them has its
 * buffer before any of them enters the collective: a failed allocation anywhere makes every
 * rank skip it together. Failures of the MPI calls themselves end the job (dsort_comm_require:
 * the others may be blocked in the collective). Reductions and broadcasts of values take no
 * buffer of their own, so they cannot be skipped for want of one.
 *
 * Everything here is collective over the communicator it names (c->comm unless a comm is
 * passed: c->comm or c->node). Statuses: a helper that allocates returns DSORT_ENOMEM (into err,
 * which may be NULL) on the rank whose allocation failed and DSORT_OK on the others, and its
 * result (*all) is NULL on every rank when any rank failed; the caller then agrees on its own
 * status (dsort_comm_agree), so that the rank that failed is the one that says why.
 */
#ifndef DSORT_AGREE_H
#define DSORT_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"

/* 1 on every rank of comm when every rank passes ok != 0, else 0. No line is printed. */
int dsort_agree_ok(const struct dsort_comm *c, MPI_Comm comm, int ok);

/* The minimum of v over the ranks (the sum and the maximum: comm.h). */
uint64_t dsort_agree_min(const struct dsort_comm *c, uint64_t v);

/* flags[i] = 1 on every rank when any rank's flags[i] is non-zero, else 0 (n entries, the same
 * n on every rank). */
void dsort_agree_any(const struct dsort_comm *c, int *flags, size_t n);

/* out[i] = op over every rank's in[i] (n values of type) on rank root of comm only (out is
 * not written elsewhere and may be NULL there); root < 0: on every rank. what names the step
 * for the message of a failed MPI call. */
void dsort_agree_reduce(const struct dsort_comm *c, MPI_Comm comm, const void *in, void *out,
                        size_t n, MPI_Datatype type, MPI_Op op, int root, const char *what);

/* Rank 0's bytes at buf into buf on every rank (any size: sent in parts below 2^31). */
void dsort_agree_bcast(const struct dsort_comm *c, void *buf, size_t bytes, const char *what);

/* Rank 0's code (an exit code or a status that rank 0 alone decided) on every rank. */
int dsort_agree_code(const struct dsort_comm *c, int code);

/* Every rank of comm has reached this point. */
void dsort_agree_barrier(const struct dsort_comm *c, MPI_Comm comm, const char *what);

/* Every rank's `bytes` bytes at mine, in rank order, into *all: a new buffer of (ranks of
 * comm) x bytes on every rank, to free(). A rank that cannot take part passes mine NULL.
 * Agreed before the gather (see the head of this file): *all NULL on every rank when any rank
 * passed NULL or could not allocate. */
enum dsort_status dsort_agree_allgather(const struct dsort_comm *c, MPI_Comm comm, const void *mine,
                                        size_t bytes, void **all, struct dsort_error *err);

/* The same to rank 0 of c->comm alone: rank 0 alone allocates *all (NULL elsewhere). */
enum dsort_status dsort_agree_gather(const struct dsort_comm *c, const void *mine, size_t bytes,
                                     void **all, struct dsort_error *err);

/* Variable lengths to rank 0 of c->comm: *all gets every rank's len bytes at mine (len 0:
 * mine may be NULL; a rank that cannot take part passes len SIZE_MAX), concatenated in rank
 * order; (*offs)[r] is where rank r's bytes start, (*offs)[size] their total. Both new on rank
 * 0 (to free()), NULL elsewhere, and NULL on every rank after an agreed failure (a rank that
 * could not take part, an allocation, a total of 2^31 bytes or more). */
enum dsort_status dsort_agree_gatherv(const struct dsort_comm *c, const void *mine, size_t len,
                                      void **all, size_t **offs, struct dsort_error *err);

#endif
