#include "exchange.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

enum dsort_status dsort_exchange_counts(MPI_Comm comm, const uint64_t *sendcounts,
                                        uint64_t *recvcounts, struct dsort_error *err)
{
    int rc = MPI_Alltoall(sendcounts, 1, MPI_UINT64_T, recvcounts, 1, MPI_UINT64_T, comm);
    if (rc != MPI_SUCCESS)
        return dsort_comm_mpi_error(rc, "exchanging piece sizes", err);
    return DSORT_OK;
}

enum dsort_status dsort_exchange_run(MPI_Comm comm, const unsigned char *sendbuf,
                                     const uint64_t *sendcounts, unsigned char *recvbuf,
                                     const uint64_t *recvcounts, size_t chunk, int *rounds,
                                     struct dsort_error *err)
{
    return dsort_exchange_runv(comm, sendbuf, sendcounts, NULL, recvbuf, recvcounts, NULL, chunk,
                               rounds, err);
}

enum dsort_status dsort_exchange_runv(MPI_Comm comm, const unsigned char *sendbuf,
                                      const uint64_t *sendcounts, const uint64_t *sdispls,
                                      unsigned char *recvbuf, const uint64_t *recvcounts,
                                      const uint64_t *rdispls, size_t chunk, int *rounds,
                                      struct dsort_error *err)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    uint64_t *soff = malloc((size_t)p * sizeof *soff), *roff = malloc((size_t)p * sizeof *roff);
    MPI_Request *req = malloc(2 * (size_t)p * sizeof *req);
    int ok = soff && roff && req, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    enum dsort_status st = DSORT_OK;
    if (!all_ok) {
        st = DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM, "cannot allocate the exchange state");
        goto out;
    }
    /* Offsets of each piece, and the number of rounds the largest pair needs. */
    uint64_t s = 0, r = 0, need = 0;
    for (int i = 0; i < p; i++) {
        soff[i] = sdispls ? sdispls[i] : s;
        roff[i] = rdispls ? rdispls[i] : r;
        s += sendcounts[i];
        r += recvcounts[i];
        if (i != rank) {
            uint64_t a = (sendcounts[i] + chunk - 1) / chunk,
                     b = (recvcounts[i] + chunk - 1) / chunk;
            need = a > need ? a : need;
            need = b > need ? b : need;
        }
    }
    uint64_t nrounds = 0;
    MPI_Allreduce(&need, &nrounds, 1, MPI_UINT64_T, MPI_MAX, comm);
    if (recvcounts[rank] != sendcounts[rank]) {
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0, "exchange: self piece sizes differ");
        goto out;
    }
    memcpy(recvbuf + roff[rank], sendbuf + soff[rank], sendcounts[rank]);
    for (uint64_t round = 0; round < nrounds && !st; round++) {
        int nreq = 0;
        uint64_t at = round * chunk;
        for (int k = 1; k < p; k++) {
            /* Shifted partners spread the traffic: receive from rank-k, send to rank+k. */
            int from = (rank - k + p) % p, to = (rank + k) % p;
            if (recvcounts[from] > at) {
                uint64_t len = recvcounts[from] - at < chunk ? recvcounts[from] - at : chunk;
                int rc = MPI_Irecv(recvbuf + roff[from] + at, (int)len, MPI_BYTE, from, 77, comm,
                                   &req[nreq++]);
                if (rc != MPI_SUCCESS)
                    st = dsort_comm_mpi_error(rc, "posting a receive", err);
            }
            if (sendcounts[to] > at) {
                uint64_t len = sendcounts[to] - at < chunk ? sendcounts[to] - at : chunk;
                int rc = MPI_Isend(sendbuf + soff[to] + at, (int)len, MPI_BYTE, to, 77, comm,
                                   &req[nreq++]);
                if (rc != MPI_SUCCESS)
                    st = dsort_comm_mpi_error(rc, "posting a send", err);
            }
        }
        int rc = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS && !st)
            st = dsort_comm_mpi_error(rc, "exchanging records", err);
    }
    if (rounds)
        *rounds = (int)nrounds;
out:
    free(soff);
    free(roff);
    free(req);
    return st;
}

/* ---- the node-aware exchange ---- */

