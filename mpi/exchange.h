/* exchange.h - the all-to-all that moves every record once.
 *
 * Open MPI 4.1 counts and displacements are int, so MPI_Alltoallv cannot move 2 GiB to one
 * peer or address a receive buffer beyond 2 GiB. This exchange instead moves data in rounds
 * of point-to-point messages of at most `chunk` bytes per pair, addressed by pointers, so
 * that any size works; all pairs proceed concurrently within a round. The piece from source
 * rank s lands in recvbuf at the sum of recvcounts[0..s), so pieces arrive in rank order.
 *
 * Collective over comm. Counts are in bytes and must match pairwise (what i sends to j is
 * what j expects from i: use dsort_exchange_counts to get them). Returns DSORT_EIO with MPI's
 * error text if a transfer fails.
 */
#ifndef DSORT_EXCHANGE_H
#define DSORT_EXCHANGE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Default largest message: 256 MiB. */
#define DSORT_EXCHANGE_CHUNK ((size_t)256 << 20)

/* Collective: recvcounts[s] := what rank s will send us (sendcounts[] of every rank). */
enum dsort_status dsort_exchange_counts(MPI_Comm comm, const uint64_t *sendcounts,
                                        uint64_t *recvcounts, struct dsort_error *err);

/* Collective: move the pieces. sendbuf holds the pieces for ranks 0..p-1 back to back.
 * chunk must be in [1, INT_MAX]. *rounds (if not NULL) gets the number of rounds. */
enum dsort_status dsort_exchange_run(MPI_Comm comm, const unsigned char *sendbuf,
                                     const uint64_t *sendcounts, unsigned char *recvbuf,
                                     const uint64_t *recvcounts, size_t chunk, int *rounds,
                                     struct dsort_error *err);

/* Collective: as dsort_exchange_run, with explicit byte displacements of each piece in sendbuf
 * and recvbuf (NULL: back to back in rank order). */
enum dsort_status dsort_exchange_runv(MPI_Comm comm, const unsigned char *sendbuf,
                                      const uint64_t *sendcounts, const uint64_t *sdispls,
                                      unsigned char *recvbuf, const uint64_t *recvcounts,
                                      const uint64_t *rdispls, size_t chunk, int *rounds,
                                      struct dsort_error *err);

#endif
