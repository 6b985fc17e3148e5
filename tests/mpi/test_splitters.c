/* MPI test for splitters.h: dsort_splitters_cut must give rank j exactly the elements of
 * global ranks [floor(jN/p), floor((j+1)N/p)) for any key distribution.
 *
 * Every rank builds a sorted array of unique composite keys (8-byte big-endian key value,
 * 4-byte rank, 8-byte index: the layout dsort uses) under several distributions - random,
 * heavy duplicates, all equal (also all on one rank, or with holes), empty ranks, one rank
 * holding everything, fewer elements than ranks, data already partitioned by rank, globally
 * sorted and reverse-sorted, random sizes - and the result is checked globally: cuts
 * monotone and complete, every destination's count exact, every element sent to rank j
 * below every element sent to any later rank (bucket maxima against later bucket minima,
 * gathered to rank 0), and an oracle: every key and its destination gathered to rank 0 and
 * sorted there, each element's destination must follow from its global position. The
 * collectives the cut calls are metered here (PMPI wrappers) and rank 0 prints the bytes
 * received per rank. dsort_splitters_sample (the out-of-core pipelines' sampled splitters) is
 * checked on the same scenarios against the sorted keys gathered as bytes (tol = 0: exact),
 * and with a tolerance (each splitter within tol * N/p keys of its target; its traffic
 * metered and bounded by O(p) a round); dsort_splitters_select (also weighted, ranks standing for
 * unequal shares) over keys with ties, of varying length, with the caller's comparator, on both cut
 * sides. Seeded: rank 0 prints the seed; DSORT_TEST_SEED=<seed> replays. Exit status 0 on success,
 * 1 on any failure (every rank agrees). */
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "splitters.h"

#define KEY_SIZE 20

static int rank, nranks;
static uint64_t seed;
static int failures;

/* Traffic meter, compiled into this test only: the collectives dsort_splitters_cut calls are
 * wrapped here through the MPI profiling interface (the library's calls resolve to these
 * definitions, which forward to PMPI_*). While `metering` is set they add up the logical payload
 * this rank receives from the others: (p-1) blocks for an Allgather or Alltoall, the other
 * ranks' contributions to its block for a Reduce_scatter_block, the result vector for an
 * Allreduce, the buffer for a Bcast at a non-root. */
static int metering;
static uint64_t meter_bytes, meter_calls;

static uint64_t type_bytes(MPI_Datatype t, int count)
{
    int sz = 0;
    PMPI_Type_size(t, &sz);
    return (uint64_t)sz * (uint64_t)(count > 0 ? count : 0);
}

static uint64_t comm_others(MPI_Comm comm)
{
    int p = 1;
    PMPI_Comm_size(comm, &p);
    return (uint64_t)(p - 1);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (metering) {
        meter_bytes += comm_others(comm) * type_bytes(recvtype, recvcount);
        meter_calls++;
    }
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (metering) {
        meter_bytes += comm_others(comm) * type_bytes(recvtype, recvcount);
        meter_calls++;
    }
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    if (metering) {
        meter_bytes += comm_others(comm) ? type_bytes(datatype, count) : 0;
        meter_calls++;
    }
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    if (metering) {
        meter_bytes += comm_others(comm) * type_bytes(datatype, recvcount);
        meter_calls++;
    }
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    if (metering) {
        int r = 0;
        PMPI_Comm_rank(comm, &r);
        meter_bytes += r != root ? type_bytes(datatype, count) : 0;
        meter_calls++;
    }
    return PMPI_Bcast(buffer, count, datatype, root, comm);
}

/* splitmix64: a fresh stream per (seed, scenario, rank). */
static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t rng;
static uint64_t rnd(void)
{
    rng = mix(rng);
    return rng;
}

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        p[i] = (unsigned char)v;
        v >>= 8;
    }
}

struct keys {
    uint64_t n;
    unsigned char *k; /* n * KEY_SIZE */
};

static void key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    const struct keys *K = ctx;
    memcpy(out, K->k + i * KEY_SIZE, KEY_SIZE);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

enum scenario {
    SC_RANDOM,
    SC_DUPS,       /* key values 0..3 */
    SC_EQUAL,      /* every key value 42 */
    SC_EMPTY_SOME, /* even ranks empty */
    SC_ONE_RANK,   /* one rank holds everything */
    SC_ALL_EMPTY,
    SC_TINY,        /* 0 or 1 element per rank: N < p likely */
    SC_PARTITIONED, /* rank r's keys all above rank r-1's */
    SC_REVERSED,    /* rank r's keys all below rank r-1's */
    SC_LARGE,       /* tens of thousands per rank, random, with duplicates */
    SC_SKEWED,      /* one rank many, others few, same value range */
    SC_SORTED,      /* globally sorted: the key value is the global position, rank by rank */
    SC_REV_SORTED,  /* globally reverse-sorted: rank 0 holds the largest values */
    SC_EQUAL_ONE,   /* every key value equal, all on one rank */
    SC_EQUAL_HOLES, /* every key value equal, every third rank empty */
    SC_FEW,         /* N < p: ranks below rep % p hold one element each, the others none */
    SC_RAND_SIZES,  /* sizes 0 .. 2^14 drawn log-uniformly, values random or with duplicates */
    SC_COUNT
};