enum dsort_status dsort_exchange_open(struct dsort_exchange *x, MPI_Comm comm,
                                      enum dsort_exchange_kind kind, size_t chunk,
                                      struct dsort_error *err)
{
    memset(x, 0, sizeof *x);
    x->comm = comm;
    x->node = MPI_COMM_NULL;
    x->kind = kind;
    x->chunk = chunk;
    MPI_Comm_rank(comm, &x->rank);
    MPI_Comm_size(comm, &x->size);
    if (kind == DSORT_EXCHANGE_DIRECT)
        return DSORT_OK;
    const int p = x->size;
    /* This rank's node, named by its lowest rank. */
    int key = x->rank;
    const char *env = getenv("DSORT_EXCHANGE_RANKS_PER_NODE");
    long per = env ? strtol(env, NULL, 10) : 0;
    if (per > 0) {
        key = (int)(x->rank / per * per);
    } else {
        MPI_Comm shm;
        int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, x->rank, MPI_INFO_NULL, &shm);
        if (rc != MPI_SUCCESS)
            return dsort_comm_mpi_error(rc, "finding the ranks of this node", err);
        MPI_Allreduce(&x->rank, &key, 1, MPI_INT, MPI_MIN, shm);
        MPI_Comm_free(&shm);
    }
    int rc = MPI_Comm_split(comm, key, x->rank, &x->node);
    if (rc != MPI_SUCCESS)
        return dsort_comm_mpi_error(rc, "making the node communicator", err);
    x->node_of = malloc((size_t)p * sizeof *x->node_of);
    x->local_of = malloc((size_t)p * sizeof *x->local_of);
    x->first = malloc(((size_t)p + 1) * sizeof *x->first);
    x->members = malloc((size_t)p * sizeof *x->members);
    int *keys = malloc((size_t)p * sizeof *keys);
    int ok = x->node_of && x->local_of && x->first && x->members && keys, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (!all_ok) {
        free(keys);
        dsort_exchange_close(x);
        return DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM,
                         "cannot allocate the node exchange's map");
    }
    MPI_Allgather(&key, 1, MPI_INT, keys, 1, MPI_INT, comm);
    /* Nodes numbered in the order of their lowest rank; a node's key is its lowest rank. */
    int *index = x->local_of; /* scratch: node index by key (a key is a rank) */
    for (int r = 0; r < p; r++)
        index[r] = -1;
    x->nodes = 0;
    for (int r = 0; r < p; r++)
        if (index[keys[r]] < 0)
            index[keys[r]] = x->nodes++;
    for (int r = 0; r < p; r++)
        x->node_of[r] = index[keys[r]];
    free(keys);
    for (int n = 0; n <= x->nodes; n++)
        x->first[n] = 0;
    for (int r = 0; r < p; r++)
        x->first[x->node_of[r] + 1]++;
    for (int n = 0; n < x->nodes; n++)
        x->first[n + 1] += x->first[n];
    int *fill = x->local_of; /* scratch again: next slot per node, then local indices */
    for (int n = 0; n < x->nodes; n++)
        fill[n] = x->first[n];
    for (int r = 0; r < p; r++)
        x->members[fill[x->node_of[r]]++] = r;
    for (int n = 0; n < x->nodes; n++)
        for (int i = x->first[n]; i < x->first[n + 1]; i++)
            x->local_of[x->members[i]] = i - x->first[n];
    x->my_node = x->node_of[x->rank];
    return DSORT_OK;
}

void dsort_exchange_close(struct dsort_exchange *x)
{
    if (!x)
        return;
    if (x->node != MPI_COMM_NULL)
        MPI_Comm_free(&x->node);
    free(x->node_of);
    free(x->local_of);
    free(x->first);
    free(x->members);
    x->node_of = x->local_of = x->first = x->members = NULL;
}

int dsort_exchange_node_pays(int p, int nodes, double bytes, double *direct_s, double *node_s)
{
    const double a = DSORT_EXCHANGE_ALPHA, as = DSORT_EXCHANGE_ALPHA_SHM,
                 bs = DSORT_EXCHANGE_BW_SHM;
    double l = (double)p / nodes, remote = p - l; /* ranks per node; remote peers per rank */
    double lg = 0;
    for (double v = 1; v < l; v *= 2)
        lg++;
    /* Per rank and round. Both paths put the same bytes on the network (β terms cancel). */
    double d = (l - 1) * as + remote * a;
    double hops = (nodes - 1) / l, pairs = (double)(long)hops; /* ⌈(nodes − 1) / l⌉ */
    if (pairs < hops)
        pairs++;
    double n = 3 * (l - 1) * as + pairs * a + 2 * remote * bytes / bs + 16 * l * p / bs + lg * as;
    if (direct_s)
        *direct_s = d;
    if (node_s)
        *node_s = n;
    return nodes > 1 && nodes < p && n < d;
}

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

