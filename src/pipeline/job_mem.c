/* The in-memory pipeline: every rank's share fits its budget.
 * Memory: the input buffer A and the run buffer B (each this rank's share) plus 16 bytes a
 * record for the sort entries; the radix scratch lives in B. A is reused to receive, B to
 * hold the merged output, so nothing is allocated twice. Read once, write once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "exchange.h"
#include "agree.h"
#include "inmem.h"
#include "job.h"
#include "job_copy.h"
#include "job_typed.h"
#include "keysort.h"
#include "mem.h"
#include "merge.h"
#include "output.h"
#include "progress.h"
#include "job_end.h"
#include "phase.h"

/* The i-th record of the sorted run (dsort_inmem_cut's rec_at). */
struct run {
    const unsigned char *recs;
    size_t rec_size;
};

static const unsigned char *run_rec(const void *ctx, uint64_t i)
{
    const struct run *r = ctx;
    return r->recs + i * r->rec_size;
}

struct source {
    uint64_t g0;
    int rank;
    const unsigned char *recs;
    uint64_t n;
};

static int by_g0(const void *a, const void *b)
{
    const struct source *x = a, *y = b;
    if (x->g0 != y->g0)
        return x->g0 < y->g0 ? -1 : 1;
    return x->rank - y->rank;
}

/* Exchange B (the sorted run, cut by cuts) into A, then merge the pieces back into B.
 * *nout gets the number of output records in B. Collective; agrees. */
static enum dsort_status exchange_and_merge(const struct dsort_comm *c,
                                            const struct dsort_job_options *o, unsigned char *a,
                                            unsigned char *b, size_t bytes, const uint64_t *cuts,
                                            uint64_t g0, uint64_t *nout,
                                            struct dsort_job_stats *stats, struct dsort_error *err)
{
    const size_t rs = o->fmt.rec_size;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_EXCHANGE);
    uint64_t *scount = calloc((size_t)c->size, sizeof *scount);
    uint64_t *rcount = calloc((size_t)c->size, sizeof *rcount);
    struct dsort_cursor *cur = calloc((size_t)c->size, sizeof *cur);
    struct source *src = calloc((size_t)c->size, sizeof *src);
    uint64_t *g0s = NULL;
    enum dsort_status st = DSORT_OK;
    if (!scount || !rcount || !cur || !src)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    for (int r = 0; r < c->size; r++)
        scount[r] = (cuts[r + 1] - cuts[r]) * rs;
    uint64_t rbytes = 0;
    if ((st = dsort_inmem_counts(c, scount, rcount, &rbytes, err)))
        goto out;
    if (rbytes > bytes)
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "receiving %" PRIu64 " bytes but the buffer holds %zu", rbytes, bytes);
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    if ((st = dsort_inmem_move(c, o, b, scount, bytes, a, rcount, rbytes, stats, err)))
        goto out;
    dsort_job_phase_end(stats, PH_EXCHANGE, &pc);

    /* Merge the pieces in the input order of their sources, so that the merge is stable. */
    dsort_job_phase_begin(&pc, PH_MERGE);
    st = dsort_agree_allgather(c, c->comm, &g0, sizeof g0, (void **)&g0s, err);
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    uint64_t off = 0;
    for (int r = 0; r < c->size; r++) {
        src[r] = (struct source){g0s[r], r, a + off, rcount[r] / rs};
        off += rcount[r];
    }
    qsort(src, (size_t)c->size, sizeof *src, by_g0);
    for (int r = 0; r < c->size; r++)
        dsort_cursor_memory(&cur[r], src[r].recs, src[r].n, rs);
    struct dsort_sink sink;
    dsort_sink_memory(&sink, b, bytes);
    st = dsort_merge(&o->fmt, &o->ord, cur, (size_t)c->size, &sink, err);
    *nout = sink.records;
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    if (o->ord.unique) {
        int drop = 0;
        st = dsort_job_unique_boundary(c, &o->fmt, b, b + (*nout ? *nout - 1 : 0) * rs, *nout,
                                       &drop, err);
        if (!st && drop) {
            memmove(b, b + rs, (*nout - 1) * rs);
            (*nout)--;
        }
    }
    dsort_job_phase_end(stats, PH_MERGE, &pc);
out:
    free(scount);
    free(rcount);
    free(cur);
    free(src);
    free(g0s);
    return st;
}

/* Read this rank's share into A (and checksum it), sort it into B. Agrees. */
static enum dsort_status read_and_sort(const struct dsort_comm *c,
                                       const struct dsort_job_options *o,
                                       const struct dsort_inputs *in, const struct dsort_share *sh,
                                       unsigned char *a, unsigned char *b,
                                       struct dsort_sortent *ents, struct dsort_job_sums *sums,
                                       struct dsort_job_stats *stats, struct dsort_error *err)
{
    const size_t rs = o->fmt.rec_size, bytes = (size_t)(sh->n * rs);
    struct dsort_phase_clock pc;
    enum dsort_status st = DSORT_OK;
    dsort_job_phase_begin(&pc, PH_READ);
    st = dsort_job_read(o, in, sh->first, sh->n, a, &sums->sum_in, &sums->con_in, err);
    stats->bytes_read = sh->n * dsort_job_out_rec(o); /* the input's bytes, not widened */
    dsort_job_phase_end(stats, PH_READ, &pc);
    if ((st = dsort_comm_agree(c, st, err)))
        return st;
    dsort_progress_step(c, "sort", bytes);

