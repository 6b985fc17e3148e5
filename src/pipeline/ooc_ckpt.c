/* The checkpoint's parts that are the same for every record format (ooc.h): the blob is the
 * splitters in the format's encoding (recfmt.h's blob ops); rounds, bytes read and the input's
 * sums are the skeleton's. What a format adds is its position in the share and its run block:
 * fixed records' in ooc_fixed.c, text lines' in ooc_lines.c (the pipeline's fill and resume). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
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
