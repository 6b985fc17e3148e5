/* ooc.h - the out-of-core skeleton's shared state and steps, the same for every record format.
 * The job is one sequence (ooc_sort.c, job.h's dsort_job_sort_ooc) over a format's pipeline
 * table (struct dsort_ooc_pipeline, below: ooc_fixed.c for fixed records, ooc_lines.c for text
 * lines), chosen once by the options' format table (o->recfmt). Each format's state embeds a
 * struct dsort_ooc as its member j, and its parts call these steps (ooc_job.c) for what does
 * not depend on the records' shape: spilling a merge into a run, the extra merge passes, the
 * checkpoint at a round's end and after a pass, and the tail (the end-of-job checkpoint kept
 * or dropped, finish, fail, release). What differs between formats is in the engine's format
 * table (recfmt.h) and in the pipeline table (the format's state, splitters, checkpoint fill
 * and resume, round ops, final merge). Internal to src/pipeline/. Collective where marked,
 * else local.
 */
#ifndef DSORT_OOC_H
#define DSORT_OOC_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "output.h"
#include "phase.h"
#include "recfmt.h"
#include "runmerge.h"
#include "runset.h"
#include "tempdir.h"
#include "job_ckpt.h"
#include "job_end.h"

struct dsort_ckpt;

struct dsort_ooc {
    const struct dsort_comm *c;
    const struct dsort_job_options *o;
    const struct dsort_inputs *in;
    struct dsort_job_stats *stats;
    struct dsort_error err;
    char job[256];                       /* the temp directories' job name (every rank's) */
    struct dsort_tempdirs td;            /* this rank's temp directories (count 0: none) */
    struct dsort_runset runs;            /* the runs spilled (or resumed) */
    struct dsort_recfmt_ctx fx;          /* the format's operations' context (recfmt.h) */
    struct dsort_runmerge rm;            /* spills, extra passes, the final merge's readers */
    struct dsort_sum128 sum_in, sum_out; /* --verify, -O manifest: valsort's CRC-32 sums */
    struct dsort_sum128 con_in, con_out; /* conservation (always): CRC32C sums */
    uint64_t out_done;                   /* bytes passed to the output so far (--progress) */
    uint64_t rounds_before;              /* rounds done by the earlier runs of a resumed job */
    uint64_t ck_rounds;                  /* --checkpoint: the rounds of the checkpoint on disk */
    uint64_t share_bytes;                /* the share's bytes (--progress's figure) */
    int stopped;                         /* stopped with a checkpoint */
    int have_td;                         /* td made (or resumed) */
    /* The format's checkpoint: fill k (zeroed here first) with the job's state after `rounds`
     * rounds; k->blob is allocated (dsort_ckpt_free frees it). x: fmt_ctx. */
    enum dsort_status (*fill)(void *x, uint64_t rounds, struct dsort_ckpt *k,
                              struct dsort_error *err);
    void *fmt_ctx; /* the format's pipeline state (struct ext, struct lx) */
};

/* Local: set up j (zeroed) for a job over c, o, in with figures in stats; fill and fmt_ctx:
 * the format's checkpoint and its state. */
void dsort_ooc_init(struct dsort_ooc *j, const struct dsort_comm *c,
                    const struct dsort_job_options *o, const struct dsort_inputs *in,
                    struct dsort_job_stats *stats,
                    enum dsort_status (*fill)(void *, uint64_t, struct dsort_ckpt *,
                                              struct dsort_error *),
                    void *fmt_ctx);

/* Collective: this rank's temp directories (for spilled runs), unless made. Agrees. */
enum dsort_status dsort_ooc_tempdirs(struct dsort_ooc *j);

/* Merge k sorted in-memory cursors of the format into a new run (the spill phase); the
 * stats' runs and spill bytes follow. */
enum dsort_status dsort_ooc_spill(struct dsort_ooc *j, void *cur, size_t k);

/* The run files' merge plan (dsort_runmerge_plan's arguments) and the extra passes down to the
 * fan-in; pc is begun at phase ph before the passes (the caller ends it). Not agreed. */
enum dsort_status dsort_ooc_reduce(struct dsort_ooc *j, uint64_t mem, size_t min_block,
                                   unsigned char *const *region, const size_t *region_len,
                                   size_t nregion, enum dsort_phase ph,
                                   struct dsort_phase_clock *pc);

/* Local, for a format's part of a resume (dsort_job_resume's take, once the format has checked
 * the checkpoint fits): the checkpoint's runs, rounds and input sums. */
