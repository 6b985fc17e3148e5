/* The checkpoint's parts that are the same for every record format (ooc.h): the blob is the
 * splitters in the format's encoding (recfmt.h's blob ops); rounds, bytes read and the input's
 * sums are the skeleton's. What a format adds is its position in the share and its run block:
 * fixed records' in ooc_fixed.c, text lines' here. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "lines_job.h"
#include "ooc.h"

enum dsort_status dsort_ooc_ckpt_fill(const struct dsort_ooc *j, const struct dsort_recfmt *fmt,
                                      uint64_t rounds, const struct dsort_recfmt_splits *s,
                                      struct dsort_ckpt *k, struct dsort_error *err)
{
    memset(k, 0, sizeof *k);
    k->blob_len = fmt->blob_len(s);
    if (!(k->blob = malloc(k->blob_len + 1)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    fmt->blob_put(s, k->blob);
    k->rounds = rounds;
    k->bytes_read = j->stats->bytes_read;
    k->sum_in = j->sum_in;
    k->con_in = j->con_in;
    return DSORT_OK;
}

int dsort_ooc_ckpt_splits(const struct dsort_ooc *j, const struct dsort_recfmt *fmt,
                          struct dsort_ckpt *k, struct dsort_recfmt_splits *s)
{
    s->n = (size_t)(j->c->size - 1);
    return fmt->blob_get(s, k->blob, k->blob_len);
}

/* ---- text lines' part (lines_job.h): their position in the share is a byte offset, the run
 * block, the lines read and the longest line; the splitters are lines (fmt_lines.c's blob) ---- */

/* Fill k with the job's state after `rounds` rounds (the splitters are copied into k). */
enum dsort_status dsort_lines_job_fill_ckpt(void *ctx, uint64_t rounds, struct dsort_ckpt *k,
                                            struct dsort_error *err)
{
    const struct lx *x = ctx;
    const struct dsort_recfmt_splits s = {.n = (size_t)(x->j.c->size - 1),
                                          .line = x->split,
                                          .len = x->split_len,
                                          .by_pos = x->by_pos,
                                          .avg_line = x->avg_line};
    enum dsort_status st = dsort_ooc_ckpt_fill(&x->j, &dsort_recfmt_lines, rounds, &s, k, err);
    k->consumed = x->pos;
    k->block = x->run_block;
    k->lines_in = x->j.stats->records_in;
    k->longest = x->longest;
    k->sample_from = x->sh.first; /* the share's bytes read so far */
    k->sample_to = x->pos;
    return st;
}

enum dsort_status dsort_lines_job_resume_state(void *ctx, struct dsort_ckpt *k)
{
    struct lx *x = ctx;
    const int p = x->j.c->size;
    /* A share's first line may start past its end (a long line of the rank before covers the
     * whole range): then nothing is read and the position stays at that start. */
    const uint64_t last = x->pos > x->end ? x->pos : x->end;
    int ok = k->consumed >= x->pos && k->consumed <= last + k->longest && k->block >= 4096;
    x->split = calloc((size_t)p, sizeof *x->split);
    x->split_len = calloc((size_t)p, sizeof *x->split_len);
    if (!x->split || !x->split_len || !(x->spl = malloc(k->blob_len + 1)))
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    memcpy(x->spl, k->blob, k->blob_len);
    struct dsort_recfmt_splits s = {.line = x->split, .len = x->split_len};
    struct dsort_ckpt copy = *k; /* the splitters point into x->spl, which the job keeps */
    copy.blob = x->spl;
    if (!ok || !dsort_ooc_ckpt_splits(&x->j, &dsort_recfmt_lines, &copy, &s))
        return DSORT_ERR(&x->j.err, DSORT_EFORMAT, 0,
                         "the checkpoint of rank %d does not fit this job (splitters of %zu "
                         "bytes, position %" PRIu64 ", run block %" PRIu64 "); not resuming "
                         "from it",
                         x->j.c->rank, k->blob_len, k->consumed, k->block);
    x->by_pos = s.by_pos;
    x->avg_line = s.avg_line;
    x->pos = k->consumed;
    x->run_block = (size_t)k->block;
    x->j.stats->records_in = k->lines_in;
    x->longest = k->longest;
    return dsort_ooc_resume_take(&x->j, k);
}
