/* lines.c - the line index, its sort, line streams and their merge (see lines.h). */
#include "lines.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"

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

/* Stable bottom-up merge sort of a[0, n) with scratch t (n entries). */
static void merge_sort(const struct dsort_lines_order *o, const unsigned char *buf,
                       struct dsort_line_ent *a, size_t n, struct dsort_line_ent *t)
{
    const size_t run = 16;
    for (size_t i = 0; i < n; i += run)
        insertion_sort(o, buf, a + i, n - i < run ? n - i : run);
    struct dsort_line_ent *src = a, *dst = t;
    for (size_t w = run; w < n; w *= 2) {
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
        merge_sort(o, buf, ents, n, tmp);
        return;
    }
    radix_prefix(ents, n, tmp);
    /* Groups of equal prefixes: order them by the full comparison. (If the radix sort could
     * not run, the merge sort over everything does the whole job.) */
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && ents[j].prefix == ents[i].prefix)
            j++;
        if (j - i > 1)
            merge_sort(o, buf, ents + i, j - i, tmp);
        i = j;
    }
    for (size_t k = 1; k < n; k++)
        if (ents[k - 1].prefix > ents[k].prefix) { /* the radix sort did not run */
            merge_sort(o, buf, ents, n, tmp);
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
    c->fd = -1;
    c->p = p;
    c->end = p + size;
    c->with_pos = with_pos;
    c->ord = o;
}

enum dsort_status dsort_line_cursor_file(struct dsort_line_cursor *c,
                                         const struct dsort_lines_order *o, int fd,
                                         const char *path, size_t cap, size_t max_cap, int with_pos,
                                         uint64_t expect_lines, uint64_t expect_bytes,
                                         struct dsort_error *err)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->path = path;
    c->ord = o;
    c->with_pos = with_pos;
    c->expect_lines = expect_lines;
    c->expect_bytes = expect_bytes;
    c->cap = cap < 4096 ? 4096 : cap;
    c->max_cap = max_cap < 64 ? 64 : max_cap;
    c->buf = malloc(c->cap);
    off_t size = lseek(fd, 0, SEEK_END);
    if (!c->buf || size < 0) {
        int e = errno;
        close(fd);
        c->fd = -1;
        return DSORT_ERR(err, c->buf ? DSORT_EIO : DSORT_ENOMEM, e, "cannot read run '%s'", path);
    }
    c->file_size = (uint64_t)size;
    c->p = c->end = c->raw = c->raw_end = c->buf;
    return DSORT_OK;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

#define RUN_HDR DSORT_LINES_RUN_HEADER
#define RUN_MAGIC UINT32_C(0x424C5344) /* "DSLB" little-endian */

static enum dsort_status corrupt(const struct dsort_line_cursor *c, uint64_t off, const char *why,
                                 struct dsort_error *err)
{
    return DSORT_ERR(err, DSORT_EFORMAT, 0, "run '%s' is corrupt at offset %" PRIu64 " (%s)",
                     c->path, off, why);
}

/* File cursor, when the current block is used up: check it was whole, then check the next
 * block and make its payload [p, end). Reads behind the bytes already read (raw), growing the
 * buffer for a block larger than it. Sets done at the end of the file. */
static enum dsort_status next_block(struct dsort_line_cursor *c, struct dsort_error *err)
{
    if (c->blk_seen != c->blk_lines)
        return corrupt(c, c->blk_off, "the line count of its block differs from its header", err);
    for (;;) {
        size_t have = (size_t)(c->raw_end - c->raw), need = RUN_HDR;
        uint64_t at = c->file_off - have; /* file offset of raw */
        if (have >= RUN_HDR) {
            const unsigned char *h = c->raw;
            uint64_t payload = get_le64(h + 8), lines = get_le64(h + 16);
            if (get_le32(h) != RUN_MAGIC || payload > c->max_cap || lines > payload)
                return corrupt(c, at, "not a block header", err);
            need = RUN_HDR + (size_t)payload;
            if (have >= need) {
                if (dsort_crc32c(0, h + RUN_HDR, (size_t)payload) != get_le32(h + 4))
                    return corrupt(c, at, "CRC32C mismatch in the block there", err);
                c->p = h + RUN_HDR;
                c->end = c->p + payload;
                c->raw = c->end;
                c->blk_off = at;
                c->blk_lines = lines;
                c->blk_seen = 0;
                return DSORT_OK;
            }
        }
        if (c->file_off == c->file_size) {
            if (have == 0) {
                c->done = 1;
                return DSORT_OK;
            }
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "run '%s' is truncated at offset %" PRIu64
                             " (the block there ends past the end of the file)",
                             c->path, at);
        }
        if (have && c->raw != c->buf) /* the current block is used up: keep only the rest */
            memmove(c->buf, c->raw, have);
        if (need > c->cap) {
            size_t ncap = c->cap * 2 < c->max_cap + RUN_HDR ? c->cap * 2 : c->max_cap + RUN_HDR;
            if (ncap < need)
                ncap = need;
            unsigned char *nb = realloc(c->buf, ncap);
            if (!nb)
                return DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot grow the buffer of run '%s'",
                                 c->path);
            c->buf = nb;
            c->cap = ncap;
        }
        c->p = c->end = c->raw = c->buf;
        c->raw_end = c->buf + have;
        uint64_t left = c->file_size - c->file_off;
        size_t want = c->cap - have < left ? c->cap - have : (size_t)left;
        enum dsort_status st =
            dsort_io_pread_full(c->fd, c->buf + have, want, c->file_off, c->path, err);
        if (st)
            return st;
        c->file_off += want;
        c->raw_end += want;
    }
}

