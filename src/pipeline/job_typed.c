/* Typed keys in the fixed-record pipelines (job_typed.h). */
#include "job_typed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "keysort.h"
#include "losertree.h"
#include "merge.h"
#include "output.h"
#include "job_topo.h"

void dsort_job_typed_enter(struct dsort_job_options *o)
{
    const struct dsort_typedkey *tk = o->fmt.typed;
    if (!tk || o->lines)
        return;
    o->typed = tk;
    o->fmt.rec_size = tk->wide_prefix + tk->rec_size;
    o->fmt.key_off = tk->wide_key_off;
    o->fmt.key_len = tk->norm_len;
    o->fmt.typed = NULL; /* the widened records' key is plain bytes */
}

size_t dsort_job_out_rec(const struct dsort_job_options *o)
{
    return o->typed ? o->typed->rec_size : o->fmt.rec_size;
}

enum dsort_status dsort_job_read(const struct dsort_job_options *o, const struct dsort_inputs *in,
                                 uint64_t first, uint64_t n, unsigned char *buf,
                                 struct dsort_sum128 *sum, struct dsort_sum128 *con,
                                 struct dsort_error *err)
{
    /* With typed keys the user's records go to the buffer's tail, are summed there, and are
     * widened in place. */
    const size_t rs = dsort_job_out_rec(o);
    unsigned char *at = o->typed ? buf + n * o->typed->wide_prefix : buf;
    enum dsort_status st = dsort_job_topo_read(o->topo, in, first, n, at, err);
    if (st)
        return st;
    dsort_job_sum_records(o->verify, at, n, rs, sum, con);
    if (o->typed)
        dsort_typedkey_widen_inplace(o->typed, buf, (size_t)n);
    return DSORT_OK;
}

enum dsort_status dsort_job_read_one(const struct dsort_job_options *o,
                                     const struct dsort_inputs *in, uint64_t i, unsigned char *rec,
                                     struct dsort_error *err)
{
    if (!o->typed)
        return dsort_inputs_read(in, i, 1, rec, err);
    enum dsort_status st = dsort_inputs_read(in, i, 1, rec + o->typed->wide_prefix, err);
    if (!st)
        dsort_typedkey_widen_inplace(o->typed, rec, 1);
    return st;
}

enum dsort_status dsort_job_write(const struct dsort_job_options *o, struct dsort_output *out,
                                  unsigned char *buf, uint64_t n, struct dsort_sum128 *sum,
                                  struct dsort_sum128 *con, struct dsort_error *err)
{
    const size_t rs = dsort_job_out_rec(o);
    if (o->typed)
        dsort_typedkey_narrow_inplace(o->typed, buf, (size_t)n);
    dsort_job_sum_records(o->output_dir || o->verify, buf, n, rs, sum, con);
    return dsort_output_write(out, buf, (size_t)(n * rs), 0, err);
}

void dsort_job_typed_keys(const struct dsort_typedkey *tk, const unsigned char *recs, size_t n,
                          unsigned char *keys)
{
    const size_t rs = tk->rec_size, nl = tk->norm_len;
    for (size_t i = 0; i < n; i++)
        dsort_typedkey_normalize(tk, recs + i * rs, keys + i * nl);
}

/* The last resort among records with equal normalised keys: their bytes, then the index. */
struct tie_ctx {
    const unsigned char *recs;
    size_t rs;
    int reverse;
};

static int tie_cmp(const void *pa, const void *pb, void *arg)
{
    const struct tie_ctx *c = arg;
    const size_t ia = dsort_sortent_index(pa), ib = dsort_sortent_index(pb);
    int r = memcmp(c->recs + ia * c->rs, c->recs + ib * c->rs, c->rs);
    if (r)
        return c->reverse ? -r : r;
    return ia < ib ? -1 : ia > ib;
}

