/* lines.c - the line index, its sort, line streams and their merge (see lines.h). */
#include "lines.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "losertree.h"

void dsort_lines_order_init(struct dsort_lines_order *o, const struct dsort_keys *k,
                            unsigned char eol)
{
    o->keys = k;
    o->plain = dsort_keys_plain(k);
    o->has_prefix = o->plain || dsort_keys_has_prefix(k);
    o->tie_pos = k->stable || k->unique;
    o->eol = eol;
}

size_t dsort_lines_index(const struct dsort_lines_order *o, const unsigned char *buf, size_t size,
                         struct dsort_line_ent *ents)
{
    size_t n = 0, off = 0;
    while (off < size) {
        const unsigned char *e = memchr(buf + off, o->eol, size - off);
        size_t len = (size_t)(e - (buf + off));
        dsort_line_set(&ents[n++], off, len, dsort_lines_prefix(o, buf + off, len));
        off += len + 1;
    }
    return n;
}

/* Entry order: prefix, then the order's comparison; 0 for ties (the caller keeps them in
 * their current order). */
static inline int ent_cmp(const struct dsort_lines_order *o, const unsigned char *buf,
                          const struct dsort_line_ent *a, const struct dsort_line_ent *b)
{
    if (a->prefix != b->prefix)
        return a->prefix < b->prefix ? -1 : 1;
    return dsort_lines_cmp_same_prefix(o, a->prefix, buf + dsort_line_off(a),
                                       dsort_line_len(a, buf, o->eol), buf + dsort_line_off(b),
                                       dsort_line_len(b, buf, o->eol));
}

