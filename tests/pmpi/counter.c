/* counter.c - a PMPI counter of the MPI calls a program makes, per rank (issue 11).
 *
 * Built as libdsort_pmpi_count.so and loaded with LD_PRELOAD in front of the MPI library
 * (Open MPI: mpirun -x LD_PRELOAD=.../libdsort_pmpi_count.so -x DSORT_PMPI_OUT=FILE ...;
 * MPICH: -genv). Each MPI_Xxx defined here counts and calls PMPI_Xxx, the MPI standard's
 * profiling interface; the program is not rebuilt.
 *
 * Counted per function and rank: calls, bytes sent, bytes received, the largest bytes
 * received by one call (the peak receive buffer) and the seconds spent inside the call.
 * Bytes are the logical (API-level) bytes, count x MPI_Type_size, not the bytes on the wire
 * (a tree or ring algorithm forwards more):
 *   Send, Isend, Recv, Irecv    count x size (a receive counts its posted count)
 *   Sendrecv                    both
 *   Bcast                       the root sends count x size, every other rank receives it
 *   Allreduce, Exscan, Scan     count x size sent and received: the reduced buffer once
 *   Reduce                      count x size sent; the root also receives it once
 *   Allgather, Alltoall         p x recvcount x size received (the whole receive buffer,
 *                               this rank's own block included); sent: sendcount x size
 *                               (Allgather) or p x sendcount x size (Alltoall)
 *   Allgatherv, Alltoallv       the sums of the count arrays
 *   Gather(v)                   everyone sends; the root receives p x count (sum of counts)
 *   Scatter(v)                  the root sends p x count (sum of counts), everyone receives
 *   Reduce_scatter(_block)      sent: the whole vector; received: this rank's block
 *   Barrier, Wait*, Test        calls and seconds only
 * MPI_IN_PLACE sends nothing of its own where the standard says the data is already there.
 *
 * At MPI_Finalize each rank appends one JSON line to the file named by DSORT_PMPI_OUT (one
 * write() with O_APPEND, so the ranks' lines do not interleave); unset, nothing is written.
 * The line also has VmHWM and VmRSS from /proc/self/status read just before PMPI_Finalize
 * (the peak resident memory of the rank), and the seconds from MPI_Init to MPI_Finalize.
 *
 * Phases: there is no split by phase, the counter has no hook into the program's phases;
 * in dsort each function belongs to few phases (docs/scaling.md maps them).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum fn {
    FN_ALLREDUCE,
    FN_REDUCE,
    FN_ALLGATHER,
    FN_ALLGATHERV,
    FN_GATHER,
    FN_GATHERV,
    FN_SCATTER,
    FN_SCATTERV,
    FN_BCAST,
    FN_ALLTOALL,
    FN_ALLTOALLV,
    FN_EXSCAN,
    FN_SCAN,
    FN_REDUCE_SCATTER,
    FN_REDUCE_SCATTER_BLOCK,
    FN_BARRIER,
    FN_SEND,
    FN_RECV,
    FN_ISEND,
    FN_IRECV,
    FN_SENDRECV,
    FN_WAIT,
    FN_WAITALL,
    FN_TEST,
    FN_COUNT
};

static const char *const fn_name[FN_COUNT] = {
    "MPI_Allreduce",  "MPI_Reduce",         "MPI_Allgather",
    "MPI_Allgatherv", "MPI_Gather",         "MPI_Gatherv",
    "MPI_Scatter",    "MPI_Scatterv",       "MPI_Bcast",
    "MPI_Alltoall",   "MPI_Alltoallv",      "MPI_Exscan",
    "MPI_Scan",       "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
    "MPI_Barrier",    "MPI_Send",           "MPI_Recv",
    "MPI_Isend",      "MPI_Irecv",          "MPI_Sendrecv",
    "MPI_Wait",       "MPI_Waitall",        "MPI_Test"};

/* Point-to-point (the rest are collectives, or waits that move nothing themselves). */
static int is_p2p(enum fn f)
{
    return f == FN_SEND || f == FN_RECV || f == FN_ISEND || f == FN_IRECV || f == FN_SENDRECV;
}
static int is_wait(enum fn f)
{
    return f == FN_WAIT || f == FN_WAITALL || f == FN_TEST;
}

struct counter {
    uint64_t calls, sent, recv, peak_recv;
    double seconds;
};

static struct counter cnt[FN_COUNT];
static double t_init;

/* MPI calls may come from more than one thread (MPI_THREAD_MULTIPLE): add atomically. */
static void add(enum fn f, uint64_t sent, uint64_t recv, double t0)
{
    double dt = PMPI_Wtime() - t0;
    __atomic_add_fetch(&cnt[f].calls, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&cnt[f].sent, sent, __ATOMIC_RELAXED);
    __atomic_add_fetch(&cnt[f].recv, recv, __ATOMIC_RELAXED);
    uint64_t old = __atomic_load_n(&cnt[f].peak_recv, __ATOMIC_RELAXED);
    while (recv > old && !__atomic_compare_exchange_n(&cnt[f].peak_recv, &old, recv, 1,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    /* seconds: a race here loses a little time, never counts */
    cnt[f].seconds += dt;
}

static uint64_t tsize(MPI_Datatype t)
{
    int s = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &s) != MPI_SUCCESS || s < 0)
        return 0;
    return (uint64_t)s;
}

