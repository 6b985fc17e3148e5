/* MPI test for exchange.h: dsort_exchange_counts and the chunked all-to-all.
 *
 * The byte count of every (source, destination) pair comes from a hash of the seed, so every
 * rank knows the whole matrix; many pairs are zero, the self pair included at times. Every
 * byte sent encodes (source, destination, offset), so a piece that lands in the wrong place,
 * in the wrong order, or shifted by a chunk shows up. Each scenario runs with chunk sizes
 * 1, 7, 1000 and the default, through dsort_exchange_run (pieces back to back in rank order)
 * and through dsort_exchange_runv with explicit displacements (pieces in reverse rank order
 * with gaps between them, which must stay untouched), and through dsort_exchange_gather (the
 * sends gathered into a small stage by a callback, round by round; the self piece not moved, so
 * its place stays untouched), and through the same driven by its caller
 * (dsort_exchange_gather_start, _progress, _finish: at every step, what it says has arrived
 * from each rank must be there, byte for byte, and never shrink). A guard zone after the
 * receive buffer catches overruns.
 * Seeded: rank 0 prints the seed; DSORT_TEST_SEED=<seed> replays. Exit status 0 on success,
 * 1 on any failure (every rank agrees). */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exchange.h"

#define GUARD 64

static int rank, nranks;
static uint64_t seed;
static int failures;
static char node_desc[64]; /* " (node exchange, N ranks a node)" */

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* The byte at offset off of the piece from s to d. */
static unsigned char pattern(int s, int d, uint64_t off)
{
    return (unsigned char)(off * 131 + (off >> 8) * 7 + (off >> 16) * 3 + (uint64_t)s * 29 +
                           (uint64_t)d * 71 + 1);
}

enum scenario {
    SC_RANDOM,    /* 0..300 bytes, a third of the pairs empty */
    SC_ZERO,      /* nothing at all */
    SC_SELF_ONLY, /* only the self pieces */
    SC_ONE_PAIR,  /* one big piece from the last rank to rank 0, the rest empty */
    SC_UNEVEN,    /* up to 3000 bytes, very different sizes */
    SC_BIG,       /* about 200 KB per pair */
    SC_COUNT
};

static const char *const sc_name[] = {"random", "zero", "self-only", "one-pair", "uneven", "big"};

static uint64_t count_of(enum scenario sc, int rep, int s, int d)
{
    uint64_t h =
        mix(seed ^ mix((uint64_t)sc * 100 + (uint64_t)rep) ^ mix((uint64_t)s << 20 | (uint64_t)d));
    switch (sc) {
    case SC_ZERO:
        return 0;
    case SC_SELF_ONLY:
        return s == d ? 1 + h % 500 : 0;
    case SC_ONE_PAIR:
        return s == nranks - 1 && d == 0 ? 1500 + h % 1000 : 0;
    case SC_UNEVEN:
        return h % 4 == 0 ? 0 : (h >> 8) % 3001;
    case SC_BIG:
        return 150000 + (h >> 8) % 100000;
    default:
        return h % 3 == 0 ? 0 : (h >> 8) % 301;
    }
}

/* The gathering exchange's fill: from the send buffer of the case (gather_src). */
static const unsigned char *gather_src;
static const uint64_t *gather_disp;

static void gather_fill(void *ctx, int to, uint64_t at, size_t len, unsigned char *dst)
{
    (void)ctx;
    memcpy(dst, gather_src + gather_disp[to] + at, len);
}

/* The gathered exchange driven by its caller: a wait every third step, else only a test (odd
 * ranks wait less often still); after each step, what dsort_exchange_flow_received says has
 * arrived from each rank must be in recvbuf as expect has it, and never shrink; all of it
 * once done. The first step waits for exactly one round: then exactly the first part of each
 * piece (q bytes, or the piece) has arrived, no more, no less. Sets *bad on a failure. */
