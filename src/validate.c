#include "validate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "typedkey.h"

enum dsort_status dsort_vsum_init_ex(struct dsort_vsum *s, const struct dsort_format *fmt,
                                     int whole, struct dsort_error *err)
{
    memset(s, 0, sizeof *s);
    s->first_unordered = DSORT_VALIDATE_NONE;
    s->whole = whole;
    s->key_len = whole ? fmt->rec_size : fmt->key_len;
    s->cmp_off = whole ? fmt->key_off : 0;
    s->cmp_len = fmt->key_len;
    if (fmt->typed) {
        /* Whole records are kept, and compared through their normalised keys. */
        s->typed = fmt->typed;
        s->key_len = fmt->rec_size;
        s->cmp_off = 0;
        s->cmp_len = fmt->rec_size;
        s->norm = malloc(2 * fmt->typed->norm_len);
        if (!s->norm)
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    }
    s->first_key = malloc(2 * s->key_len);
    if (!s->first_key) {
        free(s->norm);
        s->norm = NULL;
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    }
    s->last_key = s->first_key + s->key_len;
    return DSORT_OK;
}

enum dsort_status dsort_vsum_init(struct dsort_vsum *s, const struct dsort_format *fmt,
                                  struct dsort_error *err)
{
    return dsort_vsum_init_ex(s, fmt, 0, err);
}

void dsort_vsum_destroy(struct dsort_vsum *s)
{
    if (!s)
        return;
    free(s->first_key);
    free(s->norm);
    s->first_key = s->last_key = s->norm = NULL;
}

/* Classify the step from a to b (kept bytes: key, or whole record) whose keys compare as c:
 * 1 out of order, 2 duplicate key, 0 fine. */
static inline int classify(const struct dsort_vsum *s, int c, const unsigned char *a,
                           const unsigned char *b, const struct dsort_order *ord)
{
    if (ord->reverse)
        c = -c;
    if (c > 0 || (c == 0 && ord->unique))
        return 1;
    if (c)
        return 0;
    if (s->whole) {
        int t = memcmp(a, b, s->key_len);
        if (ord->reverse ? t < 0 : t > 0)
            return 1;
    }
    return 2;
}

static inline int step(const struct dsort_vsum *s, const unsigned char *a, const unsigned char *b,
                       const struct dsort_order *ord)
{
    if (s->typed) {
        const size_t nl = s->typed->norm_len;
        dsort_typedkey_normalize(s->typed, a, s->norm);
        dsort_typedkey_normalize(s->typed, b, s->norm + nl);
        return classify(s, memcmp(s->norm, s->norm + nl, nl), a, b, ord);
    }
    return classify(s, memcmp(a + s->cmp_off, b + s->cmp_off, s->cmp_len), a, b, ord);
}

static void note(struct dsort_vsum *s, int kind, uint64_t index)
{
    if (kind == 1) {
        if (s->unordered++ == 0)
            s->first_unordered = index;
    } else if (kind == 2) {
        s->duplicates++;
    }
}

/* dsort_vsum_add with typed keys: each record is normalised once, into the scratch half that
 * does not hold its predecessor's key. */
static void add_typed(struct dsort_vsum *s, const struct dsort_order *ord,
                      const unsigned char *recs, size_t n, size_t rs)
{
    const size_t nl = s->typed->norm_len;
    unsigned char *pn = s->norm, *cn = s->norm + nl;
    const unsigned char *prev = s->records ? s->last_key : NULL;
    if (prev)
        dsort_typedkey_normalize(s->typed, prev, pn);
    else
        memcpy(s->first_key, recs, rs);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *k = recs + i * rs;
        dsort_typedkey_normalize(s->typed, k, cn);
        if (prev)
            note(s, classify(s, memcmp(pn, cn, nl), prev, k, ord), s->records + i);
        prev = k;
        unsigned char *t = pn;
        pn = cn;
        cn = t;
    }
    memcpy(s->last_key, prev, rs);
    s->records += n;
}

void dsort_vsum_add(struct dsort_vsum *s, const struct dsort_format *fmt,
                    const struct dsort_order *ord, const unsigned char *recs, size_t n)
{
    if (n == 0)
        return;
    const size_t rs = fmt->rec_size, klen = s->key_len, off = s->whole ? 0 : fmt->key_off;
    dsort_checksum_records(&s->checksum, recs, n, rs);
    if (s->typed) {
        add_typed(s, ord, recs, n, rs);
        return;
    }
    const unsigned char *prev = s->records ? s->last_key : NULL;
    if (!s->records)
        memcpy(s->first_key, recs + off, klen);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *k = recs + i * rs + off;
        if (prev)
            note(s, step(s, prev, k, ord), s->records + i);
        prev = k;
    }
    memcpy(s->last_key, prev, klen);
    s->records += n;
}

void dsort_vsum_append(struct dsort_vsum *s, const struct dsort_vsum *t,
                       const struct dsort_order *ord)
{
    if (t->records == 0)
        return;
    if (s->records == 0) {
        memcpy(s->first_key, t->first_key, s->key_len);
    } else {
        note(s, step(s, s->last_key, t->first_key, ord), s->records);
    }
    if (t->unordered) {
        if (s->unordered == 0)
            s->first_unordered = s->records + t->first_unordered;
        s->unordered += t->unordered;
    }
    s->duplicates += t->duplicates;
    dsort_sum128_merge(&s->checksum, &t->checksum);
    memcpy(s->last_key, t->last_key, s->key_len);
    s->records += t->records;
}

size_t dsort_vsum_packed_size(size_t key_len)
{
    return 6 * sizeof(uint64_t) + 2 * key_len;
}

void dsort_vsum_pack(const struct dsort_vsum *s, unsigned char *buf)
{
    uint64_t h[6] = {s->records,    s->unordered,   s->first_unordered,
                     s->duplicates, s->checksum.lo, s->checksum.hi};
    memcpy(buf, h, sizeof h);
    memcpy(buf + sizeof h, s->first_key, 2 * s->key_len);
}

void dsort_vsum_unpack(struct dsort_vsum *s, const unsigned char *buf)
{
    uint64_t h[6];
    memcpy(h, buf, sizeof h);
    s->records = h[0];
    s->unordered = h[1];
    s->first_unordered = h[2];
    s->duplicates = h[3];
    s->checksum.lo = h[4];
    s->checksum.hi = h[5];
    memcpy(s->first_key, buf + sizeof h, 2 * s->key_len);
}