static void insertion_sort(const struct dsort_lines_order *o, const unsigned char *buf,
                           struct dsort_line_ent *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct dsort_line_ent x = a[i];
        size_t j = i;
        while (j > 0 && ent_cmp(o, buf, &a[j - 1], &x) > 0) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

/* dsort_lines_set_progress's hook (NULL: off). */
static void (*tick_fn)(void *, double);
static void *tick_arg;

void dsort_lines_set_progress(void (*fn)(void *arg, double frac), void *arg)
{
    tick_fn = fn;
    tick_arg = arg;
}

static void tick(double frac)
{
    if (tick_fn)
        tick_fn(tick_arg, frac);
}

/* Sorts shorter than this do not tick inside (a merge sort ticks once a level). */
#define TICK_MIN 65536

/* Stable bottom-up merge sort of a[0, n) with scratch t (n entries); ticks from lo to hi. */
static void merge_sort(const struct dsort_lines_order *o, const unsigned char *buf,
                       struct dsort_line_ent *a, size_t n, struct dsort_line_ent *t, double lo_f,
                       double hi_f)
{
    const size_t run = 16;
    for (size_t i = 0; i < n; i += run)
        insertion_sort(o, buf, a + i, n - i < run ? n - i : run);
    size_t levels = 0;
    for (size_t w = run; w < n; w *= 2)
        levels++;
    struct dsort_line_ent *src = a, *dst = t;
    for (size_t w = run, level = 0; w < n; w *= 2, level++) {
        if (n >= TICK_MIN)
            tick(lo_f + (hi_f - lo_f) * (double)level / (double)levels);
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            if (mid == hi || ent_cmp(o, buf, &src[mid - 1], &src[mid]) <= 0) {
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof *src); /* already in order */
                continue;
            }
            while (i < mid && j < hi)
                dst[k++] = ent_cmp(o, buf, &src[j], &src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        struct dsort_line_ent *x = src;
        src = dst;
        dst = x;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

/* Stable LSD radix sort of a[0, n) by prefix, one byte a pass, skipping bytes that are the
 * same in every entry. */
static void radix_prefix(struct dsort_line_ent *a, size_t n, struct dsort_line_ent *t)
{
    static const int bytes = 8;
    size_t(*count)[256] = calloc((size_t)bytes, sizeof *count);
    if (!count) { /* no room for the counters: fall back to the comparison sort's order */
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t p = a[i].prefix;
        for (int b = 0; b < bytes; b++)
            count[b][(p >> (8 * b)) & 0xFF]++;
    }
    struct dsort_line_ent *src = a, *dst = t;
    for (int b = 0; b < bytes; b++) {
        size_t *c = count[b];
        if (c[(src[0].prefix >> (8 * b)) & 0xFF] == n)
            continue;
        size_t sum = 0;
        for (int v = 0; v < 256; v++) {
            size_t x = c[v];
            c[v] = sum;
            sum += x;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[(src[i].prefix >> (8 * b)) & 0xFF]++] = src[i];
        struct dsort_line_ent *x = src;
        src = dst;
        dst = x;
        if (n >= TICK_MIN)
            tick(0.4 * (b + 1) / bytes);
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    free(count);
}

void dsort_lines_sort(const struct dsort_lines_order *o, const unsigned char *buf,
                      struct dsort_line_ent *ents, size_t n, struct dsort_line_ent *tmp)
{
    if (n < 2)
        return;
    if (!o->has_prefix) {
        merge_sort(o, buf, ents, n, tmp, 0, 1);
        return;
    }
    /* --progress: the radix sort is 0.4 of the sort, the groups the rest */
    radix_prefix(ents, n, tmp);
    /* Groups of equal prefixes: order them by the full comparison. (If the radix sort could
     * not run, the merge sort over everything does the whole job.) */
    size_t i = 0, next = n / 64;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && ents[j].prefix == ents[i].prefix)
            j++;
        if (j - i > 1)
            merge_sort(o, buf, ents + i, j - i, tmp, 0.4 + 0.6 * (double)i / (double)n,
                       0.4 + 0.6 * (double)j / (double)n);
        i = j;
        if (i >= next && n >= TICK_MIN) {
            tick(0.4 + 0.6 * (double)i / (double)n);
            next = i + n / 64;
        }
    }
    for (size_t k = 1; k < n; k++)
        if (ents[k - 1].prefix > ents[k].prefix) { /* the radix sort did not run */
            merge_sort(o, buf, ents, n, tmp, 0, 1);
            break;
        }
}

/* ---- inputs as lines ---- */

size_t dsort_lines_file_at(const struct dsort_inputs *in, uint64_t x)
{
    size_t lo = 0, hi = in->count;
    while (lo < hi) { /* first file whose end is beyond x */
        size_t m = (lo + hi) / 2;
        if (in->files[m].first + in->files[m].records > x)
            hi = m;
        else
            lo = m + 1;
    }
    return lo;
}

enum dsort_status dsort_lines_range_start(const struct dsort_inputs *in, uint64_t x,
                                          unsigned char eol, uint64_t *out, struct dsort_error *err)
{
    size_t f = dsort_lines_file_at(in, x);
    if (f == in->count || x == in->files[f].first) {
        *out = x;
        return DSORT_OK;
    }
    unsigned char buf[65536];
    uint64_t p = x - 1, fend = in->files[f].first + in->files[f].records;
    while (p < fend) {
        size_t want = fend - p < sizeof buf ? (size_t)(fend - p) : sizeof buf;
        enum dsort_status st = dsort_inputs_read(in, p, want, buf, err);
        if (st)
            return st;
        const unsigned char *e = memchr(buf, eol, want);
        if (e) {
            *out = p + (uint64_t)(e - buf) + 1;
            return DSORT_OK;
        }
        p += want;
    }
    *out = fend;
    return DSORT_OK;
}

/* ---- cursors ---- */

static uint64_t get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

void dsort_line_cursor_memory(struct dsort_line_cursor *c, const struct dsort_lines_order *o,
                              const unsigned char *p, size_t size, int with_pos)
{
    memset(c, 0, sizeof *c);
    c->p = p;
    c->end = p + size;
    c->with_pos = with_pos;
    c->ord = o;
}

void dsort_line_cursor_run(struct dsort_line_cursor *c, const struct dsort_lines_order *o,
                           struct dsort_runreader *r, int with_pos, uint64_t expect_bytes)
{
    memset(c, 0, sizeof *c);
    c->run = r;
    c->p = r->cur.cur; /* the reader has loaded the first block */
    c->end = r->cur.end;
    c->with_pos = with_pos;
    c->ord = o;
    c->expect_bytes = expect_bytes;
}

static enum dsort_status corrupt(const struct dsort_line_cursor *c, const char *why,
                                 struct dsort_error *err)
{
    return DSORT_ERR(err, DSORT_EFORMAT, 0,
                     "run file '%s': the block at offset %" PRIu64 " is corrupt (%s)", c->run->path,
                     c->run->blk_off, why);
}

/* Run file, when the current block is used up: check it held the lines its header says, then
 * on to the next block (the reader checks its header and CRC32C). At the end of the run (the
 * reader checked the line count), check the bytes. */
static enum dsort_status next_block(struct dsort_line_cursor *c, struct dsort_error *err)
{
    struct dsort_runreader *r = c->run;
    if (c->blk_seen != r->blk_records)
        return corrupt(c, "the line count of its block differs from its header", err);
    r->cur.cur = r->cur.end;
    enum dsort_status st = r->cur.refill(&r->cur, err);
    if (st)
        return st;
    c->blk_seen = 0;
    c->p = r->cur.cur;
    c->end = r->cur.end;
    if (c->p != c->end)
        return DSORT_OK;
    c->done = 1;
    if (c->expect_bytes != UINT64_MAX && c->bytes != c->expect_bytes)
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "run file '%s' ends after %" PRIu64 " of its %" PRIu64
                         " bytes of lines (truncated on the temp disk?)",
                         r->path, c->bytes, c->expect_bytes);
    return DSORT_OK;
}

enum dsort_status dsort_line_cursor_next(struct dsort_line_cursor *c, struct dsort_error *err)
{
    const size_t hdr = c->with_pos ? 8 : 0;
    for (;;) {
        size_t avail = (size_t)(c->end - c->p);
        if (avail) {
            const unsigned char *e =
                avail > hdr ? memchr(c->p + hdr, c->ord->eol, avail - hdr) : NULL;
            if (!e && !c->run)
                return DSORT_ERR(err, DSORT_EFORMAT, 0,
                                 "a piece received in the exchange ends inside a line (changed on "
                                 "the way?); nothing committed");
            if (!e)
                return corrupt(c, "a line runs past the end of its block", err);
            c->pos = hdr ? get_be64(c->p) : 0;
            c->line = c->p + hdr;
            c->len = (size_t)(e - c->line);
            c->prefix = dsort_lines_prefix(c->ord, c->line, c->len);
            c->p = e + 1;
            if (c->run) {
                c->blk_seen++;
                c->lines++;
                c->bytes += c->len + 1;
            }
            return DSORT_OK;
        }
        enum dsort_status st = c->run && !c->done ? next_block(c, err) : DSORT_OK;
        if (st)
            return st;
        if (!c->run || c->done) {
            c->done = 1;
            c->line = NULL;
            c->len = 0;
            return DSORT_OK;
        }
    }
}

void dsort_line_cursor_close(struct dsort_line_cursor *c)
{
    if (c->run)
        dsort_runreader_close(c->run);
    c->run = NULL;
}

/* ---- merge ---- */

struct lmerge {
    const struct dsort_lines_order *o;
    const struct dsort_line_cursor *cur;
};

/* Is cursor a's line before cursor b's? A finished cursor is after everything; ties go by
 * position (when o->tie_pos), then by cursor. */
static inline int line_before(const void *ctx, size_t a, size_t b)
{
    const struct lmerge *m = ctx;
    const struct dsort_line_cursor *x = &m->cur[a], *y = &m->cur[b];
    if (x->done)
        return 0;
    if (y->done)
        return 1;
    if (x->prefix != y->prefix)
        return x->prefix < y->prefix;
    int r = dsort_lines_cmp_same_prefix(m->o, x->prefix, x->line, x->len, y->line, y->len);
    if (r)
        return r < 0;
    if (m->o->tie_pos && x->pos != y->pos)
        return x->pos < y->pos;
    return a < b;
}

enum dsort_status dsort_lines_merge(const struct dsort_lines_order *o,
                                    struct dsort_line_cursor *cur, size_t n, int unique,
                                    struct dsort_line_sink *sink, struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    unsigned char *last = NULL;
    size_t last_len = 0, last_cap = 0;
    int have_last = 0;
    for (size_t i = 0; i < n && !st; i++)
        if (!cur[i].line && !cur[i].done)
            st = dsort_line_cursor_next(&cur[i], err);
    const struct lmerge m = {o, cur};
    struct dsort_losertree lt;
    if (st || (st = dsort_losertree_init(&lt, n, line_before, &m, err)))
        return st;
    while (n > 0) {
        struct dsort_line_cursor *c = &cur[lt.w];
        if (c->done)
            break; /* the winner is finished, so all are */
        int skip = unique && have_last && dsort_lines_cmp(o, last, last_len, c->line, c->len) == 0;
        if (!skip) {
            st = sink->emit(sink->ctx, c->line, c->len, c->pos, err);
            sink->lines++;
            sink->bytes += c->len + 1;
            if (unique && !st) {
                if (c->len > last_cap) {
                    size_t ncap = c->len * 2 + 64;
                    unsigned char *nl = realloc(last, ncap);
                    if (!nl) {
                        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
                        break;
                    }
                    last = nl;
                    last_cap = ncap;
                }
                if (c->len)
                    memcpy(last, c->line, c->len);
                last_len = c->len;
                have_last = 1;
            }
        }
        if (st || (st = dsort_line_cursor_next(c, err)))
            break;
        dsort_losertree_replay(&lt, line_before, &m);
    }
    dsort_losertree_free(&lt);
    free(last);
    return st;
}

/* ---- writer ---- */

static void put_be64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (56 - 8 * i));
}