static enum dsort_status drive_flow(unsigned char *stage, size_t stage_len, size_t chunk,
                                    uint64_t q, const uint64_t *scount, unsigned char *recvbuf,
                                    const uint64_t *rcount, const uint64_t *rdisp,
                                    const unsigned char *expect, int *rounds, int *bad,
                                    struct dsort_error *err)
{
    struct dsort_exchange_flow *f;
    enum dsort_status st =
        dsort_exchange_gather_start(&f, MPI_COMM_WORLD, gather_fill, NULL, scount, recvbuf, rcount,
                                    rdisp, stage, stage_len, 1, chunk, err);
    if (st)
        return st;
    uint64_t *seen = calloc((size_t)nranks, sizeof *seen);
    if (!seen)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int step = 0; !st && !*bad && !dsort_exchange_flow_done(f); step++) {
        /* waits now and then, in MPI's wait (ranks 0, 1, 4, 5, ...) or sleeping between
         * tests (ranks 2, 3, 6, ...); step 0 waits for the first round */
        const enum dsort_exchange_wait wait =
            rank & 2 ? DSORT_EXCHANGE_WAIT_IDLE : DSORT_EXCHANGE_WAIT;
        st = dsort_exchange_flow_progress(
            f, step % (rank & 1 ? 7 : 3) == 0 ? wait : DSORT_EXCHANGE_TEST, err);
        for (int s = 0; s < nranks && !st; s++) {
            const uint64_t got = dsort_exchange_flow_received(f, s);
            const uint64_t want = s == rank ? 0 : rcount[s];
            if (got < seen[s] || got > want ||
                memcmp(recvbuf + rdisp[s], expect + rdisp[s], (size_t)got) != 0) {
                fprintf(stderr,
                        "FAIL rank %d seed %" PRIu64 " (flow): from rank %d, %" PRIu64
                        " bytes said to have arrived (before %" PRIu64 ", of %" PRIu64
                        "), or not as sent\n",
                        rank, seed, s, got, seen[s], want);
                *bad = 1;
            }
            if (step == 0 && got != (want < q ? want : q)) {
                fprintf(stderr,
                        "FAIL rank %d seed %" PRIu64 " (flow): after one round, %" PRIu64
                        " bytes from rank %d said to have arrived, not %" PRIu64 "\n",
                        rank, seed, got, s, want < q ? want : q);
                *bad = 1;
            }
            seen[s] = got;
        }
    }
    for (int s = 0; s < nranks && !st && !*bad; s++)
        if (seen[s] != (s == rank ? 0 : rcount[s])) {
            fprintf(stderr,
                    "FAIL rank %d seed %" PRIu64 " (flow): done with %" PRIu64 " of %" PRIu64
                    " bytes from rank %d\n",
                    rank, seed, seen[s], rcount[s], s);
            *bad = 1;
        }
    free(seen);
    enum dsort_status st2 = dsort_exchange_flow_finish(f, rounds, err);
    return st ? st : st2;
}

/* xch: NULL for the direct exchange; else the node exchange it was opened for (its chunk).
 * displs: 0 back to back (dsort_exchange_run), 1 with displacements (runv), 2 gathered, 3
 * gathered and driven step by step (the flow). */
