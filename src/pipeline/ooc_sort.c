/* ooc_sort.c - the out-of-core sort's one sequence, for every record format (job.h's
 * dsort_job_sort_ooc): the format's pipeline (ooc.h's struct dsort_ooc_pipeline) is chosen
 * once, by the format's table the options chose (o->recfmt), and the job is
 *
 *   start:  the output opened, --progress started, the format's buffers planned; then, in the
 *           sample phase, a stopped job's checkpoint taken (--resume) or the splitters chosen
 *           from a sample of every rank's share; the run files' block and merge set up
 *   rounds: read, sort, exchange, spill (ooc_round.c), unless the format sorts the job another
 *           way (lines: in memory over the mapped input); a stop with a checkpoint ends here
 *   merge:  the runs merged into the output (ooc_merge.c), unless the rounds wrote it
 *   tail:   the checks and the commit (a checkpoint kept or dropped), or the output abandoned
 *           after an agreed error; the format's state and the skeleton's released.
 */
#include <errno.h>
#include <stdlib.h>

#include "job.h"
#include "ooc.h"
#include "ooc_round.h"
#include "progress.h"
#include "job_ckpt.h"
#include "job_end.h"
#include "phase.h"

/* The pipelines, one for each format's table. */
static const struct dsort_ooc_pipeline *const pipelines[] = {&dsort_ooc_fixed, &dsort_ooc_lines};

static const struct dsort_ooc_pipeline *pipeline_of(const struct dsort_recfmt *fmt)
{
    for (size_t i = 0; i < sizeof pipelines / sizeof pipelines[0]; i++)
        if (pipelines[i]->fmt == fmt)
            return pipelines[i];
    return NULL;
}

/* Collective: the splitters from a sample of every rank's share: each rank's own sample (the
 * format's), then the splitters selected over all ranks' samples; the selection's rounds in
 * the stats. Agrees. */
static enum dsort_status splitters(const struct dsort_ooc_pipeline *pl, struct dsort_ooc *j,
                                   void *x)
{
    int rounds = 0;
    enum dsort_status st = dsort_comm_agree(j->c, pl->sample(x), &j->err);
    if (!st)
        st = dsort_comm_agree(j->c, pl->select(x, &rounds), &j->err);
    j->stats->splitter_rounds = rounds;
    pl->sample_free(x);
    return st;
}

/* Collective: the format's buffers; the checkpoint taken (--resume) or, in a new job, the temp
 * directories (unless lazy) and the splitters; the run files' merge set up. Agrees. */
static enum dsort_status start(const struct dsort_ooc_pipeline *pl, struct dsort_ooc *j, void *x)
{
    const struct dsort_comm *c = j->c;
    const struct dsort_job_options *o = j->o;
    enum dsort_status st = pl->prepare ? pl->prepare(x) : DSORT_OK;
    if (!st && !o->resume) {
        dsort_job_name(c, j->job, sizeof j->job);
        if (!pl->lazy_tempdirs)
            st = dsort_ooc_tempdirs(j);
    }
    if (st)
        return st;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SAMPLE);
    if (pl->position)
        st = pl->position(x);
    if (!st && o->resume) { /* a stopped job's runs, position and splitters */
        st = dsort_job_resume(c, o, j->in, &j->td, &j->runs, j->job, sizeof j->job, pl->resume, x,
                              &j->err);
        j->have_td = !st;
    } else if (!st) {
        st = splitters(pl, j, x);
    }
    dsort_job_phase_end(j->stats, PH_SAMPLE, &pc);
    if (st)
        return st;
    struct dsort_recfmt_ctx fx;
    size_t block = 0;
    pl->runs(x, &fx, &block);
    dsort_ooc_runs_init(j, pl->fmt, &fx, block);
    return DSORT_OK;
}

/* Collective: the job after the setup, to its exit code. */
static int run(const struct dsort_ooc_pipeline *pl, struct dsort_ooc *j, void *x)
{
    struct dsort_output out;
    if (dsort_job_output_open(j->c, j->o, 0, &out, &j->err))
        return 2;
    /* --progress: the rounds (read, sort, exchange, spill), then the merge: two passes */
    dsort_progress_start(j->c, j->o->progress, j->share_bytes, 2);
    int taken = 0, wrote = 0;
    enum dsort_status st = start(pl, j, x);
    if (!st && pl->direct)
        st = pl->direct(x, &out, &taken);
    if (!st && !taken)
        st = pl->rounds(x, &out, &wrote);
    if (st)
        goto fail;
    if (j->stopped) {
        dsort_output_abandon(&out);
        return DSORT_EXIT_STOPPED;
    }
    if (!taken) {
        if (!wrote) {
            struct dsort_ooc_final f;
            pl->final(x, &f);
            st = dsort_ooc_final_merge(j, &out, &f);
        }
        dsort_ooc_merged(j, st);
        if (st)
            goto fail;
    }
    const struct dsort_job_stats *s = j->stats;
    const struct dsort_job_sums sums = {j->sum_in,     j->sum_out,     j->con_in,       j->con_out,
                                        s->records_in, s->records_out, pl->bytes_out(x)};
    return dsort_ooc_finish(j, &out, &sums);
fail:
    dsort_ooc_fail(j, &out);
    return 2;
}

int dsort_job_sort_ooc(const struct dsort_comm *c, const struct dsort_job_options *o,
                       const struct dsort_inputs *in, const struct dsort_share *sh,
                       struct dsort_job_stats *stats)
{
    const struct dsort_ooc_pipeline *pl = pipeline_of(o->recfmt);
    struct dsort_error err = {0};
    void *x = pl ? calloc(1, pl->size) : NULL;
    enum dsort_status st = DSORT_OK;
    if (!pl)
        st = DSORT_ERR(&err, DSORT_EINTERNAL, 0, "no out-of-core pipeline for the record format");
    else if (!x)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    if (dsort_comm_agree(c, st, &err)) {
        free(x);
        return 2;
    }
    struct dsort_ooc *j = (struct dsort_ooc *)(void *)((char *)x + pl->j_off);
    dsort_ooc_init(j, c, o, in, stats, pl->fill, x);
    pl->setup(x, sh);
    int rc = run(pl, j, x);
    pl->release(x);
    dsort_ooc_release(j);
    free(x);
    return rc;
}
