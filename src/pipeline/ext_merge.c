/* The merge phase of the out-of-core pipeline for fixed records (ext_job.h): runs are merged
 * with the largest fan-in that the open-file limit and the budget allow; only when there are
 * more runs than that are the smallest merged first (an extra pass over just those: the
 * engine's runmerge.h, shared with text lines). The final merge streams into the output sink; -u
 * goes through one more temp run, because its size (and so every rank's offset in -o FILE) is known
 * only after the final merge. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "ext_job.h"
#include "job_typed.h"
#include "outsink.h"
#include "prefetch.h"
#include "progress.h"
#include "runfile.h"

/* The output sink's view of the records passed on: their checksums. */
static void count_out(void *ctx, const unsigned char *p, size_t len)
{
    struct ext *x = ctx;
    const size_t ors = dsort_job_out_rec(x->j.o); /* the sink narrowed typed keys' records */
    dsort_job_sum_records(x->j.o->output_dir || x->j.o->verify, p, len / ors, ors, &x->j.sum_out,
                          &x->j.con_out);
    x->j.out_done += len;
    dsort_progress_local("merge", x->n * x->rs + x->j.out_done);
}

/* Merge runs [0, k) into sink, out_size bytes of each record (the tag dropped: rs). */
static enum dsort_status merge_runs(struct ext *x, size_t k, size_t out_size,
                                    struct dsort_sink *sink)
{
    void *cur;
    enum dsort_status st = dsort_runmerge_open(&x->j.rm, 0, k, &cur, &x->j.err);
    if (st)
        return st;
    st = dsort_merge_cmp(&x->cmp, x->irs, out_size, x->j.o->ord.unique, cur, k, sink, &x->j.err);
    dsort_runmerge_close(&x->j.rm, k);
    return st;
}

/* Write records [0, n) of a run file (plain records) to the output, skipping the first
 * `skip`. Used for -u, whose output size is known only after the final merge. */
static enum dsort_status copy_run(struct ext *x, const char *path, uint64_t records, uint64_t skip,
                                  struct dsort_output_sink *os)
{
    struct dsort_runreader r;
    enum dsort_status st =
        dsort_runreader_open(&r, path, x->rs, x->block, x->a,
                             dsort_runmerge_prefetch(&x->j.rm, path), records, &x->j.err);
    if (st)
        return st;
    while (!st && r.cur.cur != r.cur.end) {
        while (skip && r.cur.cur != r.cur.end) {
            r.cur.cur += x->rs;
            skip--;
        }
        size_t len = (size_t)(r.cur.end - r.cur.cur);
        while (len) {
            /* Whole records only: the sink counts records per flush. */
            size_t room = (os->sink.cap - os->sink.len) / x->rs * x->rs;
            size_t n = len < room ? len : room;
            if (n == 0) { /* not a whole record left in the buffer */
                if ((st = os->sink.flush(&os->sink, &x->j.err)))
                    break;
                continue;
            }
            memcpy(os->sink.buf + os->sink.len, r.cur.cur, n);
            os->sink.len += n;
            r.cur.cur += n;
            len -= n;
        }
        if (!st)
            st = r.cur.refill(&r.cur, &x->j.err);
    }
    dsort_runreader_close(&r);
    return st;
}

struct ext_write {
    struct ext *x;
    const char *upath; /* -u: the deduplicated run */
    uint64_t total, drop;
};

/* Into the output: the runs merged, or under -u the deduplicated run copied (its first record
 * dropped when the rank before ends with the same key). */
static enum dsort_status write_out(void *ctx, struct dsort_output_sink *os)
{
    const struct ext_write *w = ctx;
    struct ext *x = w->x;
    enum dsort_status st;
    if (x->j.o->ord.unique) {
        st = copy_run(x, w->upath, w->total, w->drop, os);
        unlink(w->upath);
        dsort_cleanup_forget(w->upath);
        return st;
    }
    st = merge_runs(x, x->j.runs.n, x->rs, &os->sink);
    if (!st && !x->j.o->checkpoint)
        dsort_runset_drop(&x->j.runs, 0, x->j.runs.n);
    return st;
}

enum dsort_status dsort_ext_job_final_merge(struct ext *x, struct dsort_output *out, uint64_t *nout)
{
    const struct dsort_comm *c = x->j.c;
    enum dsort_status st = DSORT_OK;
    struct dsort_phase_clock pc;
    /* The read buffers are carved from A and B (free now). */
    unsigned char *region[2] = {x->a, x->b};
    size_t region_len[2] = {x->abytes, x->bbytes};
    st = dsort_ooc_reduce(&x->j, 0, 0, region, region_len, 2, PH_MERGE, &pc);
    dsort_job_phase_end(x->j.stats, PH_MERGE, &pc);
    if ((st = dsort_comm_agree(c, st, &x->j.err)))
        goto out;

    uint64_t total = dsort_runset_records(&x->j.runs);
    char upath[4096] = "";
    uint64_t drop = 0;
    if (x->j.o->ord.unique) {
        /* Deduplicate into one more temp run; then the share and the boundary are known. */
        dsort_job_phase_begin(&pc, PH_FINAL_MERGE);
        dsort_tempdirs_run_path(&x->j.td, upath, sizeof upath);
        struct dsort_runwriter w;
        st = dsort_runwriter_open(&w, upath, x->rs, x->block, &x->j.err);
        if (!st) {
            st = merge_runs(x, x->j.runs.n, x->rs, &w.sink);
            if (!st)
                st = dsort_runwriter_close(&w, &x->j.err);
            if (st)
                dsort_runwriter_abort(&w);
        }
        if (!st) {
            if (!x->j.o->checkpoint) /* else the checkpoint lists them until the commit */
                dsort_runset_drop(&x->j.runs, 0, x->j.runs.n);
            total = w.records;
        }
        /* The first record: read the run's first block into A (free now); keep it in B. */
        if (!st && total) {
            struct dsort_runreader r;
            st = dsort_runreader_open(&r, upath, x->rs, x->block, x->a, NULL, total, &x->j.err);
            if (!st) {
                memcpy(x->b, r.cur.cur, x->rs);
                dsort_runreader_close(&r);
            }
        }
        dsort_job_phase_end(x->j.stats, PH_FINAL_MERGE, &pc);
        int d = 0;
        if (!(st = dsort_comm_agree(c, st, &x->j.err)))
            st = dsort_job_unique_boundary(c, &x->j.o->fmt, x->b, w.last, total, &d, &x->j.err);
        dsort_runwriter_free(&w);
        if (st)
            goto out;
        drop = d ? 1 : 0;
    }
    *nout = total - drop;
    struct ext_write w = {x, upath, total, drop};
    /* One page more than a block: room for a whole block after a carried partial page. */
    st = dsort_ooc_to_output(&x->j, out, *nout * dsort_job_out_rec(x->j.o),
                             dsort_run_stride(x->rs, x->block) + DSORT_RUN_ALIGN, count_out,
                             write_out, &w, PH_FINAL_MERGE,
                             x->j.o->ord.unique ? PH_WRITE : PH_FINAL_MERGE);
    st = dsort_comm_agree(c, st, &x->j.err);
out:
    dsort_runmerge_release(&x->j.rm);
    return st;
}
