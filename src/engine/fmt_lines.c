/* The text lines' format (recfmt.h): lines framed as [position] line eol in run files (lines.h),
 * in GNU sort's order (a dsort_lines_order); their memory plan. */
#include "recfmt.h"

#include <string.h>

#include "memplan.h"

static size_t lines_run_rec(const struct dsort_recfmt_ctx *x)
{
    (void)x;
    return 0;
}

static void lines_cursor_memory(const struct dsort_recfmt_ctx *x, void *cur, const unsigned char *p,
                                size_t bytes)
{
    dsort_line_cursor_memory(cur, x->ord, p, bytes, x->with_pos);
}

static enum dsort_status lines_cursor_run(const struct dsort_recfmt_ctx *x, void *cur,
                                          struct dsort_runreader *rd, const struct dsort_run *run,
                                          size_t block, unsigned char *buf,
                                          struct dsort_prefetch *const *pf, struct dsort_error *err)
{
    const char *paths[DSORT_RUN_MAX_STRIPES];
    size_t k = dsort_run_files(run, paths);
    enum dsort_status st = dsort_runreader_open_striped(rd, paths, k, 0, block, x->max_payload, buf,
                                                        pf, run->records, err);
    if (!st)
        dsort_line_cursor_run(cur, x->ord, rd, x->with_pos, run->bytes);
    return st;
}

static void lines_cursor_close(const struct dsort_recfmt_ctx *x, void *cur)
{
    (void)x;
    dsort_line_cursor_close(cur);
}

static enum dsort_status lines_merge_to_run(const struct dsort_recfmt_ctx *x, void *cur, size_t k,
                                            struct dsort_runwriter *w, uint64_t *bytes,
                                            struct dsort_error *err)
{
    struct dsort_line_writer lw = {.run = w, .frame_pos = x->with_pos, .eol = x->ord->eol};
    struct dsort_line_sink sink = {dsort_line_writer_emit, &lw, 0, 0};
    enum dsort_status st = dsort_lines_merge(x->ord, cur, k, x->unique, &sink, err);
    *bytes = sink.bytes;
    return st;
}

/* ---- chunks ---- */

static void lines_sort_chunk(const struct dsort_recfmt_ctx *x, struct dsort_recfmt_chunk *c)
{
    if (c->n > 1)
        dsort_lines_sort(x->ord, c->data, c->ents, c->n, c->scratch);
}

