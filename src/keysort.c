#include "keysort.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "losertree.h"
#include "merge.h"

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

/* dsort_keysort_set_progress's hook (NULL: off). */
static void (*tick_fn)(void *, double);
static void *tick_arg;

void dsort_keysort_set_progress(void (*fn)(void *arg, double frac), void *arg)
{
    tick_fn = fn;
    tick_arg = arg;
}

static void tick(double frac)
{
    if (tick_fn)
        tick_fn(tick_arg, frac);
}

/* Stable MSD radix sort on digit d, recursing into buckets; result in a. top: the first call
 * (it ticks the progress hook after each bucket, from 0.3 to 0.9 of the sort). */
static void msd_sort(struct dsort_sortent *a, struct dsort_sortent *tmp, size_t n, int d, int top)
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
        for (int b = 0; b < 256; b++) {
            if (cnt[b] > 1)
                msd_sort(a + off[b], tmp + off[b], cnt[b], d + 1, 0);
            if (top)
                tick(0.3 + 0.6 * (double)(off[b] + cnt[b]) / (double)n);
        }
        return;
    }
}

/* The entry of the key at k (klen bytes), index 0: its first 10 bytes, zero-padded, normalised
 * (complemented for a descending order). */
static inline void prefix_of(const unsigned char *k, size_t klen, uint64_t flip,
                             struct dsort_sortent *e)
{
    unsigned char pad[16] = {0};
    if (klen < DSORT_KEYSORT_PREFIX) {
        memcpy(pad, k, klen);
        k = pad;
    }
    e->k0 = dsort_load_be64(k) ^ flip;
    e->k1 = ((uint64_t)k[8] << 56 | (uint64_t)k[9] << 48) ^ (flip << 48);
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

/* Runs of ents[0..n) that tie on the prefix: order them by the full comparison (the rest of a
 * long key, then the last resort), then index. Nothing to do for short keys without it. */
static void fix_ties(const struct dsort_format *fmt, const struct dsort_order *ord,
                     const unsigned char *recs, struct dsort_sortent *ents, size_t n)
{
    if (fmt->key_len <= DSORT_KEYSORT_PREFIX && !dsort_order_last_resort(ord))
        return;
    struct tie_ctx c = {.rec_size = fmt->rec_size, .recs = recs};
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

/* (keysort.h) In index order, which the stable radix sort keeps for equal keys; cnt is added
 * to (zero it for a count of these alone). */
void dsort_keysort_entries(const struct dsort_format *fmt, const struct dsort_order *ord,
                           const unsigned char *recs, size_t first, size_t n,
                           struct dsort_sortent *ents, size_t *cnt)
{
    const size_t rs = fmt->rec_size, klen = fmt->key_len;
    const uint64_t flip = ord->reverse ? ~UINT64_C(0) : 0;
    for (size_t i = first; i < first + n; i++) {
        prefix_of(recs + i * rs + fmt->key_off, klen, flip, &ents[i]);
        ents[i].k1 |= (uint64_t)i;
        if (cnt)
            cnt[ents[i].k0 >> 56]++;
    }
}

void dsort_keysort_sort(const struct dsort_format *fmt, const struct dsort_order *ord,
                        const unsigned char *recs, size_t n, struct dsort_sortent *ents,
                        struct dsort_sortent *tmp)
{
    dsort_keysort_entries(fmt, ord, recs, 0, n, ents, NULL);
    tick(0.3); /* the entries made: about a third of the time */
    if (n > 1)
        msd_sort(ents, tmp, n, 0, 1);
    tick(0.9);
    fix_ties(fmt, ord, recs, ents, n);
}

void dsort_keysort_sort_entries(struct dsort_sortent *ents, struct dsort_sortent *tmp, size_t n)
{
    if (n > 1)
        msd_sort(ents, tmp, n, 0, 1);
}

/* A bucket's state (dsort_keysort_lazy.done): not sorted, being sorted by a thread, sorted. */
enum { BUCKET_RAW = 0, BUCKET_SORTING = 1, BUCKET_SORTED = 2 };

/* Sort bucket b of z (its entries in index order) as dsort_keysort_sort would. */
static void sort_bucket(struct dsort_keysort_lazy *z, int b, struct dsort_sortent *tmp)
{
    struct dsort_sortent *a = z->ents + z->off[b];
    const size_t n = z->off[b + 1] - z->off[b];
    if (n > 1)
        msd_sort(a, tmp, n, 1, 0); /* byte 0 is the bucket's */
    fix_ties(z->fmt, z->ord, z->recs, a, n);
    atomic_store_explicit(&z->done[b], BUCKET_SORTED, memory_order_release);
}

/* Bucket b sorted on return: by this thread (with tmp), or by the one that claimed it first,
 * waited for (a bucket of uniform keys takes well under a millisecond). */
static void ready_bucket(struct dsort_keysort_lazy *z, int b, struct dsort_sortent *tmp)
{
    unsigned char s = atomic_load_explicit(&z->done[b], memory_order_acquire);
    if (s == BUCKET_SORTED)
        return;
    if (s == BUCKET_RAW &&
        atomic_compare_exchange_strong_explicit(&z->done[b], &s, BUCKET_SORTING,
                                                memory_order_acquire, memory_order_acquire)) {
        sort_bucket(z, b, tmp);
        return;
    }
    while (atomic_load_explicit(&z->done[b], memory_order_acquire) != BUCKET_SORTED)
        sched_yield();
}

void dsort_keysort_split(struct dsort_keysort_lazy *z, const struct dsort_format *fmt,
                         const struct dsort_order *ord, const unsigned char *recs, size_t n,
                         struct dsort_sortent *ents, struct dsort_sortent *tmp, const size_t *cnt,
                         size_t eager)
{
    z->fmt = fmt;
    z->ord = ord;
    z->recs = recs;
    z->ents = ents;
    z->n = n;
    z->lazy_max = 0;
    /* The entries, made in tmp in index order, are scattered into ents by their first byte
     * (stable: each bucket stays in index order). */
    tick(0.3);
    size_t pos[256], sum = 0;
    for (int b = 0; b < 256; b++) {
        z->off[b] = pos[b] = sum;
        sum += cnt[b];
    }
    z->off[256] = sum;
    for (size_t i = 0; i < n; i++)
        ents[pos[tmp[i].k0 >> 56]++] = tmp[i];
    for (int b = 0; b < 256; b++) {
        atomic_init(&z->done[b], BUCKET_RAW);
        if (cnt[b] > eager)
            sort_bucket(z, b, tmp + z->off[b]);
        else if (cnt[b] > z->lazy_max)
            z->lazy_max = cnt[b];
    }
    tick(0.5);
}

size_t dsort_keysort_ready(struct dsort_keysort_lazy *z, size_t lo, size_t hi,
                           struct dsort_sortent *tmp)
{
    if (lo >= hi)
        return lo;
    /* the first bucket that holds lo: the last b with off[b] <= lo */
    int b = 0, e = 256;
    while (e - b > 1) {
        const int mid = (b + e) / 2;
        if (z->off[mid] <= lo)
            b = mid;
        else
            e = mid;
    }
    for (; b < 256 && z->off[b] < hi; b++)
        ready_bucket(z, b, tmp);
    return z->off[b];
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

/* The merge's state: k runs, each at cur[i] of end[i]. */
struct ent_merge {
    const struct dsort_sortent **cur, **end;
    struct dsort_cmp cmp;
    const unsigned char *recs;
    size_t rs;
    int full; /* compare records where the prefix ties (as dsort_keysort_sort does) */
    const struct dsort_format *fmt;       /* the prefixes: the format's key ... */
    uint64_t flip;                        /* ... (-r: every bit flipped) */
    const struct dsort_keysort_keys *own; /* or the caller's prefixes and ties (NULL: none) */
};

/* Is run a's current entry before run b's? Exhausted runs are after everything; indices are
 * unique, so ties end there. */
static inline int ent_before(const void *ctx, size_t a, size_t b)
{
    const struct ent_merge *m = ctx;
    if (m->cur[a] == m->end[a])
        return 0;
    if (m->cur[b] == m->end[b])
        return 1;
    const struct dsort_sortent *x = m->cur[a], *y = m->cur[b];
    if (x->k0 != y->k0)
        return x->k0 < y->k0;
    uint64_t px = x->k1 >> DSORT_KEYSORT_IDX_BITS, py = y->k1 >> DSORT_KEYSORT_IDX_BITS;
    if (px != py)
        return px < py;
    size_t ia = dsort_sortent_index(x), ib = dsort_sortent_index(y);
    if (m->own) {
        int r = m->own->tie(m->own->ctx, ia, ib);
        return r ? r < 0 : ia < ib;
    }
    if (m->full) {
        int r = dsort_cmp_records(&m->cmp, m->recs + ia * m->rs, m->recs + ib * m->rs);
        if (r)
            return r < 0;
    }
    return ia < ib;
}

/* The runs' cursors, with every entry checked to name a record of its rank's range [lo, hi):
 * every index first (prefetches are loads too), then the first records of each prefetched. */
static enum dsort_status open_runs(struct ent_merge *m, const struct dsort_sortent *const *runs,
                                   const size_t *lens, const uint64_t *lo, const uint64_t *hi,
                                   size_t k, size_t ahead, struct dsort_error *err)
{
    for (size_t i = 0; i < k; i++) {
        m->cur[i] = runs[i];
        m->end[i] = runs[i] + lens[i];
        for (size_t j = 0; j < lens[i]; j++)
            if (dsort_sortent_index(&runs[i][j]) < lo[i] ||
                dsort_sortent_index(&runs[i][j]) >= hi[i])
                return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                                 "entry %zu from rank %zu names record %zu, which that rank did "
                                 "not sort (the input changed while it was being sorted, or the "
                                 "entry was corrupted in the exchange); nothing written",
                                 j, i, dsort_sortent_index(&runs[i][j]));
        for (size_t j = 0; j < ahead && j < lens[i]; j++)
            __builtin_prefetch(m->recs + dsort_sortent_index(&runs[i][j]) * m->rs);
    }
    return DSORT_OK;
}

/* A full sink: flush it to make room for one record of rs bytes. */
static enum dsort_status make_room(struct dsort_sink *sink, size_t rs, struct dsort_error *err)
{
    if (!sink->flush)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "merge output buffer of %zu bytes is full",
                         sink->cap);
    enum dsort_status st = sink->flush(sink, err);
    if (!st && sink->len + rs > sink->cap)
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0, "a sink has no room for a %zu-byte record", rs);
    return st;
}

