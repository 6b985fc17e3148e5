/* The out-of-core skeleton's end (ooc.h), once for every record format: the runs are merged
 * with the largest fan-in that the open-file limit and the budget allow (only when there are
 * more runs than that are the smallest merged first: the engine's extra passes, runmerge.h),
 * and the final merge streams into the output sink. -u follows the format's policy
 * (recfmt.h's unique_run): where equal keys may sit on two ranks (fixed records) the
 * deduplicated merge goes through one more temp run, because its size (and so every rank's
 * offset in -o FILE) is known only after it, and the boundary with the rank before is settled
 * on its first record; where equal keys are on one rank (lines) a counting merge sizes the
 * output first and the cursors are read again. The per-record work stays in the format's own
 * merge loop (merge_to_out): one call through the table per merge. */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "job_end.h"
#include "job_typed.h"
#include "ooc.h"
#include "outsink.h"
#include "phase.h"

/* -u into a run (unique_run): the run, its records, and whether the first is dropped. */
struct out_write {
    struct dsort_ooc *j;
    const struct dsort_ooc_src *src;
    const struct dsort_ooc_final *f;
    char upath[4096];
    uint64_t total, drop;
    uint64_t records, bytes; /* written */
};

/* Merge src into sink (NULL: count) in the output's form. */
static enum dsort_status merge_src(struct dsort_ooc *j, const struct dsort_ooc_src *src,
                                   struct dsort_sink *sink, uint64_t *records, uint64_t *bytes)
{
    void *cur;
    *records = *bytes = 0;
    enum dsort_status st = src->open(src->ctx, &cur, &j->err);
    if (st)
        return st;
    st = j->rm.fmt->merge_to_out(&j->fx, cur, src->n, sink, records, bytes, &j->err);
    src->close(src->ctx);
    return st;
}

/* Copy the records of the plain run w->upath (rec bytes each) to the output, skipping the
 * first w->drop. */
static enum dsort_status copy_run(struct out_write *w, size_t rec, struct dsort_output_sink *os)
{
    struct dsort_ooc *j = w->j;
    struct dsort_runreader r;
    uint64_t skip = w->drop;
    enum dsort_status st =
        dsort_runreader_open(&r, w->upath, rec, j->rm.block, w->f->copy,
                             dsort_runmerge_prefetch(&j->rm, w->upath), w->total, &j->err);
    if (st)
        return st;
    while (!st && r.cur.cur != r.cur.end) {
        while (skip && r.cur.cur != r.cur.end) {
            r.cur.cur += rec;
            skip--;
        }
        size_t len = (size_t)(r.cur.end - r.cur.cur);
        while (len) {
            /* Whole records only: the sink counts records per flush. */
            size_t room = (os->sink.cap - os->sink.len) / rec * rec;
            size_t n = len < room ? len : room;
            if (n == 0) { /* not a whole record left in the buffer */
                if ((st = os->sink.flush(&os->sink, &j->err)))
                    break;
                continue;
            }
            memcpy(os->sink.buf + os->sink.len, r.cur.cur, n);
            os->sink.len += n;
            r.cur.cur += n;
            len -= n;
            w->bytes += n;
        }
        if (!st)
            st = r.cur.refill(&r.cur, &j->err);
    }
    dsort_runreader_close(&r);
    w->records = w->bytes / rec;
    return st;
}

/* ooc.h's write: the cursors merged into the output, or under -u into a run the run copied. */
static enum dsort_status write_out(void *ctx, struct dsort_output_sink *os)
{
    struct out_write *w = ctx;
    if (!w->upath[0])
        return merge_src(w->j, w->src, &os->sink, &w->records, &w->bytes);
    enum dsort_status st = copy_run(w, w->j->fx.rec_out, os);
    unlink(w->upath);
    dsort_cleanup_forget(w->upath);
    return st;
}

/* -u into one more temp run (unique_run), then the boundary with the rank before settled on
 * its first record (kept in f->first). Collective; agrees. */
