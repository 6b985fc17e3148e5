#include "keysort.h"

#include <stdlib.h>
#include <string.h>

/* Buckets up to this many entries (512 KiB) are finished with LSD passes in cache. */
#define LSD_MAX (1u << 15)
#define SMALL_MAX 24

static inline unsigned digit(const struct dsort_sortent *e, int d)
{
    return d < 8 ? (unsigned)(e->k0 >> (56 - 8 * d)) & 0xff
                 : (unsigned)(e->k1 >> (56 - 8 * (d - 8))) & 0xff;
}

/* Key part only: the index below never takes part, so equal keys stay in entry order. */
static inline int ent_key_less(const struct dsort_sortent *a, const struct dsort_sortent *b)
{
    if (a->k0 != b->k0)
        return a->k0 < b->k0;
    return (a->k1 >> DSORT_KEYSORT_IDX_BITS) < (b->k1 >> DSORT_KEYSORT_IDX_BITS);
}

static void insertion_sort(struct dsort_sortent *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct dsort_sortent v = a[i];
        size_t j = i;
        while (j > 0 && ent_key_less(&v, &a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* Stable LSD radix sort of a[0..n) on key digits dfirst..9; result in a. */
static void lsd_sort(struct dsort_sortent *a, struct dsort_sortent *tmp, size_t n, int dfirst)
{
    static _Thread_local uint32_t cnt[DSORT_KEYSORT_PREFIX][256];
    memset(cnt[dfirst], 0, sizeof(cnt[0]) * (size_t)(DSORT_KEYSORT_PREFIX - dfirst));
    for (size_t i = 0; i < n; i++)
        for (int d = dfirst; d < DSORT_KEYSORT_PREFIX; d++)
            cnt[d][digit(&a[i], d)]++;
    struct dsort_sortent *src = a, *dst = tmp;
    for (int d = DSORT_KEYSORT_PREFIX - 1; d >= dfirst; d--) {
        if (cnt[d][digit(&src[0], d)] == n)
            continue; /* every entry has the same byte here */
        uint32_t sum = 0;
        for (int b = 0; b < 256; b++) {
            uint32_t c = cnt[d][b];
            cnt[d][b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[cnt[d][digit(&src[i], d)]++] = src[i];
        struct dsort_sortent *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

/* Stable MSD radix sort on digit d, recursing into buckets; result in a. */
static void msd_sort(struct dsort_sortent *a, struct dsort_sortent *tmp, size_t n, int d)
{
    while (d < DSORT_KEYSORT_PREFIX) {
        if (n <= SMALL_MAX) {
            insertion_sort(a, n);
            return;
        }
        if (n <= LSD_MAX) {
            lsd_sort(a, tmp, n, d);
            return;
        }
        size_t cnt[256] = {0};
        for (size_t i = 0; i < n; i++)
            cnt[digit(&a[i], d)]++;
        if (cnt[digit(&a[0], d)] == n) {
            d++; /* constant byte: no scatter needed */
            continue;
        }
        size_t off[256], sum = 0;
        for (int b = 0; b < 256; b++) {
            off[b] = sum;
            sum += cnt[b];
        }
        size_t pos[256];
        memcpy(pos, off, sizeof pos);
        for (size_t i = 0; i < n; i++)
            tmp[pos[digit(&a[i], d)]++] = a[i];
        memcpy(a, tmp, n * sizeof *a);
        for (int b = 0; b < 256; b++)
            if (cnt[b] > 1)
                msd_sort(a + off[b], tmp + off[b], cnt[b], d + 1);
        return;
    }
}

static inline uint64_t load_be64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

struct tie_ctx {
    struct dsort_cmp cmp;
    size_t rec_size;
    const unsigned char *recs;
};

static int tie_cmp(const void *pa, const void *pb, void *arg)
{
    const struct tie_ctx *c = arg;
    size_t ia = dsort_sortent_index(pa), ib = dsort_sortent_index(pb);
    int r = dsort_cmp_records(&c->cmp, c->recs + ia * c->rec_size, c->recs + ib * c->rec_size);
    if (r)
        return r;
    return ia < ib ? -1 : ia > ib;
}

void dsort_keysort_sort(const struct dsort_format *fmt, const struct dsort_order *ord,
                        const unsigned char *recs, size_t n, struct dsort_sortent *ents,
                        struct dsort_sortent *tmp)
{
    const size_t rs = fmt->rec_size, klen = fmt->key_len;
    const uint64_t flip = ord->reverse ? ~UINT64_C(0) : 0;
    /* Entries are made in index order, which the stable radix sort keeps for equal keys. */
    for (size_t i = 0; i < n; i++) {
        const unsigned char *k = recs + i * rs + fmt->key_off;
        unsigned char pad[16] = {0};
        if (klen < DSORT_KEYSORT_PREFIX) {
            memcpy(pad, k, klen);
            k = pad;
        }
        uint64_t hi = load_be64(k) ^ flip;
        uint64_t lo = ((uint64_t)k[8] << 56 | (uint64_t)k[9] << 48) ^ (flip << 48);
        ents[i].k0 = hi;
        ents[i].k1 = lo | (uint64_t)i;
    }
    if (n > 1)
        msd_sort(ents, tmp, n, 0);
    if (klen <= DSORT_KEYSORT_PREFIX && !dsort_order_last_resort(ord))
        return;
    /* Runs that tie on the prefix: order them by the full comparison (the rest of a long key,
     * then the last resort), then index. */
    struct tie_ctx c = {.rec_size = rs, .recs = recs};
    dsort_cmp_init(&c.cmp, fmt, ord);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && ents[j].k0 == ents[i].k0 &&
               (ents[j].k1 >> DSORT_KEYSORT_IDX_BITS) == (ents[i].k1 >> DSORT_KEYSORT_IDX_BITS))
            j++;
        if (j - i > 1)
            qsort_r(ents + i, j - i, sizeof *ents, tie_cmp, &c);
        i = j;
    }
}

void dsort_keysort_gather(const struct dsort_format *fmt, const unsigned char *recs,
                          const struct dsort_sortent *ents, size_t n, unsigned char *out)
{
    const size_t rs = fmt->rec_size;
    const size_t ahead = 16;
    if (rs == 100) { /* gensort: a constant size lets the compiler inline the copy */
        for (size_t i = 0; i < n; i++) {
            if (i + ahead < n)
                __builtin_prefetch(recs + dsort_sortent_index(&ents[i + ahead]) * 100);
            memcpy(out + i * 100, recs + dsort_sortent_index(&ents[i]) * 100, 100);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (i + ahead < n)
            __builtin_prefetch(recs + dsort_sortent_index(&ents[i + ahead]) * rs);
        memcpy(out + i * rs, recs + dsort_sortent_index(&ents[i]) * rs, rs);
    }
}