static const char *const sc_name[] = {
    "random",     "dups",        "equal",       "empty-some", "one-rank",    "all-empty",
    "tiny",       "partitioned", "reversed",    "large",      "skewed",      "sorted",
    "rev-sorted", "equal-one",   "equal-holes", "few",        "random-sizes"};

static void build(enum scenario sc, int rep, struct keys *K)
{
    rng = mix(seed ^ mix((uint64_t)sc * 1000 + (uint64_t)rep) ^ mix((uint64_t)rank + 7777));
    uint64_t n;
    switch (sc) {
    case SC_EMPTY_SOME:
        n = rank % 2 == 0 ? 0 : rnd() % 3000;
        break;
    case SC_ONE_RANK:
        n = rank == (rep % nranks) ? 1 + rnd() % 5000 : 0;
        break;
    case SC_ALL_EMPTY:
        n = 0;
        break;
    case SC_TINY:
        n = rnd() % 2;
        break;
    case SC_LARGE:
        n = 20000 + rnd() % 20000;
        break;
    case SC_SKEWED:
        n = rank == 0 ? 10000 : rnd() % 50;
        break;
    case SC_EQUAL_ONE:
        n = rank == (rep + 1) % nranks ? 1 + rnd() % 5000 : 0;
        break;
    case SC_EQUAL_HOLES:
        n = rank % 3 == 0 ? 0 : rnd() % 3000;
        break;
    case SC_FEW:
        n = rank < rep % nranks ? 1 : 0;
        break;
    case SC_RAND_SIZES:
        n = rnd() % ((uint64_t)1 << (rnd() % 15));
        break;
    default:
        n = rnd() % 3000;
        break;
    }
    uint64_t *v = malloc((n ? n : 1) * sizeof *v);
    K->n = n;
    K->k = malloc((n ? n : 1) * KEY_SIZE);
    if (!v || !K->k) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* This rank's first global position, for the globally sorted scenarios. */
    uint64_t before = 0;
    MPI_Exscan(&n, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        before = 0;
    for (uint64_t i = 0; i < n; i++) {
        switch (sc) {
        case SC_SORTED:
            v[i] = before + i;
            break;
        case SC_REV_SORTED:
            v[i] = (UINT64_C(1) << 40) - (before + i);
            break;
        case SC_EQUAL_ONE:
        case SC_EQUAL_HOLES:
            v[i] = 7;
            break;
        case SC_RAND_SIZES:
            v[i] = rep % 2 ? rnd() : rnd() % 16;
            break;
        case SC_DUPS:
            v[i] = rnd() % 4;
            break;
        case SC_EQUAL:
            v[i] = 42;
            break;
        case SC_PARTITIONED:
            v[i] = (uint64_t)rank << 32 | (rnd() % 1000);
            break;
        case SC_REVERSED:
            v[i] = (uint64_t)(nranks - rank) << 32 | (rnd() % 1000);
            break;
        case SC_LARGE:
        case SC_SKEWED:
            v[i] = rnd() % 5000;
            break;
        default:
            v[i] = rep % 2 ? rnd() : rnd() % 100000;
            break;
        }
    }
    qsort(v, n, sizeof *v, u64_cmp);
    for (uint64_t i = 0; i < n; i++) {
        unsigned char *k = K->k + i * KEY_SIZE;
        put_be(k, v[i], 8);
        put_be(k + 8, (uint64_t)rank, 4);
        put_be(k + 12, i, 8);
    }
    free(v);
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL rank %d/%d seed %" PRIu64 " scenario %s rep %d: ", rank, nranks, \
                    seed, sc_name[sc], rep);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            bad = 1;                                                                               \
        }                                                                                          \
    } while (0)

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, KEY_SIZE);
}

/* The oracle: every element's key and destination gathered to rank 0, sorted there; the
 * element at global position i must go to the rank j with floor(jN/p) <= i < floor((j+1)N/p).
 * Independent of the bucket checks above (it also finds equal composite keys). */
