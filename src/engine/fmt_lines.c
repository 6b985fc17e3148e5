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
static void put_be64(unsigned char *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (unsigned char)(v >> (56 - 8 * b));
}

static uint64_t get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 0; b < 8; b++)
        v = v << 8 | p[b];
    return v;
}

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
    put_be64(blob, avg);
    size_t at = 8;
    for (size_t d = 0; d < s->n; d++) {
        const size_t len = s->line[d] ? s->len[d] : 0;
        blob[at] = (unsigned char)(s->line[d] ? 1 + (s->by_pos != 0) : 0);
        put_be64(blob + at + 1, len);
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
        uint64_t len = ok ? get_be64(b + at + 1) : 0;
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
    uint64_t avg = get_be64(b);
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

                                                .unique_run = 0,
                                                .merge_to_out = lines_merge_to_out,
                                                .blob_len = lines_blob_len,
                                                .blob_put = lines_blob_put,
                                                .blob_get = lines_blob_get};