static void run_case(enum scenario sc, int rep, size_t chunk, int displs,
                     struct dsort_exchange *xch)
{
    const int p = nranks;
    int bad = 0;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr,                                                                        \
                    "FAIL rank %d/%d seed %" PRIu64 " scenario %s rep %d chunk %zu%s%s: ", rank,   \
                    nranks, seed, sc_name[sc], rep, chunk,                                         \
                    displs == 3   ? " (flow)"                                                      \
                    : displs == 2 ? " (gather)"                                                    \
                    : displs      ? " (runv)"                                                      \
                                  : "",                                                                 \
                    xch ? node_desc : "");                                                         \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            bad = 1;                                                                               \
        }                                                                                          \
    } while (0)
    uint64_t *sc_send = malloc((size_t)p * sizeof *sc_send);
    uint64_t *sc_recv = malloc((size_t)p * sizeof *sc_recv);
    if (!sc_send || !sc_recv)
        MPI_Abort(MPI_COMM_WORLD, 2);
    uint64_t need_other = 0, need_all = 0;
    for (int d = 0; d < p; d++)
        sc_send[d] = count_of(sc, rep, rank, d);
    for (int s = 0; s < p; s++)
        for (int d = 0; d < p; d++) {
            uint64_t c = count_of(sc, rep, s, d), r = (c + chunk - 1) / chunk;
            if (s != d && r > need_other)
                need_other = r;
            if (r > need_all)
                need_all = r;
        }
    memset(sc_recv, 0xff, (size_t)p * sizeof *sc_recv);
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_exchange_counts(MPI_COMM_WORLD, sc_send, sc_recv, &err);
    CHECK(st == DSORT_OK, "dsort_exchange_counts: %s", err.msg);
    for (int s = 0; s < p; s++)
        CHECK(sc_recv[s] == count_of(sc, rep, s, rank),
              "recvcounts[%d] = %" PRIu64 ", expected %" PRIu64, s, sc_recv[s],
              count_of(sc, rep, s, rank));

    /* Displacements: back to back in rank order, or (runv) in reverse rank order with a gap
     * of 0..4 bytes before every piece. */
    uint64_t *sdisp = malloc((size_t)p * sizeof *sdisp), *rdisp = malloc((size_t)p * sizeof *rdisp);
    if (!sdisp || !rdisp)
        MPI_Abort(MPI_COMM_WORLD, 2);
    uint64_t slen = 0, rlen = 0;
    for (int i = 0; i < p; i++) {
        int j = displs ? p - 1 - i : i;
        uint64_t gap = displs ? (uint64_t)((j * 7 + rank) % 5) : 0;
        sdisp[j] = slen + gap;
        slen += gap + sc_send[j];
        rdisp[j] = rlen + gap;
        rlen += gap + sc_recv[j];
    }
    unsigned char *sendbuf = malloc(slen + 1), *recvbuf = malloc(rlen + GUARD);
    unsigned char *expect = malloc(rlen + GUARD);
    if (!sendbuf || !recvbuf || !expect)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(sendbuf, 0x5C, slen + 1);
    for (int d = 0; d < p; d++)
        for (uint64_t o = 0; o < sc_send[d]; o++)
            sendbuf[sdisp[d] + o] = pattern(rank, d, o);
    memset(recvbuf, 0xA5, rlen + GUARD);
    memset(expect, 0xA5, rlen + GUARD);
    for (int s = 0; s < p; s++) {
        uint64_t c = displs >= 2 && s == rank ? 0 : count_of(sc, rep, s, rank);
        for (uint64_t o = 0; o < c; o++)
            expect[rdisp[s] + o] = pattern(s, rank, o);
    }
    int rounds = -1;
    if (rank == 0 && getenv("DSORT_TEST_VERBOSE")) {
        printf("case %s rep %d chunk %zu%s%s\n", sc_name[sc], rep, chunk,
               displs == 3   ? " (flow)"
               : displs == 2 ? " (gather)"
               : displs      ? " (runv)"
                             : "",
               xch ? node_desc : "");
        fflush(stdout);
    }
    dsort_error_clear(&err);
    if (xch) {
        uint64_t before = xch->node_moves;
        st = dsort_exchange_move(xch, sendbuf, sc_send, displs ? sdisp : NULL, recvbuf, sc_recv,
                                 displs ? rdisp : NULL, &rounds, &err);
        if (xch->kind == DSORT_EXCHANGE_NODE)
            CHECK(xch->node_moves == before + 1, "the node exchange did not run");
    } else if (displs >= 2) {
        /* a stage of 37 bytes a peer, two rounds in flight: parts of at most 18 bytes, or the
         * chunk if smaller */
        size_t stage_len = 37 * (size_t)(p > 1 ? p - 1 : 1);
        unsigned char *stage = malloc(stage_len);
        if (!stage)
            MPI_Abort(MPI_COMM_WORLD, 2);
        gather_src = sendbuf;
        gather_disp = sdisp;
        const uint64_t q = chunk < 37 / 2 ? chunk : 37 / 2;
        if (displs == 2)
            st = dsort_exchange_gather(MPI_COMM_WORLD, gather_fill, NULL, sc_send, recvbuf, sc_recv,
                                       rdisp, stage, stage_len, 1, chunk, &rounds, &err);
        else
            st = drive_flow(stage, stage_len, chunk, q, sc_send, recvbuf, sc_recv, rdisp, expect,
                            &rounds, &bad, &err);
        free(stage);
        need_other = 0;
        for (int s2 = 0; s2 < p; s2++)
            for (int d = 0; d < p; d++) {
                uint64_t c = count_of(sc, rep, s2, d), r = (c + q - 1) / q;
                if (s2 != d && r > need_other)
                    need_other = r;
            }
        need_all = need_other;
    } else if (displs)
        st = dsort_exchange_runv(MPI_COMM_WORLD, sendbuf, sc_send, sdisp, recvbuf, sc_recv, rdisp,
                                 chunk, &rounds, &err);
    else
        st = dsort_exchange_run(MPI_COMM_WORLD, sendbuf, sc_send, recvbuf, sc_recv, chunk, &rounds,
                                &err);
    CHECK(st == DSORT_OK, "dsort_exchange_run%s: %s", displs ? "v" : "", err.msg);
    /* Pieces where they belong, every byte right, gaps and guard untouched. */
    for (uint64_t at = 0; at < rlen + GUARD && !bad; at++)
        if (recvbuf[at] != expect[at]) {
            int s = -1;
            for (int i = 0; i < p; i++)
                if (at >= rdisp[i] && at < rdisp[i] + sc_recv[i])
                    s = i;
            if (s >= 0)
                CHECK(0, "receive buffer byte %" PRIu64 " is %u, expected %u (piece from rank %d)",
                      at, recvbuf[at], expect[at], s);
            else
                CHECK(0, "receive buffer byte %" PRIu64 " is %u, expected %u (outside the pieces)",
                      at, recvbuf[at], expect[at]);
        }
    /* The send buffer is left alone. */
    for (int d = 0; d < p && !bad; d++)
        for (uint64_t o = 0; o < sc_send[d]; o++)
            if (sendbuf[sdisp[d] + o] != pattern(rank, d, o)) {
                CHECK(0, "send buffer changed at %" PRIu64, sdisp[d] + o);
                break;
            }
    /* Rounds: enough for the largest piece between two ranks, no more than the largest
     * piece of all needs. */
    CHECK(xch || (rounds >= (int)need_other && rounds <= (int)need_all),
          "%d rounds, expected between %" PRIu64 " and %" PRIu64, rounds, need_other, need_all);
