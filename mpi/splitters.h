/* splitters.h - exact, balanced partitioning of distributed sorted data, and splitters
 * selected over distributed samples (below: dsort_splitters_select, _sample).
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
 * allocate its state; DSORT_EINTERNAL if the composite keys turn out not to be unique, or
 * change while the rounds run (key_at reading an input that is rewritten meanwhile): on every
 * rank when the selection finds it or has not settled after 4 + 3 * bits(N) rounds (a bound
 * no selection over unchanging unique keys reaches: then no rank spins forever), else where
 * the cuts are not monotone (callers agree afterwards).
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

/* dsort_splitters_cut at given global positions: rank j receives the elements of global ranks
 * [targets[j], targets[j+1]). targets: p+1 entries, the same on every rank, non-decreasing,
 * targets[0] = 0 and targets[p] = the elements on all ranks (else DSORT_EINTERNAL on every
 * rank); NULL is the balanced targets of dsort_splitters_cut. */
enum dsort_status dsort_splitters_cut_at(MPI_Comm comm, const struct dsort_splitter_keys *src,
                                         const uint64_t *targets, uint64_t *cuts, int *rounds,
                                         struct dsort_error *err);

/* Sampled splitters (the out-of-core pipelines: the data is not all in memory when they must
 * be chosen), with no root: every rank keeps its own sample, sorted, and it never leaves the
 * rank. Splitter j (1 <= j < p) is owned by rank j and is selected over the union of the
 * samples (M items) as in dsort_splitters_cut: each round every rank sends every owner one
 * report (its counts of sample items below and up to the owner's pivot, by binary search, and
 * the medians of its window's parts on either side: the histogram of the candidates and the
 * next candidates), one Alltoall; the owners decide and the decisions and new pivots are
 * all-gathered. A splitter settles when the cut at its pivot is within tol * M/p items of its
 * target floor(j*M/p) (tol = 0: exact), or when the target lies inside the pivot's run of
 * equal items (keys that compare equal cannot be split: composite keys make every key unique).
 * At least a quarter of each window goes per round, so rounds <= 2 + log_{4/3} M; in practice
 * about 1 + log2(p / tol) (measured: 13 at p = 8, 15 at p = 32 with tol = 0.002). No rank
 * receives more than any other (the owners' work is O(p log p) a round).
 *
 * Per rank and round: p reports of 32 + 2*slot bytes sent and received (Alltoall) and p
 * decisions of 1 + slot bytes received (Allgather), slot = 8 + the longest sample key of any
 * rank; plus 3 Allreduces of 1-2 integers before the rounds. Memory: O(p * slot).
 *
 * Collective over comm. Returns DSORT_OK with out->keys = p-1 slots (slot j-1: an 8-byte
 * length, then the key of splitter j), the same on every rank, or out->keys NULL when there are
 * no sample items anywhere (or p = 1); DSORT_ENOMEM on every rank if any rank cannot allocate;
 * DSORT_EINVAL on every rank if a key is longer than 1 GiB; DSORT_EINTERNAL on every rank if
 * the selection has not settled after 4 + 3 * bits(M) rounds (it cannot, unless cmp is not a
 * consistent order: a bound, so that no rank ever spins). */
struct dsort_sample_items {
    uint64_t n;     /* local sample items, sorted by cmp */
    size_t key_max; /* the longest key (bytes) of this rank's items */
    /* Write item i's key to out (at most key_max bytes); return its length. */
    size_t (*key_at)(const void *ctx, uint64_t i, unsigned char *out);
    /* <0, 0, >0: item i against a key written by key_at. */
    int (*cmp_at)(const void *ctx, uint64_t i, const unsigned char *key, size_t len);
    /* Two keys written by key_at (the owners order the proposals). */
    int (*cmp)(const void *ctx, const unsigned char *a, size_t alen, const unsigned char *b,
               size_t blen);
    const void *ctx;
    /* 0: every item counts one. Else the records this rank's items stand for (its share, of
     * which they are a uniform sample; at least n): the counts, the targets and tol are then in
     * records, each item weighing represents/n, so that ranks whose shares differ in size
     * (node-local inputs) weigh as their shares do, not as their samples. Every rank sets it, or
     * none. */
    uint64_t represents;
};

struct dsort_sampled {
    unsigned char *keys; /* p-1 slots, or NULL */
    size_t slot;         /* bytes of a slot: 8 + the longest key */
    uint64_t total;      /* sample items on all ranks (weighted: the records they stand for) */
    int rounds;          /* selection rounds */
};

/* after = 0: items below splitter j go to ranks < j (the cut is before the pivot);
 * after = 1: items up to and including it do. */
enum dsort_status dsort_splitters_select(MPI_Comm comm, const struct dsort_sample_items *src,
                                         int after, double tol, struct dsort_sampled *out,
                                         struct dsort_error *err);
void dsort_sampled_free(struct dsort_sampled *out);

/* dsort_splitters_select for fixed-size memcmp keys (composite keys, unique across the job):
 * every rank gives n sample keys of key_size bytes (any order; copied and sorted here) drawn
 * from its share of represents records (0: unweighted, M counts the keys; else M counts the
 * records, each key weighing represents/n: dsort_sample_items); splitter j (1 <= j < p) is the
 * key that has within tol * M/p of j*M/p below it (tol = 0: exactly floor(j*M/p), as a sort of
 * all samples would give). splitters (p-1 keys)
 * is the same on every rank on return; with no samples anywhere it is all zero bytes. *rounds
 * (if not NULL) gets the selection rounds. Collective; errors as dsort_splitters_select's (on
 * every rank). */
enum dsort_status dsort_splitters_sample(MPI_Comm comm, const unsigned char *keys, uint64_t n,
                                         uint64_t represents, size_t key_size, double tol,
                                         unsigned char *splitters, int *rounds,
                                         struct dsort_error *err);
/* Local: how many sample keys a rank of n elements gives, so that the p ranks' keys take at
 * most cap_bytes (p = 1: the rank's own, as dsort_splitters_sample holds them): at most
 * per_rank, fewer for long keys or many ranks, but at least 16 (or n, when n is smaller). */
uint64_t dsort_splitters_sample_count(uint64_t n, int p, size_t key_size, uint64_t per_rank,
                                      uint64_t cap_bytes);

/* Local: the bytes dsort_splitters_cut allocates at p ranks for composite keys of key_size
 * bytes (a report of two keys to and from every rank, one pivot from every rank and the
 * per-splitter windows: O(p * key_size), so that callers can count it against the memory
 * budget). */
uint64_t dsort_splitters_memory(int p, size_t key_size);

#endif
