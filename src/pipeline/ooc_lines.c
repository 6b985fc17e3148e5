/* ooc_lines.c - the pipeline for text lines (--format lines): variable-length records in GNU
 * sort's order.
 *
 *   sample: lines from evenly spaced windows of every rank's share -> p-1 splitter lines
 *   per round (every rank, until all are done): read a chunk of whole lines -> index + sort
 *     -> cut by the splitters -> exchange (in waves that fit the receive allowance)
 *     -> merge the received pieces: into the output directly when everything arrived in
 *        one round and one wave (in memory), else into a spilled run
 *   final: merge the runs (extra passes beyond the fan-in) -> output -> commit
 *
 * A rank owns the lines that start in its byte range of the input (the first line of a range
 * that begins mid-line belongs to the rank before, as Hadoop's line reader does); a file's
 * last line always ends at the file's end and gets an eol if it had none. Equal keys always go
 * to one rank, so -u needs no look across ranks; with -s and -u lines carry their input
 * position through the exchange and spills, so that ties keep input order.
 * Memory (src/engine/memplan.h): thirds of the budget (the smallest of all ranks'): the chunk
 * (lines and their 16-byte index entries), the framed send buffer, the receive buffer; the
 * sort's scratch entries are allocated while the send buffer is not.
 * Sorting a chunk, cutting it by the splitters, framing its pieces and the sample keys are the
 * format's (src/engine/fmt_lines.c, recfmt.h); reading whole lines and choosing the splitters
 * are in lines_read.c (lines_job.h); this file is the lines' glue in the out-of-core skeleton
 * (ooc.h's pipeline table, dsort_ooc_lines): setup, position, the run block, the mapped
 * shortcut, rounds (the buffers the format's operations work in), final merge, checkpoint.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "checkpoint.h"
#include "lines_job.h"
#include "mem.h"
#include "memplan.h"
#include "ooc_round.h"
#include "output.h"
#include "outsink.h"
#include "progress.h"
#include "runfile.h"
#include "job_ckpt.h"
#include "job_topo.h"
#include "phase.h"

/* ---- runs ---- */

/* Collective: the plan (memplan.h) from the budget agreed over all ranks; with fit_runs, the
 * run files' block fitted to the rounds of the largest share (most_need bytes: 0 in memory)
 * and to the most temp disks of any rank. */
static void plan(struct lx *x, int fit_runs, uint64_t most_need)
{
    struct dsort_memplan_in in = {.fmt = &dsort_recfmt_lines,
                                  .budget = x->budget,
                                  .block = x->j.o->block,
                                  .temp_disks = 1,
                                  .share_bytes = x->sh.n,
                                  .avg_line = x->avg_line};
    if (fit_runs) {
        in.temp_disks = (size_t)dsort_comm_max(x->j.c, (uint64_t)dsort_job_temp_disks(x->j.o));
        in.fit_runs = 1;
        in.rounds = (most_need + x->mp.third - 1) / x->mp.third;
    }
    dsort_memplan_compute(&in, &x->mp);
}

/* The largest payload of a run file's oversize block: one line with its position. */
static size_t max_payload(const struct lx *x)
{
    return (size_t)x->max_line + 8 + 64;
}

/* ---- the rounds ---- */

/* The lines' final merge (ooc_merge.c): the passes' phase is merge, the merge into the
 * output is timed as the write phase (phases do not nest: their I/O would count twice), -u's
 * counting merge as the merge phase; a page more than a block is room for a block after a
 * carried partial page. */
static struct dsort_ooc_final final_of(struct lx *x)
{
    const struct dsort_job_options *o = x->j.o;
    x->j.fx.sum = o->verify || o->output_dir ? &x->j.sum_out : NULL;
    x->j.fx.sum_c = &x->j.con_out;
    return (struct dsort_ooc_final){.mem = x->mp.merge_mem,
                                    .min_block = 1024,
                                    .passes = PH_MERGE,
                                    .uniq = PH_MERGE,
                                    .write = PH_WRITE,
                                    .timed = PH_WRITE,
                                    .buf = x->mp.out_block + DSORT_RUN_ALIGN,
                                    .seen = dsort_lines_job_out_seen};
}

