/* ooc_fixed.c - the out-of-core pipeline for fixed records: some rank's share does not fit
 * its memory budget.
 *
 *   sample: every rank preads a few thousand records at drawn positions of its share and
 *           keeps them; the p-1 splitters (composite keys, so that equal keys are still split
 *           evenly; each sample weighs as its share) are selected over all ranks' samples in
 *           histogram rounds of O(p) bytes a rank (dsort_splitters_sample: none gathers them).
 *   rounds: each rank reads a memory-sized chunk (when the budget holds a third buffer C, a
 *           reader thread reads the next one into C during the round, ooc_ahead.h, when
 *           DSORT_READAHEAD=1 asks for it; else the kernel prefetches it), radix-sorts it, cuts
 * it by the splitters and sends every piece to its owner once. Each rank merges what it receives in
 * a round into one sorted run and spills it to a temp dir (checksummed blocks, written by a writer
 * thread). If a round would bring a rank more than its receive buffer holds (skewed input order),
 * the round is split into waves, each of which makes its own run. merge:  the runs are merged with
 * the largest fan-in that the open-file limit and the budget allow; only when there are more runs
 * than that are the smallest merged first (an extra pass over just those). The final merge writes
 * the output (ooc_merge.c). I/O: read input, write runs, read runs, write output: 2 reads + 2
 * writes of the data. With -u the deduplicated output goes through one more temp run, because its
 * size (and so every rank's offset in -o FILE) is known only after the final merge.
 *
 * Ties: with -s or -u, equal keys must keep input order across runs made in different
 * rounds, so every record carries its 8-byte global position while it is in flight and on
 * disk ("tagged" records); the default order breaks ties by the whole record and needs no tag.
 * The composite keys, the chunk's sort, its cut and the framing are the format's
 * (src/engine/fmt_fixed.c, recfmt.h); this file is the glue: the reads, the collectives, the
 * buffers, the checkpoint's position.
 *
 * Memory (src/engine/memplan.h, from the smallest budget of all ranks): A and B (a chunk each)
 * and, with read-ahead, C (as large as A: C and A swap at every read), plus 16 bytes a record
 * of chunk for the sort entries, plus two I/O blocks for the writer thread. In the merge
 * phase A, B and C hold the read buffers. A checkpoint records what the rounds consumed, not
 * what was read ahead: a resumed job reads the chunk read ahead again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agree.h"
#include "checkpoint.h"
#include "job.h"
#include "job_typed.h"
#include "keysort.h"
#include "mem.h"
#include "memplan.h"
#include "merge.h"
#include "ooc.h"
#include "ooc_ahead.h"
#include "ooc_round.h"
#include "progress.h"
#include "runfile.h"
#include "splitters.h"
#include "job_topo.h"
#include "phase.h"

/* The pipeline's state. */
struct ext {
    struct dsort_ooc j; /* the skeleton's state (ooc.h) */
    size_t rs, irs;     /* record size in the input and in flight (irs = rs + 8 when tagged) */
    int tagged;
    struct dsort_cmp cmp;       /* on in-flight records */
    struct dsort_recfmt_ctx fx; /* the format's operations' context (recfmt.h) */
    size_t ks;                  /* composite key bytes */
    uint64_t budget; /* the smallest memory budget of all ranks (the plan's, memplan.h) */
    unsigned char *splitters;
    unsigned char *sample; /* nsample composite keys, while the splitters are chosen */
    uint64_t nsample;
    uint64_t first, n; /* this rank's share of the inputs it opened */
    uint64_t g0;       /* global position of its first record */
    uint64_t chunk;    /* records per chunk */
    size_t block;
    size_t abytes, bbytes, ebytes; /* A also receives: 1/16 more than a chunk */
    size_t cbytes;                 /* C: the next chunk read ahead (0: no read-ahead) */
    unsigned char *a, *b, *c;
    struct dsort_ooc_ahead ahead;         /* the read in flight into C */
    uint64_t rchar0, phased0;             /* when it started: the process's reads, the phases' */
    struct dsort_sortent *ents, *scratch; /* scratch only when records are < 16 bytes */
    unsigned char *region[3];             /* the final merge's buffers: A, B (and C) */
    size_t region_len[3];
    /* stop and resume (job_ckpt.c) */
    uint64_t consumed; /* records of the share read by earlier runs of a resumed job */
    uint64_t ck_upto;  /* --checkpoint: the records of the share the checkpoint has consumed */
};

