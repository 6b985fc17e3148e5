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

/* The entry's prefix of a normalised key (nl bytes), index 0: as dsort_keysort_sort makes an
 * entry of a key (its first 10 bytes, zero-padded, complemented for -r). */
static inline void key_prefix(const unsigned char *nk, size_t nl, uint64_t flip,
                              struct dsort_sortent *e)
{
    unsigned char k[16] = {0};
    memcpy(k, nk, nl < DSORT_KEYSORT_PREFIX ? nl : DSORT_KEYSORT_PREFIX);
    uint64_t hi, lo;
    memcpy(&hi, k, 8);
    memcpy(&lo, k + 8, 8);
    e->k0 = __builtin_bswap64(hi) ^ flip;
    e->k1 = __builtin_bswap64(lo) ^ (flip << DSORT_KEYSORT_IDX_BITS); /* bytes 8, 9 only */
}

/* The key set is one ascending u64le (the common case, as typedkey.c's widening has it): the
 * entry's prefix is then the key's value, read without the per-key dispatch. */
static inline int u64le_only(const struct dsort_typedkey *tk)
{
    return tk->count == 1 && tk->keys[0].type == DSORT_TK_U64LE && !tk->keys[0].desc;
}

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The entry's prefix of rec's keys (index 0); scratch: norm_len bytes. */
static inline void rec_prefix(const struct dsort_typedkey *tk, const unsigned char *rec,
                              uint64_t flip, unsigned char *scratch, struct dsort_sortent *e)
{
    if (u64le_only(tk)) {
        e->k0 = load_le64(rec + tk->keys[0].off) ^ flip;
        e->k1 = flip << DSORT_KEYSORT_IDX_BITS;
        return;
    }
    dsort_typedkey_normalize(tk, rec, scratch);
    key_prefix(scratch, tk->norm_len, flip, e);
}

/* What decides between two records whose entries' prefixes tie: the rest of the normalised
 * keys (long keys), then without -s the records' bytes; -r reverses both. ka, kb: scratch
 * for two normalised keys. */
struct typed_cmp {
    const struct dsort_typedkey *tk;
    const unsigned char *recs;
    size_t rs, nl;
    int reverse, long_key, last_resort;
    unsigned char *ka, *kb;
};

static void typed_cmp_init(struct typed_cmp *c, const struct dsort_typedkey *tk,
                           const struct dsort_order *ord, const unsigned char *recs,
                           unsigned char *scratch)
{
    *c = (struct typed_cmp){.tk = tk,
                            .recs = recs,
                            .rs = tk->rec_size,
                            .nl = tk->norm_len,
                            .reverse = ord->reverse,
                            .long_key = tk->norm_len > DSORT_KEYSORT_PREFIX,
                            .last_resort = dsort_order_last_resort(ord),
                            .ka = scratch,
                            .kb = scratch + tk->norm_len};
}

/* Records ia and ib (their prefixes tie): <0, 0 (equal: the index decides), >0. */
static inline int typed_tie(const struct typed_cmp *c, size_t ia, size_t ib)
{
    const unsigned char *ra = c->recs + ia * c->rs, *rb = c->recs + ib * c->rs;
    int r = 0;
    if (c->long_key) {
        dsort_typedkey_normalize(c->tk, ra, c->ka);
        dsort_typedkey_normalize(c->tk, rb, c->kb);
        r = memcmp(c->ka, c->kb, c->nl);
    }
    if (!r && c->last_resort)
        r = memcmp(ra, rb, c->rs);
    return c->reverse ? -r : r;
}

static int tie_cmp(const void *pa, const void *pb, void *arg)
{
    const size_t ia = dsort_sortent_index(pa), ib = dsort_sortent_index(pb);
    const int r = typed_tie(arg, ia, ib);
    if (r)
        return r;
    return ia < ib ? -1 : ia > ib;
}

void dsort_job_typed_sort(const struct dsort_typedkey *tk, const struct dsort_order *ord,
                          const unsigned char *recs, size_t n, struct dsort_sortent *ents,
                          struct dsort_sortent *tmp, unsigned char *scratch)
{
    /* The entries of the normalised keys, in index order: the radix sort keeps it for equal
     * prefixes. */
    const size_t rs = tk->rec_size;
    const uint64_t flip = ord->reverse ? ~UINT64_C(0) : 0;
    if (u64le_only(tk)) {
        const unsigned char *k = recs + tk->keys[0].off;
        for (size_t i = 0; i < n; i++) {
            ents[i].k0 = load_le64(k + i * rs) ^ flip;
            ents[i].k1 = flip << DSORT_KEYSORT_IDX_BITS | (uint64_t)i;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            rec_prefix(tk, recs + i * rs, flip, scratch, &ents[i]);
            ents[i].k1 |= (uint64_t)i;
        }
    }
    dsort_keysort_sort_entries(ents, tmp, n);
    struct typed_cmp c;
    typed_cmp_init(&c, tk, ord, recs, scratch);
    if (!c.long_key && !c.last_resort)
        return;
    /* Runs that tie on the prefix: the rest of the keys, the records, the index. */
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && ents[j].k0 == ents[i].k0 &&
               ents[j].k1 >> DSORT_KEYSORT_IDX_BITS == ents[i].k1 >> DSORT_KEYSORT_IDX_BITS)
            j++;
        if (j - i > 1)
            qsort_r(ents + i, j - i, sizeof *ents, tie_cmp, &c);
        i = j;
    }
}

/* dsort_keysort_keys' hooks over a struct typed_cmp: the prefix as dsort_job_typed_sort made
 * it, and the tie after it. */
static void tk_prefix(void *ctx, const unsigned char *rec, struct dsort_sortent *p)
{
    const struct typed_cmp *c = ctx;
    rec_prefix(c->tk, rec, c->reverse ? ~UINT64_C(0) : 0, c->ka, p);
}

static int tk_tie(void *ctx, size_t ia, size_t ib)
{
    return typed_tie(ctx, ia, ib);
}

enum dsort_status dsort_job_typed_merge(const struct dsort_typedkey *tk,
                                        const struct dsort_order *ord, const unsigned char *recs,
                                        const struct dsort_sortent *const *runs, const size_t *lens,
                                        const uint64_t *lo, const uint64_t *hi, size_t k,
                                        struct dsort_sink *sink, struct dsort_error *err)
{
    unsigned char *scratch = malloc(2 * tk->norm_len);
    if (!scratch)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate the merge state");
    struct typed_cmp c;
    typed_cmp_init(&c, tk, ord, recs, scratch);
    const struct dsort_keysort_keys keys = {tk_prefix, tk_tie, &c};
    enum dsort_status st =
        dsort_keysort_merge_keys(tk->rec_size, &keys, recs, runs, lens, lo, hi, k, sink, err);
    free(scratch);
    return st;
}
