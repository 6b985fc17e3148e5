/* splitters_sample.c - dsort_splitters_sample (splitters.h): splitters over a sample of
 * fixed-size keys, through the sampled selection (dsort_splitters_select). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "splitters.h"

/* dsort_splitters_sample's items: sorted fixed-size keys compared with memcmp. */
struct fixed_items {
    const unsigned char *k;
    size_t ks;
};

static size_t fixed_key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    const struct fixed_items *f = ctx;
    memcpy(out, f->k + i * f->ks, f->ks);
    return f->ks;
}

static int fixed_cmp_at(const void *ctx, uint64_t i, const unsigned char *key, size_t len)
{
    const struct fixed_items *f = ctx;
    (void)len;
    return memcmp(f->k + i * f->ks, key, f->ks);
}

static int fixed_cmp(const void *ctx, const unsigned char *a, size_t alen, const unsigned char *b,
                     size_t blen)
{
    (void)alen, (void)blen;
    return memcmp(a, b, ((const struct fixed_items *)ctx)->ks);
}

static size_t sample_key_size; /* qsort has no context argument in C11 */

static int sample_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sample_key_size);
}

enum dsort_status dsort_splitters_sample(MPI_Comm comm, const unsigned char *keys, uint64_t n,
                                         uint64_t represents, size_t key_size, double tol,
                                         unsigned char *splitters, int *rounds,
                                         struct dsort_error *err)
{
    int p;
    MPI_Comm_size(comm, &p);
    unsigned char *sorted = malloc(n * key_size + 1);
    int fail = sorted == NULL, any = 0;
    MPI_Allreduce(&fail, &any, 1, MPI_INT, MPI_LOR, comm);
    if (any) {
        free(sorted);
        return DSORT_ERR(err, DSORT_ENOMEM, fail ? ENOMEM : 0,
                         "out of memory for %" PRIu64 " sample keys", n);
    }
    memcpy(sorted, keys, n * key_size);
    sample_key_size = key_size;
    qsort(sorted, (size_t)n, key_size, sample_cmp);
    struct fixed_items f = {sorted, key_size};
    struct dsort_sample_items it = {.n = n,
                                    .key_max = key_size,
                                    .key_at = fixed_key_at,
                                    .cmp_at = fixed_cmp_at,
                                    .cmp = fixed_cmp,
                                    .ctx = &f,
                                    .represents = represents};
    struct dsort_sampled sel;
    enum dsort_status st = dsort_splitters_select(comm, &it, 0, tol, &sel, err);
    if (p > 1)
        memset(splitters, 0, (size_t)(p - 1) * key_size);
    for (int j = 0; !st && sel.keys && j + 1 < p; j++)
        memcpy(splitters + (size_t)j * key_size, sel.keys + (size_t)j * sel.slot + 8, key_size);
    if (rounds)
        *rounds = sel.rounds;
    dsort_sampled_free(&sel);
    free(sorted);
    return st;
}
