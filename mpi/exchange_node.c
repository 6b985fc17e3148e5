/* exchange_node.c - the node path of the exchange (exchange_node.h): each pair of nodes
 * trades one message per round, combined on one rank of the sending node and spread by one
 * rank of the receiving node. */
#include "exchange_node.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

/* The node path's view of one move: counts of the pairs it handles, and the round's slices. */
struct nodex {
    const struct dsort_exchange *x;
    const uint64_t *counts; /* [node size][2p]: each local rank's sendcounts, then recvcounts */
    uint64_t q, at;         /* slice length; this round's offset in every piece */
    int p;
};

/* Bytes from s to r; s or r is on this rank's node. */
static uint64_t pair_count(const struct nodex *v, int s, int r)
{
    const struct dsort_exchange *x = v->x;
    if (x->node_of[s] == x->my_node)
        return v->counts[(size_t)x->local_of[s] * 2 * (size_t)v->p + (size_t)r];
    return v->counts[(size_t)x->local_of[r] * 2 * (size_t)v->p + (size_t)v->p + (size_t)s];
}

/* This round's slice of the piece from s to r. */
static uint64_t slice(const struct nodex *v, int s, int r)
{
    uint64_t c = pair_count(v, s, r);
    if (c <= v->at)
        return 0;
    return c - v->at < v->q ? c - v->at : v->q;
}

static int node_size(const struct dsort_exchange *x, int n)
{
    return x->first[n + 1] - x->first[n];
}

/* The rank of node a that combines a's pieces for node b, and the rank of b that receives
 * them and spreads them (counted from b's last rank, so that when there are fewer nodes than
 * ranks a node, combining and spreading fall on different ranks). */
static int combiner(const struct dsort_exchange *x, int a, int b)
{
    return x->members[x->first[a] + b % node_size(x, a)];
}
static int spreader(const struct dsort_exchange *x, int a, int b)
{
    int l = node_size(x, b); /* from the other end, so that with few nodes two ranks share */
    return x->members[x->first[b] + l - 1 - a % l];
}

/* Bytes of the round's message from node a to node b (sources in rank order, each with its
 * slices for b's ranks in rank order). */
static uint64_t pair_bytes(const struct nodex *v, int a, int b)
{
    const struct dsort_exchange *x = v->x;
    uint64_t n = 0;
    for (int i = x->first[a]; i < x->first[a + 1]; i++)
        for (int j = x->first[b]; j < x->first[b + 1]; j++)
            n += slice(v, x->members[i], x->members[j]);
    return n;
}

/* Post a send or receive of blocks (offsets from base, lengths) as one message. */
static int post(int send, unsigned char *base, const MPI_Aint *off, const int *len, int nb,
                int peer, int tag, MPI_Comm comm, MPI_Request *req, struct dsort_error *err)
{
    MPI_Datatype t;
    int rc = MPI_Type_create_hindexed(nb, len, off, MPI_BYTE, &t);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&t);
    if (rc != MPI_SUCCESS)
        return dsort_comm_mpi_error(rc, "making a datatype for the node exchange", err);
    rc = send ? MPI_Isend(base, 1, t, peer, tag, comm, req)
              : MPI_Irecv(base, 1, t, peer, tag, comm, req);
    MPI_Type_free(&t); /* freed once the operation completes */
    if (rc != MPI_SUCCESS)
        return dsort_comm_mpi_error(rc, send ? "posting a send" : "posting a receive", err);
    return 0;
}

/* One move on the node path in flight: the caller's buffers and displacements, the staging
 * (stage1: the messages this rank combines, at off1[b] for node b; stage2: those it receives
 * and spreads, at off2[a] for node a), and the requests of the step being posted. */
struct nodemove {
    struct nodex v;
    const struct dsort_exchange *x;
    const unsigned char *sendbuf;
    unsigned char *recvbuf;
    const uint64_t *sdisp, *rdisp, *off1, *off2;
    unsigned char *stage1, *stage2;
    MPI_Aint *boff; /* a message's blocks: offsets and lengths */
    int *blen;
    MPI_Request *req;
    int nreq, A, la, me;
};