/* File cursor at the end of the file: did it hold what the writer wrote? */
static enum dsort_status check_end(const struct dsort_line_cursor *c, struct dsort_error *err)
{
    if ((c->expect_lines != UINT64_MAX && c->lines != c->expect_lines) ||
        (c->expect_bytes != UINT64_MAX && c->bytes != c->expect_bytes))
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "run '%s' ends after %" PRIu64 " of its %" PRIu64 " lines (%" PRIu64
                         " of %" PRIu64 " bytes; truncated on the temp disk?)",
                         c->path, c->lines, c->expect_lines, c->bytes, c->expect_bytes);
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
            if (!e && c->fd < 0)
                return DSORT_ERR(err, DSORT_EFORMAT, 0,
                                 "a piece received in the exchange ends inside a line (changed on "
                                 "the way?); nothing committed");
            if (!e)
                return corrupt(c, c->blk_off, "a line runs past the end of its block", err);
            c->pos = hdr ? get_be64(c->p) : 0;
            c->line = c->p + hdr;
            c->len = (size_t)(e - c->line);
            c->prefix = dsort_lines_prefix(c->ord, c->line, c->len);
            c->p = e + 1;
            if (c->fd >= 0) {
                c->blk_seen++;
                c->lines++;
                c->bytes += c->len + 1;
            }
            return DSORT_OK;
        }
        enum dsort_status st = c->fd < 0 ? DSORT_OK : next_block(c, err);
        if (st)
            return st;
        if (c->fd < 0 || c->done) {
            c->done = 1;
            c->line = NULL;
            c->len = 0;
            return c->fd < 0 ? DSORT_OK : check_end(c, err);
        }
    }
}

void dsort_line_cursor_close(struct dsort_line_cursor *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
}

/* ---- merge ---- */

static inline int cur_less(const struct dsort_lines_order *o, const struct dsort_line_cursor *cur,
                           size_t a, size_t b)
{
    const struct dsort_line_cursor *x = &cur[a], *y = &cur[b];
    if (x->prefix != y->prefix)
        return x->prefix < y->prefix;
    int r = dsort_lines_cmp_same_prefix(o, x->prefix, x->line, x->len, y->line, y->len);
    if (r)
        return r < 0;
    if (o->tie_pos && x->pos != y->pos)
        return x->pos < y->pos;
    return a < b;
}

static void sift_down(const struct dsort_lines_order *o, const struct dsort_line_cursor *cur,
                      size_t *heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && cur_less(o, cur, heap[l], heap[m]))
            m = l;
        if (l + 1 < n && cur_less(o, cur, heap[l + 1], heap[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t x = heap[i];
        heap[i] = heap[m];
        heap[m] = x;
        i = m;
    }
}

enum dsort_status dsort_lines_merge(const struct dsort_lines_order *o,
                                    struct dsort_line_cursor *cur, size_t n, int unique,
                                    struct dsort_line_sink *sink, struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    size_t *heap = malloc((n ? n : 1) * sizeof *heap), h = 0;
    unsigned char *last = NULL;
    size_t last_len = 0, last_cap = 0;
    int have_last = 0;
    if (!heap)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        if (!cur[i].line && !cur[i].done)
            st = dsort_line_cursor_next(&cur[i], err);
        if (!st && !cur[i].done)
            heap[h++] = i;
    }
    for (size_t i = h / 2; i-- > 0;)
        sift_down(o, cur, heap, h, i);
    while (!st && h) {
        struct dsort_line_cursor *c = &cur[heap[0]];
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
        if (!st)
            st = dsort_line_cursor_next(c, err);
        if (st)
            break;
        if (c->done)
            heap[0] = heap[--h];
        sift_down(o, cur, heap, h, 0);
    }
    free(heap);
    free(last);
    return st;
}

/* ---- writer ---- */

