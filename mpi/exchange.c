#include "exchange.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "exchange_node.h"
#include "mem.h"

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

/* Where the part [at, at + len) of the piece for rank `to` is sent from: the pieces in place
 * (dsort_exchange_runv), or gathered by fill into the stage's slot k - 1 of q bytes (the
 * partner at distance k; dsort_exchange_gather) of the round's half of the stage (its parity:
 * two rounds are in flight). */
struct source {
    const unsigned char *sendbuf;
    const uint64_t *soff;
    dsort_exchange_fill_fn fill;
    void *ctx;
    unsigned char *stage;
    int depth; /* rounds in flight: 2, or 1 when the stage holds only one round's parts */
};

static const unsigned char *source_part(const struct source *s, int p, int k, int to, uint64_t at,
                                        size_t len, uint64_t q, uint64_t round)
{
    if (!s->fill)
        return s->sendbuf + s->soff[to] + at;
    const size_t half = s->depth > 1 ? (size_t)(round & 1) * (size_t)(p - 1) : 0;
    unsigned char *part = s->stage + (half + (size_t)(k - 1)) * q;
    s->fill(s->ctx, to, at, len, part);
    return part;
}

/* Round `round`: parts of at most q bytes from byte round * q of each piece, with shifted
 * partners to spread the traffic (receive from rank - k, send to rank + k). The requests
 * posted into req; their number is returned. */
static int post_round(MPI_Comm comm, int rank, int p, const struct source *src,
                      const uint64_t *sendcounts, unsigned char *recvbuf,
                      const uint64_t *recvcounts, const uint64_t *roff, uint64_t q, uint64_t round,
                      int tag, MPI_Request *req, enum dsort_status *st, struct dsort_error *err)
{
    const uint64_t at = round * q;
    int nreq = 0;
    for (int k = 1; k < p; k++) {
        int from = (rank - k + p) % p, to = (rank + k) % p;
        if (recvcounts[from] > at) {
            uint64_t len = recvcounts[from] - at < q ? recvcounts[from] - at : q;
            if (src->fill) /* fresh memory faulted in now, while earlier rounds are in flight */
                dsort_mem_populate(recvbuf + roff[from] + at, (size_t)len);
            int rc = MPI_Irecv(recvbuf + roff[from] + at, (int)len, MPI_BYTE, from, tag, comm,
                               &req[nreq++]);
            if (rc != MPI_SUCCESS && !*st)
                *st = dsort_comm_mpi_error(rc, "posting a receive", err);
        }
        if (sendcounts[to] > at) {
            uint64_t len = sendcounts[to] - at < q ? sendcounts[to] - at : q;
            const unsigned char *part = source_part(src, p, k, to, at, (size_t)len, q, round);
            int rc = MPI_Isend(part, (int)len, MPI_BYTE, to, tag, comm, &req[nreq++]);
            if (rc != MPI_SUCCESS && !*st)
                *st = dsort_comm_mpi_error(rc, "posting a send", err);
        }
    }
    return nreq;
}

/* An exchange in rounds, driven by its caller (exchange.h): every piece but this rank's own
 * moves in rounds of parts of at most q bytes (the same q on every rank). depth rounds are in
 * flight: the next round is posted before this one is waited for, so that a link does not
 * drain between rounds (on the TCP test bed the copying path's 16 MiB rounds took 2.6x the
 * network's time one at a time, 1.7x two at a time; docs/performance.md). MPI keeps the
 * messages of one pair in order, so round r's receives match round r's sends. Rounds complete
 * in order: round `done` is the one waited for next. */
struct dsort_exchange_flow {
    MPI_Comm comm;
    int rank, p, tag;
    struct source src;
    const uint64_t *sendcounts, *recvcounts, *roff; /* the caller's */
    unsigned char *recvbuf;
    uint64_t q, nrounds;
    uint64_t posted, done; /* rounds posted, rounds completed */
    uint64_t end;          /* nrounds, or done once an error stopped the posting */
    int nreq[2];
    MPI_Request *req; /* 4p: two rounds' requests */
    enum dsort_status st;
    struct dsort_error err; /* the first error */
};