/* Run file: one framed line, one record of the run writer. */
static enum dsort_status run_emit(struct dsort_line_writer *w, const unsigned char *line,
                                  size_t len, uint64_t pos, struct dsort_error *err)
{
    const size_t h = w->frame_pos ? 8 : 0;
    unsigned char *q = dsort_runwriter_reserve(w->run, h + len + 1, err);
    if (!q)
        return err ? err->status : DSORT_EIO;
    if (h)
        put_be64(q, pos);
    if (len)
        memcpy(q + h, line, len);
    q[h + len] = w->eol;
    return dsort_runwriter_commit(w->run, err);
}

/* Sink: bytes into the sink's buffer, flushing it when full. */
static enum dsort_status sink_put(struct dsort_sink *s, const unsigned char *p, size_t n,
                                  struct dsort_error *err)
{
    while (n) {
        if (s->len == s->cap) {
            if (!s->flush)
                return DSORT_ERR(err, DSORT_ENOMEM, 0, "a line sink of %zu bytes is full", s->cap);
            enum dsort_status st = s->flush(s, err);
            if (st)
                return st;
            if (s->len == s->cap)
                return DSORT_ERR(err, DSORT_EINTERNAL, 0, "a sink has no room after a flush");
        }
        size_t k = s->cap - s->len < n ? s->cap - s->len : n;
        memcpy(s->buf + s->len, p, k);
        s->len += k;
        p += k;
        n -= k;
    }
    return DSORT_OK;
}

