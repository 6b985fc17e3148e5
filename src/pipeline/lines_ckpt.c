/* Stop and resume for the text-line pipeline (lines_job.h; the scaffold is job_ckpt.c): what a
 * stopped job of lines keeps beyond its runs. Its splitters are encoded as the samples' mean
 * line length (8 bytes), then per splitter a flag byte (0: none, everything goes below; 1: a
 * line; 2: a line and its position, lines_job.h by_pos), the length (8 bytes, big-endian) and
 * the bytes (a line, or a line and its 8-byte position). Checkpoints of builds before 2 existed
 * hold 1s and resume as they were cut: by line alone. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "lines_job.h"

/* Fill k with the job's state after `rounds` rounds (the splitters are copied into k). */
enum dsort_status dsort_lines_job_fill_ckpt(void *ctx, uint64_t rounds, struct dsort_ckpt *k,
                                            struct dsort_error *err)
{
    const struct lx *x = ctx;
    const int p = x->j.c->size;
    size_t len = 8;
    for (int d = 0; d + 1 < p; d++)
        len += 9 + (x->split[d] ? x->split_len[d] : 0);
    memset(k, 0, sizeof *k);
    if (!(k->blob = malloc(len)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    uint64_t avg;
    memcpy(&avg, &x->avg_line, 8);
    dsort_job_put_be64(k->blob, avg);
    size_t at = 8;
    for (int d = 0; d + 1 < p; d++) {
        k->blob[at] = (unsigned char)(x->split[d] ? 1 + (x->by_pos != 0) : 0);
        dsort_job_put_be64(k->blob + at + 1, x->split[d] ? x->split_len[d] : 0);
        at += 9;
        if (x->split[d])
            memcpy(k->blob + at, x->split[d], x->split_len[d]);
        at += x->split[d] ? x->split_len[d] : 0;
    }
    k->blob_len = len;
    k->rounds = rounds;
    k->consumed = x->pos;
    k->block = x->run_block;
    k->bytes_read = x->j.stats->bytes_read;
    k->lines_in = x->j.stats->records_in;
    k->longest = x->longest;
    k->sum_in = x->j.sum_in;
    k->con_in = x->j.con_in;
    k->sample_from = x->sh.first; /* the share's bytes read so far */
    k->sample_to = x->pos;
    return DSORT_OK;
}

enum dsort_status dsort_lines_job_resume_state(void *ctx, struct dsort_ckpt *k)
{
    struct lx *x = ctx;
    const int p = x->j.c->size;
    const unsigned char *b = k->blob;
    /* A share's first line may start past its end (a long line of the rank before covers the
     * whole range): then nothing is read and the position stays at that start. */
    const uint64_t last = x->pos > x->end ? x->pos : x->end;
    int ok = k->blob_len >= 8 && k->consumed >= x->pos && k->consumed <= last + k->longest &&
             k->block >= 4096;
    if (ok && !(x->spl = malloc(k->blob_len + 1)))
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    if (ok)
        memcpy(x->spl, b, k->blob_len);
    x->split = calloc((size_t)p, sizeof *x->split);
    x->split_len = calloc((size_t)p, sizeof *x->split_len);
    if (!x->split || !x->split_len)
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    size_t at = 8;
    int flag = 0; /* 1 or 2, the same for every splitter */
    x->by_pos = 0;
    for (int d = 0; ok && d + 1 < p; d++) {
        ok = at + 9 <= k->blob_len && b[at] <= 2;
        uint64_t len = ok ? dsort_job_get_be64(b + at + 1) : 0;
        int has = ok && b[at];
        if (has) {
            ok = (!flag || flag == b[at]) && (b[at] == 1 || len >= 8);
            flag = b[at];
            x->by_pos = flag == 2;
        }
        at += 9;
        ok = ok && len <= k->blob_len - at;
        if (ok && has) {
            x->split[d] = x->spl + at;
            x->split_len[d] = (size_t)len;
        }
        at += (size_t)len;
    }
    if (!ok || at != k->blob_len)
        return DSORT_ERR(&x->j.err, DSORT_EFORMAT, 0,
                         "the checkpoint of rank %d does not fit this job (splitters of %zu "
                         "bytes, position %" PRIu64 ", run block %" PRIu64 "); not resuming "
                         "from it",
                         x->j.c->rank, k->blob_len, k->consumed, k->block);
    uint64_t avg = dsort_job_get_be64(b);
    memcpy(&x->avg_line, &avg, 8);
    x->pos = k->consumed;
    x->run_block = (size_t)k->block;
    x->j.stats->records_in = k->lines_in;
    x->longest = k->longest;
    return dsort_ooc_resume_take(&x->j, k);
}