#define SAMPLES_PER_RANK 4096
#define SAMPLE_BYTES ((uint64_t)4 << 20) /* a rank's own samples (they stay on the rank) */
/* The splitters settle within this fraction of a bucket's samples of the exact sample
 * quantile: a few rounds fewer than exact, and well below the sampling error. */
#define SAMPLE_TOL 0.002

/* The pipeline's sample (not on --resume): a few thousand records at drawn positions of the
 * share (dsort_job_sample_positions: all of a smaller one), as composite keys; every rank
 * holds its own (SAMPLE_BYTES at most, outside the budget). Local. */
static enum dsort_status fixed_sample(void *ctx)
{
    struct ext *x = ctx;
    x->nsample = dsort_splitters_sample_count(x->n, 1, x->ks, SAMPLES_PER_RANK, SAMPLE_BYTES);
    uint64_t *at = malloc(x->nsample * sizeof *at + 1);
    x->sample = malloc(x->nsample * x->ks + 1);
    x->splitters = calloc((size_t)x->j.c->size, x->ks);
    enum dsort_status st = DSORT_OK;
    if (!x->sample || !at || !x->splitters)
        st = DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    if (!st) {
        dsort_job_sample_positions(x->g0, x->n, x->nsample, at);
        st = dsort_job_sample_keys(x->j.o, x->j.in, x->first, x->g0, at, x->nsample, &x->fx,
                                   x->sample, &x->j.err);
    }
    free(at);
    return st;
}

/* The pipeline's selection: the p-1 splitters over all ranks' samples
 * (dsort_splitters_sample). Collective. */
static enum dsort_status fixed_select(void *ctx, int *rounds)
{
    struct ext *x = ctx;
    return dsort_splitters_sample(x->j.c->comm, x->sample, x->nsample, x->n, x->ks, SAMPLE_TOL,
                                  x->splitters, rounds, &x->j.err);
}

static void fixed_sample_free(void *ctx)
{
    struct ext *x = ctx;
    free(x->sample);
    x->sample = NULL;
}

/* The rounds (ooc_round.h's ops): the chunk of m records at share position at, read by round
 * r of rounds (the most of any rank). */
struct ext_round {
    struct ext *x;
    uint64_t at, m, r, rounds;
};

/* Records [at, at + m) of the share into A: the read ahead of them (A and C swap), or a read
 * now; the input sums follow. Local. */
static enum dsort_status read_chunk(struct ext *x, uint64_t at, uint64_t m)
{
    struct dsort_ooc *j = &x->j;
    if (dsort_ooc_ahead_is(&x->ahead, x->first + at, m)) {
        enum dsort_status st = dsort_ooc_ahead_wait(&x->ahead, &j->sum_in, &j->con_in, &j->err);
        unsigned char *t = x->a;
        x->a = x->c;
        x->c = t;
        return st;
    }
    dsort_ooc_ahead_drop(&x->ahead); /* not the chunk wanted (not reached) */
    enum dsort_status st =
        dsort_job_read(j->o, j->in, x->first + at, m, x->a, &j->sum_in, &j->con_in, &j->err);
    if (!st && at + m < x->n && !x->c) /* let the kernel fetch the next chunk meanwhile */
        dsort_inputs_advise(j->in, x->first + at + m,
                            x->n - at - m < x->chunk ? x->n - at - m : x->chunk);
    return st;
}

/* The bytes read that the phases counted (--stats). */
static uint64_t phased_reads(const struct dsort_job_stats *s)
{
    uint64_t n = 0;
    for (int p = 0; p < PH_COUNT; p++)
        n += s->io_read[p];
    return n;
}

/* The reads since the read ahead started that no phase counted (it read between two phases):
 * the read phase's, so that --stats' phases still add up to every byte read. */