/* Post one block (send, or receive) of len bytes at off from base. */
static int post_one(struct nodemove *m, int send, unsigned char *base, uint64_t off, uint64_t len,
                    int peer, int tag, struct dsort_error *err)
{
    MPI_Aint o = (MPI_Aint)off;
    int l = (int)len;
    return post(send, base, &o, &l, 1, peer, tag, m->x->comm, &m->req[m->nreq++], err);
}

/* Wait for the step's requests; the first error of the step (st) wins. */
static enum dsort_status node_wait(struct nodemove *m, enum dsort_status st,
                                   struct dsort_error *err)
{
    int rc = MPI_Waitall(m->nreq, m->req, MPI_STATUSES_IGNORE);
    m->nreq = 0;
    if (rc != MPI_SUCCESS && !st)
        st = dsort_comm_mpi_error(rc, "exchanging records", err);
    return st;
}

/* Step 1, as a source: pieces for this node's ranks go directly; pieces for other nodes go to
 * their combiner, which receives every local rank's slices in rank order. */
static enum dsort_status node_send_local(struct nodemove *m, struct dsort_error *err)
{
    const struct dsort_exchange *x = m->x;
    const struct nodex *v = &m->v;
    const int A = m->A, me = m->me;
    enum dsort_status st = DSORT_OK;
    for (int i = x->first[A]; i < x->first[A + 1] && !st; i++) {
        int r = x->members[i];
        if (r == me)
            continue;
        uint64_t len = slice(v, me, r);
        if (len)
            st = post_one(m, 1, (unsigned char *)m->sendbuf, m->sdisp[r] + v->at, len, r, 81, err);
        len = slice(v, r, me);
        if (len && !st)
            st = post_one(m, 0, m->recvbuf, m->rdisp[r] + v->at, len, r, 81, err);
    }
    /* to each combiner of this node: my slices for the nodes it combines */
    for (int k = 0; k < m->la && !st; k++) {
        int g = x->members[x->first[A] + k], nb = 0;
        for (int b = k; b < x->nodes; b += m->la)
            if (b != A)
                for (int j = x->first[b]; j < x->first[b + 1]; j++) {
                    int r = x->members[j];
                    uint64_t len = slice(v, me, r);
                    if (len) {
                        m->boff[nb] = (MPI_Aint)(m->sdisp[r] + v->at);
                        m->blen[nb++] = (int)len;
                    }
                }
        if (nb)
            st = post(1, (unsigned char *)m->sendbuf, m->boff, m->blen, nb, g, 82, x->comm,
                      &m->req[m->nreq++], err);
    }
    return st;
}

/* Step 1, as a combiner: from each local rank s, its slices for my nodes, into each node's
 * message at s's place. */
static enum dsort_status node_combine(struct nodemove *m, struct dsort_error *err)
{
    const struct dsort_exchange *x = m->x;
    const int A = m->A;
    enum dsort_status st = DSORT_OK;
    for (int k = 0; k < m->la && !st; k++) {
        int s = x->members[x->first[A] + k], nb = 0;
        for (int b = 0; b < x->nodes; b++) {
            if (b == A || combiner(x, A, b) != m->me)
                continue;
            uint64_t at = m->off1[b], len = 0;
            for (int i = x->first[A]; i < x->first[A + 1]; i++) {
                int t = x->members[i];
                for (int j = x->first[b]; j < x->first[b + 1]; j++) {
                    uint64_t l = slice(&m->v, t, x->members[j]);
                    if (t < s)
                        at += l;
                    else if (t == s)
                        len += l;
                }
            }
            if (len) {
                m->boff[nb] = (MPI_Aint)at;
                m->blen[nb++] = (int)len;
            }
        }
        if (nb)
            st = post(0, m->stage1, m->boff, m->blen, nb, s, 82, x->comm, &m->req[m->nreq++], err);
    }
    return st;
}

