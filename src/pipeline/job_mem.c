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
#include "job.h"
#include "job_typed.h"
#include "keysort.h"
#include "mem.h"
#include "merge.h"
#include "output.h"
#include "progress.h"
#include "splitters.h"

/* The composite key (dsort_job_run_key) of the i-th record of the sorted run. */
struct run_keys {
    const struct dsort_cmp *cmp;
    const unsigned char *run;
    size_t rec_size;
    uint64_t g0;
};

static void run_key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    const struct run_keys *k = ctx;
    dsort_job_run_key(k->cmp, k->run + i * k->rec_size, k->g0, i, out);
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
    uint64_t *g0s = calloc((size_t)c->size, sizeof *g0s);
    enum dsort_status st = DSORT_OK;
    if (!scount || !rcount || !cur || !src || !g0s)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    for (int r = 0; r < c->size; r++)
        scount[r] = (cuts[r + 1] - cuts[r]) * rs;
    st = dsort_exchange_counts(c->comm, scount, rcount, err);
    uint64_t rbytes = 0;
    for (int r = 0; r < c->size; r++)
        rbytes += rcount[r];
    if (!st && rbytes > bytes)
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "receiving %" PRIu64 " bytes but the buffer holds %zu", rbytes, bytes);
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    st = dsort_exchange_move(o->exchange, b, scount, NULL, a, rcount, NULL, &stats->exchange_rounds,
                             err);
    stats->bytes_sent = bytes - scount[c->rank];
    stats->bytes_received = rbytes - rcount[c->rank];
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    dsort_job_phase_end(stats, PH_EXCHANGE, &pc);

    /* Merge the pieces in the input order of their sources, so that the merge is stable. */
    dsort_job_phase_begin(&pc, PH_MERGE);
    /* Raw: g0s was allocated with the job's other buffers, agreed before the exchange. */
    MPI_Allgather(&g0, 1, MPI_UINT64_T, g0s, 1, MPI_UINT64_T, c->comm);
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

int dsort_job_sort_memory(const struct dsort_comm *c, const struct dsort_job_options *o,
                          const struct dsort_inputs *in, const struct dsort_share *share,
                          struct dsort_job_stats *stats)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    const size_t rs = o->fmt.rec_size, ors = dsort_job_out_rec(o); /* ors: in the output */
    struct dsort_phase_clock pc;
    const struct dsort_share sh = *share;
    const uint64_t first = sh.first, n = sh.n;
    stats->records_in = n;

    /* Claim the output name first: an unwritable output fails before any work is done. */
    struct dsort_output out;
    st = dsort_job_output_open(c, o, n * ors, &out, &err);
    if (st)
        return 2;

    size_t bytes = (size_t)(n * rs);
    /* --progress: read, sort, exchange and merge, write: four passes over the data */
    dsort_progress_start(c, o->progress, bytes, 4);
    unsigned char *a = dsort_mem_alloc(bytes), *b = dsort_mem_alloc(bytes);
    struct dsort_sortent *ents = dsort_mem_alloc(n * sizeof *ents);
    uint64_t *cuts = calloc((size_t)c->size + 1, sizeof *cuts);
    if (!a || !b || !ents || !cuts)
        st = dsort_job_alloc_error(&err, errno, "buffers", 2 * bytes + n * sizeof *ents);
    struct dsort_sum128 sum_in = {0, 0}, con_in = {0, 0}, con_out = {0, 0};
    dsort_job_phase_begin(&pc, PH_READ);
    if (!st)
        st = dsort_job_read(o, in, first, n, a, &sum_in, &con_in, &err);
    stats->bytes_read = bytes;
    dsort_job_phase_end(stats, PH_READ, &pc);
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail;
    dsort_progress_step(c, "sort", bytes);

    dsort_job_phase_begin(&pc, PH_SORT);
    /* B is free until the gather: it is the radix sort's scratch, unless records are
     * shorter than entries. */
    struct dsort_sortent *tmp =
        rs >= sizeof *tmp ? (struct dsort_sortent *)(void *)b : dsort_mem_alloc(n * sizeof *tmp);
    if (!tmp)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "cannot allocate the sort scratch");
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail;
    dsort_keysort_sort(&o->fmt, &o->ord, a, n, ents, tmp);
    if ((void *)tmp != (void *)b)
        dsort_mem_free(tmp, n * sizeof *tmp);
    dsort_keysort_gather(&o->fmt, a, ents, n, b);
    dsort_mem_free(ents, n * sizeof *ents);
    ents = NULL;
    dsort_job_phase_end(stats, PH_SORT, &pc);

    /* Exact splitters over the sorted runs. */
    dsort_job_phase_begin(&pc, PH_SPLIT);
    struct dsort_cmp cmp;
    dsort_cmp_init(&cmp, &o->fmt, &o->ord);
    struct run_keys rk = {&cmp, b, rs, sh.g0};
    struct dsort_splitter_keys sk = {n, cmp.key_len + cmp.tie_len + 16, run_key_at, &rk};
    st = dsort_splitters_cut(c->comm, &sk, cuts, &stats->splitter_rounds, &err);
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail;
    dsort_job_phase_end(stats, PH_SPLIT, &pc);
    dsort_progress_step(c, "exchange", 2 * (uint64_t)bytes);

    uint64_t nout = n;
    if (c->size > 1 || o->ord.unique) {
        st = exchange_and_merge(c, o, a, b, bytes, cuts, sh.g0, &nout, stats, &err);
        if ((st = dsort_comm_agree(c, st, &err)))
            goto fail;
    } /* else one rank: B already holds the sorted output */
    stats->records_out = nout;
    dsort_progress_step(c, "write", 3 * (uint64_t)bytes);

    /* With -u the output shrank: the file offsets must follow. */
    if (o->ord.unique && (st = dsort_output_set_share(c, &out, nout * ors, &err)))
        goto fail;

    dsort_job_phase_begin(&pc, PH_WRITE);
    struct dsort_part_info info = {nout, nout * ors, {0, 0}, ""};
    st = dsort_job_write(o, &out, b, nout, &info.checksum, &con_out, &err);
    stats->bytes_written = nout * ors;
    dsort_job_phase_end(stats, PH_WRITE, &pc);
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail;
    struct dsort_job_sums sums = {sum_in, info.checksum, con_in, con_out, n, nout, nout * ors};
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