static uint64_t unphased_reads(const struct ext *x)
{
    if (!x->ahead.running)
        return 0;
    const uint64_t all = dsort_ooc_ahead_rchar() - x->rchar0;
    const uint64_t seen = phased_reads(x->j.stats) - x->phased0;
    return all > seen ? all - seen : 0;
}

/* Read the round's chunk into A; with C, start reading the next one into it. A read ahead
 * that failed fails this read (agreed here). The read phase (--stats) is the time the round
 * waits for its chunk; the bytes read and the sums are counted as the chunk is consumed.
 * Collective; agrees. */
static enum dsort_status ext_read(void *ctx, int *more)
{
    struct ext_round *er = ctx;
    struct ext *x = er->x;
    struct dsort_phase_clock pc;
    const uint64_t at =
        x->consumed + er->r * x->chunk < x->n ? x->consumed + er->r * x->chunk : x->n;
    const uint64_t m = x->n - at < x->chunk ? x->n - at : x->chunk;
    er->at = at;
    er->m = m;
    *more = ++er->r < er->rounds;
    const uint64_t unphased = unphased_reads(x);
    dsort_job_phase_begin(&pc, PH_READ);
    enum dsort_status st = read_chunk(x, at, m);
    x->j.stats->bytes_read += m * dsort_job_out_rec(x->j.o); /* the input's, not widened */
    dsort_job_phase_end(x->j.stats, PH_READ, &pc);
    x->j.stats->io_read[PH_READ] += unphased;
    if ((st = dsort_comm_agree(x->j.c, st, &x->j.err)))
        return st;
    x->rchar0 = dsort_ooc_ahead_rchar();
    x->phased0 = phased_reads(x->j.stats);
    if (x->c && at + m < x->n) /* not started: the next read reads it */
        (void)dsort_ooc_ahead_start(&x->ahead, x->j.o, x->j.in, x->first + at + m,
                                    x->n - at - m < x->chunk ? x->n - at - m : x->chunk, x->c);
    return DSORT_OK;
}

/* Sort the chunk, cut it by the splitters and frame it into B as in-flight records (the
 * format's table, recfmt.h: the record, plus its global position when tagged). */
static enum dsort_status ext_frame(void *ctx, struct dsort_ooc_send *s)
{
    struct ext_round *er = ctx;
    struct ext *x = er->x;
    const struct dsort_recfmt *f = &dsort_recfmt_fixed;
    const int p = x->j.c->size;
    struct dsort_recfmt_chunk c = {.data = x->a,
                                   .n = (size_t)er->m,
                                   .ents = x->ents,
                                   .scratch = x->scratch ? x->scratch
                                                         : (struct dsort_sortent *)(void *)x->b,
                                   .g0 = x->g0 + er->at};
    const struct dsort_recfmt_splits sp = {.n = (size_t)(p - 1), .keys = x->splitters, .ks = x->ks};
    size_t *end = malloc((size_t)p * sizeof *end);
    if (!end)
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SORT);
    f->sort_chunk(&x->fx, &c);
    dsort_job_phase_end(x->j.stats, PH_SORT, &pc);
    dsort_job_phase_begin(&pc, PH_SPLIT);
    enum dsort_status st = f->cut(&x->fx, &c, &sp, end, &x->j.err);
    dsort_job_phase_end(x->j.stats, PH_SPLIT, &pc);
    dsort_job_phase_begin(&pc, PH_SORT);
    for (int d = 0; !st && d < p; d++) {
        const size_t from = d ? end[d - 1] : 0;
        s->displ[d] = from * x->irs;
        s->count[d] = f->frame(&x->fx, &c, from, end[d], x->b + from * x->irs);
    }
    dsort_job_phase_end(x->j.stats, PH_SORT, &pc);
    free(end);
    /* A receives, a wave at most what it holds */
    *s = (struct dsort_ooc_send){.buf = x->b,
                                 .count = s->count,
                                 .displ = s->displ,
                                 .rbuf = x->a,
                                 .rsize = x->abytes,
                                 .cap = x->abytes,
                                 .unit = x->irs};
    return st;
}

static uint64_t ext_done(void *ctx)
{
    const struct ext_round *er = ctx;
    return (er->at + er->m) * er->x->rs;
}