/* Step 2: one message per pair of nodes. */
static enum dsort_status node_pairs(struct nodemove *m, struct dsort_error *err)
{
    const struct dsort_exchange *x = m->x;
    const int A = m->A;
    enum dsort_status st = DSORT_OK;
    for (int b = 0; b < x->nodes && !st; b++) {
        if (b == A)
            continue;
        if (combiner(x, A, b) == m->me) {
            uint64_t len = pair_bytes(&m->v, A, b);
            if (len)
                st = post_one(m, 1, m->stage1, m->off1[b], len, spreader(x, A, b), 83, err);
        }
        if (spreader(x, b, A) == m->me && !st) {
            uint64_t len = pair_bytes(&m->v, b, A);
            if (len)
                st = post_one(m, 0, m->stage2, m->off2[b], len, combiner(x, b, A), 83, err);
        }
    }
    return st;
}

/* Step 3: spread. To each rank r of this node, from each node a this rank spreads, each
 * source's slice for r in source order; r receives them at its displacements. */
static enum dsort_status node_spread(struct nodemove *m, struct dsort_error *err)
{
    const struct dsort_exchange *x = m->x;
    const int A = m->A;
    enum dsort_status st = DSORT_OK;
    for (int k = 0; k < m->la && !st; k++) {
        int r = x->members[x->first[A] + k], nb = 0;
        for (int a = 0; a < x->nodes; a++) {
            if (a == A || spreader(x, a, A) != m->me)
                continue;
            uint64_t at = m->off2[a];
            for (int i = x->first[a]; i < x->first[a + 1]; i++) {
                int s = x->members[i];
                for (int j = x->first[A]; j < x->first[A + 1]; j++) {
                    int r2 = x->members[j];
                    uint64_t l = slice(&m->v, s, r2);
                    if (r2 == r && l) {
                        m->boff[nb] = (MPI_Aint)at;
                        m->blen[nb++] = (int)l;
                    }
                    at += l;
                }
            }
        }
        if (nb)
            st = post(1, m->stage2, m->boff, m->blen, nb, r, 84, x->comm, &m->req[m->nreq++], err);
    }
    return st;
}

/* Step 3, as a receiver: from each spreader h of this node, the slices of the nodes it
 * spreads. */
static enum dsort_status node_receive(struct nodemove *m, struct dsort_error *err)
{
    const struct dsort_exchange *x = m->x;
    const int A = m->A;
    enum dsort_status st = DSORT_OK;
    for (int k = 0; k < m->la && !st; k++) {
        int h = x->members[x->first[A] + k], nb = 0;
        for (int a = 0; a < x->nodes; a++) {
            if (a == A || spreader(x, a, A) != h)
                continue;
            for (int i = x->first[a]; i < x->first[a + 1]; i++) {
                int s = x->members[i];
                uint64_t l = slice(&m->v, s, m->me);
                if (l) {
                    m->boff[nb] = (MPI_Aint)(m->rdisp[s] + m->v.at);
                    m->blen[nb++] = (int)l;
                }
            }
        }
        if (nb)
            st = post(0, m->recvbuf, m->boff, m->blen, nb, h, 84, x->comm, &m->req[m->nreq++], err);
    }
    return st;
}

/* One round of the node path: its three steps, each waited for before the next. */
static enum dsort_status node_round(struct nodemove *m, struct dsort_error *err)
{
    enum dsort_status st = node_send_local(m, err);
    if (!st)
        st = node_combine(m, err);
    if ((st = node_wait(m, st, err)))
        return st;
    st = node_wait(m, node_pairs(m, err), err);
    if (st)
        return st;
    st = node_spread(m, err);
    if (!st)
        st = node_receive(m, err);
    return node_wait(m, st, err);
}