static uint64_t bytes(int count, MPI_Datatype t)
{
    return count > 0 ? (uint64_t)count * tsize(t) : 0;
}

static int comm_size(MPI_Comm c)
{
    int p = 0;
    PMPI_Comm_size(c, &p);
    return p;
}

static int comm_rank(MPI_Comm c)
{
    int r = 0;
    PMPI_Comm_rank(c, &r);
    return r;
}

/* Intercommunicators are not used by dsort; their remote group size would be the right p. */
static uint64_t sum_counts(const int *counts, int p, MPI_Datatype t)
{
    uint64_t s = 0;
    for (int i = 0; counts && i < p; i++)
        s += counts[i] > 0 ? (uint64_t)counts[i] : 0;
    return s * tsize(t);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    t_init = PMPI_Wtime();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    t_init = PMPI_Wtime();
    return rc;
}

/* ---- collectives ---- */

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Allreduce(sbuf, rbuf, count, t, op, comm);
    add(FN_ALLREDUCE, bytes(count, t), bytes(count, t), t0);
    return rc;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, int root,
               MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Reduce(sbuf, rbuf, count, t, op, root, comm);
    int me = comm_rank(comm);
    add(FN_REDUCE, bytes(count, t), me == root ? bytes(count, t) : 0, t0);
    return rc;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    uint64_t s = sbuf == MPI_IN_PLACE ? bytes(rcount, rtype) : bytes(scount, stype);
    add(FN_ALLGATHER, s, (uint64_t)comm_size(comm) * bytes(rcount, rtype), t0);
    return rc;
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int *rcounts,
                   const int *displs, MPI_Datatype rtype, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    uint64_t s =
        sbuf == MPI_IN_PLACE ? bytes(rcounts[comm_rank(comm)], rtype) : bytes(scount, stype);
    add(FN_ALLGATHERV, s, sum_counts(rcounts, comm_size(comm), rtype), t0);
    return rc;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    int root_here = comm_rank(comm) == root;
    uint64_t s = root_here && sbuf == MPI_IN_PLACE ? bytes(rcount, rtype) : bytes(scount, stype);
    add(FN_GATHER, s, root_here ? (uint64_t)comm_size(comm) * bytes(rcount, rtype) : 0, t0);
    return rc;
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int *rcounts,
                const int *displs, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    int me = comm_rank(comm), root_here = me == root;
    uint64_t s =
        root_here && sbuf == MPI_IN_PLACE ? bytes(rcounts[me], rtype) : bytes(scount, stype);
    add(FN_GATHERV, s, root_here ? sum_counts(rcounts, comm_size(comm), rtype) : 0, t0);
    return rc;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    int root_here = comm_rank(comm) == root;
    uint64_t r = root_here && rbuf == MPI_IN_PLACE ? bytes(scount, stype) : bytes(rcount, rtype);
    add(FN_SCATTER, root_here ? (uint64_t)comm_size(comm) * bytes(scount, stype) : 0, r, t0);
    return rc;
}

int MPI_Scatterv(const void *sbuf, const int *scounts, const int *displs, MPI_Datatype stype,
                 void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    int me = comm_rank(comm), root_here = me == root;
    uint64_t r =
        root_here && rbuf == MPI_IN_PLACE ? bytes(scounts[me], stype) : bytes(rcount, rtype);
    add(FN_SCATTERV, root_here ? sum_counts(scounts, comm_size(comm), stype) : 0, r, t0);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Bcast(buf, count, t, root, comm);
    int root_here = comm_rank(comm) == root;
    add(FN_BCAST, root_here ? bytes(count, t) : 0, root_here ? 0 : bytes(count, t), t0);
    return rc;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    uint64_t p = (uint64_t)comm_size(comm);
    uint64_t s = sbuf == MPI_IN_PLACE ? p * bytes(rcount, rtype) : p * bytes(scount, stype);
    add(FN_ALLTOALL, s, p * bytes(rcount, rtype), t0);
    return rc;
}

int MPI_Alltoallv(const void *sbuf, const int *scounts, const int *sdispls, MPI_Datatype stype,
                  void *rbuf, const int *rcounts, const int *rdispls, MPI_Datatype rtype,
                  MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    int p = comm_size(comm);
    uint64_t s =
        sbuf == MPI_IN_PLACE ? sum_counts(rcounts, p, rtype) : sum_counts(scounts, p, stype);
    add(FN_ALLTOALLV, s, sum_counts(rcounts, p, rtype), t0);
    return rc;
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Exscan(sbuf, rbuf, count, t, op, comm);
    add(FN_EXSCAN, bytes(count, t), bytes(count, t), t0);
    return rc;
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Scan(sbuf, rbuf, count, t, op, comm);
    add(FN_SCAN, bytes(count, t), bytes(count, t), t0);
    return rc;
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, MPI_Datatype t, MPI_Op op,
                       MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Reduce_scatter(sbuf, rbuf, rcounts, t, op, comm);
    add(FN_REDUCE_SCATTER, sum_counts(rcounts, comm_size(comm), t),
        bytes(rcounts[comm_rank(comm)], t), t0);
    return rc;
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype t, MPI_Op op,
                             MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, t, op, comm);
    add(FN_REDUCE_SCATTER_BLOCK, (uint64_t)comm_size(comm) * bytes(rcount, t), bytes(rcount, t),
        t0);
    return rc;
}