/* Cursors already open, opened again by reopen() for the second merge that -u needs. */
struct reopen_src {
    struct lx *x;
    struct dsort_line_cursor *cur;
    size_t n;
    enum dsort_status (*reopen)(struct lx *, struct dsort_line_cursor *, size_t, void *);
    void *rctx;
    int opened;
};

static enum dsort_status reopen_open(void *ctx, void **cur, struct dsort_error *err)
{
    struct reopen_src *r = ctx;
    (void)err;
    *cur = r->cur;
    return r->opened++ ? r->reopen(r->x, r->cur, r->n, r->rctx) : DSORT_OK;
}

static void reopen_close(void *ctx)
{
    (void)ctx;
}

/* Merge cursors into the output at this rank's offset 0; sets the share first (collective).
 * cursors are re-opened by reopen() for the second pass that -u needs. */
static enum dsort_status
write_output(struct lx *x, struct dsort_output *out, struct dsort_line_cursor *cur, size_t n,
             uint64_t known_bytes,
             enum dsort_status (*reopen)(struct lx *, struct dsort_line_cursor *, size_t, void *),
             void *rctx)
{
    struct reopen_src r = {x, cur, n, reopen, rctx, 0};
    const struct dsort_ooc_src src = {reopen_open, reopen_close, &r, n};
    const struct dsort_ooc_final f = final_of(x);
    return dsort_ooc_write(&x->j, out, &src, known_bytes, &f);
}

struct mem_pieces {
    const unsigned char *buf;
    const uint64_t *off, *len;
};

static enum dsort_status reopen_memory(struct lx *x, struct dsort_line_cursor *cur, size_t n,
                                       void *ctx)
{
    const struct mem_pieces *m = ctx;
    for (size_t i = 0; i < n; i++)
        dsort_recfmt_lines.cursor_memory(&x->j.fx, &cur[i], m->buf + m->off[i], (size_t)m->len[i]);
    return DSORT_OK;
}

/* The chunk as the format's chunk operations see it (recfmt.h); at: its positions' context. */
struct chunk_at {
    const struct lx *x;
    const struct chunk *k;
};

static uint64_t chunk_pos_at(const void *ctx, uint64_t off)
{
    const struct chunk_at *c = ctx;
    return dsort_lines_job_chunk_pos(c->x, c->k, off);
}

static struct dsort_recfmt_chunk chunk_of(const struct chunk *k, const struct chunk_at *at)
{
    return (struct dsort_recfmt_chunk){.data = k->a,
                                       .n = k->n,
                                       .bytes = k->used,
                                       .ents = chunk_ents(k),
                                       .pos = chunk_pos_at,
                                       .pos_ctx = at};
}

/* Sort the chunk's entries, and allocate the send buffer (*sbuf, *sbytes: the chunk's framed
 * lines at most, recfmt.h's frame_bytes). */
static enum dsort_status sort_chunk(struct lx *x, struct dsort_recfmt_chunk *c,
                                    unsigned char **sbuf, uint64_t *sbytes)
{
    const struct dsort_recfmt *f = &dsort_recfmt_lines;
    /* The send buffer is the sort's scratch first (when it is large enough: lines of 8 bytes
     * and more), so that no memory is touched for the first time twice. */
    *sbytes = f->frame_bytes(&x->j.fx, c);
    if (!(*sbuf = dsort_mem_alloc(*sbytes ? (size_t)*sbytes : 1)))
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno,
                         "cannot allocate %" PRIu64 " bytes for the exchange", *sbytes);
    if (c->n > 1) {
        size_t tbytes = c->n * sizeof(struct dsort_line_ent);
        c->scratch = tbytes <= *sbytes ? (void *)*sbuf : dsort_mem_alloc(tbytes);
        if (!c->scratch)
            return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "cannot allocate the sort scratch");
        f->sort_chunk(&x->j.fx, c);
        if (c->scratch != (void *)*sbuf)
            dsort_mem_free(c->scratch, tbytes);
        c->scratch = NULL;
    }
    return DSORT_OK;
}