/* The merge of dsort_keysort_merge and dsort_keysort_merge_keys over m (recs, rs, the
 * prefixes and ties set). */
static enum dsort_status merge_runs(struct ent_merge *m, const struct dsort_sortent *const *runs,
                                    const size_t *lens, const uint64_t *lo, const uint64_t *hi,
                                    size_t k, struct dsort_sink *sink, struct dsort_error *err)
{
    const size_t rs = m->rs, ahead = 16;
    const unsigned char *recs = m->recs;
    m->cur = malloc((k ? k : 1) * sizeof *m->cur);
    m->end = malloc((k ? k : 1) * sizeof *m->end);
    enum dsort_status st = DSORT_OK;
    struct dsort_losertree lt = {0};
    if (!m->cur || !m->end)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate the merge state");
    if (!st)
        st = open_runs(m, runs, lens, lo, hi, k, ahead, err);
    struct dsort_sortent prev = {0, 0};
    if (!st && k)
        st = dsort_losertree_init(&lt, k, ent_before, m, err);
    while (!st && k) {
        size_t w = lt.w;
        const struct dsort_sortent *e = m->cur[w];
        if (e == m->end[w])
            break; /* the winner is exhausted, so all are */
        if (sink->len + rs > sink->cap && (st = make_room(sink, rs, err)))
            break;
        if (e + ahead < m->end[w])
            __builtin_prefetch(recs + dsort_sortent_index(e + ahead) * rs);
        const unsigned char *rec = recs + dsort_sortent_index(e) * rs;
        struct dsort_sortent p;
        if (m->own)
            m->own->prefix(m->own->ctx, rec, &p);
        else
            prefix_of(rec + m->fmt->key_off, m->fmt->key_len, m->flip, &p);
        if (p.k0 != e->k0 || p.k1 != (e->k1 & ~DSORT_KEYSORT_IDX_MASK) || p.k0 < prev.k0 ||
            (p.k0 == prev.k0 && p.k1 < prev.k1)) {
            st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                           "an entry from rank %zu does not match record %zu, or is out of "
                           "order (the input changed while it was being sorted, or the entry was "
                           "corrupted in the exchange); nothing written",
                           w, dsort_sortent_index(e));
            break;
        }
        prev = p;
        if (rs == 100) /* gensort: a constant size lets the compiler inline the copy */
            memcpy(sink->buf + sink->len, rec, 100);
        else
            memcpy(sink->buf + sink->len, rec, rs);
        sink->len += rs;
        sink->records++;
        m->cur[w] = e + 1;
        dsort_losertree_replay(&lt, ent_before, m);
    }
    if (!st && sink->flush && sink->len)
        st = sink->flush(sink, err);
    dsort_losertree_free(&lt);
    free(m->cur);
    free(m->end);
    return st;
}

