/* The merge phase of the out-of-core pipeline for fixed records (ext_job.h): runs are merged
 * with the largest fan-in that the open-file limit and the budget allow; only when there are
 * more runs than that are the smallest merged first (an extra pass over just those). The
 * final merge streams into the output sink; -u goes through one more temp run, because its
 * size (and so every rank's offset in -o FILE) is known only after the final merge. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "ext_job.h"
#include "outsink.h"
#include "prefetch.h"
#include "runfile.h"

enum dsort_status dsort_ext_job_add_run(struct ext *x, const char *path, uint64_t records)
{
    return dsort_runset_add(&x->runs, path, records, records * x->irs, &x->err);
}

/* How many runs one merge may read at once: the open-file limit (less what is open now and
 * a margin) and the read buffers that fit in A and B. When there are more runs than that,
 * --stats and -v say why. */
static size_t fan_in(const struct ext *x)
{
    const size_t blen = dsort_runreader_buf_len(x->irs, x->block);
    struct dsort_fan_in fi;
    dsort_fan_in_now((uint64_t)(x->abytes / blen + x->bbytes / blen) * blen, blen, 0, &fi);
    dsort_fan_in_explain(&fi, x->runs.n, x->stats->merge_why, sizeof x->stats->merge_why);
    return fi.f;
}

/* The output sink's view of the records passed on: their checksums. */
static void count_out(void *ctx, const unsigned char *p, size_t len)
{
    struct ext *x = ctx;
    if (x->o->output_dir || x->o->verify)
        dsort_checksum_records(&x->sum_out, p, len / x->rs, x->rs);
    dsort_checksum_records_c(&x->con_out, p, len / x->rs, x->rs);
}

/* Open readers for runs [from, from + k) with buffers carved from A and B. */
static enum dsort_status open_readers(struct ext *x, size_t from, size_t k,
                                      struct dsort_runreader *rd, struct dsort_cursor *cur,
                                      struct dsort_prefetch *pf)
{
    const size_t blen = dsort_runreader_buf_len(x->irs, x->block);
    for (size_t i = 0; i < k; i++) {
        unsigned char *buf =
            i < x->abytes / blen ? x->a + i * blen : x->b + (i - x->abytes / blen) * blen;
        enum dsort_status st =
            dsort_runreader_open(&rd[i], x->runs.runs[from + i].path, x->irs, x->block, buf, pf,
                                 x->runs.runs[from + i].records, &x->err);
        if (st) {
            for (size_t j = 0; j < i; j++)
                dsort_runreader_close(&rd[j]);
            return st;
        }
    }
    for (size_t i = 0; i < k; i++) {
        cur[i] = rd[i].cur;
        cur[i].ctx = &rd[i];
    }
    return DSORT_OK;
}

static void drop_runs(struct ext *x, size_t from, size_t k, struct dsort_runreader *rd)
{
    for (size_t i = 0; i < k; i++)
        dsort_runreader_close(&rd[i]);
    dsort_runset_drop(&x->runs, from, k);
}

/* Merge runs [0, k) (after the refill cursors are set) through cur into sink. The cursors'
 * refill reads the next block of each run. */
static enum dsort_status merge_runs(struct ext *x, size_t k, size_t out_size,
                                    struct dsort_sink *sink, struct dsort_runreader *rd,
                                    struct dsort_cursor *cur)
{
    struct dsort_prefetch *pf = NULL;
    enum dsort_status st = dsort_prefetch_create(&pf, &x->err);
    if (!st)
        st = open_readers(x, 0, k, rd, cur, pf);
    /* The cursors are copies of the readers' own; refill finds its reader through ctx. */
    if (!st) {
        st = dsort_merge_cmp(&x->cmp, x->irs, out_size, x->o->ord.unique, cur, k, sink, &x->err);
        for (size_t i = 0; i < k; i++)
            dsort_runreader_close(&rd[i]);
    }
    dsort_prefetch_destroy(pf);
    return st;
}

/* Extra passes: while there are more runs than the fan-in, merge the smallest together. */
static enum dsort_status reduce_runs(struct ext *x, size_t f, struct dsort_runreader *rd,
                                     struct dsort_cursor *cur)
{
    enum dsort_status st = DSORT_OK;
    while (!st && x->runs.n > f) {
        struct dsort_phase_clock pc;
        dsort_job_phase_begin(&pc, PH_MERGE);
        dsort_runset_sort_smallest(&x->runs);
        size_t k = dsort_fan_in_step(x->runs.n, f);
        char path[4096];
        dsort_tempdirs_run_path(&x->td, path, sizeof path);
        struct dsort_runwriter w;
        if ((st = dsort_runwriter_open(&w, path, x->irs, x->block, &x->err)))
            break;
        st = merge_runs(x, k, x->irs, &w.sink, rd, cur);
        if (!st)
            st = dsort_runwriter_close(&w, &x->err);
        if (st) {
            dsort_runwriter_abort(&w);
            break;
        }
        dsort_runwriter_free(&w);
        x->stats->merge_passes++;
        x->stats->extra_merge_bytes += w.off;
        drop_runs(x, 0, k, rd);
        st = dsort_ext_job_add_run(x, path, w.records);
        dsort_job_phase_end(x->stats, PH_MERGE, &pc);
    }
    return st;
}