/* Cut the sorted chunk by the splitters and frame its pieces into s->buf (recfmt.h). */
static enum dsort_status frame_chunk(struct lx *x, const struct dsort_recfmt_chunk *c,
                                     struct dsort_ooc_send *s)
{
    const struct dsort_recfmt *f = &dsort_recfmt_lines;
    const int p = x->j.c->size;
    const struct dsort_recfmt_splits sp = dsort_lines_job_splits(x);
    size_t *end = malloc((size_t)p * sizeof *end);
    if (!end)
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status st = f->cut(&x->j.fx, c, &sp, end, &x->j.err);
    uint64_t at = 0;
    for (int d = 0; !st && d < p; d++) {
        s->displ[d] = at;
        s->count[d] = f->frame(&x->j.fx, c, d ? end[d - 1] : 0, end[d], s->buf + at);
        at += s->count[d];
    }
    free(end);
    return st;
}

/* The rounds (ooc_round.h's ops): the chunk k; direct: the job sorts in memory, unless the
 * share turns out not to fit one round; wrote: the round wrote the output (one round, one
 * wave, in memory); arena: the chunk's size as planned. */
struct lines_round {
    struct lx *x;
    struct chunk *k;
    int direct, wrote;
    struct dsort_output *out;
    uint64_t arena;
};

/* Collective: every rank has read its share (or its position is past the inputs' end). */
static int all_read(const struct lx *x)
{
    const struct dsort_inputs *in = x->j.in;
    return dsort_comm_all_ok(x->j.c,
                             x->pos >= x->end || dsort_lines_file_at(in, x->pos) == in->count);
}

/* Read a chunk of whole lines. Collective; agrees. */
static enum dsort_status lines_read(void *ctx, int *more)
{
    struct lines_round *lr = ctx;
    struct lx *x = lr->x;
    struct chunk *k = lr->k;
    struct dsort_job_stats *stats = x->j.stats;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_READ);
    enum dsort_status st = dsort_lines_job_fill(x, k, &x->j.err);
    stats->bytes_read += k->used;
    stats->records_in += k->n;
    if (!st)
        dsort_lines_job_sum(x, k->a, chunk_ents(k), k->n);
    dsort_job_phase_end(stats, PH_READ, &pc);
    if ((st = dsort_comm_agree(x->j.c, st, &x->j.err)))
        return st;
    /* read: half of this round's pass; sorting, the exchange and the spill are the rest */
    uint64_t got = x->pos - x->sh.first;
    dsort_progress_step(x->j.c, "exchange", got > k->used / 2 ? got - k->used / 2 : 0);
    *more = !all_read(x);
    if (lr->direct && *more) /* the estimate was wrong (very short lines): spill after all */
        lr->direct = 0;
    stats->external = !lr->direct;
    return DSORT_OK;
}

/* Sort the chunk and frame it; it receives into the chunk's arena (its lines are all in the
 * send buffer then) when a wave fits, a third of the budget a wave. */
static enum dsort_status lines_frame(void *ctx, struct dsort_ooc_send *s)
{
    struct lines_round *lr = ctx;
    struct dsort_phase_clock pc;
    const struct chunk_at at = {lr->x, lr->k};
    struct dsort_recfmt_chunk c = chunk_of(lr->k, &at);
    uint64_t sbytes = 0;
    dsort_job_phase_begin(&pc, PH_SORT);
    enum dsort_status st = sort_chunk(lr->x, &c, &s->buf, &sbytes);
    s->own = sbytes ? sbytes : 1;
    if (!st)
        st = frame_chunk(lr->x, &c, s);
    dsort_job_phase_end(lr->x->j.stats, PH_SORT, &pc);
    s->rbuf = lr->k->a;
    s->rsize = lr->k->size;
    s->cap = lr->x->mp.third;
    s->unit = 1;
    return st;
}

/* A wave's pieces: merged into a run, or, when everything is here (one round and one wave, in
 * memory), straight into the output. Collective. */