int MPI_Barrier(MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Barrier(comm);
    add(FN_BARRIER, 0, 0, t0);
    return rc;
}

/* ---- point-to-point ---- */

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Send(buf, count, t, dest, tag, comm);
    add(FN_SEND, bytes(count, t), 0, t0);
    return rc;
}

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Recv(buf, count, t, src, tag, comm, status);
    add(FN_RECV, 0, bytes(count, t), t0);
    return rc;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Isend(buf, count, t, dest, tag, comm, req);
    add(FN_ISEND, bytes(count, t), 0, t0);
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Irecv(buf, count, t, src, tag, comm, req);
    add(FN_IRECV, 0, bytes(count, t), t0);
    return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm,
                           status);
    add(FN_SENDRECV, bytes(scount, stype), bytes(rcount, rtype), t0);
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Wait(req, status);
    add(FN_WAIT, 0, 0, t0);
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Waitall(n, reqs, statuses);
    add(FN_WAITALL, 0, 0, t0);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Test(req, flag, status);
    add(FN_TEST, 0, 0, t0);
    return rc;
}

/* ---- the report ---- */

/* A "VmXXX:   1234 kB" line of /proc/self/status, in kB; -1 if absent. */
static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

struct buf {
    char *s;
    size_t len, cap;
};

static void put(struct buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
        char *s = realloc(b->s, cap);
        if (!s)
            return;
        b->s = s;
        b->cap = cap;
    }
}

static void report(void)
{
    const char *path = getenv("DSORT_PMPI_OUT");
    if (!path || !*path)
        return;
    int rank = comm_rank(MPI_COMM_WORLD), size = comm_size(MPI_COMM_WORLD);
    struct counter coll = {0}, p2p = {0};
    for (int f = 0; f < FN_COUNT; f++) {
        struct counter *t = is_p2p(f) ? &p2p : &coll;
        if (is_wait(f))
            continue;
        t->calls += cnt[f].calls;
        t->sent += cnt[f].sent;
        t->recv += cnt[f].recv;
        t->seconds += cnt[f].seconds;
        t->peak_recv = cnt[f].peak_recv > t->peak_recv ? cnt[f].peak_recv : t->peak_recv;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct buf b = {0};
    put(&b,
        "{\"rank\": %d, \"size\": %d, \"host\": \"%s\", \"pid\": %ld, \"seconds\": %.6f, "
        "\"vmhwm_kb\": %ld, \"vmrss_kb\": %ld",
        rank, size, host, (long)getpid(), PMPI_Wtime() - t_init, status_kb("VmHWM"),
        status_kb("VmRSS"));
    const struct counter *tot[2] = {&coll, &p2p};
    const char *tname[2] = {"coll", "p2p"};
    for (int i = 0; i < 2; i++)
        put(&b,
            ", \"%s\": {\"calls\": %llu, \"sent\": %llu, \"recv\": %llu, \"peak_recv\": %llu, "
            "\"seconds\": %.6f}",
            tname[i], (unsigned long long)tot[i]->calls, (unsigned long long)tot[i]->sent,
            (unsigned long long)tot[i]->recv, (unsigned long long)tot[i]->peak_recv,
            tot[i]->seconds);
    put(&b, ", \"funcs\": {");
    int first = 1;
    for (int f = 0; f < FN_COUNT; f++) {
        if (!cnt[f].calls)
            continue;
        put(&b,
            "%s\"%s\": {\"calls\": %llu, \"sent\": %llu, \"recv\": %llu, \"peak_recv\": %llu, "
            "\"seconds\": %.6f}",
            first ? "" : ", ", fn_name[f], (unsigned long long)cnt[f].calls,
            (unsigned long long)cnt[f].sent, (unsigned long long)cnt[f].recv,
            (unsigned long long)cnt[f].peak_recv, cnt[f].seconds);
        first = 0;
    }
    put(&b, "}}\n");
    if (!b.s)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        /* One write: O_APPEND places it whole at the end of the file. */
        ssize_t w = write(fd, b.s, b.len);
        if (w != (ssize_t)b.len)
            fprintf(stderr, "dsort_pmpi_count: rank %d: short write to %s\n", rank, path);
        close(fd);
    } else {
        fprintf(stderr, "dsort_pmpi_count: rank %d: cannot open %s\n", rank, path);
    }
    free(b.s);
}

int MPI_Finalize(void)
{
    report();
    return PMPI_Finalize();
}
