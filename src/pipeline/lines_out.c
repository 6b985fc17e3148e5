/* lines_out.c - the text lines' output (lines_job.h): a merge's lines streamed into this rank's
 * share of the output, for the out-of-core merge (ooc_lines.c) and the mapped path
 * (lines_map.c), and --progress's view of the bytes written.
 */
#include <inttypes.h>
#include <stddef.h>

#include "lines_job.h"
#include "ooc.h"
#include "outsink.h"
#include "progress.h"
#include "runfile.h"
#include "phase.h"

/* The output sink's view of the bytes passed on: --progress's local figure (rank 0). */
void dsort_lines_job_out_seen(void *ctx, const unsigned char *p, size_t len)
{
    struct lx *x = ctx;
    (void)p;
    x->j.out_done += len;
    dsort_progress_local("write", x->sh.n + x->j.out_done);
}

/* The output's writer: a merge's lines through a line writer into the output's sink
 * (O_DIRECT, page-carry: outsink.h). */
struct lines_write {
    struct lx *x;
    enum dsort_status (*merge)(struct lx *, void *, struct dsort_line_sink *);
    void *ctx;
    struct dsort_line_writer w;
    struct dsort_line_sink sink;
};

/* ooc.h's write: the merge's lines through a line writer into the output's sink. */
static enum dsort_status write_lines(void *ctx, struct dsort_output_sink *os)
{
    struct lines_write *lw = ctx;
    lw->w.sink = &os->sink;
    return lw->merge(lw->x, lw->ctx, &lw->sink);
}

enum dsort_status
dsort_lines_job_to_output(struct lx *x, struct dsort_output *out, uint64_t bytes, int exact,
                          enum dsort_status (*merge)(struct lx *, void *, struct dsort_line_sink *),
                          void *ctx)
{
    const struct dsort_job_options *o = x->j.o;
    struct lines_write lw = {.x = x, .merge = merge, .ctx = ctx};
    lw.w = (struct dsort_line_writer){.eol = x->ord.eol,
                                      .sum = o->verify || o->output_dir ? &x->j.sum_out : NULL,
                                      .sum_c = &x->j.con_out};
    lw.sink = (struct dsort_line_sink){dsort_line_writer_emit, &lw.w, 0, 0};
    /* A page more than a block: room for a block after a carried partial page. */
    enum dsort_status st =
        dsort_ooc_to_output(&x->j, out, bytes, x->mp.out_block + DSORT_RUN_ALIGN,
                            dsort_lines_job_out_seen, write_lines, &lw, PH_WRITE, PH_WRITE);
    if (st == DSORT_OK && exact && lw.sink.bytes != bytes)
        st =
            DSORT_ERR(&x->j.err, DSORT_EINTERNAL, 0,
                      "wrote %" PRIu64 " bytes of output, expected %" PRIu64, lw.sink.bytes, bytes);
    x->j.stats->records_out = lw.sink.lines;
    x->j.stats->bytes_written = lw.sink.bytes;
    return st;
}
