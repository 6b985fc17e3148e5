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
 * chunk must be in [1, INT_MAX]. *rounds (if not NULL) gets the number of rounds: messages of
 * at most chunk bytes, with every partner, two rounds in flight. */
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

/* Fills dst with len bytes of the piece for rank to, from byte at of that piece on (what a
 * gathering send sends next; at and len are multiples of the unit). */
typedef void (*dsort_exchange_fill_fn)(void *ctx, int to, uint64_t at, size_t len,
                                       unsigned char *dst);

/* Collective: as dsort_exchange_runv, but nothing is sent from a buffer of the pieces: each
 * round, fill gathers the next part of every piece into the stage (stage_len bytes, the
 * caller's, reused by every round) just before it is sent, so that the sender never holds its
 * pieces whole. Two rounds are in flight (as in dsort_exchange_runv), each in its half of the
 * stage: parts are at most chunk bytes and at most stage_len / (2 (p - 1)), rounded down to a
 * multiple of unit (one round at a time, parts of stage_len / (p - 1), when the stage holds
 * fewer than two units a partner; at least one unit: stage_len >= (p - 1) * unit); every rank must
 * pass the same chunk, stage_len and unit. This rank's own piece is not moved (its send and
 * receive counts are ignored). Pieces land in recvbuf at rdispls[s]; each round's part of
 * recvbuf is faulted in (dsort_mem_populate) just before its receive is posted, while the
 * rounds before it are in flight, so a caller need not fault in fresh memory beforehand. */
enum dsort_status dsort_exchange_gather(MPI_Comm comm, dsort_exchange_fill_fn fill, void *ctx,
                                        const uint64_t *sendcounts, unsigned char *recvbuf,
                                        const uint64_t *recvcounts, const uint64_t *rdispls,
                                        unsigned char *stage, size_t stage_len, size_t unit,
                                        size_t chunk, int *rounds, struct dsort_error *err);

/* An exchange that its caller drives, so that it can use what has arrived while the rest is
 * on its way (the copying path merges and writes the received records during the exchange).
 *
 * dsort_exchange_gather_start, collective: as dsort_exchange_gather, but it returns once the
 * first rounds are posted; *flow (NULL on an error, which is agreed) is the exchange, which
 * keeps pointers to fill, ctx, every array and buffer passed: they must stay valid, and the
 * stage and the receiving bytes untouched, until dsort_exchange_flow_finish. */
struct dsort_exchange_flow;
enum dsort_status dsort_exchange_gather_start(struct dsort_exchange_flow **flow, MPI_Comm comm,
                                              dsort_exchange_fill_fn fill, void *ctx,
                                              const uint64_t *sendcounts, unsigned char *recvbuf,
                                              const uint64_t *recvcounts, const uint64_t *rdispls,
                                              unsigned char *stage, size_t stage_len, size_t unit,
                                              size_t chunk, struct dsort_error *err);

/* How dsort_exchange_flow_progress waits. */
enum dsort_exchange_wait {
    DSORT_EXCHANGE_TEST = 0, /* not at all: complete what has arrived, return */
    DSORT_EXCHANGE_WAIT = 1, /* for one round, in MPI's wait (which keeps a core busy polling) */
    /* for one round, testing it and sleeping DSORT_EXCHANGE_IDLE_US between tests: the
     * core is free for other threads (the copying path's merge and writer) and, where nodes
     * share cores, other ranks. On the TCP test bed (2 Gbit/s, 2 nodes sharing 2 cores) the
     * exchange took 1.11x its floor sleeping 50 or 200 us, 1.20x sleeping 1 ms (the sockets
     * drain between tests) and 1.18x polling (docs/performance.md). */
    DSORT_EXCHANGE_WAIT_IDLE = 2
};
#define DSORT_EXCHANGE_IDLE_US 100

/* Local: move the exchange on: gather and post the rounds that are due, complete the rounds
 * that have arrived (posting the next after each). wait: but for DSORT_EXCHANGE_TEST, block until
 * one more round is complete (unless the exchange is done) and return then, before the rounds it
 * makes due are gathered (the next call posts them). The other ranks move it only when they call
 * this (or finish): a rank that waits for a round needs its partners to call it too, sooner or
 * later. Returns the exchange's first error (an MPI error: DSORT_EIO), which stops the posting of
 * new rounds. */
enum dsort_status dsort_exchange_flow_progress(struct dsort_exchange_flow *f,
                                               enum dsort_exchange_wait wait,
                                               struct dsort_error *err);

/* Local: 1 once every round is complete (or an error stopped it). */
int dsort_exchange_flow_done(const struct dsort_exchange_flow *f);

/* Local: the bytes of the piece from rank `from` that have landed, from its start (a multiple
 * of the unit; all of it once done; 0 after an error and for this rank). */