/* The slice q of each pair's piece per round (at most chunk, and the staging of every rank
 * fits DSORT_EXCHANGE_STAGE unless that is under a byte a pair) and the number of rounds, the
 * same on every rank. Collective over x->comm. */
static void node_slices(const struct dsort_exchange *x, const uint64_t *sendcounts,
                        const uint64_t *recvcounts, uint64_t *q_out, uint64_t *nrounds)
{
    const int p = x->size, me = x->rank, A = x->my_node, la = node_size(x, A);
    uint64_t slots = 0, most = 0;
    for (int b = 0; b < x->nodes; b++)
        if (b != A && combiner(x, A, b) == me) /* combined here: node A -> b */
            slots += (uint64_t)la * (uint64_t)node_size(x, b);
    for (int a = 0; a < x->nodes; a++)
        if (a != A && spreader(x, a, A) == me) /* received and spread here: a -> A */
            slots += (uint64_t)node_size(x, a) * (uint64_t)la;
    MPI_Allreduce(&slots, &most, 1, MPI_UINT64_T, MPI_MAX, x->comm);
    uint64_t q = most ? DSORT_EXCHANGE_STAGE / most : DSORT_EXCHANGE_STAGE;
    if (q < 1)
        q = 1;
    if (q > x->chunk)
        q = x->chunk;
    uint64_t need = 0;
    for (int r = 0; r < p; r++)
        if (r != me) {
            uint64_t a = (sendcounts[r] + q - 1) / q, b = (recvcounts[r] + q - 1) / q;
            need = a > need ? a : need;
            need = b > need ? b : need;
        }
    MPI_Allreduce(&need, nrounds, 1, MPI_UINT64_T, MPI_MAX, x->comm);
    *q_out = q;
}

/* The staging: the messages this rank combines (*stage1, node b's at off1[b]) and those it
 * receives and spreads (*stage2, at off2[b]), sized for round 0's, the largest. Collective
 * over x->comm: the ranks agree on the allocation (the caller frees the buffers). */
static enum dsort_status node_stage(const struct dsort_exchange *x, const struct nodex *v,
                                    uint64_t *off1, uint64_t *off2, unsigned char **stage1,
                                    unsigned char **stage2, struct dsort_error *err)
{
    const int A = x->my_node, me = x->rank;
    uint64_t s1 = 0, s2 = 0;
    for (int b = 0; b < x->nodes; b++) {
        off1[b] = s1;
        off2[b] = s2;
        if (b != A && combiner(x, A, b) == me)
            s1 += pair_bytes(v, A, b);
        if (b != A && spreader(x, b, A) == me)
            s2 += pair_bytes(v, b, A);
    }
    off1[x->nodes] = s1;
    off2[x->nodes] = s2;
    *stage1 = malloc(s1 ? (size_t)s1 : 1);
    *stage2 = malloc(s2 ? (size_t)s2 : 1);
    int ok = *stage1 && *stage2, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, x->comm);
    if (!all_ok)
        return DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM,
                         "cannot allocate %" PRIu64 " bytes to stage the node exchange", s1 + s2);
    return DSORT_OK;
}

/* Every local rank's send and receive counts (2p a rank, through mine) into counts, over the
 * node's communicator. Collective over x->node; an MPI error as it found it. */
static enum dsort_status gather_counts(const struct dsort_exchange *x, const uint64_t *sendcounts,
                                       const uint64_t *recvcounts, uint64_t *mine, uint64_t *counts,
                                       struct dsort_error *err)
{
    const int p = x->size;
    for (int r = 0; r < p; r++) {
        mine[r] = sendcounts[r];
        mine[p + r] = recvcounts[r];
    }
    int rc = MPI_Allgather(mine, 2 * p, MPI_UINT64_T, counts, 2 * p, MPI_UINT64_T, x->node);
    if (rc != MPI_SUCCESS)
        return dsort_comm_mpi_error(rc, "gathering the node's piece sizes", err);
    return DSORT_OK;
}