enum dsort_status dsort_ooc_resume_take(struct dsort_ooc *j, const struct dsort_ckpt *k);

/* Local, for a format's fill (ooc_ckpt.c): zero k, then fill the blob (the splitters s in the
 * format's encoding, allocated: dsort_ckpt_free frees it) and what every format's checkpoint
 * holds (rounds, bytes read, the input's sums); the format adds its position and run block. */
enum dsort_status dsort_ooc_ckpt_fill(const struct dsort_ooc *j, const struct dsort_recfmt *fmt,
                                      uint64_t rounds, const struct dsort_recfmt_splits *s,
                                      struct dsort_ckpt *k, struct dsort_error *err);

/* Local, for a format's resume: s (ks set for fixed; line and len arrays for lines) read from
 * k's blob, pointing into it (the caller copies what it keeps); 0 when the blob does not fit
 * this job's ranks. */
int dsort_ooc_ckpt_splits(const struct dsort_ooc *j, const struct dsort_recfmt *fmt,
                          struct dsort_ckpt *k, struct dsort_recfmt_splits *s);

/* Collective, at the end of a round: save a checkpoint after `rounds` rounds of the job (the
 * format's fill), with stop, stop with it, leaving the runs on disk (j->stopped). Agrees. */
enum dsort_status dsort_ooc_end_round(struct dsort_ooc *j, uint64_t rounds, int stop);

/* runmerge's on_pass under --checkpoint (ctx: the struct dsort_ooc): rewrite the checkpoint
 * with the runs after a pass. */
enum dsort_status dsort_ooc_ckpt_pass(void *ctx, const struct dsort_runset *runs, size_t k,
                                      struct dsort_error *err);

/* Collective: set this rank's share of the output to `bytes`, then stream write(ctx, os) into
 * it through the output's writer thread (outsink.h: a buffer of buf bytes; seen(j) is shown
 * every byte passed on) in phase ph (what a signal names), its time counted as phase timed;
 * the stats' bytes written follow. Not agreed after
 * the write (the caller agrees). */
struct dsort_output_sink;
enum dsort_status
dsort_ooc_to_output(struct dsort_ooc *j, struct dsort_output *out, uint64_t bytes, size_t buf,
                    void (*seen)(void *, const unsigned char *, size_t),
                    enum dsort_status (*write)(void *ctx, struct dsort_output_sink *os), void *ctx,
                    enum dsort_phase ph, enum dsort_phase timed);

/* The cursors a merge into the output reads (the runs, or pieces in memory): open sets *cur to
 * n cursors of the format; close ends them. Open may come again after a close (-u's counting
 * merge reads them twice). */
struct dsort_ooc_src {
    enum dsort_status (*open)(void *ctx, void **cur, struct dsort_error *err);
    void (*close)(void *ctx);
    void *ctx;
    size_t n;
};

/* What a pipeline's final merge gives beyond the format table (ooc_merge.c): the merge plan,
 * the buffers, and the phases (the fault hooks and --stats name them per format). */
struct dsort_ooc_final {
    uint64_t mem; /* the merge plan (dsort_ooc_reduce's) */
    size_t min_block;
    unsigned char *const *region;
    const size_t *region_len;
    size_t nregion;
    enum dsort_phase passes; /* the extra passes' phase (ended once they are done) */
    enum dsort_phase uniq;   /* -u's merge into a run, or its counting merge */
    enum dsort_phase write;  /* the merge into the output (what a signal names) */
    enum dsort_phase timed;  /* ... its time counted as this phase */
    size_t buf;              /* the output sink's buffer */
    void (*seen)(void *, const unsigned char *, size_t); /* the sink's view (ctx: fmt_ctx) */
    unsigned char *copy;  /* -u into a run: a run reader's buffers (runfile.h), free by now */
    unsigned char *first; /* -u into a run: room for one record */
};

/* Collective: merge src into the output, setting this rank's share of it to `bytes` (the size
 * before -u; the format's -u policy, recfmt.h, sizes it otherwise); the stats' records and
 * bytes written follow, and the bytes written must be the share (unless -u into parts, -O).
 * Not agreed after the write (the caller agrees). */
enum dsort_status dsort_ooc_write(struct dsort_ooc *j, struct dsort_output *out,
                                  const struct dsort_ooc_src *src, uint64_t bytes,
                                  const struct dsort_ooc_final *f);

/* Collective: the extra passes down to the fan-in, then the runs merged into the output
 * (dsort_ooc_write); the runs go after a success unless --checkpoint lists them; the merge's
 * readers are released. Agrees. */