void dsort_job_typed_sort(const struct dsort_typedkey *tk, const struct dsort_order *ord,
                          const unsigned char *recs, const unsigned char *keys, size_t n,
                          struct dsort_sortent *ents, struct dsort_sortent *tmp)
{
    /* The keys sorted as records of their own (the key all of them), stable: the normalised
     * key, then the index. */
    const size_t nl = tk->norm_len;
    const struct dsort_format kf = {
        .kind = DSORT_FORMAT_FIXED, .rec_size = nl, .key_off = 0, .key_len = nl};
    const struct dsort_order ko = {.reverse = ord->reverse, .stable = 1};
    dsort_keysort_sort(&kf, &ko, keys, n, ents, tmp);
    if (!dsort_order_last_resort(ord))
        return;
    /* Runs of equal keys: by the records' bytes (the widened records' last resort, whose
     * normalised keys are equal), then the index. */
    struct tie_ctx c = {recs, tk->rec_size, ord->reverse};
    for (size_t i = 0; i < n;) {
        const unsigned char *ki = keys + dsort_sortent_index(&ents[i]) * nl;
        size_t j = i + 1;
        while (j < n && ents[j].k0 == ents[i].k0 &&
               ents[j].k1 >> DSORT_KEYSORT_IDX_BITS == ents[i].k1 >> DSORT_KEYSORT_IDX_BITS &&
               !memcmp(keys + dsort_sortent_index(&ents[j]) * nl, ki, nl))
            j++;
        if (j - i > 1)
            qsort_r(ents + i, j - i, sizeof *ents, tie_cmp, &c);
        i = j;
    }
}

/* The entry's prefix of a normalised key (nl bytes), index 0: as dsort_keysort_sort makes it
 * from the keys (its first 10 bytes, zero-padded, complemented for -r). */
static void key_prefix(const unsigned char *nk, size_t nl, uint64_t flip, struct dsort_sortent *e)
{
    unsigned char k[DSORT_KEYSORT_PREFIX] = {0};
    memcpy(k, nk, nl < sizeof k ? nl : sizeof k);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | k[i];
    e->k0 = v ^ flip;
    e->k1 = ((uint64_t)k[8] << 56 | (uint64_t)k[9] << 48) ^ (flip << 48);
}

/* The merge's state: k runs, each at cur[i] of end[i]; ka, kb: two normalised keys. */
struct tmerge {
    const struct dsort_sortent **cur, **end;
    const struct dsort_typedkey *tk;
    const unsigned char *recs;
    size_t rs, nl;
    int reverse, long_key, last_resort;
    unsigned char *ka, *kb;
};

/* Is run a's current entry before run b's (as dsort_job_typed_sort orders them)? Exhausted
 * runs are after everything; indices are unique, so ties end there. */
static int tm_before(const void *ctx, size_t a, size_t b)
{
    const struct tmerge *m = ctx;
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
    const size_t ia = dsort_sortent_index(x), ib = dsort_sortent_index(y);
    const unsigned char *ra = m->recs + ia * m->rs, *rb = m->recs + ib * m->rs;
    int r = 0;
    if (m->long_key) { /* the prefixes tie: the rest of the keys */
        dsort_typedkey_normalize(m->tk, ra, m->ka);
        dsort_typedkey_normalize(m->tk, rb, m->kb);
        r = memcmp(m->ka, m->kb, m->nl);
    }
    if (!r && m->last_resort)
        r = memcmp(ra, rb, m->rs);
    if (r)
        return m->reverse ? r > 0 : r < 0;
    return ia < ib;
}

/* The runs' cursors, with every entry checked to name a record of its rank's range [lo, hi). */
static enum dsort_status tm_open(struct tmerge *m, const struct dsort_sortent *const *runs,
                                 const size_t *lens, const uint64_t *lo, const uint64_t *hi,
                                 size_t k, struct dsort_error *err)
{
    for (size_t i = 0; i < k; i++) {
        m->cur[i] = runs[i];
        m->end[i] = runs[i] + lens[i];
        for (size_t j = 0; j < lens[i]; j++) {
            const size_t ix = dsort_sortent_index(&runs[i][j]);
            if (ix < lo[i] || ix >= hi[i])
                return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                                 "entry %zu from rank %zu names record %zu, which that rank did "
                                 "not sort (the input changed while it was being sorted, or the "
                                 "entry was corrupted in the exchange); nothing written",
                                 j, i, ix);
        }
        for (size_t j = 0; j < 16 && j < lens[i]; j++)
            __builtin_prefetch(m->recs + dsort_sortent_index(&runs[i][j]) * m->rs);
    }
    return DSORT_OK;
}