/* Bytes out: through the callback or to the file, at w->off. */
static enum dsort_status out(struct dsort_line_writer *w, const void *p, size_t len,
                             struct dsort_error *err)
{
    enum dsort_status st = w->flush ? w->flush(w->ctx, p, len, w->off, err)
                                    : dsort_io_pwrite_full(w->fd, p, len, w->off, w->path, err);
    w->off += len;
    return st;
}

static enum dsort_status put(struct dsort_line_writer *w, const void *p, size_t len,
                             struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    if (w->used + len > w->cap && (st = dsort_line_writer_flush(w, err)))
        return st;
    if (len > w->cap) /* longer than the buffer: straight through */
        return out(w, p, len, err);
    memcpy(w->buf + w->used, p, len);
    w->used += len;
    return DSORT_OK;
}

static void put_be64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (56 - 8 * i));
}

static void block_header(unsigned char *h, uint32_t crc, uint64_t payload, uint64_t lines)
{
    put_le32(h, RUN_MAGIC);
    put_le32(h + 4, crc);
    put_le64(h + 8, payload);
    put_le64(h + 16, lines);
}

/* Run file: close the open block (fill in its header). */
static void seal(struct dsort_line_writer *w)
{
    if (!w->blk_open)
        return;
    unsigned char *h = w->buf + w->blk;
    size_t payload = w->used - w->blk - RUN_HDR;
    block_header(h, dsort_crc32c(0, h + RUN_HDR, payload), payload, w->blk_lines);
    w->blk_open = 0;
    w->blk_lines = 0;
}

/* Run file: one framed line of f bytes into the open block, or a new one. A line too long
 * for a block of w->block bytes (or for the buffer) is written straight through as a block
 * of its own. */
static enum dsort_status block_emit(struct dsort_line_writer *w, const unsigned char *line,
                                    size_t len, uint64_t pos, struct dsort_error *err)
{
    const size_t f = (w->frame_pos ? 8 : 0) + len + 1;
    const size_t lim = w->block < w->cap ? w->block : w->cap;
    enum dsort_status st;
    if (w->blk_open && (w->used - w->blk + f > lim || w->used + f > w->cap))
        seal(w);
    if (!w->blk_open && RUN_HDR + f > lim) {
        unsigned char h[RUN_HDR + 8];
        size_t hl = RUN_HDR;
        if (w->frame_pos)
            put_be64(h + RUN_HDR, pos);
        hl += w->frame_pos ? 8 : 0;
        uint32_t crc = dsort_crc32c(0, h + RUN_HDR, hl - RUN_HDR);
        crc = dsort_crc32c(dsort_crc32c(crc, line, len), &w->eol, 1);
        block_header(h, crc, f, 1);
        if ((st = dsort_line_writer_flush(w, err)) || (st = out(w, h, hl, err)) ||
            (st = out(w, line, len, err)))
            return st;
        return out(w, &w->eol, 1, err);
    }
    if (!w->blk_open) {
        if (w->used + RUN_HDR + f > w->cap && (st = dsort_line_writer_flush(w, err)))
            return st;
        w->blk = w->used;
        w->used += RUN_HDR;
        w->blk_open = 1;
    }
    unsigned char *q = w->buf + w->used;
    if (w->frame_pos) {
        put_be64(q, pos);
        q += 8;
    }
    if (len)
        memcpy(q, line, len);
    q[len] = w->eol;
    w->used += f;
    w->blk_lines++;
    return DSORT_OK;
}

enum dsort_status dsort_line_writer_emit(void *ctx, const unsigned char *line, size_t len,
                                         uint64_t pos, struct dsort_error *err)
{
    struct dsort_line_writer *w = ctx;
    enum dsort_status st = DSORT_OK;
    if (w->block) {
        st = block_emit(w, line, len, pos, err);
    } else {
        if (w->frame_pos) {
            unsigned char h[8];
            put_be64(h, pos);
            st = put(w, h, 8, err);
        }
        if (!st && w->used + len + 1 <= w->cap) { /* the common case: one copy */
            memcpy(w->buf + w->used, line, len);
            w->buf[w->used + len] = w->eol;
            w->used += len + 1;
        } else if (!st) {
            st = put(w, line, len, err);
            if (!st)
                st = put(w, &w->eol, 1, err);
        }
    }
    if (w->sum)
        dsort_sum128_add(w->sum, dsort_crc32(dsort_crc32(0, line, len), &w->eol, 1));
    if (w->sum_c)
        dsort_sum128_add(w->sum_c, dsort_crc32c(dsort_crc32c(0, line, len), &w->eol, 1));
    w->lines++;
    return st;
}

enum dsort_status dsort_line_writer_flush(struct dsort_line_writer *w, struct dsort_error *err)
{
    seal(w);
    if (!w->used)
        return DSORT_OK;
    size_t n = w->used;
    w->used = 0;
    return out(w, w->buf, n, err);
}
