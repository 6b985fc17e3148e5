/* layout.c - dsort_sort_layout against a qsort oracle (issue 28): random input counts and
 * random output layouts (zeros on some ranks, everything on one rank, the balanced one and
 * others), with raw keys, typed keys with DSORT_STABLE, raw keys with DSORT_REVERSE and two
 * typed keys that the library sorts widened, many duplicates. Every rank makes the same global
 * records from the seed, sorts all of them with qsort, and checks that its output is exactly the
 * oracle's positions [S_i, S_i + n_out). Then the error cases: output counts that do not add up, a
 * "negative" n_out (one that makes the 64-bit sum wrap to the right total), a NULL out:
 * DSORT_ERR_ARG with the same message on every rank. Exit 0 on success, 1 on any failure (rank 0
 * prints the seed to replay with DSORT_TEST_SEED). Run at any rank count (ctest: 1, 2, 3, 4 and 7).
 */
#include <dsort.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RS 16 /* bytes 0-7 a u64le value of few distinct values, 8-15 random bytes */

static int rank, size, failures;
static uint64_t seed;
static unsigned flags_now; /* the oracle's flags */
static int typed_now;      /* 1: "0:u64le"; 2: "8:u16le,0:u64le" (widened: not back to back) */

static uint64_t rnd(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t get_u64le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The oracle's records carry their global input position after RS bytes (for DSORT_STABLE). */
static int oracle_cmp(const void *a, const void *b)
{
    const unsigned char *x = a, *y = b;
    int c;
    if (typed_now) {
        unsigned a16 = x[8] | (unsigned)x[9] << 8, b16 = y[8] | (unsigned)y[9] << 8;
        uint64_t u = get_u64le(x), v = get_u64le(y);
        c = typed_now == 2 && a16 != b16 ? (a16 < b16 ? -1 : 1) : u < v ? -1 : u > v;
    } else {
        c = memcmp(x + 8, y + 8, 2); /* key_off 8, key_len 2 */
    }
    if (!c && (flags_now & DSORT_STABLE)) {
        uint64_t i, j;
        memcpy(&i, x + RS, 8);
        memcpy(&j, y + RS, 8);
        return i < j ? -1 : i > j; /* input order, whatever the direction */
    }
    if (!c)
        c = memcmp(x, y, RS);
    return flags_now & DSORT_REVERSE ? -c : c;
}

static void fail(const char *what)
{
    fprintf(stderr, "layout: rank %d of %d: %s (seed %" PRIu64 ")\n", rank, size, what, seed);
    failures++;
}

/* counts[0..size): random numbers adding up to total, by mode: 0 balanced, 1 random with zeros
 * on some ranks, 2 everything on one random rank, 3 everything on the last rank but one or two
 * records on rank 0. The same on every rank (s is). */
static void make_counts(uint64_t *s, int mode, size_t total, size_t *counts)
{
    size_t left = total;
    int one = (int)(rnd(s) % (uint64_t)size);
    for (int r = 0; r < size; r++) {
        size_t c = 0;
        if (mode == 0)
            c = (size_t)((r + 1) * total / (size_t)size - r * total / (size_t)size);
        else if (mode == 1)
            c = rnd(s) % 3 == 0 ? 0 : (size_t)(rnd(s) % (2 * total / (size_t)size + 2));
        else if (mode == 2)
            c = r == one ? total : 0;
        else
            c = r == 0 ? (total < 2 ? total : (size_t)(1 + rnd(s) % 2)) : 0;
        if (c > left || r == size - 1) /* the last rank takes the rest */
            c = left;
        counts[r] = c;
        left -= c;
    }
}

static size_t below(const size_t *counts, int r)
{
    size_t s = 0;
    for (int i = 0; i < r; i++)
        s += counts[i];
    return s;
}

/* One trial: total records, input and output layouts of the given modes, one key setting. */
static void trial(uint64_t *s, size_t total, int in_mode, int out_mode, int setting)
{
    struct dsort_records f = {RS, 8, 2, 0, NULL};
    if (setting == 1)
        f.keys = "0:u64le", f.flags = DSORT_STABLE;
    if (setting == 2)
        f.flags = DSORT_REVERSE;
    if (setting == 3)
        f.keys = "8:u16le,0:u64le";
    size_t *nin = malloc(size * sizeof *nin), *nout = malloc(size * sizeof *nout);
    unsigned char *all = malloc(total * (RS + 8) + 1), *ord = malloc(total * (RS + 8) + 1);
    const uint64_t distinct = 1 + rnd(s) % 6;
    for (size_t i = 0; i < total; i++) {
        unsigned char *r = all + i * (RS + 8);
        uint64_t v = rnd(s) % distinct, w = rnd(s) % 5;
        for (int b = 0; b < 8; b++)
            r[b] = (unsigned char)(v >> (8 * b));
        memcpy(r + 8, &w, 8); /* few distinct raw keys (bytes 8-9) too */
        r[12] = (unsigned char)rnd(s);
        memcpy(r + RS, &(uint64_t){i}, 8);
    }
    make_counts(s, in_mode, total, nin);
    make_counts(s, out_mode, total, nout);
    memcpy(ord, all, total * (RS + 8));
    flags_now = f.flags, typed_now = setting == 1 ? 1 : setting == 3 ? 2 : 0;
    qsort(ord, total, RS + 8, oracle_cmp);
    const size_t n = nin[rank], no = nout[rank], i0 = below(nin, rank), o0 = below(nout, rank);
    unsigned char *in = malloc(n * RS + 1), *out = no ? malloc(no * RS) : NULL;
    for (size_t i = 0; i < n; i++)
        memcpy(in + i * RS, all + (i0 + i) * (RS + 8), RS);
    struct dsort_errinfo e;
    int code = dsort_sort_layout(MPI_COMM_WORLD, &f, in, n, out, no, &e);
    char what[200];
    if (code) {
        snprintf(what, sizeof what, "code %d: %s", code, e.msg);
        fail(what);
    }
    for (size_t i = 0; !code && i < no; i++)
        if (memcmp(out + i * RS, ord + (o0 + i) * (RS + 8), RS)) {
            snprintf(what, sizeof what,
                     "record %zu of %zu differs from the oracle's %zu (N %zu, modes %d/%d, "
                     "setting %d)",
                     i, no, o0 + i, total, in_mode, out_mode, setting);
            fail(what);
            break;
        }
    free(in);
    free(out);
    free(all);
    free(ord);
    free(nin);
    free(nout);
}

/* The error cases: every rank gets DSORT_ERR_ARG, and rank 0's message. */
static void expect_arg(const char *name, const void *in, size_t n, void *out, size_t no,
                       const char *needle)
{
    struct dsort_records f = {RS, 0, 8, 0, NULL};
    struct dsort_errinfo e;
    char msg0[256], what[400];
    int code = dsort_sort_layout(MPI_COMM_WORLD, &f, in, n, out, no, &e);
    memcpy(msg0, e.msg, sizeof msg0);
    MPI_Bcast(msg0, sizeof msg0, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (code != DSORT_ERR_ARG || e.code != code || strcmp(msg0, e.msg) ||
        (needle && !strstr(e.msg, needle))) {
        snprintf(what, sizeof what, "%s: code %d, message '%s' (rank 0: '%s'; expected '%s')", name,
                 code, e.msg, msg0, needle ? needle : "");
        fail(what);
    }
}

static void errors(void)
{
    unsigned char in[4 * RS] = {0}, out[16 * RS];
    char want[96];
    /* 4 records per rank in, 4 out but rank 0 one more */
    snprintf(want, sizeof want, "add up to %d records, the inputs to %d", 4 * size + 1, 4 * size);
    expect_arg("sums differ", in, 4, out, rank == 0 ? 5 : 4, want);
    /* rank 0 wants 9 and the last rank "-1" (SIZE_MAX): the 64-bit sum wraps to the total */
    size_t no = rank == 0 ? 9 : 4;
    if (rank == size - 1)
        no = (size_t)-1;
    expect_arg("huge n_out", in, 4, out, no, "too many output records");
    expect_arg("NULL out", in, 4, rank == size - 1 ? NULL : out, 4, "NULL");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *env = getenv("DSORT_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    uint64_t s = seed;
    const size_t totals[] = {0, 1, 2, 5, 37, 1000, 4099};
    for (size_t t = 0; t < sizeof totals / sizeof *totals; t++)
        for (int in_mode = 0; in_mode < 4; in_mode++)
            for (int out_mode = 0; out_mode < 4; out_mode++)
                for (int setting = 0; setting < 4; setting++)
                    trial(&s, totals[t], in_mode, out_mode, setting);
    errors();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("layout: %d ranks, seed %" PRIu64 ": %s\n", size, seed, all ? "FAILED" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