enum dsort_status dsort_ooc_final_merge(struct dsort_ooc *j, struct dsort_output *out,
                                        const struct dsort_ooc_final *f);

/* Local, after the final merge ended with st: a checkpoint on disk outlives a failure that is
 * not its own (a damaged run, DSORT_EFORMAT, is) and goes once the output is committed;
 * without one the runs go now. */
void dsort_ooc_merged(struct dsort_ooc *j, enum dsort_status st);

/* Collective: check and commit the output (dsort_job_finish); the checkpoint goes with a
 * success, and is kept after a failure if it can be read. The exit code. */
int dsort_ooc_finish(struct dsort_ooc *j, struct dsort_output *out,
                     const struct dsort_job_sums *sums);

/* Local, on an agreed error: abandon the output; a checkpoint on disk (of a resumed job, or
 * saved by this one) outlives the error. */
void dsort_ooc_fail(struct dsort_ooc *j, struct dsort_output *out);

/* Local: free the runs, the merge's readers and the temp directories (what is still on them). */
void dsort_ooc_release(struct dsort_ooc *j);

/* A record format's out-of-core pipeline (ooc_fixed.c, ooc_lines.c): what the skeleton's one
 * sequence (ooc_sort.c) calls, in this order. x: the format's state, `size` bytes zeroed by the
 * skeleton, its struct dsort_ooc at offset j_off (set up by dsort_ooc_init before setup). */
struct dsort_ooc_pipeline {
    const struct dsort_recfmt *fmt; /* the format's table: o->recfmt chooses the pipeline */
    size_t size, j_off;
    /* ooc.h's fill: the format's checkpoint after `rounds` rounds. */
    enum dsort_status (*fill)(void *x, uint64_t rounds, struct dsort_ckpt *k,
                              struct dsort_error *err);
    /* Collective: the state for the share sh; the budget agreed over all ranks, j's
     * share_bytes. Cannot fail. */
    void (*setup)(void *x, const struct dsort_share *sh);
    /* Collective, may be NULL: before the sample (fixed records: the buffers, which a resume
     * checks the checkpoint's runs against). Agrees. */
    enum dsort_status (*prepare)(void *x);
    /* Temp directories: made (dsort_ooc_tempdirs) before the sample, or, when lazy, by the
     * rounds once a run is to be spilled (lines: none for a job in memory). */
    int lazy_tempdirs;
    /* Collective, may be NULL: first in the sample phase (lines: where the share's first line
     * starts). Agrees. */
    enum dsort_status (*position)(void *x);
    /* The splitters (not on --resume; the skeleton agrees after each step): local, this rank's
     * sample of its share (kept in x); collective, the splitters selected over every rank's
     * sample, which stays on its rank (mpi/splitters.h; *rounds: the selection's rounds);
     * local, the sample freed (after an error too). */
    enum dsort_status (*sample)(void *x);
    enum dsort_status (*select)(void *x, int *rounds);
    void (*sample_free)(void *x);
    /* Local, on --resume: dsort_job_resume's take (the checkpoint's splitters, position, run
     * block; dsort_ooc_resume_take). */
    enum dsort_status (*resume)(void *x, struct dsort_ckpt *k);
    /* Collective, after the sample: the run files' block (fitted to the rounds, or the
     * checkpoint's) and the format's context for them (dsort_ooc_runs_init's). */
    void (*runs)(void *x, struct dsort_recfmt_ctx *fx, size_t *block);
    /* Collective, may be NULL: the whole job another way (lines: in memory over the mapped
     * input); *taken: it was (then the job is committed). Agrees. */
    enum dsort_status (*direct)(void *x, struct dsort_output *out, int *taken);
    /* Collective: the rounds (dsort_ooc_rounds), their buffers freed after them; *wrote: the
     * rounds wrote the output (no final merge). Agrees. */
    enum dsort_status (*rounds)(void *x, struct dsort_output *out, int *wrote);
    /* Collective: the final merge's description (dsort_ooc_final_merge's). */
    void (*final)(void *x, struct dsort_ooc_final *f);
    /* Local: the bytes of this rank's output, for the commit's check (dsort_job_sums). */
    uint64_t (*bytes_out)(const void *x);
    /* Local: free the format's buffers (the skeleton then releases j and frees x). */
    void (*release)(void *x);
};

extern const struct dsort_ooc_pipeline dsort_ooc_fixed; /* ooc_fixed.c */
extern const struct dsort_ooc_pipeline dsort_ooc_lines; /* ooc_lines.c */

#endif