static int check_oracle(const struct keys *K, const uint64_t *cuts, uint64_t N)
{
    const size_t rec = KEY_SIZE + 4;
    const int p = nranks;
    int bad = 0;
    unsigned char *mine = calloc((size_t)(K->n ? K->n : 1), rec), *all = NULL;
    int *cnt = calloc((size_t)p, sizeof *cnt), *dis = calloc((size_t)p, sizeof *dis);
    if (!mine || !cnt || !dis || N * rec > INT_MAX)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int j = 0; j < p; j++)
        for (uint64_t i = cuts[j]; i < cuts[j + 1] && i < K->n; i++) {
            memcpy(mine + i * rec, K->k + i * KEY_SIZE, KEY_SIZE);
            put_be(mine + i * rec + KEY_SIZE, (uint64_t)j, 4);
        }
    int len = (int)(K->n * rec);
    MPI_Gather(&len, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int off = 0;
        for (int r = 0; r < p; r++) {
            dis[r] = off;
            off += cnt[r];
        }
        if (!(all = malloc((size_t)off + 1)))
            MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Gatherv(mine, len, MPI_BYTE, all, cnt, dis, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(all, (size_t)N, rec, key_cmp);
        int j = 0;
        for (uint64_t i = 0; i < N && !bad; i++) {
            const unsigned char *r = all + i * rec;
            if (i > 0 && !memcmp(r - rec, r, KEY_SIZE)) {
                fprintf(stderr, "oracle: equal composite keys at %" PRIu64 "\n", i);
                bad = 1;
            }
            while ((uint64_t)((unsigned __int128)N * (unsigned)(j + 1) / (unsigned)p) <= i)
                j++;
            uint64_t dest = 0;
            for (int b = 0; b < 4; b++)
                dest = dest << 8 | r[KEY_SIZE + b];
            if (dest != (uint64_t)j) {
                fprintf(stderr,
                        "oracle: the element at global position %" PRIu64 " of %" PRIu64
                        " goes to rank %" PRIu64 ", expected %d\n",
                        i, N, dest, j);
                bad = 1;
            }
        }
    }
    free(all);
    free(mine);
    free(cnt);
    free(dis);
    return bad;
}

struct meter {
    uint64_t bytes, calls, n; /* the most bytes any rank received, its calls, N */
    int rounds;
};

static void run_case(enum scenario sc, int rep, int *max_rounds, struct meter *m)
{
    const int p = nranks;
    int bad = 0;
    struct keys K;
    build(sc, rep, &K);
    struct dsort_splitter_keys src = {K.n, KEY_SIZE, key_at, &K};
    uint64_t *cuts = malloc(((size_t)p + 2) * sizeof *cuts);
    if (!cuts)
        MPI_Abort(MPI_COMM_WORLD, 2);
    cuts[p + 1] = UINT64_C(0xdeadbeef); /* guard */
    int rounds = -1;
    struct dsort_error err;
    dsort_error_clear(&err);
    meter_bytes = meter_calls = 0;
    metering = 1;
    enum dsort_status st = dsort_splitters_cut(MPI_COMM_WORLD, &src, cuts, &rounds, &err);
    metering = 0;
    uint64_t traffic[2] = {meter_bytes, meter_calls}, most[2] = {0, 0};
    MPI_Allreduce(traffic, most, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (m) {
        m->bytes = most[0];
        m->calls = most[1];
        m->rounds = rounds;
    }
    CHECK(st == DSORT_OK, "dsort_splitters_cut: %s", err.msg);
    CHECK(cuts[p + 1] == UINT64_C(0xdeadbeef), "wrote past cuts[p]");
    CHECK(cuts[0] == 0, "cuts[0] = %" PRIu64, cuts[0]);
    CHECK(cuts[p] == K.n, "cuts[p] = %" PRIu64 ", n = %" PRIu64, cuts[p], K.n);
    for (int j = 0; j < p; j++)
        CHECK(cuts[j] <= cuts[j + 1], "cuts not monotone at %d: %" PRIu64 " > %" PRIu64, j, cuts[j],
              cuts[j + 1]);
    if (rounds > *max_rounds)
        *max_rounds = rounds;

    /* Every destination's count, summed over the sources, is exact. */
    uint64_t N = 0;
    MPI_Allreduce(&K.n, &N, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    uint64_t *mine = calloc((size_t)p, sizeof *mine), *got = calloc((size_t)p, sizeof *got);
    if (!mine || !got)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int j = 0; j < p; j++)
        mine[j] = cuts[j + 1] >= cuts[j] ? cuts[j + 1] - cuts[j] : 0;
    MPI_Allreduce(mine, got, p, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* O(log N) rounds: each round discards at least a quarter of every open window. */
    int bound = 2;
    for (uint64_t w = N; w > 0; w = w * 3 / 4)
        bound++;
    CHECK(rounds >= 0 && rounds <= bound, "%d selection rounds for N = %" PRIu64 " (bound %d)",
          rounds, N, bound);
    for (int j = 0; j < p && rank == 0; j++) {
        uint64_t want = (uint64_t)((unsigned __int128)N * (unsigned)(j + 1) / (unsigned)p) -
                        (uint64_t)((unsigned __int128)N * (unsigned)j / (unsigned)p);
        CHECK(got[j] == want,
              "rank %d receives %" PRIu64 " elements, expected %" PRIu64 " (N = %" PRIu64 ")", j,
              got[j], want, N);
    }

    /* Per bucket: a flag, the smallest and the largest key sent there; gathered to rank 0. */
    const size_t rec = 1 + 2 * KEY_SIZE;
    unsigned char *local = calloc((size_t)p, rec), *all = NULL;
    if (!local)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int j = 0; j < p; j++)
        if (cuts[j] < cuts[j + 1] && cuts[j + 1] <= K.n) {
            unsigned char *r = local + (size_t)j * rec;
            r[0] = 1;
            memcpy(r + 1, K.k + cuts[j] * KEY_SIZE, KEY_SIZE);
            memcpy(r + 1 + KEY_SIZE, K.k + (cuts[j + 1] - 1) * KEY_SIZE, KEY_SIZE);
        }
    if (rank == 0 && !(all = malloc((size_t)p * (size_t)p * rec)))
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Gather(local, (int)((size_t)p * rec), MPI_BYTE, all, (int)((size_t)p * rec), MPI_BYTE, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        /* bucket j's global min and max */
        unsigned char *gmin = malloc((size_t)p * KEY_SIZE), *gmax = malloc((size_t)p * KEY_SIZE);
        char *has = calloc((size_t)p, 1);
        if (!gmin || !gmax || !has)
            MPI_Abort(MPI_COMM_WORLD, 2);
        for (int s = 0; s < p; s++)
            for (int j = 0; j < p; j++) {
                const unsigned char *r = all + ((size_t)s * p + (size_t)j) * rec;
                if (!r[0])
                    continue;
                unsigned char *mn = gmin + (size_t)j * KEY_SIZE, *mx = gmax + (size_t)j * KEY_SIZE;
                if (!has[j] || memcmp(r + 1, mn, KEY_SIZE) < 0)
                    memcpy(mn, r + 1, KEY_SIZE);
                if (!has[j] || memcmp(r + 1 + KEY_SIZE, mx, KEY_SIZE) > 0)
                    memcpy(mx, r + 1 + KEY_SIZE, KEY_SIZE);
                has[j] = 1;
            }
        /* the largest key of buckets 0..j-1 is below the smallest of bucket j */
        int have_prev = 0;
        unsigned char prev[KEY_SIZE];
        for (int j = 0; j < p; j++) {
            if (!has[j])
                continue;
            if (have_prev)
                CHECK(memcmp(prev, gmin + (size_t)j * KEY_SIZE, KEY_SIZE) < 0,
                      "an element sent to a rank below %d is not below every element sent to "
                      "rank %d",
                      j, j);
            if (!have_prev || memcmp(gmax + (size_t)j * KEY_SIZE, prev, KEY_SIZE) > 0)
                memcpy(prev, gmax + (size_t)j * KEY_SIZE, KEY_SIZE);
            have_prev = 1;
        }
        free(gmin);
        free(gmax);
        free(has);
    }
    if (check_oracle(&K, cuts, N)) /* collective: every rank calls it */
        bad = 1;
    if (m)
        m->n = N;
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any)
        failures++;
    free(all);
    free(local);
    free(mine);
    free(got);
    free(cuts);
    free(K.k);
}