struct emerge {
    const struct dsort_lines_order *o;
    const unsigned char *buf;
    const struct dsort_line_ent **cur, **end;
    const unsigned char **line; /* the current line of each run */
    size_t *len;
};

/* Is run a's current line before run b's? As line_before, over entries. */
static inline int ent_before(const void *ctx, size_t a, size_t b)
{
    const struct emerge *m = ctx;
    if (m->cur[a] == m->end[a])
        return 0;
    if (m->cur[b] == m->end[b])
        return 1;
    const struct dsort_line_ent *x = m->cur[a], *y = m->cur[b];
    if (x->prefix != y->prefix)
        return x->prefix < y->prefix;
    int r =
        dsort_lines_cmp_same_prefix(m->o, x->prefix, m->line[a], m->len[a], m->line[b], m->len[b]);
    if (r)
        return r < 0;
    if (m->o->tie_pos && dsort_line_off(x) != dsort_line_off(y))
        return dsort_line_off(x) < dsort_line_off(y);
    return a < b;
}

/* Position run i on its current entry: its line, checked against the run's range. */
static enum dsort_status ent_load(struct emerge *m, size_t i, uint64_t lo, uint64_t hi,
                                  struct dsort_error *err)
{
    if (m->cur[i] == m->end[i])
        return DSORT_OK;
    const struct dsort_line_ent *e = m->cur[i];
    uint64_t off = dsort_line_off(e);
    size_t len = 0;
    int ok = dsort_line_len_in(e, m->buf, m->o->eol, lo, hi, &len);
    if (ok)
        ok = dsort_lines_prefix(m->o, m->buf + off, len) == e->prefix;
    if (!ok)
        return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                         "an entry from rank %zu does not match a line at offset %" PRIu64
                         " (the input changed while it was being sorted, or the entry was "
                         "corrupted in the exchange); nothing written",
                         i, off);
    m->line[i] = m->buf + off;
    m->len[i] = len;
    return DSORT_OK;
}