/* A checkpoint at the round's end: the share consumed up to the round's chunk's end. */
static void ext_mark(void *ctx)
{
    struct ext_round *er = ctx;
    er->x->ck_upto = er->at + er->m;
}

/* The fixed format's checkpoint (ooc.h's fill): the job's state after `rounds` rounds, the
 * share read up to x->ck_upto; the blob is the splitters (p-1 composite keys). */
static enum dsort_status fill_ckpt(void *ctx, uint64_t rounds, struct dsort_ckpt *k,
                                   struct dsort_error *err)
{
    const struct ext *x = ctx;
    const struct dsort_recfmt_splits s = {
        .n = (size_t)(x->j.c->size - 1), .keys = x->splitters, .ks = x->ks};
    enum dsort_status st = dsort_ooc_ckpt_fill(&x->j, &dsort_recfmt_fixed, rounds, &s, k, err);
    k->consumed = x->ck_upto;
    k->block = x->block;
    k->sample_from = x->first; /* the share's records read so far */
    k->sample_to = x->first + x->ck_upto;
    return st;
}

/* Read, sort and exchange every chunk of this rank's share (from x->consumed on, for a
 * resumed job); the sort entries go after the rounds. Collective; agrees. */
static enum dsort_status fixed_rounds(void *ctx, struct dsort_output *out, int *wrote)
{
    static const struct dsort_ooc_round_ops ops = {
        .read = ext_read, .frame = ext_frame, .done = ext_done, .mark = ext_mark};
    struct ext *x = ctx;
    struct ext_round er = {.x = x};
    (void)out;
    *wrote = 0;
    er.rounds = dsort_comm_max(x->j.c, (x->n - x->consumed + x->chunk - 1) / x->chunk);
    enum dsort_status st = dsort_ooc_rounds(&x->j, &dsort_recfmt_fixed, &ops, &er, er.rounds > 0);
    dsort_ooc_ahead_drop(&x->ahead); /* a stop or an error: what was read ahead is not used */
    dsort_mem_free(x->ents, x->ebytes);
    dsort_mem_free(x->scratch, x->ebytes);
    x->ents = x->scratch = NULL;
    return st;
}

static void fixed_release(void *ctx)
{
    struct ext *x = ctx;
    dsort_ooc_ahead_drop(&x->ahead);
    dsort_mem_free(x->a, x->abytes);
    dsort_mem_free(x->b, x->bbytes);
    dsort_mem_free(x->c, x->cbytes);
    x->c = NULL;
    dsort_mem_free(x->ents, x->ebytes);
    dsort_mem_free(x->scratch, x->ebytes);
    x->a = x->b = NULL;
    x->ents = x->scratch = NULL;
    free(x->splitters);
    x->splitters = NULL;
}

/* DSORT_READAHEAD=1: the rounds' reader thread (off by default: with the page cache warm it
 * cost more in the smaller chunk's extra rounds than it saved, docs/performance.md). */
static int readahead_wanted(void)
{
    return dsort_job_env_flag("DSORT_READAHEAD");
}

/* The plan's inputs (memplan.h): the budget agreed over all ranks (x->budget). */
static struct dsort_memplan_in plan_in(const struct ext *x)
{
    return (struct dsort_memplan_in){.fmt = &dsort_recfmt_fixed,
                                     .budget = x->budget,
                                     .block = x->j.o->block,
                                     .temp_disks = dsort_job_temp_disks(x->j.o),
                                     .rec = x->irs,
                                     .rec_in = x->rs,
                                     .records = x->n,
                                     .readahead = readahead_wanted()};
}

/* Size the chunk, the I/O block and buffers A and B from the budget (memplan.h), and
 * allocate the buffers. Local. */