/* dsort_splitters_sample over every scenario's keys (all of them as the sample): the same
 * p-1 splitters on every rank, each the key at j*N/p of all keys sorted (gathered here with
 * plain MPI byte counts, the oracle), or zero bytes when there are none. */
static void run_sample(enum scenario sc, int rep)
{
    int bad = 0;
    struct keys K;
    build(sc, rep + 1000, &K);
    unsigned char *spl = calloc((size_t)nranks, KEY_SIZE), *ref = calloc((size_t)nranks, KEY_SIZE);
    int *cnt = calloc((size_t)nranks, sizeof *cnt), *dis = calloc((size_t)nranks, sizeof *dis);
    if (!spl || !ref || !cnt || !dis)
        MPI_Abort(MPI_COMM_WORLD, 2);
    struct dsort_error err;
    CHECK(dsort_splitters_sample(MPI_COMM_WORLD, K.k, K.n, 0, KEY_SIZE, 0, spl, NULL, &err) ==
              DSORT_OK,
          "sample: %s", err.msg);
    int mine = (int)(K.n * KEY_SIZE);
    MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    uint64_t total = 0;
    for (int r = 0; rank == 0 && r < nranks; r++) {
        dis[r] = (int)total;
        total += (uint64_t)cnt[r];
    }
    unsigned char *all = malloc(total + 1);
    if (!all)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Gatherv(K.k, mine, MPI_BYTE, all, cnt, dis, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        size_t n = (size_t)(total / KEY_SIZE);
        qsort(all, n, KEY_SIZE, key_cmp);
        for (int j = 1; j < nranks && n; j++)
            memcpy(ref + (size_t)(j - 1) * KEY_SIZE,
                   all + (size_t)((uint64_t)j * n / (uint64_t)nranks) * KEY_SIZE, KEY_SIZE);
    }
    MPI_Bcast(ref, (nranks - 1) * KEY_SIZE, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (int j = 0; j + 1 < nranks; j++)
        CHECK(!memcmp(spl + (size_t)j * KEY_SIZE, ref + (size_t)j * KEY_SIZE, KEY_SIZE),
              "sample: splitter %d differs from the sorted keys' element at (j+1)N/p", j);
    for (int j = 1; j + 1 < nranks; j++)
        CHECK(memcmp(spl + (size_t)(j - 1) * KEY_SIZE, spl + (size_t)j * KEY_SIZE, KEY_SIZE) <= 0,
              "sample: splitters %d and %d out of order", j - 1, j);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any)
        failures++;
    free(all);
    free(spl);
    free(ref);
    free(cnt);
    free(dis);
    free(K.k);
}