    dsort_job_phase_begin(&pc, PH_SORT);
    /* B is free until the gather: it is the radix sort's scratch, unless records are
     * shorter than entries. */
    struct dsort_sortent *tmp = rs >= sizeof *tmp ? (struct dsort_sortent *)(void *)b
                                                  : dsort_mem_alloc(sh->n * sizeof *tmp);
    if (!tmp)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate the sort scratch");
    if ((st = dsort_comm_agree(c, st, err)))
        return st;
    dsort_keysort_sort(&o->fmt, &o->ord, a, sh->n, ents, tmp);
    if ((void *)tmp != (void *)b)
        dsort_mem_free(tmp, sh->n * sizeof *tmp);
    dsort_keysort_gather(&o->fmt, a, ents, sh->n, b);
    dsort_job_phase_end(stats, PH_SORT, &pc);
    return DSORT_OK;
}

/* Write the nout sorted records in B as this rank's share of the output (smaller under -u:
 * the file offsets follow), checksumming them. Agrees. */
static enum dsort_status write_share(const struct dsort_comm *c, const struct dsort_job_options *o,
                                     struct dsort_output *out, unsigned char *b, uint64_t nout,
                                     struct dsort_job_sums *sums, struct dsort_job_stats *stats,
                                     struct dsort_error *err)
{
    const size_t rs = dsort_job_out_rec(o); /* narrowed as written, with typed keys */
    enum dsort_status st;
    if (o->ord.unique && (st = dsort_output_set_share(c, out, nout * rs, err)))
        return st;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_WRITE);
    st = dsort_job_write(o, out, b, nout, &sums->sum_out, &sums->con_out, err);
    stats->bytes_written = nout * rs;
    dsort_job_phase_end(stats, PH_WRITE, &pc);
    sums->n_out = nout;
    sums->bytes_out = nout * rs;
    return dsort_comm_agree(c, st, err);
}

int dsort_job_sort_memory(const struct dsort_comm *c, const struct dsort_job_options *o,
                          const struct dsort_inputs *in, const struct dsort_share *share,
                          struct dsort_job_stats *stats)
{
    if (dsort_job_copy_usable(o)) /* without the second share-sized buffer (job_copy.h) */
        return dsort_job_sort_copy(c, o, in, share, stats);
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    const size_t rs = o->fmt.rec_size, ors = dsort_job_out_rec(o); /* ors: in the output */
    struct dsort_phase_clock pc;
    const struct dsort_share sh = *share;
    const uint64_t n = sh.n;
    stats->records_in = n;

    /* Claim the output name first: an unwritable output fails before any work is done. */
    struct dsort_output out;
    if (dsort_job_output_open(c, o, n * ors, &out, &err))
        return 2;

    const size_t bytes = (size_t)(n * rs);
    /* --progress: read, sort, exchange and merge, write: four passes over the data */
    dsort_progress_start(c, o->progress, bytes, 4);
    unsigned char *a = dsort_mem_alloc(bytes), *b = dsort_mem_alloc(bytes);
    struct dsort_sortent *ents = dsort_mem_alloc(n * sizeof *ents);
    uint64_t *cuts = calloc((size_t)c->size + 1, sizeof *cuts);
    if (!a || !b || !ents || !cuts)
        st = dsort_job_alloc_error(&err, errno, "buffers", 2 * bytes + n * sizeof *ents);
    struct dsort_job_sums sums = {.n_in = n};
    if ((st = dsort_comm_agree(c, st, &err)) ||
        (st = read_and_sort(c, o, in, &sh, a, b, ents, &sums, stats, &err)))
        goto fail;
    dsort_mem_free(ents, n * sizeof *ents);
    ents = NULL;

    /* Exact splitters over the sorted runs. */
    dsort_job_phase_begin(&pc, PH_SPLIT);
    const struct run run = {b, rs};
    if ((st = dsort_inmem_cut(c, o, in, n, sh.g0, run_rec, &run, cuts, stats, &err)))
        goto fail;
    dsort_job_phase_end(stats, PH_SPLIT, &pc);
    dsort_progress_step(c, "exchange", 2 * (uint64_t)bytes);

    uint64_t nout = n;
    if (c->size > 1 || o->ord.unique) {
        /* (agreed: agreeing again would print the error line twice) */
        if ((st = exchange_and_merge(c, o, a, b, bytes, cuts, sh.g0, &nout, stats, &err)))
            goto fail;
    } /* else one rank: B already holds the sorted output */
    stats->records_out = nout;
    dsort_progress_step(c, "write", 3 * (uint64_t)bytes);
    if ((st = write_share(c, o, &out, b, nout, &sums, stats, &err)))
        goto fail;
    int rc = dsort_job_finish(c, o, in, &out, &sums, stats, &err);
    free(cuts);
    dsort_mem_free(a, bytes);
    dsort_mem_free(b, bytes);
    return rc;

fail:
    dsort_output_abandon(&out);
    free(cuts);
    dsort_mem_free(a, bytes);
    dsort_mem_free(b, bytes);
    dsort_mem_free(ents, n * sizeof *ents);
    return 2;
}