static enum dsort_status plan_memory(struct ext *x)
{
    const struct dsort_memplan_in in = plan_in(x);
    struct dsort_memplan p;
    dsort_memplan_compute(&in, &p);
    if (!p.fits) {
        char b1[32];
        return DSORT_ERR(
            &x->j.err, DSORT_ENOMEM, 0,
            "the memory budget %s (-S) is too small to sort %zu-byte records out of "
            "core; give at least -S %lluK",
            dsort_mem_format(x->budget, b1, sizeof b1), x->rs,
            (unsigned long long)(dsort_memplan_least_budget(&in, 1024, x->budget, 0) >> 10));
    }
    x->block = p.block;
    x->chunk = p.chunk;
    x->bbytes = p.bbytes;
    x->abytes = p.abytes;
    x->ebytes = p.ebytes;
    x->cbytes = p.cbytes;
    x->a = dsort_mem_alloc(x->abytes);
    if (x->cbytes && !(x->c = dsort_mem_alloc(x->cbytes)))
        return dsort_job_alloc_error(&x->j.err, errno, "the read-ahead buffer", x->cbytes);
    x->b = dsort_mem_alloc(x->bbytes);
    x->ents = dsort_mem_alloc(x->ebytes);
    if (p.scratch)
        x->scratch = dsort_mem_alloc(x->ebytes);
    if (!x->a || !x->b || !x->ents || (p.scratch && !x->scratch))
        return dsort_job_alloc_error(&x->j.err, errno, "the sort buffers",
                                     x->abytes + x->bbytes + 2 * x->ebytes);
    return DSORT_OK;
}

/* The pipeline's prepare: the buffers. Collective; agrees. */
static enum dsort_status fixed_prepare(void *ctx)
{
    struct ext *x = ctx;
    return dsort_comm_agree(x->j.c, plan_memory(x), &x->j.err);
}

/* 2 reads + 2 writes at small budgets: the run files' block fitted to the runs expected
 * (memplan.h). rounds: the most rounds of any rank (agreed). Local. */
static void fit_block(struct ext *x, uint64_t rounds)
{
    struct dsort_memplan_in in = plan_in(x);
    struct dsort_memplan p;
    in.fit_runs = 1;
    in.rounds = rounds;
    dsort_memplan_compute(&in, &p);
    x->block = p.block;
}

/* The pipeline's runs: the block fitted to the rounds of the largest share (unless resumed:
 * the checkpoint's runs'); the runs hold in-flight records. Collective. */
static void fixed_runs(void *ctx, struct dsort_recfmt_ctx *fx, size_t *block)
{
    struct ext *x = ctx;
    if (!x->j.o->resume)
        fit_block(x, dsort_comm_max(x->j.c, (x->n + x->chunk - 1) / x->chunk));
    *fx = x->fx;
    *block = x->block;
}

/* A resumed job: take the checkpoint's splitters, runs, run block, position and figures.
 * Local (the caller agrees). */
static enum dsort_status resume_state(void *ctx, struct dsort_ckpt *k)
{
    struct ext *x = ctx;
    const size_t len = (size_t)(x->j.c->size - 1) * x->ks;
    struct dsort_recfmt_splits s = {.ks = x->ks};
    if (!dsort_ooc_ckpt_splits(&x->j, &dsort_recfmt_fixed, k, &s) || k->consumed > x->n ||
        k->block < 4096 || k->block > (1u << 30))
        return DSORT_ERR(&x->j.err, DSORT_EFORMAT, 0,
                         "the checkpoint of rank %d does not fit this job (splitters of %zu "
                         "bytes, %" PRIu64 " of %" PRIu64 " records read, run block %" PRIu64
                         "); not resuming from it",
                         x->j.c->rank, k->blob_len, k->consumed, x->n, k->block);
    /* The kept runs are read back in their own blocks: a smaller -S than the stopped job's may
     * not hold two of their read buffers (then no number of merge passes helps). Refused
     * before anything is touched, naming the budget that does. */
    const struct dsort_memplan_in in = plan_in(x);
    if (!dsort_memplan_reads_fit(&in, x->abytes, x->bbytes, x->cbytes, k->block)) {
        char b1[32], b2[32], b3[32];
        uint64_t need = dsort_memplan_least_budget(&in, (uint64_t)1 << 20, 0, k->block);
        dsort_mem_format(x->budget, b1, sizeof b1);
        dsort_mem_format(k->block, b2, sizeof b2);
        dsort_mem_format(need, b3, sizeof b3);
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, 0,
                         "cannot resume with the memory budget %s (-S): the checkpoint's runs "
                         "were written in blocks of %s, and merging them needs -S %s or more; "
                         "the checkpoint is left as it was",
                         b1, b2, need ? b3 : "(more than 1 TiB)");
    }
    if (!(x->splitters = calloc((size_t)x->j.c->size, x->ks)))
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    memcpy(x->splitters, s.keys, len);
    x->block = (size_t)k->block; /* the runs' */
    x->consumed = x->ck_upto = k->consumed;
    x->j.stats->bytes_read = 0; /* this run's reads only (--stats) */
    return dsort_ooc_resume_take(&x->j, k);
}

