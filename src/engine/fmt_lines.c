/* The text lines' format (recfmt.h): lines framed as [position] line eol in run files (lines.h),
 * in GNU sort's order (a dsort_lines_order); their memory plan. */
#include "recfmt.h"

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
                                                .wave_split = 0};