enum dsort_status dsort_keysort_merge(const struct dsort_format *fmt, const struct dsort_order *ord,
                                      const unsigned char *recs,
                                      const struct dsort_sortent *const *runs, const size_t *lens,
                                      const uint64_t *lo, const uint64_t *hi, size_t k,
                                      struct dsort_sink *sink, struct dsort_error *err)
{
    struct ent_merge m = {
        .recs = recs, .rs = fmt->rec_size, .fmt = fmt, .flip = ord->reverse ? ~UINT64_C(0) : 0};
    m.full = fmt->key_len > DSORT_KEYSORT_PREFIX || dsort_order_last_resort(ord);
    dsort_cmp_init(&m.cmp, fmt, ord);
    return merge_runs(&m, runs, lens, lo, hi, k, sink, err);
}

enum dsort_status dsort_keysort_merge_keys(size_t rec_size, const struct dsort_keysort_keys *keys,
                                           const unsigned char *recs,
                                           const struct dsort_sortent *const *runs,
                                           const size_t *lens, const uint64_t *lo,
                                           const uint64_t *hi, size_t k, struct dsort_sink *sink,
                                           struct dsort_error *err)
{
    struct ent_merge m = {.recs = recs, .rs = rec_size, .own = keys};
    return merge_runs(&m, runs, lens, lo, hi, k, sink, err);
}
