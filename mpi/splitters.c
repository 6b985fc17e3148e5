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

enum dsort_status dsort_splitters_cut(MPI_Comm comm, const struct dsort_splitter_keys *src,
                                      uint64_t *cuts, int *rounds, struct dsort_error *err)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    const size_t ks = src->key_size, m = (size_t)(p > 1 ? p - 1 : 0);
    const size_t slot = sizeof(uint64_t) + ks; /* one proposal: weight, key */
    uint64_t total = 0, n = src->n;
    MPI_Allreduce(&n, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
    cuts[0] = 0;
    cuts[p] = n;
    if (rounds)
        *rounds = 0;
    if (m == 0)
        return DSORT_OK;

    /* Per splitter j (0-based, for rank j+1): local window, global bounds, target. */
    uint64_t *lo = calloc(m, sizeof *lo), *hi = calloc(m, sizeof *hi);
    uint64_t *cnt = calloc(2 * m, sizeof *cnt), *gcnt = calloc(2 * m, sizeof *gcnt);
    unsigned char *mine = malloc(m * slot), *all = malloc((size_t)p * m * slot);
    unsigned char *tmp = malloc(ks), *pivots = malloc(m * ks);
    struct cand *cands = malloc((size_t)p * sizeof *cands);
    char *done = calloc(m, 1);
    enum dsort_status st = DSORT_OK;
    /* One Allgather moves p*m*slot bytes with an int count of m*slot per rank. */
    int ok = lo && hi && cnt && gcnt && mine && all && tmp && pivots && cands && done &&
             m * slot <= (size_t)INT_MAX,
        all_ok = 0;
    /* Agree before the first round, so that no rank waits in a collective for one that left. */
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (!all_ok) {
        st = DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM, "cannot allocate the splitter state");
        goto out;
    }
    size_t active = 0;
    for (size_t j = 0; j < m; j++) {
        uint64_t t = (uint64_t)((unsigned __int128)total * (j + 1) / (unsigned)p);
        lo[j] = 0;
        hi[j] = n;
        if (t == 0 || t == total) {
            cuts[j + 1] = t == 0 ? 0 : n;
            done[j] = 1;
        } else {
            active++;
        }
    }
    cand_key_size = ks;
    while (active > 0) {
        if (rounds)
            (*rounds)++;
        /* Propose the median of each window. */
        for (size_t j = 0; j < m; j++) {
            unsigned char *s = mine + j * slot;
            uint64_t w = done[j] ? 0 : hi[j] - lo[j];
            memcpy(s, &w, sizeof w);
            if (w)
                src->key_at(src->ctx, lo[j] + (w - 1) / 2, s + sizeof w);
            else
                memset(s + sizeof w, 0, ks);
        }
        MPI_Allgather(mine, (int)(m * slot), MPI_BYTE, all, (int)(m * slot), MPI_BYTE, comm);
        for (size_t j = 0; j < m; j++) {
            if (done[j])
                continue;
            /* The weighted median of the proposals; every rank computes the same pivot. */
            size_t nc = 0;
            uint64_t wsum = 0;
            for (int r = 0; r < p; r++) {
                const unsigned char *s = all + ((size_t)r * m + j) * slot;
                uint64_t w;
                memcpy(&w, s, sizeof w);
                if (w) {
                    cands[nc].weight = w;
                    cands[nc++].key = s + sizeof w;
                    wsum += w;
                }
            }
            qsort(cands, nc, sizeof *cands, cand_cmp);
            uint64_t acc = 0;
            size_t c = 0;
            for (; c + 1 < nc; c++) {
                acc += cands[c].weight;
                if (2 * acc >= wsum)
                    break;
            }
            memcpy(pivots + j * ks, cands[c].key, ks);
            /* Local counts of elements < pivot and <= pivot. Everything below lo is smaller
             * than every window element, everything from hi on is larger (the invariant). */
            cnt[2 * j] = bound(src, lo[j], hi[j], pivots + j * ks, 0, tmp);
            cnt[2 * j + 1] = bound(src, cnt[2 * j], hi[j], pivots + j * ks, 1, tmp);
        }
        MPI_Allreduce(cnt, gcnt, (int)(2 * m), MPI_UINT64_T, MPI_SUM, comm);
        for (size_t j = 0; j < m; j++) {
            if (done[j])
                continue;
            uint64_t t = (uint64_t)((unsigned __int128)total * (j + 1) / (unsigned)p);
            uint64_t less = gcnt[2 * j], less_eq = gcnt[2 * j + 1];
            if (t == less || t == less_eq) {
                cuts[j + 1] = t == less ? cnt[2 * j] : cnt[2 * j + 1];
                done[j] = 1;
                active--;
            } else if (t < less) {
                hi[j] = cnt[2 * j];
            } else {
                lo[j] = cnt[2 * j + 1];
            }
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
    free(cnt);
    free(gcnt);
    free(mine);
    free(all);
    free(tmp);
    free(pivots);
    free(cands);
    free(done);
    return st;
}

uint64_t dsort_splitters_memory(int p, size_t key_size)
{
    const uint64_t m = p > 1 ? (uint64_t)p - 1 : 0, slot = sizeof(uint64_t) + key_size;
    return m * (4 * sizeof(uint64_t) + slot + key_size + 1) + (uint64_t)p * m * slot +
           (uint64_t)p * 32 + key_size;
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