static enum dsort_status lines_wave(void *ctx, const struct dsort_ooc_wave *w)
{
    struct lines_round *lr = ctx;
    struct lx *x = lr->x;
    enum dsort_status st;
    if (w->wave == 0) {
        lr->wrote = lr->direct && w->waves == 1;
        if (!lr->wrote && (st = dsort_ooc_tempdirs(&x->j)))
            return st;
    }
    if (!lr->wrote)
        return w->n ? dsort_ooc_spill(&x->j, w->cur, w->n) : DSORT_OK;
    /* the output's bytes are the lines' (without positions) */
    const uint64_t hdr = x->with_pos ? 8 : 0;
    uint64_t lines = 0;
    for (size_t i = 0; i < w->n && hdr; i++)
        for (const unsigned char *q = w->buf + w->off[i], *qe = q + w->len[i]; q < qe;) {
            const unsigned char *e = memchr(q + 8, x->ord.eol, (size_t)(qe - q - 8));
            if (!e)
                break;
            q = e + 1;
            lines++;
        }
    struct mem_pieces mp = {w->buf, w->off, w->len};
    /* timed by write_output: the merge into the output is the write phase */
    return write_output(x, lr->out, w->cur, w->n, w->rtotal - hdr * lines, reopen_memory, &mp);
}

static uint64_t lines_done(void *ctx)
{
    const struct lines_round *lr = ctx;
    return lr->x->pos - lr->x->sh.first;
}

static int lines_wrote(void *ctx)
{
    return ((const struct lines_round *)ctx)->wrote;
}

/* Before the next round: an arena that held a long line goes back to the budget. Agrees. */
static enum dsort_status lines_next(void *ctx)
{
    struct lines_round *lr = ctx;
    struct lx *x = lr->x;
    struct chunk *k = lr->k;
    enum dsort_status st = DSORT_OK;
    x->grow_share = 0;
    if (k->size > lr->arena && !lr->direct) {
        dsort_mem_free(k->a, (size_t)k->size);
        k->size = lr->arena > x->mp.third ? lr->arena : x->mp.third;
        if (!(k->a = dsort_mem_alloc((size_t)k->size)))
            st = DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "cannot allocate %" PRIu64 " bytes",
                           k->size);
    }
    return dsort_comm_agree(x->j.c, st, &x->j.err); /* every rank, grown or not */
}

/* The final merge (ooc_merge.c): the runs read back with the longest line of all ranks as
 * their largest record. Collective. */
static void lines_final(void *ctx, struct dsort_ooc_final *f)
{
    struct lx *x = ctx;
    x->max_line = dsort_comm_max(x->j.c, x->longest);
    x->j.fx.max_payload = max_payload(x);
    *f = final_of(x);
}

/* Collective: the rounds, from x->pos on (a resumed job's position): read a chunk of whole
 * lines into k (its arena allocated), and send it round (ooc_round.h); direct: the job sorts in
 * memory, unless the share turns out not to fit one round. *wrote: the output was written.
 * A stop with a checkpoint ends the rounds with x->j.stopped set. */
static enum dsort_status form_runs(struct lx *x, struct chunk *k, int direct,
                                   struct dsort_output *out, int *wrote)
{
    static const struct dsort_ooc_round_ops ops = {.read = lines_read,
                                                   .frame = lines_frame,
                                                   .wave = lines_wave,
                                                   .done = lines_done,
                                                   .wrote = lines_wrote,
                                                   .next = lines_next};
    struct lines_round lr = {.x = x, .k = k, .direct = direct, .out = out, .arena = k->size};
    /* a resumed job whose checkpoint was taken after the last round goes to the final merge */
    int more = !x->j.o->resume || !all_read(x);
    enum dsort_status st = dsort_ooc_rounds(&x->j, &dsort_recfmt_lines, &ops, &lr, more);
    *wrote = lr.wrote;
    return st;
}

/* The pipeline's rounds: the chunk's arena (the share when the job is in memory, else a third
 * of the budget: memplan.h), freed after them. Collective; agrees. */