static enum dsort_status node_move(struct dsort_exchange *x, const unsigned char *sendbuf,
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
    for (int r = 0; r < p; r++) {
        mine[r] = sendcounts[r];
        mine[p + r] = recvcounts[r];
    }
    int rc = MPI_Allgather(mine, 2 * p, MPI_UINT64_T, counts, 2 * p, MPI_UINT64_T, x->node);
    if (rc != MPI_SUCCESS) {
        st = dsort_comm_mpi_error(rc, "gathering the node's piece sizes", err);
        goto out;
    }
    /* The slice q of each pair's piece per round: at most chunk, and the staging of every rank
     * fits DSORT_EXCHANGE_STAGE (unless that is under a byte a pair). */
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
    struct nodex v = {x, counts, q, 0, p};
    uint64_t need = 0, nrounds = 0;
    for (int r = 0; r < p; r++)
        if (r != me) {
            uint64_t a = (sendcounts[r] + q - 1) / q, b = (recvcounts[r] + q - 1) / q;
            need = a > need ? a : need;
            need = b > need ? b : need;
        }
    MPI_Allreduce(&need, &nrounds, 1, MPI_UINT64_T, MPI_MAX, x->comm);
    /* The staging: round 0's messages are the largest. */
    uint64_t s1 = 0, s2 = 0;
    for (int b = 0; b < x->nodes; b++) {
        off1[b] = s1;
        off2[b] = s2;
        if (b != A && combiner(x, A, b) == me)
            s1 += pair_bytes(&v, A, b);
        if (b != A && spreader(x, b, A) == me)
            s2 += pair_bytes(&v, b, A);
    }
    off1[x->nodes] = s1;
    off2[x->nodes] = s2;
    stage1 = malloc(s1 ? (size_t)s1 : 1);
    stage2 = malloc(s2 ? (size_t)s2 : 1);
    ok = stage1 && stage2;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, x->comm);
    if (!all_ok) {
        st = DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM,
                       "cannot allocate %" PRIu64 " bytes to stage the node exchange", s1 + s2);
        goto out;
    }
    /* Displacements of the caller's pieces. */
    for (uint64_t r = 0, so = 0, ro = 0; r < (uint64_t)p; r++) {
        sdisp[r] = sd ? sd[r] : so;
        rdisp[r] = rd ? rd[r] : ro;
        so += sendcounts[r];
        ro += recvcounts[r];
    }
    memcpy(recvbuf + rdisp[me], sendbuf + sdisp[me], sendcounts[me]);
    for (uint64_t round = 0; round < nrounds && !st; round++) {
        v.at = round * q;
        int nreq = 0;
        /* Step 1: pieces for this node's ranks go directly; pieces for other nodes go to
         * their combiner, which receives every local rank's slices in rank order. */
        for (int i = x->first[A]; i < x->first[A + 1] && !st; i++) {
            int r = x->members[i];
            if (r == me)
                continue;
            uint64_t len = slice(&v, me, r);
            if (len) {
                MPI_Aint o = (MPI_Aint)(sdisp[r] + v.at);
                int l = (int)len;
                st =
                    post(1, (unsigned char *)sendbuf, &o, &l, 1, r, 81, x->comm, &req[nreq++], err);
            }
            len = slice(&v, r, me);
            if (len && !st) {
                MPI_Aint o = (MPI_Aint)(rdisp[r] + v.at);
                int l = (int)len;
                st = post(0, recvbuf, &o, &l, 1, r, 81, x->comm, &req[nreq++], err);
            }
        }
        /* to each combiner of this node: my slices for the nodes it combines */
        for (int k = 0; k < la && !st; k++) {
            int g = x->members[x->first[A] + k], nb = 0;
            for (int b = k; b < x->nodes; b += la)
                if (b != A)
                    for (int j = x->first[b]; j < x->first[b + 1]; j++) {
                        int r = x->members[j];
                        uint64_t len = slice(&v, me, r);
                        if (len) {
                            boff[nb] = (MPI_Aint)(sdisp[r] + v.at);
                            blen[nb++] = (int)len;
                        }
                    }
            if (nb)
                st = post(1, (unsigned char *)sendbuf, boff, blen, nb, g, 82, x->comm, &req[nreq++],
                          err);
        }
        /* as a combiner: from each local rank s, its slices for my nodes, into each node's
         * message at s's place */
        for (int k = 0; k < la && !st; k++) {
            int s = x->members[x->first[A] + k], nb = 0;
            for (int b = 0; b < x->nodes; b++) {
                if (b == A || combiner(x, A, b) != me)
                    continue;
                uint64_t at = off1[b], len = 0;
                for (int i = x->first[A]; i < x->first[A + 1]; i++) {
                    int t = x->members[i];
                    for (int j = x->first[b]; j < x->first[b + 1]; j++) {
                        uint64_t l = slice(&v, t, x->members[j]);
                        if (t < s)
                            at += l;
                        else if (t == s)
                            len += l;
                    }
                }
                if (len) {
                    boff[nb] = (MPI_Aint)at;
                    blen[nb++] = (int)len;
                }
            }
            if (nb)
                st = post(0, stage1, boff, blen, nb, s, 82, x->comm, &req[nreq++], err);
        }
        rc = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS && !st)
            st = dsort_comm_mpi_error(rc, "exchanging records", err);
        /* Step 2: one message per pair of nodes. */
        nreq = 0;
        for (int b = 0; b < x->nodes && !st; b++) {
            if (b == A)
                continue;
            if (combiner(x, A, b) == me) {
                uint64_t len = pair_bytes(&v, A, b);
                if (len) {
                    MPI_Aint o = (MPI_Aint)off1[b];
                    int l = (int)len;
                    st = post(1, stage1, &o, &l, 1, spreader(x, A, b), 83, x->comm, &req[nreq++],
                              err);
                }
            }
            if (spreader(x, b, A) == me && !st) {
                uint64_t len = pair_bytes(&v, b, A);
                if (len) {
                    MPI_Aint o = (MPI_Aint)off2[b];
                    int l = (int)len;
                    st = post(0, stage2, &o, &l, 1, combiner(x, b, A), 83, x->comm, &req[nreq++],
                              err);
                }
            }
        }
        rc = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS && !st)
            st = dsort_comm_mpi_error(rc, "exchanging records", err);
        /* Step 3: spread. To each rank r of this node, from each node a this rank spreads,
         * each source's slice for r in source order; r receives them at its displacements. */
        nreq = 0;
        for (int k = 0; k < la && !st; k++) {
            int r = x->members[x->first[A] + k], nb = 0;
            for (int a = 0; a < x->nodes; a++) {
                if (a == A || spreader(x, a, A) != me)
                    continue;
                uint64_t at = off2[a];
                for (int i = x->first[a]; i < x->first[a + 1]; i++) {
                    int s = x->members[i];
                    for (int j = x->first[A]; j < x->first[A + 1]; j++) {
                        int r2 = x->members[j];
                        uint64_t l = slice(&v, s, r2);
                        if (r2 == r && l) {
                            boff[nb] = (MPI_Aint)at;
                            blen[nb++] = (int)l;
                        }
                        at += l;
                    }
                }
            }
            if (nb)
                st = post(1, stage2, boff, blen, nb, r, 84, x->comm, &req[nreq++], err);
        }
        /* from each spreader h of this node: the slices of the nodes it spreads */
        for (int k = 0; k < la && !st; k++) {
            int h = x->members[x->first[A] + k], nb = 0;
            for (int a = 0; a < x->nodes; a++) {
                if (a == A || spreader(x, a, A) != h)
                    continue;
                for (int i = x->first[a]; i < x->first[a + 1]; i++) {
                    int s = x->members[i];
                    uint64_t l = slice(&v, s, me);
                    if (l) {
                        boff[nb] = (MPI_Aint)(rdisp[s] + v.at);
                        blen[nb++] = (int)l;
                    }
                }
            }
            if (nb)
                st = post(0, recvbuf, boff, blen, nb, h, 84, x->comm, &req[nreq++], err);
        }
        rc = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS && !st)
            st = dsort_comm_mpi_error(rc, "exchanging records", err);
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

