/* splitters.h - exact, balanced partitioning of distributed sorted data.
 *
 * Every rank holds a locally sorted sequence of elements whose composite keys are unique
 * across the job and compare with memcmp (dsort builds them as normalised key, then source
 * rank, then position, so that equal keys still have a strict order - see docs/design.md).
 * dsort_splitters_cut finds, for every destination rank j, how many of the local elements
 * go to ranks < j, such that rank j receives exactly the elements of global ranks
 * [floor(j*N/p), floor((j+1)*N/p)): the output is balanced to within one element whatever
 * the key distribution, duplicates included.
 *
 * Method: a simultaneous multi-way selection, distributed: splitter j (1 <= j < p, the cut
 * before rank j's first element) is owned by rank j. Each rank keeps, per splitter, a window of its
 * elements that may still be on either side. A round is one Alltoall and one Allgather: every rank
 * sends the owner of every splitter one report - its counts below and up to the current pivot, and
 * the size and median of its window's part below and of its part above the pivot (the next
 * proposal either way); the owner sums the counts, which settle the cut or tell the side, and
 * takes the weighted median of that side's proposals as the next pivot; the decisions and
 * pivots of all splitters are all-gathered (one byte and one key per rank), and every rank
 * narrows its windows and binary-searches the new pivots in them. At least a quarter of each
 * window goes per round: O(log N) rounds (the first decides a virtual pivot above every key).
 * Per rank and round: O(p * key_size) bytes sent and received, O(p log n) work (the owner's
 * O(p log p) sort of p proposals included), O(p * key_size) memory (dsort_splitters_memory).
 *
 * Collective over comm. Returns DSORT_OK; DSORT_ENOMEM on every rank if any rank cannot
 * allocate its state; DSORT_EINTERNAL if the composite keys turn out not to be unique (on
 * every rank when the selection finds it, else where the cuts are not monotone: callers agree
 * afterwards).
 */
#ifndef DSORT_SPLITTERS_H
#define DSORT_SPLITTERS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct dsort_splitter_keys {
    uint64_t n;      /* local sorted elements */
    size_t key_size; /* bytes of a composite key; the same on every rank */
    /* Write the composite key of the i-th local element (0 <= i < n) to out. */
    void (*key_at)(const void *ctx, uint64_t i, unsigned char *out);
    const void *ctx;
};

/* cuts must hold size+1 entries: on return, local elements [cuts[j], cuts[j+1]) go to rank j.
 * *rounds (if not NULL) gets the number of selection rounds. */
enum dsort_status dsort_splitters_cut(MPI_Comm comm, const struct dsort_splitter_keys *src,
                                      uint64_t *cuts, int *rounds, struct dsort_error *err);

/* Sampled splitters (the out-of-core pipeline: the data is not all in memory when they must
 * be chosen). Every rank gives n sample keys of key_size bytes (memcmp order, unique across
 * the job: composite keys); the keys are gathered on rank 0 in the key's own MPI datatype (so
 * that int counts hold any key size), sorted, and splitter j (1 <= j < p) is the sample at
 * j*N/p: every rank then owns an equal share of the samples. splitters (p-1 keys) is the same
 * on every rank on return; with no samples anywhere it is all zero bytes. Collective; returns
 * DSORT_OK or DSORT_ENOMEM (on rank 0 only: callers agree afterwards, as for _cut). */
enum dsort_status dsort_splitters_sample(MPI_Comm comm, const unsigned char *keys, uint64_t n,
                                         size_t key_size, unsigned char *splitters,
                                         struct dsort_error *err);
/* Local: how many sample keys a rank of n elements gives, so that rank 0 holds at most
 * cap_bytes of all ranks' keys: at most per_rank, fewer for long keys or many ranks, but at
 * least 16 (or n, when n is smaller). */
uint64_t dsort_splitters_sample_count(uint64_t n, int p, size_t key_size, uint64_t per_rank,
                                      uint64_t cap_bytes);

/* Local: the bytes dsort_splitters_cut allocates at p ranks for composite keys of key_size
 * bytes (a report of two keys to and from every rank, one pivot from every rank and the
 * per-splitter windows: O(p * key_size), so that callers can count it against the memory
 * budget). */
uint64_t dsort_splitters_memory(int p, size_t key_size);

#endif
