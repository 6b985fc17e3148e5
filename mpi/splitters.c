#include "splitters.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct cand {
    uint64_t weight;
    const unsigned char *key;
};

static size_t cand_key_size; /* qsort has no context argument in C11 */

static int cand_cmp(const void *a, const void *b)
{
    return memcmp(((const struct cand *)a)->key, ((const struct cand *)b)->key, cand_key_size);
}

/* First index in [lo, hi) whose key is >= pivot (or > pivot when `after`). */
static uint64_t bound(const struct dsort_splitter_keys *s, uint64_t lo, uint64_t hi,
                      const unsigned char *pivot, int after, unsigned char *tmp)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        s->key_at(s->ctx, mid, tmp);
        int c = memcmp(tmp, pivot, s->key_size);
        if (c < 0 || (after && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The owner's answer for one splitter, all-gathered with the next pivot. */
enum {
    DEC_NONE,       /* not owned, or settled before this round */
    DEC_LEFT,       /* the target is below the pivot: keep the window's part below it */
    DEC_RIGHT,      /* the target is above the pivot: keep the part above it */
    DEC_AT_LESS,    /* settled: cut before the pivot */
    DEC_AT_LESS_EQ, /* settled: cut after the pivot */
    DEC_FAIL        /* no proposals where the target must be: the keys are not unique */
};

/* A report of one rank to the owner of a splitter: its elements below and up to the pivot,
 * and the size and median of its window's part below the pivot and of its part above it (the
 * owner keeps the side that holds the target: those are the next round's proposals). */
#define R_LESS 0
#define R_LESS_EQ 8
#define R_WLEFT 16
#define R_WRIGHT 24
#define R_KEYS 32

static size_t report_size(size_t ks)
{
    return R_KEYS + 2 * ks;
}

/* Fill a report for the window [lo, hi) split at the pivot into [lo, less) and
 * [less_eq, hi). The owner of splitter j (0-based: rank j+1's first element) is rank j+1. */
static void put_report(const struct dsort_splitter_keys *s, unsigned char *r, uint64_t lo,
                       uint64_t hi, uint64_t less, uint64_t less_eq)
{
    const uint64_t wl = less - lo, wr = hi - less_eq;
    memcpy(r + R_LESS, &less, 8);
    memcpy(r + R_LESS_EQ, &less_eq, 8);
    memcpy(r + R_WLEFT, &wl, 8);
    memcpy(r + R_WRIGHT, &wr, 8);
    if (wl)
        s->key_at(s->ctx, lo + (wl - 1) / 2, r + R_KEYS);
    else
        memset(r + R_KEYS, 0, s->key_size);
    if (wr)
        s->key_at(s->ctx, less_eq + (wr - 1) / 2, r + R_KEYS + s->key_size);
    else
        memset(r + R_KEYS + s->key_size, 0, s->key_size);
}

/* The owner's step: the global counts at the pivot decide the side (or settle the cut); the
 * next pivot is the weighted median of that side's proposals. */
static unsigned char decide(const unsigned char *in, int p, size_t ks, uint64_t target,
                            struct cand *cands, unsigned char *pivot)
{
    const size_t rs = report_size(ks);
    uint64_t less = 0, less_eq = 0;
    for (int r = 0; r < p; r++) {
        uint64_t a, b;
        memcpy(&a, in + (size_t)r * rs + R_LESS, 8);
        memcpy(&b, in + (size_t)r * rs + R_LESS_EQ, 8);
        less += a;
        less_eq += b;
    }
    if (target == less || target == less_eq)
        return target == less ? DEC_AT_LESS : DEC_AT_LESS_EQ;
    const unsigned char dec = target < less ? DEC_LEFT : DEC_RIGHT;
    const size_t w_at = dec == DEC_LEFT ? R_WLEFT : R_WRIGHT;
    const size_t k_at = dec == DEC_LEFT ? R_KEYS : R_KEYS + ks;
    size_t nc = 0;
    uint64_t wsum = 0;
    for (int r = 0; r < p; r++) {
        const unsigned char *rep = in + (size_t)r * rs;
        uint64_t w;
        memcpy(&w, rep + w_at, 8);
        if (w) {
            cands[nc].weight = w;
            cands[nc++].key = rep + k_at;
            wsum += w;
        }
    }
    if (nc == 0)
        return DEC_FAIL;
    qsort(cands, nc, sizeof *cands, cand_cmp);
    uint64_t acc = 0;
    size_t c = 0;
    for (; c + 1 < nc; c++) {
        acc += cands[c].weight;
        if (2 * acc >= wsum)
            break;
    }
    memcpy(pivot, cands[c].key, ks);
    return dec;
}

enum dsort_status dsort_splitters_cut(MPI_Comm comm, const struct dsort_splitter_keys *src,
                                      uint64_t *cuts, int *rounds, struct dsort_error *err)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    const size_t ks = src->key_size, m = (size_t)(p > 1 ? p - 1 : 0);
    const size_t rs = report_size(ks), gs = 1 + ks; /* a report; a decision and its pivot */
    const uint64_t n = src->n;
    cuts[0] = 0;
    cuts[p] = n;
    if (rounds)
        *rounds = 0;

    /* Per splitter j (0-based, for rank j+1): the local window [lo, hi) that may still lie on
     * either side, and the local counts below and up to the pivot being decided. */
    uint64_t *lo = NULL, *hi = NULL, *less = NULL, *less_eq = NULL;
    unsigned char *out = NULL, *in = NULL, *mine = NULL, *all = NULL, *tmp = NULL;
    struct cand *cands = NULL;
    char *open = NULL;
    int ok = 1;
    if (m > 0) {
        lo = malloc(m * sizeof *lo);
        hi = malloc(m * sizeof *hi);
        less = malloc(m * sizeof *less);
        less_eq = malloc(m * sizeof *less_eq);
        open = calloc(m, 1);
        out = calloc((size_t)p, rs);
        in = malloc((size_t)p * rs);
        mine = calloc(1, gs);
        all = malloc((size_t)p * gs);
        tmp = malloc(ks);
        cands = malloc((size_t)p * sizeof *cands);
        /* Alltoall and Allgather take int byte counts per rank. */
        ok = lo && hi && less && less_eq && open && out && in && mine && all && tmp && cands &&
             rs <= (size_t)INT_MAX && gs <= (size_t)INT_MAX;
    }
    /* The total, and (so that no rank waits in a collective for one that left) whether any
     * rank failed to allocate. */
    uint64_t mine_tf[2] = {n, ok ? 0 : 1}, tf[2] = {0, 0};
    MPI_Allreduce(mine_tf, tf, 2, MPI_UINT64_T, MPI_SUM, comm);
    const uint64_t total = tf[0];
    enum dsort_status st = DSORT_OK;
    if (tf[1]) {
        st = DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM, "cannot allocate the splitter state");
        goto out;
    }
    size_t active = 0;
    uint64_t my_target = 0;
    for (size_t j = 0; j < m; j++) {
        uint64_t t = (uint64_t)((unsigned __int128)total * (j + 1) / (unsigned)p);
        if (j + 1 == (size_t)rank)
            my_target = t;
        if (t == 0 || t == total) {
            cuts[j + 1] = t == 0 ? 0 : n;
            continue;
        }
        /* The first round decides a virtual pivot above every key: all of the window is
         * below it, so the owner keeps it all, and the proposals are its medians. */
        open[j] = 1;
        active++;
        lo[j] = 0;
        hi[j] = less[j] = less_eq[j] = n;
        put_report(src, out + (j + 1) * rs, 0, n, n, n);
    }
    cand_key_size = ks;
    /* A round: every rank reports to every owner (Alltoall of one report each way), the owners
     * decide, and every rank gets every decision with the next pivot (Allgather). Every rank
     * sees the same decisions, so all take the same number of rounds. */
    while (active > 0) {
        if (rounds)
            (*rounds)++;
        MPI_Alltoall(out, (int)rs, MPI_BYTE, in, (int)rs, MPI_BYTE, comm);
        mine[0] = DEC_NONE;
        if (rank > 0 && open[rank - 1])
            mine[0] = decide(in, p, ks, my_target, cands, mine + 1);
        MPI_Allgather(mine, (int)gs, MPI_BYTE, all, (int)gs, MPI_BYTE, comm);
        int failed = 0;
        for (size_t j = 0; j < m; j++) {
            const unsigned char *g = all + (j + 1) * gs;
            if (!open[j])
                continue;
            switch (g[0]) {
            case DEC_AT_LESS:
            case DEC_AT_LESS_EQ:
                cuts[j + 1] = g[0] == DEC_AT_LESS ? less[j] : less_eq[j];
                open[j] = 0;
                active--;
                continue;
            case DEC_LEFT:
                hi[j] = less[j];
                break;
            case DEC_RIGHT:
                lo[j] = less_eq[j];
                break;
            default:
                failed = 1;
                continue;
            }
            /* Everything below lo is below every window element, everything from hi on above
             * (the invariant), and the pivot is a window element somewhere: search the window. */
            less[j] = bound(src, lo[j], hi[j], g + 1, 0, tmp);
            less_eq[j] = bound(src, less[j], hi[j], g + 1, 1, tmp);
            put_report(src, out + (j + 1) * rs, lo[j], hi[j], less[j], less_eq[j]);
        }
        if (failed) {
            st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                           "splitter selection lost its target (are composite keys unique?)");
            goto out;
        }
    }
    /* Keys are unique, so the cuts are monotone; check it rather than trust it. */
    for (int j = 0; j < p; j++)
        if (cuts[j] > cuts[j + 1]) {
            st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                           "splitter cuts are not monotone (are composite keys unique?)");
            break;
        }