static enum dsort_status lines_rounds(void *ctx, struct dsort_output *out, int *wrote)
{
    struct lx *x = ctx;
    struct chunk k;
    memset(&k, 0, sizeof k);
    k.size = dsort_memplan_arena(&x->mp, x->direct);
    x->grow_share = x->direct;
    k.a = dsort_mem_alloc((size_t)k.size);
    enum dsort_status st = DSORT_OK;
    if (!k.a)
        st = DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "cannot allocate %" PRIu64 " bytes", k.size);
    st = dsort_comm_agree(x->j.c, st, &x->j.err);
    if (!st && !x->direct)
        st = dsort_ooc_tempdirs(&x->j);
    if (!st && x->direct) { /* --progress: one round; its read is the first half of the pass */
        dsort_progress_window("read", 0, x->sh.n / 2, 1);
        dsort_progress_window("sort", x->sh.n / 2, x->sh.n / 4 * 3, 0);
    }
    if (!st)
        st = form_runs(x, &k, x->direct, out, wrote);
    dsort_mem_free(k.a, (size_t)k.size);
    free(k.segs);
    return st;
}

static void lines_release(void *ctx)
{
    struct lx *x = ctx;
    free(x->spl);
    free(x->split);
    free(x->split_len);
    free(x->pad);
    x->pad = NULL;
    x->known = NULL;
    x->spl = NULL;
    x->split = NULL;
    x->split_len = NULL;
}

/* ---- the checkpoint: the lines' position in the share is a byte offset, saved with the run
 * block, the lines read and the longest line; the splitters are lines (fmt_lines.c's blob) ---- */

/* Fill k with the job's state after `rounds` rounds (the splitters are copied into k). */
static enum dsort_status fill_ckpt(void *ctx, uint64_t rounds, struct dsort_ckpt *k,
                                   struct dsort_error *err)
{
    const struct lx *x = ctx;
    const struct dsort_recfmt_splits s = {.n = (size_t)(x->j.c->size - 1),
                                          .line = x->split,
                                          .len = x->split_len,
                                          .by_pos = x->by_pos,
                                          .avg_line = x->avg_line};
    enum dsort_status st = dsort_ooc_ckpt_fill(&x->j, &dsort_recfmt_lines, rounds, &s, k, err);
    k->consumed = x->pos;
    k->block = x->run_block;
    k->lines_in = x->j.stats->records_in;
    k->longest = x->longest;
    k->sample_from = x->sh.first; /* the share's bytes read so far */
    k->sample_to = x->pos;
    return st;
}

/* A resumed job takes the checkpoint's splitters, runs, run block, position and figures
 * (x->pos must be the share's start: the checkpoint's position may not be before it). */
static enum dsort_status resume_state(void *ctx, struct dsort_ckpt *k)
{
    struct lx *x = ctx;
    const int p = x->j.c->size;
    /* A share's first line may start past its end (a long line of the rank before covers the
     * whole range): then nothing is read and the position stays at that start. */
    const uint64_t last = x->pos > x->end ? x->pos : x->end;
    int ok = k->consumed >= x->pos && k->consumed <= last + k->longest && k->block >= 4096;
    x->split = calloc((size_t)p, sizeof *x->split);
    x->split_len = calloc((size_t)p, sizeof *x->split_len);
    if (!x->split || !x->split_len || !(x->spl = malloc(k->blob_len + 1)))
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    memcpy(x->spl, k->blob, k->blob_len);
    struct dsort_recfmt_splits s = {.line = x->split, .len = x->split_len};
    struct dsort_ckpt copy = *k; /* the splitters point into x->spl, which the job keeps */
    copy.blob = x->spl;
    if (!ok || !dsort_ooc_ckpt_splits(&x->j, &dsort_recfmt_lines, &copy, &s))
        return DSORT_ERR(&x->j.err, DSORT_EFORMAT, 0,
                         "the checkpoint of rank %d does not fit this job (splitters of %zu "
                         "bytes, position %" PRIu64 ", run block %" PRIu64 "); not resuming "
                         "from it",
                         x->j.c->rank, k->blob_len, k->consumed, k->block);
    x->by_pos = s.by_pos;
    x->avg_line = s.avg_line;
    x->pos = k->consumed;
    x->run_block = (size_t)k->block;
    x->j.stats->records_in = k->lines_in;
    x->longest = k->longest;
    return dsort_ooc_resume_take(&x->j, k);
}