/* Displacements of the caller's pieces: sd and rd, or packed in rank order where NULL. */
static void displacements(int p, const uint64_t *sendcounts, const uint64_t *recvcounts,
                          const uint64_t *sd, const uint64_t *rd, uint64_t *sdisp, uint64_t *rdisp)
{
    for (uint64_t r = 0, so = 0, ro = 0; r < (uint64_t)p; r++) {
        sdisp[r] = sd ? sd[r] : so;
        rdisp[r] = rd ? rd[r] : ro;
        so += sendcounts[r];
        ro += recvcounts[r];
    }
}

enum dsort_status dsort_exchange_node_move(struct dsort_exchange *x, const unsigned char *sendbuf,
                                           const uint64_t *sendcounts, const uint64_t *sd,
                                           unsigned char *recvbuf, const uint64_t *recvcounts,
                                           const uint64_t *rd, int *rounds, struct dsort_error *err)
{
    const int p = x->size, me = x->rank, A = x->my_node, la = node_size(x, A);
    enum dsort_status st = DSORT_OK;
    /* Every local rank's counts, for the pairs this rank combines or spreads. */
    uint64_t *counts = malloc((size_t)la * 2 * (size_t)p * sizeof *counts);
    uint64_t *mine = malloc(4 * (size_t)p * sizeof *mine), *sdisp = mine + 2 * p,
             *rdisp = mine + 3 * p;
    uint64_t *off1 = malloc(((size_t)x->nodes + 1) * sizeof *off1);
    uint64_t *off2 = malloc(((size_t)x->nodes + 1) * sizeof *off2);
    MPI_Aint *boff = malloc((size_t)p * sizeof *boff);
    int *blen = malloc((size_t)p * sizeof *blen);
    MPI_Request *req = malloc(2 * ((size_t)p + (size_t)x->nodes) * sizeof *req);
    unsigned char *stage1 = NULL, *stage2 = NULL;
    int mem = counts && mine && off1 && off2 && boff && blen && req;
    /* the self piece's sizes must agree: checked here, so that every rank leaves together */
    int self = recvcounts[me] == sendcounts[me];
    int ok = mem && self, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, x->comm);
    if (!all_ok) {
        st = !self ? DSORT_ERR(err, DSORT_EINTERNAL, 0, "exchange: self piece sizes differ")
                   : DSORT_ERR(err, DSORT_ENOMEM, mem ? 0 : ENOMEM,
                               "cannot allocate the exchange state");
        goto out;
    }
    if ((st = gather_counts(x, sendcounts, recvcounts, mine, counts, err)))
        goto out;
    uint64_t q = 0, nrounds = 0;
    node_slices(x, sendcounts, recvcounts, &q, &nrounds);
    struct nodex v = {x, counts, q, 0, p};
    if ((st = node_stage(x, &v, off1, off2, &stage1, &stage2, err)))
        goto out;
    displacements(p, sendcounts, recvcounts, sd, rd, sdisp, rdisp);
    memcpy(recvbuf + rdisp[me], sendbuf + sdisp[me], sendcounts[me]);
    struct nodemove m = {.v = v,
                         .x = x,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .sdisp = sdisp,
                         .rdisp = rdisp,
                         .off1 = off1,
                         .off2 = off2,
                         .stage1 = stage1,
                         .stage2 = stage2,
                         .boff = boff,
                         .blen = blen,
                         .req = req,
                         .A = A,
                         .la = la,
                         .me = me};
    for (uint64_t round = 0; round < nrounds && !st; round++) {
        m.v.at = round * q;
        st = node_round(&m, err);
    }
    if (rounds)
        *rounds = (int)nrounds;
out:
    free(counts);
    free(mine);
    free(off1);
    free(off2);
    free(boff);
    free(blen);
    free(req);
    free(stage1);
    free(stage2);
    return st;
}