/* Take the winner's entry: check it against its record (and the one before), copy the record
 * into the sink (flushed when full). */
static enum dsort_status tm_take(struct tmerge *m, size_t w, struct dsort_sortent *prev,
                                 struct dsort_sink *sink, struct dsort_error *err)
{
    const struct dsort_sortent *e = m->cur[w];
    const size_t rs = m->rs;
    enum dsort_status st;
    if (sink->len + rs > sink->cap) {
        if (!sink->flush)
            return DSORT_ERR(err, DSORT_ENOMEM, 0, "merge output buffer of %zu bytes is full",
                             sink->cap);
        if ((st = sink->flush(sink, err)))
            return st;
        if (sink->len + rs > sink->cap)
            return DSORT_ERR(err, DSORT_EINTERNAL, 0, "a sink has no room for a %zu-byte record",
                             rs);
    }
    if (e + 16 < m->end[w])
        __builtin_prefetch(m->recs + dsort_sortent_index(e + 16) * rs);
    const unsigned char *rec = m->recs + dsort_sortent_index(e) * rs;
    struct dsort_sortent p;
    dsort_typedkey_normalize(m->tk, rec, m->ka);
    key_prefix(m->ka, m->nl, m->reverse ? ~UINT64_C(0) : 0, &p);
    if (p.k0 != e->k0 || p.k1 != (e->k1 & ~DSORT_KEYSORT_IDX_MASK) || p.k0 < prev->k0 ||
        (p.k0 == prev->k0 && p.k1 < prev->k1))
        return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                         "an entry from rank %zu does not match record %zu, or is out of order "
                         "(the input changed while it was being sorted, or the entry was "
                         "corrupted in the exchange); nothing written",
                         w, dsort_sortent_index(e));
    *prev = p;
    memcpy(sink->buf + sink->len, rec, rs);
    sink->len += rs;
    sink->records++;
    m->cur[w] = e + 1;
    return DSORT_OK;
}

enum dsort_status dsort_job_typed_merge(const struct dsort_typedkey *tk,
                                        const struct dsort_order *ord, const unsigned char *recs,
                                        const struct dsort_sortent *const *runs, const size_t *lens,
                                        const uint64_t *lo, const uint64_t *hi, size_t k,
                                        struct dsort_sink *sink, struct dsort_error *err)
{
    struct tmerge m = {.tk = tk,
                       .recs = recs,
                       .rs = tk->rec_size,
                       .nl = tk->norm_len,
                       .reverse = ord->reverse,
                       .long_key = tk->norm_len > DSORT_KEYSORT_PREFIX,
                       .last_resort = dsort_order_last_resort(ord)};
    m.cur = malloc((k ? k : 1) * sizeof *m.cur);
    m.end = malloc((k ? k : 1) * sizeof *m.end);
    m.ka = malloc(2 * m.nl);
    m.kb = m.ka ? m.ka + m.nl : NULL;
    enum dsort_status st = DSORT_OK;
    struct dsort_losertree lt = {0};
    if (!m.cur || !m.end || !m.ka)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate the merge state");
    if (!st)
        st = tm_open(&m, runs, lens, lo, hi, k, err);
    if (!st && k)
        st = dsort_losertree_init(&lt, k, tm_before, &m, err);
    struct dsort_sortent prev = {0, 0};
    while (!st && k && m.cur[lt.w] != m.end[lt.w]) { /* the winner exhausted: all are */
        if (!(st = tm_take(&m, lt.w, &prev, sink, err)))
            dsort_losertree_replay(&lt, tm_before, &m);
    }
    if (!st && sink->flush && sink->len)
        st = sink->flush(sink, err);
    dsort_losertree_free(&lt);
    free(m.cur);
    free(m.end);
    free(m.ka);
    return st;
}