static int pos_cmp(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

/* Number of the sorted entries [lo, n) that belong at or before splitter d. Equal lines sit
 * in input order (the sort is stable), so with by_pos their positions increase. */
static size_t cut_after(const struct dsort_recfmt_ctx *x, const struct dsort_recfmt_chunk *c,
                        const struct dsort_recfmt_splits *s, size_t lo, size_t d)
{
    if (!s->line[d])
        return c->n;
    const struct dsort_line_ent *e = c->ents;
    const size_t kl = s->by_pos ? s->len[d] - 8 : s->len[d];
    const uint64_t at = s->by_pos ? dsort_recfmt_get_be64(s->line[d] + kl) : 0;
    size_t hi = c->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        const uint64_t off = dsort_line_off(&e[m]);
        int r = dsort_lines_cmp(x->ord, c->data + off, dsort_line_len(&e[m], c->data, x->ord->eol),
                                s->line[d], kl);
        if (!r && s->by_pos)
            r = pos_cmp(c->pos(c->pos_ctx, off), at);
        if (r <= 0)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

static enum dsort_status lines_cut(const struct dsort_recfmt_ctx *x,
                                   const struct dsort_recfmt_chunk *c,
                                   const struct dsort_recfmt_splits *s, size_t *end,
                                   struct dsort_error *err)
{
    (void)err;
    size_t lo = 0;
    for (size_t d = 0; d < s->n; d++)
        lo = end[d] = cut_after(x, c, s, lo, d);
    end[s->n] = c->n;
    return DSORT_OK;
}

/* With -u only the first line of each run of equal keys is framed: the sort is stable, so it
 * is the run's first in input order, the one -u keeps, and equal keys all go to one rank
 * (by_pos is off), whose merge keeps the first of what the ranks send. A key that dominates
 * the data then costs each rank one line a chunk, not all of them. */
static uint64_t lines_frame(const struct dsort_recfmt_ctx *x, const struct dsort_recfmt_chunk *c,
                            size_t lo, size_t hi, unsigned char *out)
{
    /* in locals: the stores into out may not alias them */
    const struct dsort_line_ent *e = c->ents;
    const unsigned char *data = c->data;
    const struct dsort_lines_order *ord = x->ord;
    const unsigned char eol = ord->eol;
    const int unique = x->unique, with_pos = x->with_pos;
    const unsigned char *prev = NULL;
    size_t prev_len = 0;
    uint64_t at = 0;
    for (size_t i = lo; i < hi; i++) {
        uint64_t off = dsort_line_off(&e[i]);
        size_t len = dsort_line_len(&e[i], data, eol);
        if (unique) {
            if (prev && dsort_lines_cmp(ord, prev, prev_len, data + off, len) == 0)
                continue; /* a later line of equal keys: -u drops it */
            prev = data + off;
            prev_len = len;
        }
        if (with_pos) {
            dsort_recfmt_put_be64(out + at, c->pos(c->pos_ctx, off));
            at += 8;
        }
        memcpy(out + at, data + off, len + 1); /* the line and its eol */
        at += len + 1;
    }
    return at;
}

static uint64_t lines_frame_bytes(const struct dsort_recfmt_ctx *x,
                                  const struct dsort_recfmt_chunk *c)
{
    return c->bytes + (x->with_pos ? 8 : 0) * (uint64_t)c->n;
}

static size_t lines_sample_key(const struct dsort_recfmt_ctx *x, const unsigned char *rec,
                               size_t len, uint64_t pos, unsigned char *out)
{
    memcpy(out, rec, len);
    if (!x->by_pos)
        return len;
    dsort_recfmt_put_be64(out + len, pos);
    return len + 8;
}

static int lines_key_cmp(const struct dsort_recfmt_ctx *x, const unsigned char *a, size_t alen,
                         const unsigned char *b, size_t blen)
{
    if (!x->by_pos)
        return dsort_lines_cmp(x->ord, a, alen, b, blen);
    int r = dsort_lines_cmp(x->ord, a, alen - 8, b, blen - 8);
    return r ? r
             : pos_cmp(dsort_recfmt_get_be64(a + alen - 8), dsort_recfmt_get_be64(b + blen - 8));
}

/* A line sink that only counts (the size of -u's output). */
static enum dsort_status count_emit(void *ctx, const unsigned char *line, size_t len, uint64_t pos,
                                    struct dsort_error *err)
{
    (void)ctx, (void)line, (void)len, (void)pos, (void)err;
    return DSORT_OK;
}

static enum dsort_status lines_merge_to_out(const struct dsort_recfmt_ctx *x, void *cur, size_t k,
                                            struct dsort_sink *sink, uint64_t *records,
                                            uint64_t *bytes, struct dsort_error *err)
{
    struct dsort_line_writer lw = {
        .sink = sink, .eol = x->ord->eol, .sum = x->sum, .sum_c = x->sum_c};
    struct dsort_line_sink ls = {sink ? dsort_line_writer_emit : count_emit, &lw, 0, 0};
    enum dsort_status st = dsort_lines_merge(x->ord, cur, k, x->unique, &ls, err);
    *records = ls.lines;
    *bytes = ls.bytes;
    return st;
}

/* The blob: the samples' mean line length (8 bytes), then per splitter a flag byte (0: none,
 * everything goes below; 1: a line; 2: a line and its position), the length (8 bytes,
 * big-endian) and the bytes (a line, or a line and its 8-byte position). Checkpoints of builds
 * before 2 existed hold 1s and resume as they were cut: by line alone. */

static size_t lines_blob_len(const struct dsort_recfmt_splits *s)
{
    size_t len = 8;
    for (size_t d = 0; d < s->n; d++)
        len += 9 + (s->line[d] ? s->len[d] : 0);
    return len;
}

static void lines_blob_put(const struct dsort_recfmt_splits *s, unsigned char *blob)
{
    uint64_t avg;
    memcpy(&avg, &s->avg_line, 8);
    dsort_recfmt_put_be64(blob, avg);
    size_t at = 8;
    for (size_t d = 0; d < s->n; d++) {
        const size_t len = s->line[d] ? s->len[d] : 0;
        blob[at] = (unsigned char)(s->line[d] ? 1 + (s->by_pos != 0) : 0);
        dsort_recfmt_put_be64(blob + at + 1, len);
        at += 9;
        if (len)
            memcpy(blob + at, s->line[d], len);
        at += len;
    }
}

static int lines_blob_get(struct dsort_recfmt_splits *s, unsigned char *b, size_t blen)
{
    int ok = blen >= 8;
    size_t at = 8;
    int flag = 0; /* 1 or 2, the same for every splitter */
    s->by_pos = 0;
    for (size_t d = 0; ok && d < s->n; d++) {
        ok = at + 9 <= blen && b[at] <= 2;
        uint64_t len = ok ? dsort_recfmt_get_be64(b + at + 1) : 0;
        int has = ok && b[at];
        if (has) {
            ok = (!flag || flag == b[at]) && (b[at] == 1 || len >= 8);
            flag = b[at];
            s->by_pos = flag == 2;
        }
        at += 9;
        ok = ok && len <= blen - at;
        s->line[d] = ok && has ? b + at : NULL;
        s->len[d] = ok && has ? (size_t)len : 0;
        at += (size_t)len;
    }
    if (!ok || at != blen)
        return 0;
    uint64_t avg = dsort_recfmt_get_be64(b);
    memcpy(&s->avg_line, &avg, 8);
    return 1;
}

/* Text lines: the thirds, the blocks and the share's need. */
static void lines_plan(const struct dsort_memplan_in *in, struct dsort_memplan *p)
{
    const uint64_t budget = in->budget;
    p->fits = 1;
    p->third = budget / 3 < 4096 ? 4096 : budget / 3;
    uint64_t b = budget / 4;
    if (b > in->block)
        b = in->block;
    p->out_block = (size_t)(b < 4096 ? 4096 : b);
    /* Run files are read back with two buffers of a block each (runfile.h): half the budget
     * holds them in the final merge (the output's buffer and the writer's take the rest). */
    p->merge_mem = budget / 2;
    /* The run writer holds two blocks, or k + 1 for runs striped over k temp disks
     * (runfile.h): the block shrinks with k so that the writer takes an eighth of the budget,
     * as two blocks of a 16th did before runs were striped. */
    const uint64_t k = in->temp_disks;
    const uint64_t cap = k > 1 ? budget / (8 * (k + 1)) : budget / 16;
    p->block = (size_t)(in->block < cap ? in->block : cap);
    /* the lines with their entries, estimated from the samples' line length */
    const double avg = in->avg_line > 1 ? in->avg_line : 1;
    const double per = 1.0 + (double)sizeof(struct dsort_line_ent) / avg;
    p->need = (uint64_t)((double)in->share_bytes * per * 1.05) + 4096;
    p->share_fits = p->need <= p->third;
}

static uint64_t lines_rounds(const struct dsort_memplan_in *in, const struct dsort_memplan *p,
                             int in_memory)
{
    (void)in;
    return in_memory ? 0 : (p->need + p->third - 1) / p->third;
}

const struct dsort_recfmt dsort_recfmt_lines = {.name = "lines",
                                                .cur_size = sizeof(struct dsort_line_cursor),
                                                .run_rec = lines_run_rec,
                                                .cursor_memory = lines_cursor_memory,
                                                .cursor_run = lines_cursor_run,
                                                .cursor_close = lines_cursor_close,
                                                .merge_to_run = lines_merge_to_run,
                                                .plan = lines_plan,
                                                .rounds = lines_rounds,
                                                .wave_split = 0,
                                                .sort_chunk = lines_sort_chunk,
                                                .cut = lines_cut,
                                                .frame = lines_frame,
                                                .frame_bytes = lines_frame_bytes,
                                                .sample_key = lines_sample_key,
                                                .key_cmp = lines_key_cmp,

                                                .unique_run = 0,
                                                .merge_to_out = lines_merge_to_out,
                                                .blob_len = lines_blob_len,
                                                .blob_put = lines_blob_put,
                                                .blob_get = lines_blob_get};