out:
    free(lo);
    free(hi);
    free(less);
    free(less_eq);
    free(open);
    free(out);
    free(in);
    free(mine);
    free(all);
    free(tmp);
    free(cands);
    return st;
}

uint64_t dsort_splitters_memory(int p, size_t key_size)
{
    /* Per splitter: lo, hi, less, less_eq, open; per rank: a report out and in, a decision,
     * a proposal to weigh; one key. */
    const uint64_t m = p > 1 ? (uint64_t)p - 1 : 0, q = p > 0 ? (uint64_t)p : 0;
    return m * (4 * sizeof(uint64_t) + 1) +
           q * (2 * report_size(key_size) + 1 + key_size + sizeof(struct cand)) + 1 + 2 * key_size;
}

uint64_t dsort_splitters_sample_count(uint64_t n, int p, size_t key_size, uint64_t per_rank,
                                      uint64_t cap_bytes)
{
    uint64_t s = n < per_rank ? n : per_rank;
    uint64_t fit = cap_bytes / ((uint64_t)(p > 0 ? p : 1) * (key_size ? key_size : 1));
    if (s > fit)
        s = fit > 16 ? fit : (n < 16 ? n : 16);
    return s;
}

static size_t sample_key_size; /* qsort has no context argument in C11 */

static int sample_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sample_key_size);
}