enum dsort_status dsort_lines_merge_ents(const struct dsort_lines_order *o,
                                         const unsigned char *buf,
                                         const struct dsort_line_ent *const *runs,
                                         const size_t *lens, const uint64_t *lo, const uint64_t *hi,
                                         size_t k, struct dsort_line_sink *sink,
                                         struct dsort_error *err)
{
    struct emerge m = {o, buf, NULL, NULL, NULL, NULL};
    const size_t kk = k ? k : 1;
    m.cur = malloc(kk * sizeof *m.cur);
    m.end = malloc(kk * sizeof *m.end);
    m.line = malloc(kk * sizeof *m.line);
    m.len = malloc(kk * sizeof *m.len);
    enum dsort_status st = DSORT_OK;
    struct dsort_losertree lt = {0};
    if (!m.cur || !m.end || !m.line || !m.len)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate the merge state");
    for (size_t i = 0; !st && i < k; i++) {
        m.cur[i] = runs[i];
        m.end[i] = runs[i] + lens[i];
        st = ent_load(&m, i, lo[i], hi[i], err);
    }
    if (!st && k)
        st = dsort_losertree_init(&lt, k, ent_before, &m, err);
    while (!st && k) {
        size_t w = lt.w;
        if (m.cur[w] == m.end[w])
            break; /* the winner is exhausted, so all are */
        st = sink->emit(sink->ctx, m.line[w], m.len[w], dsort_line_off(m.cur[w]), err);
        sink->lines++;
        sink->bytes += m.len[w] + 1;
        m.cur[w]++;
        if (!st && m.cur[w] + 8 < m.end[w])
            __builtin_prefetch(buf + dsort_line_off(m.cur[w] + 8));
        if (!st)
            st = ent_load(&m, w, lo[w], hi[w], err);
        if (!st)
            dsort_losertree_replay(&lt, ent_before, &m);
    }
    dsort_losertree_free(&lt);
    free(m.cur);
    free(m.end);
    free(m.line);
    free(m.len);
    return st;
}

enum dsort_status dsort_line_writer_emit(void *ctx, const unsigned char *line, size_t len,
                                         uint64_t pos, struct dsort_error *err)
{
    struct dsort_line_writer *w = ctx;
    enum dsort_status st = DSORT_OK;
    if (w->run) {
        st = run_emit(w, line, len, pos, err);
    } else { /* a sink: plain lines */
        struct dsort_sink *k = w->sink;
        if (k->len + len + 1 <= k->cap) { /* the common case: one copy */
            memcpy(k->buf + k->len, line, len);
            k->buf[k->len + len] = w->eol;
            k->len += len + 1;
        } else {
            st = sink_put(k, line, len, err);
            if (!st)
                st = sink_put(k, &w->eol, 1, err);
        }
    }
    if (w->sum)
        dsort_sum128_add(w->sum, dsort_crc32(dsort_crc32(0, line, len), &w->eol, 1));
    if (w->sum_c)
        dsort_sum128_add(w->sum_c, dsort_crc32c(dsort_crc32c(0, line, len), &w->eol, 1));
    w->lines++;
    return st;
}
