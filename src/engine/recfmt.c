/* The engine's two record formats (recfmt.h): fixed-size records and text lines. */
#include "recfmt.h"

#include "merge.h"

/* ---- fixed-size records ---- */

static size_t fixed_run_rec(const struct dsort_recfmt_ctx *x)
{
    return x->rec;
}

static void fixed_cursor_memory(const struct dsort_recfmt_ctx *x, void *cur, const unsigned char *p,
                                size_t bytes)
{
    dsort_cursor_memory(cur, p, bytes / x->rec, x->rec);
}

static enum dsort_status fixed_cursor_run(const struct dsort_recfmt_ctx *x, void *cur,
                                          struct dsort_runreader *rd, const struct dsort_run *run,
                                          size_t block, unsigned char *buf,
                                          struct dsort_prefetch *const *pf, struct dsort_error *err)
{
    const char *paths[DSORT_RUN_MAX_STRIPES];
    size_t k = dsort_run_files(run, paths);
    enum dsort_status st =
        dsort_runreader_open_striped(rd, paths, k, x->rec, block, 0, buf, pf, run->records, err);
    if (st)
        return st;
    /* A copy of the reader's cursor; its refill finds the reader through ctx. */
    struct dsort_cursor *c = cur;
    *c = rd->cur;
    c->ctx = rd;
    return DSORT_OK;
}

static void fixed_cursor_close(const struct dsort_recfmt_ctx *x, void *cur)
{
    (void)x;
    struct dsort_cursor *c = cur;
    if (c->refill && c->ctx)
        dsort_runreader_close(c->ctx);
    c->refill = NULL;
    c->ctx = NULL;
}

static enum dsort_status fixed_merge_to_run(const struct dsort_recfmt_ctx *x, void *cur, size_t k,
                                            struct dsort_runwriter *w, uint64_t *bytes,
                                            struct dsort_error *err)
{
    *bytes = 0; /* the writer's records * rec */
    return dsort_merge_cmp(x->cmp, x->rec, x->rec, x->unique, cur, k, &w->sink, err);
}

const struct dsort_recfmt dsort_recfmt_fixed = {
    "fixed",          sizeof(struct dsort_cursor), fixed_run_rec,     fixed_cursor_memory,
    fixed_cursor_run, fixed_cursor_close,          fixed_merge_to_run};

/* ---- text lines ---- */

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

const struct dsort_recfmt dsort_recfmt_lines = {"lines",           sizeof(struct dsort_line_cursor),
                                                lines_run_rec,     lines_cursor_memory,
                                                lines_cursor_run,  lines_cursor_close,
                                                lines_merge_to_run};