/* The output sink's view of the records passed on: their checksums. */
static void count_out(void *ctx, const unsigned char *p, size_t len)
{
    struct ext *x = ctx;
    const size_t ors = dsort_job_out_rec(x->j.o); /* the sink narrowed typed keys' records */
    dsort_job_sum_records(x->j.o->output_dir || x->j.o->verify, p, len / ors, ors, &x->j.sum_out,
                          &x->j.con_out);
    x->j.out_done += len;
    dsort_progress_local("write", x->n * x->rs + x->j.out_done);
}

/* The final merge (ooc_merge.c): the read buffers are carved from A and B (free now); -u's
 * run is read back through A, its first record kept in B; the output buffer holds one page
 * more than a block (room for a whole block after a carried partial page). */
static void fixed_final(void *ctx, struct dsort_ooc_final *f)
{
    struct ext *x = ctx;
    x->region[0] = x->a;
    x->region[1] = x->b;
    x->region_len[0] = x->abytes;
    x->region_len[1] = x->bbytes;
    x->region[2] = x->c;
    x->region_len[2] = x->cbytes;
    *f = (struct dsort_ooc_final){.region = x->region,
                                  .region_len = x->region_len,
                                  .nregion = x->c ? 3 : 2,
                                  .passes = PH_MERGE,
                                  .uniq = PH_MERGE,
                                  .write = PH_WRITE,
                                  .timed = PH_WRITE,
                                  .buf = dsort_run_stride(x->rs, x->block) + DSORT_RUN_ALIGN,
                                  .seen = count_out,
                                  .copy = x->a,
                                  .first = x->b};
    x->j.fx.rec_out = x->rs; /* the tag dropped */
}

/* The records written, in the output's record size (typed keys' records narrowed). */
static uint64_t fixed_bytes_out(const void *ctx)
{
    const struct ext *x = ctx;
    return x->j.stats->records_out * dsort_job_out_rec(x->j.o);
}

/* The pipeline's setup: the record in flight (tagged with its position under -s and -u), the
 * composite key, the share, the budget (the smallest of all ranks, as for lines:
 * docs/design.md, "One budget for every rank"). Collective. */
static void fixed_setup(void *ctx, const struct dsort_share *sh)
{
    struct ext *x = ctx;
    const struct dsort_job_options *o = x->j.o;
    x->rs = o->fmt.rec_size;
    x->fx = (struct dsort_recfmt_ctx){.unique = o->ord.unique};
    x->ks = dsort_recfmt_fixed_init(&x->fx, &x->cmp, &o->fmt, &o->ord);
    x->tagged = x->fx.tagged;
    x->irs = x->fx.rec;
    x->first = sh->first;
    x->n = sh->n;
    x->g0 = sh->g0;
    x->j.stats->records_in = x->n;
    x->j.share_bytes = x->n * x->rs;
    x->budget = dsort_agree_min(x->j.c, x->j.stats->budget);
}

const struct dsort_ooc_pipeline dsort_ooc_fixed = {.fmt = &dsort_recfmt_fixed,
                                                   .size = sizeof(struct ext),
                                                   .j_off = offsetof(struct ext, j),
                                                   .fill = fill_ckpt,
                                                   .setup = fixed_setup,
                                                   .prepare = fixed_prepare,
                                                   .sample = fixed_sample,
                                                   .select = fixed_select,
                                                   .sample_free = fixed_sample_free,
                                                   .resume = resume_state,
                                                   .runs = fixed_runs,
                                                   .rounds = fixed_rounds,
                                                   .final = fixed_final,
                                                   .bytes_out = fixed_bytes_out,
                                                   .release = fixed_release};