enum dsort_status dsort_splitters_sample(MPI_Comm comm, const unsigned char *keys, uint64_t n,
                                         size_t key_size, unsigned char *splitters,
                                         struct dsort_error *err)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    enum dsort_status st = DSORT_OK;
    if (n > INT_MAX || key_size > INT_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "too many or too long sample keys");
    int *counts = NULL, *displs = NULL;
    unsigned char *all = NULL;
    uint64_t total = 0;
    MPI_Datatype keytype;
    MPI_Type_contiguous((int)key_size, MPI_BYTE, &keytype);
    MPI_Type_commit(&keytype);
    int mine = (int)n;
    if (rank == 0) {
        counts = calloc((size_t)p, sizeof *counts);
        displs = calloc((size_t)p, sizeof *displs);
    }
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
    int ok = 1;
    if (rank == 0) {
        for (int r = 0; r < p && counts; r++) {
            displs[r] = (int)total;
            total += (uint64_t)counts[r];
        }
        all = counts && displs ? malloc(total * key_size + 1) : NULL;
        ok = all != NULL;
    }
    /* Rank 0 tells whether it can hold the samples; the others must not send otherwise. */
    MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (!ok) {
        if (rank == 0)
            st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory for %" PRIu64 " sample keys",
                           total);
        goto out;
    }
    MPI_Gatherv(keys, mine, keytype, all, counts, displs, keytype, 0, comm);
    if (rank == 0) {
        size_t ns = (size_t)total;
        sample_key_size = key_size;
        qsort(all, ns, key_size, sample_cmp);
        memset(splitters, 0, (size_t)(p - 1) * key_size);
        for (int j = 1; j < p && ns; j++)
            memcpy(splitters + (size_t)(j - 1) * key_size,
                   all + (size_t)((uint64_t)j * ns / (uint64_t)p) * key_size, key_size);
    }
    if (p > 1)
        MPI_Bcast(splitters, p - 1, keytype, 0, comm);
out:
    MPI_Type_free(&keytype);
    free(all);
    free(counts);
    free(displs);
    return st;
}