static enum dsort_status unique_run(struct out_write *w)
{
    struct dsort_ooc *j = w->j;
    const size_t rec = j->fx.rec_out;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, w->f->uniq);
    dsort_tempdirs_run_path(&j->td, w->upath, sizeof w->upath);
    struct dsort_runwriter rw;
    uint64_t bytes;
    enum dsort_status st = dsort_runwriter_open(&rw, w->upath, rec, j->rm.block, &j->err);
    if (!st) {
        st = merge_src(j, w->src, &rw.sink, &w->total, &bytes);
        if (!st)
            st = dsort_runwriter_close(&rw, &j->err);
        if (st)
            dsort_runwriter_abort(&rw);
    }
    if (!st && !j->o->checkpoint) /* else the checkpoint lists them until the commit */
        dsort_runset_drop(&j->runs, 0, j->runs.n);
    /* The first record: read the run's first block into the copy buffer (free now). */
    if (!st && w->total) {
        struct dsort_runreader r;
        st = dsort_runreader_open(&r, w->upath, rec, j->rm.block, w->f->copy, NULL, w->total,
                                  &j->err);
        if (!st) {
            memcpy(w->f->first, r.cur.cur, rec);
            dsort_runreader_close(&r);
        }
    }
    dsort_job_phase_end(j->stats, w->f->uniq, &pc);
    int d = 0;
    if (!(st = dsort_comm_agree(j->c, st, &j->err)))
        st = dsort_job_unique_boundary(j->c, &j->o->fmt, w->f->first, rw.last, w->total, &d,
                                       &j->err);
    dsort_runwriter_free(&rw);
    w->drop = d ? 1 : 0;
    return st;
}

enum dsort_status dsort_ooc_write(struct dsort_ooc *j, struct dsort_output *out,
                                  const struct dsort_ooc_src *src, uint64_t bytes,
                                  const struct dsort_ooc_final *f)
{
    struct out_write w = {.j = j, .src = src, .f = f};
    enum dsort_status st = DSORT_OK;
    int exact = 1;
    if (j->o->ord.unique && j->rm.fmt->unique_run) {
        st = unique_run(&w);
        bytes = (w.total - w.drop) * dsort_job_out_rec(j->o);
    } else if (j->o->ord.unique && j->o->output) { /* the size after -u: count first */
        struct dsort_phase_clock pc;
        uint64_t records;
        dsort_job_phase_begin(&pc, f->uniq);
        st = merge_src(j, src, NULL, &records, &bytes);
        dsort_job_phase_end(j->stats, f->uniq, &pc);
    } else if (j->o->ord.unique) {
        exact = 0; /* -u into parts (-O): not counted */
    }
    if ((st = dsort_comm_agree(j->c, st, &j->err)))
        return st;
    st = dsort_ooc_to_output(j, out, bytes, f->buf, f->seen, write_out, &w, f->write, f->timed);
    /* fixed records: the merge's bytes are the sink's input, narrowed there with typed keys */
    const uint64_t wrote =
        j->rm.fmt->run_rec(&j->fx) ? w.records * dsort_job_out_rec(j->o) : w.bytes;
    if (st == DSORT_OK && exact && wrote != bytes)
        st = DSORT_ERR(&j->err, DSORT_EINTERNAL, 0,
                       "wrote %" PRIu64 " bytes of output, expected %" PRIu64, wrote, bytes);
    j->stats->records_out = w.records;
    j->stats->bytes_written = wrote;
    return st;
}

static enum dsort_status runs_open(void *ctx, void **cur, struct dsort_error *err)
{
    struct dsort_ooc *j = ctx;
    return dsort_runmerge_open(&j->rm, 0, j->runs.n, cur, err);
}

static void runs_close(void *ctx)
{
    struct dsort_ooc *j = ctx;
    dsort_runmerge_close(&j->rm, j->runs.n);
}

enum dsort_status dsort_ooc_final_merge(struct dsort_ooc *j, struct dsort_output *out,
                                        const struct dsort_ooc_final *f)
{
    struct dsort_phase_clock pc;
    enum dsort_status st = dsort_ooc_reduce(j, f->mem, f->min_block, f->region, f->region_len,
                                            f->nregion, f->passes, &pc);
    dsort_job_phase_end(j->stats, f->passes, &pc);
    if (!(st = dsort_comm_agree(j->c, st, &j->err))) {
        /* the runs' bytes as the output's (fixed: without the tags; lines: without positions) */
        uint64_t bytes = j->rm.fmt->run_rec(&j->fx)
                             ? dsort_runset_records(&j->runs) * dsort_job_out_rec(j->o)
                             : dsort_runset_bytes(&j->runs);
        const struct dsort_ooc_src src = {runs_open, runs_close, j, j->runs.n};
        st = dsort_comm_agree(j->c, dsort_ooc_write(j, out, &src, bytes, f), &j->err);
    }
    if (!st && !j->o->checkpoint) /* else the checkpoint lists them until the commit */
        dsort_runset_drop(&j->runs, 0, j->runs.n);
    dsort_runmerge_release(&j->rm);
    return st;
}
