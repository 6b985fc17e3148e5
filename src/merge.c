#include "merge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "losertree.h"

void dsort_cursor_memory(struct dsort_cursor *c, const unsigned char *recs, size_t n,
                         size_t rec_size)
{
    c->cur = recs;
    c->end = recs + n * rec_size;
    c->refill = NULL;
    c->ctx = NULL;
}

void dsort_sink_memory(struct dsort_sink *s, unsigned char *buf, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->buf = buf;
    s->cap = cap;
}

struct merge_state {
    const struct dsort_cmp *cmp;
    struct dsort_cursor *cs;
    size_t k;
};

/* dsort_cmp_records, with a key's first 8 bytes (when it has 8) compared first as one
 * big-endian number: random keys differ there, and the merge skips memcmp's call. */
static inline int merge_cmp(const struct dsort_cmp *c, const unsigned char *a,
                            const unsigned char *b)
{
    if (c->key_len >= 8) {
        const uint64_t x = dsort_load_be64(a + c->key_off), y = dsort_load_be64(b + c->key_off);
        if (x != y)
            return (x < y) != !!c->reverse ? -1 : 1;
    }
    return dsort_cmp_records(c, a, b);
}

/* Is cursor a's record before cursor b's? An exhausted cursor is after everything. */
static inline int before(const void *ctx, size_t a, size_t b)
{
    const struct merge_state *m = ctx;
    const struct dsort_cursor *ca = &m->cs[a], *cb = &m->cs[b];
    if (ca->cur == ca->end)
        return 0;
    if (cb->cur == cb->end)
        return 1;
    int c = merge_cmp(m->cmp, ca->cur, cb->cur);
    if (c)
        return c < 0;
    return a < b;
}

static enum dsort_status advance(struct dsort_cursor *c, size_t rs, struct dsort_error *err)
{
    c->cur += rs;
    if (c->cur == c->end && c->refill)
        return c->refill(c, err);
    return DSORT_OK;
}

static enum dsort_status sink_put(struct dsort_sink *s, const unsigned char *rec, size_t rs,
                                  struct dsort_error *err)
{
    /* rs is the number of bytes that go out (the record without any suffix). */
    if (s->len + rs > s->cap) {
        if (!s->flush)
            return DSORT_ERR(err, DSORT_ENOMEM, 0, "merge output buffer of %zu bytes is full",
                             s->cap);
        enum dsort_status st = s->flush(s, err);
        if (st)
            return st;
        if (s->len + rs > s->cap)
            return DSORT_ERR(err, DSORT_EINTERNAL, 0, "a sink has no room for a %zu-byte record",
                             rs);
    }
    memcpy(s->buf + s->len, rec, rs);
    s->len += rs;
    s->records++;
    return DSORT_OK;
}

enum dsort_status dsort_merge_cmp(const struct dsort_cmp *cmp, size_t rec_size, size_t out_size,
                                  int unique, struct dsort_cursor *cursors, size_t k,
                                  struct dsort_sink *sink, struct dsort_error *err)
{
    const size_t rs = rec_size, klen = cmp->key_len, koff = cmp->key_off;
    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < k; i++)
        if (cursors[i].cur == cursors[i].end && cursors[i].refill &&
            (st = cursors[i].refill(&cursors[i], err)))
            return st;
    struct merge_state m = {cmp, cursors, k};
    unsigned char *last = NULL; /* previous output key, for unique */
    if (unique && !(last = malloc(klen)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate the merge state");
    int have_last = 0;
    struct dsort_losertree lt;
    if ((st = dsort_losertree_init(&lt, k, before, &m, err))) {
        free(last);
        return st;
    }
    while (k > 0) {
        struct dsort_cursor *c = &cursors[lt.w];
        if (c->cur == c->end)
            break; /* the winner is exhausted, so all are */
        const unsigned char *rec = c->cur;
        if (unique) {
            if (!have_last || memcmp(last, rec + koff, klen)) {
                memcpy(last, rec + koff, klen);
                have_last = 1;
                st = sink_put(sink, rec, out_size, err);
            }
        } else {
            st = sink_put(sink, rec, out_size, err);
        }
        if (st || (st = advance(c, rs, err)))
            break;
        dsort_losertree_replay(&lt, before, &m);
    }
    if (!st && sink->flush && sink->len)
        st = sink->flush(sink, err);
    dsort_losertree_free(&lt);
    free(last);
    return st;
}

enum dsort_status dsort_merge(const struct dsort_format *fmt, const struct dsort_order *ord,
                              struct dsort_cursor *cursors, size_t k, struct dsort_sink *sink,
                              struct dsort_error *err)
{
    struct dsort_cmp cmp;
    dsort_cmp_init(&cmp, fmt, ord);
    return dsort_merge_cmp(&cmp, fmt->rec_size, fmt->rec_size, ord->unique, cursors, k, sink, err);
}