static void flow_post(struct dsort_exchange_flow *f)
{
    for (; !f->st && f->posted < f->nrounds && f->posted < f->done + (uint64_t)f->src.depth;
         f->posted++)
        f->nreq[f->posted & 1] = post_round(
            f->comm, f->rank, f->p, &f->src, f->sendcounts, f->recvbuf, f->recvcounts, f->roff,
            f->q, f->posted, f->tag, f->req + (f->posted & 1) * 2 * f->p, &f->st, &f->err);
    if (f->st && f->posted == f->done) /* nothing left in flight */
        f->end = f->done;
}

/* Collective (the number of rounds is agreed): set up f and post its first rounds. */
static void flow_init(struct dsort_exchange_flow *f, MPI_Comm comm, int rank, int p,
                      const struct source *src, const uint64_t *sendcounts, unsigned char *recvbuf,
                      const uint64_t *recvcounts, const uint64_t *roff, uint64_t q, int tag,
                      MPI_Request *req)
{
    uint64_t need = 0, nrounds = 0;
    for (int i = 0; i < p; i++)
        if (i != rank) {
            uint64_t a = (sendcounts[i] + q - 1) / q, b = (recvcounts[i] + q - 1) / q;
            need = a > need ? a : need;
            need = b > need ? b : need;
        }
    MPI_Allreduce(&need, &nrounds, 1, MPI_UINT64_T, MPI_MAX, comm);
    *f = (struct dsort_exchange_flow){.comm = comm,
                                      .rank = rank,
                                      .p = p,
                                      .tag = tag,
                                      .src = *src,
                                      .sendcounts = sendcounts,
                                      .recvcounts = recvcounts,
                                      .roff = roff,
                                      .recvbuf = recvbuf,
                                      .q = q,
                                      .nrounds = nrounds,
                                      .end = nrounds,
                                      .req = req};
    flow_post(f);
}

enum dsort_status dsort_exchange_flow_progress(struct dsort_exchange_flow *f,
                                               enum dsort_exchange_wait wait,
                                               struct dsort_error *err)
{
    /* The rounds due since the last call are posted first, not as soon as a round completes:
     * a caller that waited for a round sees it (and can hand it on) before the next round's
     * parts are gathered and its receiving memory faulted in. */
    flow_post(f);
    while (f->done < f->end) {
        MPI_Request *r = f->req + (f->done & 1) * 2 * f->p;
        int flag = 1, rc = wait == DSORT_EXCHANGE_WAIT
                               ? MPI_Waitall(f->nreq[f->done & 1], r, MPI_STATUSES_IGNORE)
                               : MPI_Testall(f->nreq[f->done & 1], r, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS && !f->st)
            f->st = dsort_comm_mpi_error(rc, "exchanging records", &f->err);
        if (!flag && rc == MPI_SUCCESS) {
            if (wait != DSORT_EXCHANGE_WAIT_IDLE)
                break;
            /* MPI moves the data only inside its calls (TCP): the kernel's socket buffers
             * carry the link between two tests */
            const struct timespec ts = {0, DSORT_EXCHANGE_IDLE_US * 1000L};
            nanosleep(&ts, NULL);
            continue;
        }
        f->nreq[f->done & 1] = 0;
        f->done++;
        if (wait != DSORT_EXCHANGE_TEST)
            break; /* one round waited for: back to the caller */
        flow_post(f);
    }
    if (f->st && err)
        *err = f->err;
    return f->st;
}

int dsort_exchange_flow_done(const struct dsort_exchange_flow *f)
{
    return f->done >= f->end;
}

uint64_t dsort_exchange_flow_received(const struct dsort_exchange_flow *f, int from)
{
    if (from == f->rank || f->st)
        return 0;
    const uint64_t n = f->recvcounts[from], got = f->done * f->q;
    return f->done >= f->nrounds || got >= n ? n : got;
}