/* dsort_splitters_sample with a tolerance: the splitters agree, are in order, are sample keys,
 * and each has within tol * N/p of floor(jN/p) keys below it, so every bucket holds
 * N/p +- (2 * tol * N/p + 1); the traffic per rank is O(p) a round (no rank gathers the sample:
 * the bound below does not grow with N). Every scenario: all-equal keys, one rank holding
 * everything, sorted and reverse-sorted input among them. */
static void run_sample_tol(enum scenario sc, int rep, double tol, struct meter *m)
{
    const int p = nranks;
    int bad = 0, rounds = -1;
    struct keys K;
    build(sc, rep + 2000, &K);
    unsigned char *spl = calloc((size_t)p, KEY_SIZE), *all = malloc((size_t)p * p * KEY_SIZE);
    uint64_t *below = calloc((size_t)p, sizeof *below), *found = calloc((size_t)p, sizeof *found);
    uint64_t *gb = calloc((size_t)p, sizeof *gb), *gf = calloc((size_t)p, sizeof *gf);
    if (!spl || !all || !below || !found || !gb || !gf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    struct dsort_error err;
    dsort_error_clear(&err);
    meter_bytes = meter_calls = 0;
    metering = 1;
    enum dsort_status st =
        dsort_splitters_sample(MPI_COMM_WORLD, K.k, K.n, 0, KEY_SIZE, tol, spl, &rounds, &err);
    metering = 0;
    uint64_t traffic[2] = {meter_bytes, meter_calls}, most[2] = {0, 0};
    MPI_Allreduce(traffic, most, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(st == DSORT_OK, "sample tol %g: %s", tol, err.msg);
    const size_t spb = (size_t)(p - 1) * KEY_SIZE;
    if (p > 1)
        MPI_Allgather(spl, (int)spb, MPI_BYTE, all, (int)spb, MPI_BYTE, MPI_COMM_WORLD);
    for (int r = 0; r < p && p > 1; r++)
        CHECK(!memcmp(all + (size_t)r * spb, spl, spb), "sample tol %g: rank %d's splitters differ",
              tol, r);
    uint64_t N = 0;
    MPI_Allreduce(&K.n, &N, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    for (int j = 1; j < p; j++) {
        const unsigned char *sj = spl + (size_t)(j - 1) * KEY_SIZE;
        uint64_t b = 0;
        while (b < K.n && memcmp(K.k + b * KEY_SIZE, sj, KEY_SIZE) < 0)
            b++;
        below[j] = b;
        found[j] = b < K.n && !memcmp(K.k + b * KEY_SIZE, sj, KEY_SIZE);
        if (j > 1 && N)
            CHECK(memcmp(sj - KEY_SIZE, sj, KEY_SIZE) <= 0,
                  "sample tol %g: splitters %d, %d out "
                  "of order",
                  tol, j - 1, j);
    }
    MPI_Allreduce(below, gb, p, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(found, gf, p, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    const uint64_t tol_n = (uint64_t)(tol * (double)N / (double)p);
    for (int j = 1; j < p && N && rank == 0; j++) {
        const uint64_t t = (uint64_t)((unsigned __int128)N * (unsigned)j / (unsigned)p);
        CHECK(gf[j] == 1, "sample tol %g: splitter %d found %" PRIu64 " times", tol, j, gf[j]);
        CHECK((gb[j] > t ? gb[j] - t : t - gb[j]) <= tol_n,
              "sample tol %g: splitter %d has %" PRIu64 " keys below, target %" PRIu64
              " +- %" PRIu64 " (N = %" PRIu64 ")",
              tol, j, gb[j], t, tol_n, N);
    }
    /* Per round a rank receives p reports (32 + 2 slots) and p decisions (1 + slot), slot =
     * 8 + KEY_SIZE; two Allreduces before and one after the rounds; the rounds are O(log N). */
    const uint64_t slot = 8 + KEY_SIZE, per_round = (uint64_t)p * (32 + 2 * slot + 1 + slot);
    int bound = 2;
    for (uint64_t w = N; w > 0; w = w * 3 / 4)
        bound++;
    CHECK(rounds >= 0 && rounds <= bound, "sample tol %g: %d rounds (bound %d)", tol, rounds,
          bound);
    CHECK(most[0] <= (uint64_t)(rounds > 0 ? rounds : 0) * per_round + 64,
          "sample tol %g: %" PRIu64 " bytes received by a rank in %d rounds (bound %" PRIu64 ")",
          tol, most[0], rounds, (uint64_t)rounds * per_round + 64);
    if (m && most[0] >= m->bytes) {
        m->bytes = most[0];
        m->calls = most[1];
        m->rounds = rounds;
        m->n = N;
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any)
        failures++;
    free(spl), free(all), free(below), free(found), free(gb), free(gf), free(K.k);
}

/* dsort_splitters_select with keys that are not unique and not of one size: the scenario's
 * key values alone (duplicates stay duplicates), written without their leading zero bytes and
 * ordered by the number's value (a comparator of the caller's). Both cut sides. Each splitter
 * must be a sample key, the same on every rank, in order, and its cut (below it, or up to it
 * with `after`) within tol * N/p of floor(jN/p) - or the target inside its run of equal keys. */
struct vitems {
    const uint64_t *v;
};

static size_t v_put(uint64_t x, unsigned char *out)
{
    size_t l = 0;
    for (uint64_t y = x; y; y >>= 8)
        l++;
    for (size_t i = 0; i < l; i++)
        out[i] = (unsigned char)(x >> (8 * (l - 1 - i)));
    return l;
}

static uint64_t v_get(const unsigned char *k, size_t len)
{
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++)
        x = x << 8 | k[i];
    return x;
}

static size_t v_key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    return v_put(((const struct vitems *)ctx)->v[i], out);
}

static int v_cmp_at(const void *ctx, uint64_t i, const unsigned char *key, size_t len)
{
    const uint64_t a = ((const struct vitems *)ctx)->v[i], b = v_get(key, len);
    return a < b ? -1 : a > b;
}

static int v_cmp(const void *ctx, const unsigned char *a, size_t alen, const unsigned char *b,
                 size_t blen)
{
    (void)ctx;
    if (alen != blen) /* no leading zeros: the shorter is the smaller */
        return alen < blen ? -1 : 1;
    return memcmp(a, b, alen);
}

/* weighted: each rank's items stand for represents = 1x, 1.5x, 2x, 2.5x, 3x or 3.5x their
 * number of records (dsort_sample_items; ranks whose shares differ), and every count, target
 * and the tolerance are in those records: item i of a rank is the first of floor(i * represents
 * / n) of them. weighted = 2: rank 0's items weigh a million each, the others' one (the rounds
 * stay within their bound). */
static uint64_t weigh(uint64_t c, uint64_t represents, uint64_t n)
{
    return represents && n ? (uint64_t)((unsigned __int128)c * represents / n) : c;
}

static void run_select_ties(enum scenario sc, int rep, int after, double tol, int weighted)
{
    const int p = nranks;
    int bad = 0;
    struct keys K;
    build(sc, rep + 3000, &K);
    uint64_t *v = malloc((K.n ? K.n : 1) * sizeof *v);
    uint64_t *cnt = calloc(2 * (size_t)p, sizeof *cnt), *g = calloc(2 * (size_t)p, sizeof *g);
    if (!v || !cnt || !g)
        MPI_Abort(MPI_COMM_WORLD, 2);
    size_t kmax = 0;
    unsigned char tmp[8];
    for (uint64_t i = 0; i < K.n; i++) { /* sorted already: build sorts by value */
        v[i] = v_get(K.k + i * KEY_SIZE, 8);
        size_t l = v_put(v[i], tmp);
        kmax = l > kmax ? l : kmax;
    }
    struct vitems vi = {v};
    const uint64_t represents =
        weighted == 2 ? K.n * (rank == 0 ? 1000000 : 1)
        : weighted    ? K.n * (uint64_t)(rank % 3 + 1) + K.n / 2 * (uint64_t)(rank % 2)
                      : 0;
    struct dsort_sample_items it = {.n = K.n,
                                    .key_max = kmax,
                                    .key_at = v_key_at,
                                    .cmp_at = v_cmp_at,
                                    .cmp = v_cmp,
                                    .ctx = &vi,
                                    .represents = represents};
    struct dsort_sampled sel;
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_splitters_select(MPI_COMM_WORLD, &it, after, tol, &sel, &err);
    CHECK(st == DSORT_OK, "select after %d tol %g weighted %d: %s", after, tol, weighted, err.msg);
    uint64_t N = 0, mine = weigh(K.n, represents, K.n);
    MPI_Allreduce(&mine, &N, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sel.total == N, "select (weighted %d): total %" PRIu64 ", N %" PRIu64, weighted,
          sel.total, N);
    CHECK((sel.keys != NULL) == (N > 0 && p > 1), "select: keys %s with N = %" PRIu64,
          sel.keys ? "set" : "NULL", N);
    /* the same splitters everywhere: compare their values with rank 0's */
    uint64_t *sv = calloc((size_t)p, sizeof *sv), *sv0 = calloc((size_t)p, sizeof *sv0);
    if (!sv || !sv0)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int j = 1; j < p && sel.keys; j++) {
        uint64_t len;
        const unsigned char *k = sel.keys + (size_t)(j - 1) * sel.slot;
        memcpy(&len, k, 8);
        sv[j] = v_get(k + 8, (size_t)len);
        if (j > 1)
            CHECK(sv[j - 1] <= sv[j], "select: splitters %d, %d out of order", j - 1, j);
        uint64_t less = 0, less_eq = 0;
        while (less < K.n && v[less] < sv[j])
            less++;
        for (less_eq = less; less_eq < K.n && v[less_eq] == sv[j]; less_eq++)
            ;
        cnt[2 * j] = weigh(less, represents, K.n);
        cnt[2 * j + 1] = weigh(less_eq, represents, K.n);
    }
    memcpy(sv0, sv, (size_t)p * sizeof *sv);
    MPI_Bcast(sv0, p, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    CHECK(!memcmp(sv, sv0, (size_t)p * sizeof *sv), "select: splitters differ from rank 0's");
    MPI_Allreduce(cnt, g, 2 * p, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    const uint64_t tol_n = (uint64_t)(tol * (double)N / (double)p);
    for (int j = 1; j < p && sel.keys && rank == 0; j++) {
        const uint64_t t = (uint64_t)((unsigned __int128)N * (unsigned)j / (unsigned)p);
        const uint64_t less = g[2 * j], less_eq = g[2 * j + 1], cut = after ? less_eq : less;
        CHECK(less_eq > less, "select: splitter %d (%" PRIu64 ") is not a sample key", j, sv[j]);
        CHECK((cut > t ? cut - t : t - cut) <= tol_n || (less <= t && t <= less_eq),
              "select after %d tol %g weighted %d: splitter %d cuts at %" PRIu64 " (run %" PRIu64
              "..%" PRIu64 "), target %" PRIu64 " +- %" PRIu64 " (N = %" PRIu64 ")",
              after, tol, weighted, j, cut, less, less_eq, t, tol_n, N);
    }
    dsort_sampled_free(&sel);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any)
        failures++;
    free(v), free(cnt), free(g), free(sv), free(sv0), free(K.k);
}

/* The end of a case of keys that break the contract: a failure anywhere counts once (every
 * rank agrees); cuts and K's keys are freed. */
static void end_bad_keys(int bad, uint64_t *cuts, struct keys *K)
{
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any)
        failures++;
    free(cuts);
    free(K->k);
}

/* Composite keys that are not unique (every rank holds the same keys): a caller's bug, but
 * the cut must still return on every rank - OK, or EINTERNAL when it finds out - not hang. */
static void run_not_unique(void)
{
    enum scenario sc = SC_EQUAL;
    int rep = -1, bad = 0;
    struct keys K;
    build(SC_EQUAL, 7, &K);
    for (uint64_t i = 0; i < K.n; i++)
        put_be(K.k + i * KEY_SIZE + 8, 0, 4); /* the same source rank everywhere */
    uint64_t *cuts = malloc(((size_t)nranks + 1) * sizeof *cuts);
    if (!cuts)
        MPI_Abort(MPI_COMM_WORLD, 2);
    struct dsort_splitter_keys src = {K.n, KEY_SIZE, key_at, &K};
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_splitters_cut(MPI_COMM_WORLD, &src, cuts, NULL, &err);
    CHECK(st == DSORT_OK || st == DSORT_EINTERNAL, "not unique: status %d: %s", (int)st, err.msg);
    end_bad_keys(bad, cuts, &K);
}

/* Keys that are no longer in the order they were sorted in (an input rewritten in place under
 * a mapped sort, whose keys key_at reads from the mapping): as after the input was rewritten
 * with its own records sorted, rank r's sorted entries now read rank r's slice of the sorted
 * keys, in a shuffled order. The selection's windows then need not shrink: the cut must still
 * return on every rank, within its bound of rounds (EINTERNAL, or OK by chance), never spin.
 * An alarm catches a spin (the old code's, issue 25) long before ctest's timeout. */
static void run_changed(void)
{
    enum scenario sc = SC_RANDOM;
    int rep = -1, bad = 0;
    struct keys K;
    K.n = 5000;
    K.k = calloc(K.n, KEY_SIZE);
    uint64_t *perm = malloc(K.n * sizeof *perm);
    uint64_t *cuts = malloc(((size_t)nranks + 1) * sizeof *cuts);
    if (!K.k || !perm || !cuts)
        MPI_Abort(MPI_COMM_WORLD, 2);
    rng = mix(seed ^ (uint64_t)rank ^ 0x5eedu);
    for (uint64_t i = 0; i < K.n; i++)
        perm[i] = i;
    for (uint64_t i = K.n - 1; i > 0; i--) { /* Fisher-Yates */
        uint64_t j = rnd() % (i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (uint64_t i = 0; i < K.n; i++)
        put_be(K.k + i * KEY_SIZE, (uint64_t)rank * K.n + perm[i], 8);
    free(perm);
    struct dsort_splitter_keys src = {K.n, KEY_SIZE, key_at, &K};
    struct dsort_error err;
    dsort_error_clear(&err);
    int rounds = 0;
    alarm(60);
    enum dsort_status st = dsort_splitters_cut(MPI_COMM_WORLD, &src, cuts, &rounds, &err);
    alarm(0);
    uint64_t N = 0;
    MPI_Allreduce(&K.n, &N, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    int bits = 0;
    for (uint64_t t = N; t; t >>= 1)
        bits++;
    CHECK(st == DSORT_OK || st == DSORT_EINTERNAL, "changed keys: status %d: %s", (int)st, err.msg);
    CHECK(rounds <= 4 + 3 * bits, "changed keys: %d rounds for %" PRIu64 " keys", rounds, N);
    end_bad_keys(bad, cuts, &K);
}

/* Without the rounds pointer, and with a communicator that is not MPI_COMM_WORLD (the
 * reversed order of a split), the cut still works. */
static void run_subcomm(void)
{
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - rank, &comm);
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    enum scenario sc = SC_RANDOM;
    int rep = -1, bad = 0;
    struct keys K;
    build(SC_DUPS, 99, &K);
    struct dsort_splitter_keys src = {K.n, KEY_SIZE, key_at, &K};
    uint64_t *cuts = malloc(((size_t)p + 1) * sizeof *cuts);
    uint64_t *cnt = calloc((size_t)p, sizeof *cnt), *got = calloc((size_t)p, sizeof *got);
    if (!cuts || !cnt || !got)
        MPI_Abort(MPI_COMM_WORLD, 2);
    struct dsort_error err;
    CHECK(dsort_splitters_cut(comm, &src, cuts, NULL, &err) == DSORT_OK, "%s", err.msg);
    uint64_t N = 0;
    MPI_Allreduce(&K.n, &N, 1, MPI_UINT64_T, MPI_SUM, comm);
    for (int j = 0; j < p; j++)
        cnt[j] = cuts[j + 1] - cuts[j];
    MPI_Allreduce(cnt, got, p, MPI_UINT64_T, MPI_SUM, comm);
    for (int j = 0; j < p; j++)
        CHECK(got[j] == N * (uint64_t)(j + 1) / (uint64_t)p - N * (uint64_t)j / (uint64_t)p,
              "subcomm: rank %d receives %" PRIu64, j, got[j]);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, comm);
    if (any)
        failures++;
    free(cuts);
    free(cnt);
    free(got);
    free(K.k);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (rank == 0) {
        const char *env = getenv("DSORT_TEST_SEED");
        seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
        printf("test_splitters: %d ranks, random seed %" PRIu64
               " (set DSORT_TEST_SEED to replay)\n",
               nranks, seed);
        fflush(stdout);
    }
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    int max_rounds = 0, cases = 0;
    struct meter large = {0, 0, 0, 0}, most = {0, 0, 0, 0};
    for (int sc = 0; sc < SC_COUNT; sc++) {
        /* Fewer repetitions from 16 ranks on, which run oversubscribed (the slow label). */
        int reps = sc == SC_LARGE ? 2 : sc == SC_ALL_EMPTY ? 1 : 6;
        if (nranks > 8 && reps > 1)
            reps /= 2;
        for (int rep = 0; rep < reps; rep++, cases++) {
            struct meter m = {0, 0, 0, 0};
            run_case((enum scenario)sc, rep, &max_rounds, &m);
            if (sc == SC_LARGE && rep == 0)
                large = m;
            if (m.bytes > most.bytes)
                most = m;
        }
    }
    run_subcomm();
    run_changed();
    run_not_unique();
    cases += 2;
    for (int sc = 0; sc < SC_COUNT; sc++, cases++)
        run_sample((enum scenario)sc, 0);
    /* The sampled splitters with a tolerance (as the pipelines use them), and the generic
     * selection over keys with ties, both cut sides. */
    struct meter smost = {0, 0, 0, 0};
    for (int sc = 0; sc < SC_COUNT; sc++) {
        /* From 16 ranks on (oversubscribed), the scenarios of issue 11 only: all keys equal
         * (also on one rank), one rank holding everything, sorted and reversed input, skew,
         * duplicates, and the large case for the traffic. */
        if (nranks > 8 && sc != SC_EQUAL && sc != SC_EQUAL_ONE && sc != SC_ONE_RANK &&
            sc != SC_SORTED && sc != SC_REV_SORTED && sc != SC_REVERSED && sc != SC_SKEWED &&
            sc != SC_DUPS && sc != SC_LARGE)
            continue;
        for (int rep = 0; rep < (nranks > 8 ? 1 : 2); rep++, cases += 7) {
            run_sample_tol((enum scenario)sc, rep, rep ? 0.01 : 0.002, &smost);
            run_sample_tol((enum scenario)sc, rep, 0.05, NULL);
            run_select_ties((enum scenario)sc, rep, 0, rep ? 0.0 : 0.01, 0);
            run_select_ties((enum scenario)sc, rep, 1, rep ? 0.01 : 0.0, 0);
            run_select_ties((enum scenario)sc, rep, rep, rep ? 0.0 : 0.002, 1);
            run_select_ties((enum scenario)sc, rep, !rep, 0.01, 1);
            run_select_ties((enum scenario)sc, rep, rep, rep ? 0.0 : 0.002, 2);
        }
    }
    if (rank == 0) {
        printf("test_splitters: %d cases, %d failed, at most %d selection rounds\n", cases,
               failures, max_rounds);
        printf("test_splitters: cut traffic at p = %d, %d-byte keys (logical bytes received per "
               "rank, the most of any rank): large case N = %" PRIu64 ": %" PRIu64
               " bytes in %" PRIu64 " collectives, %d rounds; the most of any case: %" PRIu64
               " bytes (N = %" PRIu64 ", %d rounds)\n",
               nranks, KEY_SIZE, large.n, large.bytes, large.calls, large.rounds, most.bytes,
               most.n, most.rounds);
        printf("test_splitters: sampled splitters at p = %d: the most any rank received in one "
               "selection: %" PRIu64 " bytes in %" PRIu64 " collectives, %d rounds (N = %" PRIu64
               " sample keys)\n",
               nranks, smost.bytes, smost.calls, smost.rounds, smost.n);
        fflush(stdout);
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
