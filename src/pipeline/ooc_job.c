/* The out-of-core skeleton's steps that are the same for every record format (ooc.h): the
 * spill, the extra merge passes, the checkpoints and the job's tail. */
#include "ooc.h"

#include <string.h>

#include "checkpoint.h"
#include "cleanup.h"
#include "outsink.h"
#include "job_ckpt.h"
#include "job_end.h"
#include "job_topo.h"
#include "phase.h"

void dsort_ooc_init(struct dsort_ooc *j, const struct dsort_comm *c,
                    const struct dsort_job_options *o, const struct dsort_inputs *in,
                    struct dsort_job_stats *stats,
                    enum dsort_status (*fill)(void *, uint64_t, struct dsort_ckpt *,
                                              struct dsort_error *),
                    void *fmt_ctx)
{
    memset(j, 0, sizeof *j);
    j->c = c;
    j->o = o;
    j->in = in;
    j->stats = stats;
    j->fill = fill;
    j->fmt_ctx = fmt_ctx;
}

enum dsort_status dsort_ooc_tempdirs(struct dsort_ooc *j)
{
    if (j->have_td)
        return DSORT_OK;
    enum dsort_status st = dsort_job_tempdirs(j->o, j->job, j->c->rank, &j->td, &j->err);
    j->have_td = !st;
    return dsort_comm_agree(j->c, st, &j->err);
}

enum dsort_status dsort_ooc_spill(struct dsort_ooc *j, void *cur, size_t k)
{
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SPILL);
    enum dsort_status st = dsort_runmerge_spill(&j->rm, cur, k, &j->err);
    j->stats->runs = j->rm.runs_made;
    j->stats->spill_bytes = j->rm.run_bytes;
    dsort_job_phase_end(j->stats, PH_SPILL, &pc);
    return st;
}

enum dsort_status dsort_ooc_reduce(struct dsort_ooc *j, uint64_t mem, size_t min_block,
                                   unsigned char *const *region, const size_t *region_len,
                                   size_t nregion, enum dsort_phase ph,
                                   struct dsort_phase_clock *pc)
{
    enum dsort_status st =
        dsort_runmerge_plan(&j->rm, mem, min_block, region, region_len, nregion,
                            j->stats->merge_why, sizeof j->stats->merge_why, &j->err);
    j->stats->fan_in = (int)j->rm.f;
    dsort_job_phase_begin(pc, ph);
    if (!st)
        st = dsort_runmerge_reduce(&j->rm, &j->err);
    j->stats->merge_passes = j->rm.passes;
    j->stats->extra_merge_bytes = j->rm.pass_bytes;
    return st;
}

enum dsort_status dsort_ooc_resume_take(struct dsort_ooc *j, const struct dsort_ckpt *k)
{
    for (size_t i = 0; i < k->runs.n; i++) {
        enum dsort_status st = dsort_runset_add_run(&j->runs, &k->runs.runs[i], &j->err);
        if (st)
            return st;
    }
    j->rounds_before = j->ck_rounds = j->stats->rounds = k->rounds;
    j->sum_in = k->sum_in;
    j->con_in = k->con_in;
    j->stats->runs = k->runs.n;
    return DSORT_OK;
}

enum dsort_status dsort_ooc_end_round(struct dsort_ooc *j, uint64_t rounds, int stop)
{
    struct dsort_ckpt k;
    enum dsort_status st =
        dsort_comm_agree(j->c, j->fill(j->fmt_ctx, rounds, &k, &j->err), &j->err);
    if (!st)
        st = dsort_job_ckpt_save(j->c, j->o, j->in, j->job, &k, &j->td, &j->runs, stop, &j->err);
    if (!st)
        j->ck_rounds = rounds;
    if (!st && stop) {
        dsort_job_ckpt_stop(j->c, &k, &j->td, &j->runs);
        j->stopped = 1;
    }
    dsort_ckpt_free(&k);
    return st;
}

enum dsort_status dsort_ooc_ckpt_pass(void *ctx, const struct dsort_runset *runs, size_t k,
                                      struct dsort_error *err)
{
    struct dsort_ooc *j = ctx;
    struct dsort_ckpt ck;
    enum dsort_status st = j->fill(j->fmt_ctx, j->ck_rounds, &ck, err);
    if (!st)
        st = dsort_job_ckpt_write(j->c, j->o, j->in, j->job, &ck, &j->td, runs, k, 0, err);
    dsort_ckpt_free(&ck);
    return st;
}

enum dsort_status
dsort_ooc_to_output(struct dsort_ooc *j, struct dsort_output *out, uint64_t bytes, size_t buf,
                    void (*seen)(void *, const unsigned char *, size_t),
                    enum dsort_status (*write)(void *ctx, struct dsort_output_sink *os), void *ctx,
                    enum dsort_phase ph, enum dsort_phase timed)
{
    enum dsort_status st = dsort_output_set_share(j->c, out, bytes, &j->err);
    if (st)
        return st;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, ph);
    struct dsort_output_sink os;
    st = dsort_output_sink_open(&os, out, buf, seen, j->fmt_ctx, &j->err);
    if (!st) {
        st = write(ctx, &os);
        st = dsort_output_sink_finish(&os, st, &j->err);
    }
    j->stats->bytes_written = os.pos;
    dsort_job_phase_end(j->stats, timed, &pc);
    return st;
}

void dsort_ooc_merged(struct dsort_ooc *j, enum dsort_status st)
{
    if (!j->ck_rounds || st == DSORT_EFORMAT)
        dsort_job_ckpt_end(&j->td, &j->runs);
    else
        dsort_cleanup_keep_dirs(NULL, 0, NULL);
}

int dsort_ooc_finish(struct dsort_ooc *j, struct dsort_output *out,
                     const struct dsort_job_sums *sums)
{
    int rc = dsort_job_finish(j->c, j->o, j->in, out, sums, j->stats, &j->err);
    /* a failed commit keeps the checkpoint (the temp directories are emptied: kept on disk) */
    if (!rc || !j->ck_rounds || !dsort_job_ckpt_fail(j->c, &j->td, &j->runs))
        dsort_job_ckpt_end(&j->td, &j->runs);
    return rc;
}

void dsort_ooc_fail(struct dsort_ooc *j, struct dsort_output *out)
{
    dsort_cleanup_stop_mode(0);
    dsort_output_abandon(out);
    if (j->ck_rounds && j->td.count)
        dsort_job_ckpt_fail(j->c, &j->td, &j->runs);
}

void dsort_ooc_release(struct dsort_ooc *j)
{
    dsort_runmerge_release(&j->rm);
    dsort_runset_release(&j->runs);
    dsort_tempdirs_destroy(&j->td);
}