/* Write records [0, n) of a run file (plain records) to the output, skipping the first
 * `skip`. Used for -u, whose output size is known only after the final merge. */
static enum dsort_status copy_run(struct ext *x, const char *path, uint64_t records, uint64_t skip,
                                  struct dsort_output_sink *os)
{
    struct dsort_runreader r;
    struct dsort_prefetch *pf = NULL;
    enum dsort_status st = dsort_prefetch_create(&pf, &x->err);
    if (!st)
        st = dsort_runreader_open(&r, path, x->rs, x->block, x->a, pf, records, &x->err);
    if (st) {
        dsort_prefetch_destroy(pf);
        return st;
    }
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
                if ((st = os->sink.flush(&os->sink, &x->err)))
                    break;
                continue;
            }
            memcpy(os->sink.buf + os->sink.len, r.cur.cur, n);
            os->sink.len += n;
            r.cur.cur += n;
            len -= n;
        }
        if (!st)
            st = r.cur.refill(&r.cur, &x->err);
    }
    dsort_runreader_close(&r);
    dsort_prefetch_destroy(pf);
    return st;
}

enum dsort_status dsort_ext_job_final_merge(struct ext *x, struct dsort_output *out, uint64_t *nout)
{
    const struct dsort_comm *c = x->c;
    enum dsort_status st = DSORT_OK;
    struct dsort_phase_clock pc;
    size_t f = fan_in(x);
    x->stats->fan_in = (int)f;
    struct dsort_runreader *rd = calloc(f, sizeof *rd);
    struct dsort_cursor *cur = calloc(f, sizeof *cur);
    if (!rd || !cur)
        st = DSORT_ERR(&x->err, DSORT_ENOMEM, errno, "out of memory");
    if (!st)
        st = reduce_runs(x, f, rd, cur);
    if ((st = dsort_comm_agree(c, st, &x->err)))
        goto out;

    uint64_t total = dsort_runset_records(&x->runs);
    char upath[4096] = "";
    uint64_t drop = 0;
    if (x->o->ord.unique) {
        /* Deduplicate into one more temp run; then the share and the boundary are known. */
        dsort_job_phase_begin(&pc, PH_FINAL_MERGE);
        dsort_tempdirs_run_path(&x->td, upath, sizeof upath);
        struct dsort_runwriter w;
        st = dsort_runwriter_open(&w, upath, x->rs, x->block, &x->err);
        if (!st) {
            st = merge_runs(x, x->runs.n, x->rs, &w.sink, rd, cur);
            if (!st)
                st = dsort_runwriter_close(&w, &x->err);
            if (st)
                dsort_runwriter_abort(&w);
        }
        if (!st) {
            drop_runs(x, 0, x->runs.n, rd);
            total = w.records;
        }
        /* The first record: read the run's first block into A (free now); keep it in B. */
        if (!st && total) {
            struct dsort_runreader r;
            st = dsort_runreader_open(&r, upath, x->rs, x->block, x->a, NULL, total, &x->err);
            if (!st) {
                memcpy(x->b, r.cur.cur, x->rs);
                dsort_runreader_close(&r);
            }
        }
        dsort_job_phase_end(x->stats, PH_FINAL_MERGE, &pc);
        int d = 0;
        if (!(st = dsort_comm_agree(c, st, &x->err)))
            st = dsort_job_unique_boundary(c, &x->o->fmt, x->b, w.last, total, &d, &x->err);
        dsort_runwriter_free(&w);
        if (st)
            goto out;
        drop = d ? 1 : 0;
    }
    *nout = total - drop;
    if ((st = dsort_output_set_share(c, out, *nout * x->rs, &x->err)))
        goto out;

    dsort_job_phase_begin(&pc, PH_FINAL_MERGE);
    struct dsort_output_sink os;
    /* One page more than a block: room for a whole block after a carried partial page. */
    st = dsort_output_sink_open(&os, out, dsort_run_stride(x->rs, x->block) + DSORT_RUN_ALIGN,
                                count_out, x, &x->err);
    if (!st) {
        if (x->o->ord.unique) {
            st = copy_run(x, upath, total, drop, &os);
            unlink(upath);
            dsort_cleanup_forget(upath);
        } else {
            st = merge_runs(x, x->runs.n, x->rs, &os.sink, rd, cur);
            if (!st)
                drop_runs(x, 0, x->runs.n, rd);
        }
        st = dsort_output_sink_finish(&os, st, &x->err);
    }
    x->stats->bytes_written = os.pos;
    dsort_job_phase_end(x->stats, x->o->ord.unique ? PH_WRITE : PH_FINAL_MERGE, &pc);
    st = dsort_comm_agree(c, st, &x->err);
out:
    free(rd);
    free(cur);
    return st;
}