/* Drive f to its end; *rounds (if not NULL) gets its rounds. */
static enum dsort_status flow_end(struct dsort_exchange_flow *f, int *rounds,
                                  struct dsort_error *err)
{
    while (f->done < f->end)
        dsort_exchange_flow_progress(f, DSORT_EXCHANGE_WAIT, NULL);
    if (rounds)
        *rounds = (int)f->nrounds;
    if (f->st && err)
        *err = f->err;
    return f->st;
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
    MPI_Request *req = malloc(4 * (size_t)p * sizeof *req);
    /* (every rank learns of a wrong self piece too: a rank that left alone would leave the
     * others in flow_init's collective) */
    const int self_ok = recvcounts[rank] == sendcounts[rank];
    int ok = soff && roff && req && self_ok, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    enum dsort_status st = DSORT_OK;
    if (!all_ok) {
        if (!self_ok)
            st = DSORT_ERR(err, DSORT_EINTERNAL, 0, "exchange: self piece sizes differ");
        else
            st =
                DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM, "cannot allocate the exchange state");
        goto out;
    }
    /* Offsets of each piece (back to back unless given). */
    uint64_t s = 0, r = 0;
    for (int i = 0; i < p; i++) {
        soff[i] = sdispls ? sdispls[i] : s;
        roff[i] = rdispls ? rdispls[i] : r;
        s += sendcounts[i];
        r += recvcounts[i];
    }
    memcpy(recvbuf + roff[rank], sendbuf + soff[rank], sendcounts[rank]);
    const struct source src = {.sendbuf = sendbuf, .soff = soff, .depth = 2};
    struct dsort_exchange_flow f;
    flow_init(&f, comm, rank, p, &src, sendcounts, recvbuf, recvcounts, roff, chunk, 77, req);
    st = flow_end(&f, rounds, err);
out:
    free(soff);
    free(roff);
    free(req);
    return st;
}

enum dsort_status dsort_exchange_gather_start(struct dsort_exchange_flow **flow, MPI_Comm comm,
                                              dsort_exchange_fill_fn fill, void *ctx,
                                              const uint64_t *sendcounts, unsigned char *recvbuf,
                                              const uint64_t *recvcounts, const uint64_t *rdispls,
                                              unsigned char *stage, size_t stage_len, size_t unit,
                                              size_t chunk, struct dsort_error *err)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    *flow = NULL;
    /* Every rank computes the same part size q from the same arguments: the stage holds two
     * rounds' parts when it has room for a unit each, else one. */
    const size_t others = p > 1 ? (size_t)(p - 1) : 1;
    const int depth = stage_len / others / unit >= 2 ? 2 : 1;
    uint64_t q = stage_len / others / (size_t)depth;
    q = q < chunk ? q : chunk;
    q = q / unit * unit;
    if (q == 0)
        q = unit;
    struct dsort_exchange_flow *f = malloc(sizeof *f);
    MPI_Request *req = malloc(4 * (size_t)p * sizeof *req);
    int ok = f && req, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (!all_ok) {
        free(f);
        free(req);
        return DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM, "cannot allocate the exchange state");
    }
    const struct source src = {.fill = fill, .ctx = ctx, .stage = stage, .depth = depth};
    flow_init(f, comm, rank, p, &src, sendcounts, recvbuf, recvcounts, rdispls, q, 78, req);
    *flow = f;
    return DSORT_OK;
}

enum dsort_status dsort_exchange_flow_finish(struct dsort_exchange_flow *f, int *rounds,
                                             struct dsort_error *err)
{
    if (!f)
        return DSORT_OK;
    enum dsort_status st = flow_end(f, rounds, err);
    free(f->req);
    free(f);
    return st;
}

enum dsort_status dsort_exchange_gather(MPI_Comm comm, dsort_exchange_fill_fn fill, void *ctx,
                                        const uint64_t *sendcounts, unsigned char *recvbuf,
                                        const uint64_t *recvcounts, const uint64_t *rdispls,
                                        unsigned char *stage, size_t stage_len, size_t unit,
                                        size_t chunk, int *rounds, struct dsort_error *err)
{
    struct dsort_exchange_flow *f;
    enum dsort_status st =
        dsort_exchange_gather_start(&f, comm, fill, ctx, sendcounts, recvbuf, recvcounts, rdispls,
                                    stage, stage_len, unit, chunk, err);
    return st ? st : dsort_exchange_flow_finish(f, rounds, err);
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
        for (int n = 0; n < x->nodes; n++) {
            uint64_t l = (uint64_t)(x->first[n + 1] - x->first[n]); /* ranks on node n */
            pairs += l * ((uint64_t)x->size - l);
        }
        node = dsort_exchange_node_pays(x->size, x->nodes, (double)all / (double)pairs, NULL, NULL);
    }
    if (!node)
        return dsort_exchange_runv(x->comm, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
                                   rdispls, x->chunk, rounds, err);
    x->node_moves++;
    return dsort_exchange_node_move(x, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls,
                                    rounds, err);
}
