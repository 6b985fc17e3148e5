/* MPI test for splitters.h: dsort_splitters_cut must give rank j exactly the elements of
 * global ranks [floor(jN/p), floor((j+1)N/p)) for any key distribution.
 *
 * Every rank builds a sorted array of unique composite keys (8-byte big-endian key value,
 * 4-byte rank, 8-byte index: the layout dsort uses) under several distributions - random,
 * heavy duplicates, all equal, empty ranks, one rank holding everything, fewer elements
 * than ranks, data already partitioned by rank - and the result is checked globally: cuts
 * monotone and complete, every destination's count exact, and every element sent to rank j
 * below every element sent to any later rank (bucket maxima against later bucket minima,
 * gathered to rank 0). dsort_splitters_sample (the out-of-core pipeline's sampled splitters)
 * is checked on the same scenarios against the sorted keys gathered as bytes. Seeded: rank 0 prints
 * the seed; DSORT_TEST_SEED=<seed> replays. Exit status 0 on success, 1 on any failure (every rank
 * agrees). */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "splitters.h"

#define KEY_SIZE 20

static int rank, nranks;
static uint64_t seed;
static int failures;

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
    SC_COUNT
};

static const char *const sc_name[] = {"random",   "dups",      "equal", "empty-some",
                                      "one-rank", "all-empty", "tiny",  "partitioned",
                                      "reversed", "large",     "skewed"};

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
    for (uint64_t i = 0; i < n; i++) {
        switch (sc) {
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

static void run_case(enum scenario sc, int rep, int *max_rounds)
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
    enum dsort_status st = dsort_splitters_cut(MPI_COMM_WORLD, &src, cuts, &rounds, &err);
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

/* Without the rounds pointer, and with a communicator that is not MPI_COMM_WORLD (the
 * reversed order of a split), the cut still works. */
static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, KEY_SIZE);
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
    CHECK(dsort_splitters_sample(MPI_COMM_WORLD, K.k, K.n, KEY_SIZE, spl, &err) == DSORT_OK,
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
    for (int sc = 0; sc < SC_COUNT; sc++) {
        int reps = sc == SC_LARGE ? 2 : sc == SC_ALL_EMPTY ? 1 : 6;
        for (int rep = 0; rep < reps; rep++, cases++)
            run_case((enum scenario)sc, rep, &max_rounds);
    }
    run_subcomm();
    cases++;
    for (int sc = 0; sc < SC_COUNT; sc++, cases++)
        run_sample((enum scenario)sc, 0);
    if (rank == 0) {
        printf("test_splitters: %d cases, %d failed, at most %d selection rounds\n", cases,
               failures, max_rounds);
        fflush(stdout);
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