/* The pipeline's setup: the order, the budget (the smallest of all ranks: docs/design.md, "One
 * budget for every rank") and its plan, the share. Collective. */
static void lines_setup(void *ctx, const struct dsort_share *sh)
{
    struct lx *x = ctx;
    x->sh = *sh;
    dsort_lines_order_init(&x->ord, x->j.o->keys, x->j.o->eol);
    x->with_pos = x->ord.tie_pos; /* runs and pieces merge in any order */
    x->budget = dsort_agree_min(x->j.c, x->j.stats->budget);
    plan(x, 0, 0);
    x->end = sh->first + sh->n;
    x->j.stats->external = 1;
    x->j.share_bytes = sh->n;
}

/* The pipeline's position: where the share's first whole line starts. Collective; agrees. */
static enum dsort_status lines_position(void *ctx)
{
    struct lx *x = ctx;
    enum dsort_status st =
        dsort_lines_range_start(x->j.in, x->sh.first, x->j.o->eol, &x->pos, &x->j.err);
    return dsort_comm_agree(x->j.c, st, &x->j.err);
}

/* The pipeline's runs, after the sample: in memory (one round, no spill: direct) when every
 * share fits, with the samples' line length; else the run files' block fitted to the rounds
 * of the largest share and to the most temp disks (memplan.h), or the checkpoint's. */
static void lines_runs(void *ctx, struct dsort_recfmt_ctx *fx, size_t *block)
{
    struct lx *x = ctx;
    const struct dsort_comm *c = x->j.c;
    const struct dsort_job_options *o = x->j.o;
    plan(x, 0, 0); /* with the samples' line length */
    const uint64_t need = x->mp.need;
    x->j.stats->needed = need * 3; /* arena, send and receive */
    x->direct = dsort_comm_all_ok(c, x->mp.share_fits && !o->force_external && !o->resume);
    if (x->direct)
        dsort_job_ckpt_note_memory(c, o);
    if (!o->resume) { /* else the runs' block */
        plan(x, 1, dsort_comm_max(c, x->direct ? 0 : need));
        x->run_block = x->mp.block;
    }
    *fx =
        (struct dsort_recfmt_ctx){.unique = o->ord.unique, .ord = &x->ord, .with_pos = x->with_pos};
    *block = x->run_block;
}

/* The pipeline's direct: in memory over the mapped input, when it can (lines_map.c).
 * Collective; agrees. */
static enum dsort_status lines_direct(void *ctx, struct dsort_output *out, int *taken)
{
    struct lx *x = ctx;
    return dsort_lines_job_map_usable(x, x->direct) ? dsort_lines_job_sort_mapped(x, out, taken)
                                                    : DSORT_OK;
}

static uint64_t lines_bytes_out(const void *ctx)
{
    return ((const struct lx *)ctx)->j.stats->bytes_written;
}

const struct dsort_ooc_pipeline dsort_ooc_lines = {.fmt = &dsort_recfmt_lines,
                                                   .size = sizeof(struct lx),
                                                   .j_off = offsetof(struct lx, j),
                                                   .fill = fill_ckpt,
                                                   .setup = lines_setup,
                                                   .prepare = NULL,
                                                   .lazy_tempdirs = 1,
                                                   .position = lines_position,
                                                   .sample = dsort_lines_job_sample,
                                                   .select = dsort_lines_job_select,
                                                   .sample_free = dsort_lines_job_sample_free,
                                                   .resume = resume_state,
                                                   .runs = lines_runs,
                                                   .direct = lines_direct,
                                                   .rounds = lines_rounds,
                                                   .final = lines_final,
                                                   .bytes_out = lines_bytes_out,
                                                   .release = lines_release};