enum dsort_status dsort_exchange_move(struct dsort_exchange *x, const unsigned char *sendbuf,
                                      const uint64_t *sendcounts, const uint64_t *sdispls,
                                      unsigned char *recvbuf, const uint64_t *recvcounts,
                                      const uint64_t *rdispls, int *rounds, struct dsort_error *err)
{
    int node = x->kind == DSORT_EXCHANGE_NODE;
    x->moves++;
    if (x->kind == DSORT_EXCHANGE_AUTO && x->nodes > 1 && x->nodes < x->size) {
        /* The rule: the mean bytes of an inter-node message, agreed by every rank. */
        uint64_t mine = 0, all = 0, pairs = 0;
        for (int r = 0; r < x->size; r++)
            if (x->node_of[r] != x->my_node)
                mine += sendcounts[r];
        int rc = MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, x->comm);
        if (rc != MPI_SUCCESS)
            return dsort_comm_mpi_error(rc, "exchanging the exchange's size", err);
        for (int n = 0; n < x->nodes; n++)
            pairs += (uint64_t)node_size(x, n) * (uint64_t)(x->size - node_size(x, n));
        node = dsort_exchange_node_pays(x->size, x->nodes, (double)all / (double)pairs, NULL, NULL);
    }
    if (!node)
        return dsort_exchange_runv(x->comm, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
                                   rdispls, x->chunk, rounds, err);
    x->node_moves++;
    return node_move(x, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, rounds, err);
}