uint64_t dsort_exchange_flow_received(const struct dsort_exchange_flow *f, int from);

/* Complete every round (the partners need it, whatever went wrong here), free f (NULL: nothing
 * to do); *rounds (if not NULL) gets the number of rounds. Returns the exchange's first error. */
enum dsort_status dsort_exchange_flow_finish(struct dsort_exchange_flow *f, int *rounds,
                                             struct dsort_error *err);

/* The node-aware (two-level) exchange, for many ranks and small messages (docs/scaling.md).
 *
 * Ranks are grouped into nodes (MPI_COMM_TYPE_SHARED; or, as a testing aid, consecutive
 * groups of DSORT_EXCHANGE_RANKS_PER_NODE ranks, "virtual nodes", so that one machine can
 * play several). For each pair of nodes (A, B), one rank of A (its local index B mod |A|)
 * combines what every rank of A sends to the ranks of B, sends it as one message to one rank
 * of B (local index |B| − 1 − A mod |B|), which spreads it to the ranks of B. Pieces between ranks
 * of one node go directly. The receiver gets exactly what dsort_exchange_runv gives it: each
 * source's piece, in order, at its displacement.
 *
 * Memory: two staging buffers per rank, which together hold at most DSORT_EXCHANGE_STAGE bytes
 * (or one byte per pair a rank stages, if that is more); the exchange moves at most q bytes per
 * pair per round, q = min(chunk, stage / the most pairs a rank stages), so a large exchange
 * takes more rounds instead of more memory. The messages between nodes combine many pieces:
 * chunk bounds each piece's share of them, not their size (at most the stage). Also
 * 16·|node|·p bytes for the node's counts.
 *
 * The rule (kind AUTO): the node path runs when the job has more than one node, a node with
 * more than one rank, and the α-β model of dsort_exchange_node_pays says that the mean bytes
 * per inter-node message are small enough for it to be faster. */
enum dsort_exchange_kind { DSORT_EXCHANGE_AUTO, DSORT_EXCHANGE_DIRECT, DSORT_EXCHANGE_NODE };

/* Largest staging of the node path, per rank: 32 MiB. */
#define DSORT_EXCHANGE_STAGE ((size_t)32 << 20)

/* The rule's constants (a network and memory the model assumes, docs/scaling.md): α of an
 * inter-node message, α of an intra-node one, and a rank's copy bandwidth through shared
 * memory. */
#define DSORT_EXCHANGE_ALPHA 1.5e-6
#define DSORT_EXCHANGE_ALPHA_SHM 0.5e-6
#define DSORT_EXCHANGE_BW_SHM 5e9

struct dsort_exchange {
    MPI_Comm comm; /* the caller's */
    MPI_Comm node; /* ranks of this (virtual) node (owned; MPI_COMM_NULL for DIRECT) */
    enum dsort_exchange_kind kind;
    size_t chunk;
    int rank, size, nodes, my_node;
    int *node_of;  /* [size]: node of each rank (numbered by lowest rank) */
    int *local_of; /* [size]: index of each rank among its node's ranks */
    int *first;    /* [nodes + 1]: node n's ranks are members[first[n] .. first[n+1]) */
    int *members;  /* [size]: ranks by node, ascending within a node */
    uint64_t moves, node_moves; /* calls of dsort_exchange_move, and those that went by node */
};

/* Collective: set up x over comm (kept by the caller, must outlive x) for kind and chunk (the
 * largest message, [1, INT_MAX]). DIRECT does no MPI call. Returns DSORT_ENOMEM (agreed:
 * every rank gets it) if memory runs out. */
enum dsort_status dsort_exchange_open(struct dsort_exchange *x, MPI_Comm comm,
                                      enum dsort_exchange_kind kind, size_t chunk,
                                      struct dsort_error *err);

/* Local: free what open made. x may be NULL. */
void dsort_exchange_close(struct dsort_exchange *x);

/* Collective: as dsort_exchange_runv on x's comm with x's chunk, by the path that x's kind
 * and the rule choose (every rank the same). *rounds (if not NULL) gets the rounds (node path: of
 * three steps each). */
enum dsort_status dsort_exchange_move(struct dsort_exchange *x, const unsigned char *sendbuf,
                                      const uint64_t *sendcounts, const uint64_t *sdispls,
                                      unsigned char *recvbuf, const uint64_t *recvcounts,
                                      const uint64_t *rdispls, int *rounds,
                                      struct dsort_error *err);

/* Local: the rule. 1 if the node path is modelled faster for p ranks on nodes nodes, with a
 * mean of bytes per inter-node message; *direct_s and *node_s (if not NULL) get the modelled
 * seconds per rank and round of each path. */
int dsort_exchange_node_pays(int p, int nodes, double bytes, double *direct_s, double *node_s);

#endif