#undef CHECK
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any)
        failures++;
    free(sendbuf);
    free(recvbuf);
    free(expect);
    free(sdisp);
    free(rdisp);
    free(sc_send);
    free(sc_recv);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (rank == 0) {
        const char *env = getenv("DSORT_TEST_SEED");
        seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
        printf("test_exchange: %d ranks, random seed %" PRIu64 " (set DSORT_TEST_SEED to replay)\n",
               nranks, seed);
        fflush(stdout);
    }
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    static const size_t chunks[] = {1, 7, 1000, DSORT_EXCHANGE_CHUNK};
    int cases = 0;
    if (argc > 2 && strcmp(argv[1], "--node") == 0) {
        /* The node exchange (DSORT_EXCHANGE_NODE), for each grouping of the list: G ranks a
         * virtual node (DSORT_EXCHANGE_RANKS_PER_NODE), 0 for the machine's own nodes. */
        for (char *g = strtok(argv[2], ","); g; g = strtok(NULL, ",")) {
            int per = atoi(g);
            if (per > 0)
                setenv("DSORT_EXCHANGE_RANKS_PER_NODE", g, 1);
            else
                unsetenv("DSORT_EXCHANGE_RANKS_PER_NODE");
            snprintf(node_desc, sizeof node_desc, " (node exchange, %d ranks a node)", per);
            for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
                /* at many oversubscribed ranks, byte-sized slices take too many rounds */
                if (nranks > 8 && chunks[c] < 1000)
                    continue;
                struct dsort_exchange x;
                struct dsort_error err;
                dsort_error_clear(&err);
                if (dsort_exchange_open(&x, MPI_COMM_WORLD, DSORT_EXCHANGE_NODE, chunks[c], &err)) {
                    fprintf(stderr, "FAIL rank %d: dsort_exchange_open: %s\n", rank, err.msg);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                if (per > 0 && x.nodes != (nranks + per - 1) / per) {
                    fprintf(stderr, "FAIL rank %d: %d nodes at %d ranks a node\n", rank, x.nodes,
                            per);
                    failures++;
                }
                for (int sc = 0; sc < SC_COUNT; sc++) {
                    /* byte-sized slices of 200 KB or 3000-byte pieces: too many rounds */
                    if ((sc == SC_BIG || sc == SC_UNEVEN) && chunks[c] < 1000)
                        continue;
                    if (sc == SC_BIG && nranks > 8 && chunks[c] < DSORT_EXCHANGE_CHUNK)
                        continue;
                    int reps = sc == SC_ZERO || nranks > 8 ? 1 : chunks[c] < 1000 ? 2 : 4;
                    for (int rep = 0; rep < reps; rep++, cases++)
                        run_case((enum scenario)sc, rep, chunks[c], rep & 1, &x);
                }
                dsort_exchange_close(&x);
            }
        }
        /* The rule leaves one machine's ranks (one node) to the direct exchange. */
        unsetenv("DSORT_EXCHANGE_RANKS_PER_NODE");
        struct dsort_exchange x;
        struct dsort_error err;
        dsort_error_clear(&err);
        if (dsort_exchange_open(&x, MPI_COMM_WORLD, DSORT_EXCHANGE_AUTO, 1000, &err))
            MPI_Abort(MPI_COMM_WORLD, 1);
        snprintf(node_desc, sizeof node_desc, " (auto)");
        run_case(SC_RANDOM, 0, 1000, 1, &x);
        if (x.nodes == 1 && x.node_moves != 0) {
            fprintf(stderr, "FAIL rank %d: auto chose the node exchange on one node\n", rank);
            failures++;
        }
        dsort_exchange_close(&x);
    } else
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
            for (int sc = 0; sc < SC_COUNT; sc++) {
                /* one byte per round for 200 KB pieces would take too long */
                if (sc == SC_BIG && chunks[c] < 1000)
                    continue;
                int reps = sc == SC_ZERO ? 2 : 4;
                for (int rep = 0; rep < reps; rep++, cases++)
                    run_case((enum scenario)sc, rep, chunks[c], rep & 1, NULL);
                /* gathered sends: 200 KB pieces in 37-byte parts take too many rounds */
                for (int rep = 0; rep < 2 && sc != SC_BIG; rep++, cases++)
                    run_case((enum scenario)sc, rep, chunks[c], 2, NULL);
                for (int rep = 0; rep < 2 && sc != SC_BIG; rep++, cases++)
                    run_case((enum scenario)sc, rep, chunks[c], 3, NULL);
            }
    if (rank == 0) {
        printf("test_exchange: %d cases, %d failed\n", cases, failures);
        fflush(stdout);
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
