/* exchange_node.h - the exchange's node path, inside the MPI layer (exchange.c chooses it; see
 * exchange.h for the move's contract and DSORT_EXCHANGE_NODE). Pieces for the rank's own node
 * go directly; pieces for other nodes are combined on one rank of the node (one message per
 * pair of nodes and round), sent, and spread on the receiving node. A move is cut into rounds
 * of at most x->chunk bytes a pair, its staging within DSORT_EXCHANGE_STAGE a rank. */
#ifndef DSORT_EXCHANGE_NODE_H
#define DSORT_EXCHANGE_NODE_H

#include "exchange.h"

/* One move on the node path, with dsort_exchange_move's arguments (NULL displacements:
 * packed in rank order). Collective over x->comm and x->node; every rank returns the same
 * failure for allocation and a self piece's sizes (agreed), an MPI error as it found it.
 * *rounds (if not NULL): the rounds it took. */
enum dsort_status dsort_exchange_node_move(struct dsort_exchange *x, const unsigned char *sendbuf,
                                           const uint64_t *sendcounts, const uint64_t *sd,
                                           unsigned char *recvbuf, const uint64_t *recvcounts,
                                           const uint64_t *rd, int *rounds,
                                           struct dsort_error *err);

#endif
