/* The out-of-core rounds, once for every record format (ooc_round.h).
 *
 * One round: the format sorts its chunk and frames it into p pieces, one a rank. The receiver
 * plans the exchange in waves that fit its buffer, by the format's policy (recfmt.h): fixed
 * records may be split between waves at any record (each wave takes from the sources in rank
 * order up to the buffer's records, and tells every source how many to send now); a line
 * piece travels whole (sources in rank order, a new wave when the next piece would overflow
 * the buffer; every source learns its pieces' waves once, before the first). Every wave's
 * pieces are merged into one run (or handed to the format: the lines write their one round
 * straight to the output).
 */
#include "ooc_round.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "agree.h"
#include "cleanup.h"
#include "exchange.h"
#include "job_ckpt.h"
#include "mem.h"
#include "progress.h"
#include "phase.h"

/* A round's arrays, one entry a rank d (bytes unless said). */
enum {
    V_COUNT,  /* the piece this rank sends d (framed by the format) */
    V_DISPL,  /* its offset in the send buffer */
    V_RCOUNT, /* the piece d sends this rank */
    V_LEFT,   /* split: the records d still has for this rank */
    V_SENT,   /* split: the records of this rank's piece for d sent so far */
    V_ALLOT,  /* split: the records this rank takes from d in this wave */
    V_GRANT,  /* split: the records d takes from this rank in this wave */
    V_SC,     /* the wave's sends, their offsets, receives and receive offsets */
    V_SD,
    V_RC,
    V_RD,
    V_OFF, /* the wave's non-empty pieces received: offset and length (by index, not rank) */
    V_LEN,
    V_N
};

struct round {
    struct dsort_ooc *j;
    int p, split, waves;
    uint64_t *v[V_N];
    int *wave_of, *swave;
    unsigned char *rbuf;
    uint64_t rsize; /* bytes of rbuf when it is the round's own (0: the format's) */
    void *cur;      /* p cursors of the format */
};

/* Plan wave wv into sc, sd and rc (bytes); *done: no wave is left (agreed). Collective. */
static enum dsort_status plan_wave(struct round *r, const struct dsort_ooc_send *s, int wv,
                                   int *done)
{
    uint64_t *const *v = r->v;
    if (!r->split) {
        *done = wv == r->waves;
        for (int d = 0; d < r->p && !*done; d++) {
            v[V_SC][d] = r->swave[d] == wv ? v[V_COUNT][d] : 0;
            v[V_SD][d] = v[V_DISPL][d];
            v[V_RC][d] = r->wave_of[d] == wv ? v[V_RCOUNT][d] : 0;
        }
        return DSORT_OK;
    }
    /* Split: take from the sources in order, up to what the buffer holds; tell every source
     * how much to send us now. */
    uint64_t pending = dsort_waves_allot(v[V_LEFT], r->p, s->cap / s->unit, v[V_ALLOT]);
    if ((*done = dsort_comm_sum(r->j->c, pending) == 0))
        return DSORT_OK;
    enum dsort_status st = dsort_exchange_counts(r->j->c->comm, v[V_ALLOT], v[V_GRANT], &r->j->err);
    for (int d = 0; !st && d < r->p; d++) {
        v[V_SC][d] = v[V_GRANT][d] * s->unit;
        v[V_SD][d] = v[V_DISPL][d] + v[V_SENT][d] * s->unit;
        v[V_RC][d] = v[V_ALLOT][d] * s->unit;
        v[V_SENT][d] += v[V_GRANT][d];
        v[V_LEFT][d] -= v[V_ALLOT][d];
    }
    return st;
}

/* Move the planned wave and count it; w gets its non-empty pieces. Collective; agrees. */
static enum dsort_status move_wave(struct round *r, struct dsort_ooc_send *s,
                                   struct dsort_ooc_wave *w)
{
    struct dsort_ooc *j = r->j;
    uint64_t *const *v = r->v;
    uint64_t at = 0;
    w->n = 0;
    for (int d = 0; d < r->p; d++) {
        v[V_RD][d] = at;
        if (v[V_RC][d]) {
            v[V_OFF][w->n] = at;
            v[V_LEN][w->n++] = v[V_RC][d];
        }
        at += v[V_RC][d];
    }
    int rounds = 0;
    enum dsort_status st = dsort_exchange_move(j->o->exchange, s->buf, v[V_SC], v[V_SD], r->rbuf,
                                               v[V_RC], v[V_RD], &rounds, &j->err);
    j->stats->exchange_rounds += rounds;
    for (int d = 0; d < r->p; d++)
        if (d != j->c->rank) {
            j->stats->bytes_sent += v[V_SC][d];
            j->stats->bytes_received += v[V_RC][d];
        }
    return dsort_comm_agree(j->c, st, &j->err);
}

/* The counts every source sends us, then (whole pieces) the waves and the receive buffer.
 * Collective; agrees. */
static enum dsort_status plan_round(struct round *r, struct dsort_ooc_send *s)
{
    struct dsort_ooc *j = r->j;
    uint64_t *const *v = r->v;
    enum dsort_status st = dsort_exchange_counts(j->c->comm, v[V_COUNT], v[V_RCOUNT], &j->err);
    if ((st = dsort_comm_agree(j->c, st, &j->err)))
        return st;
    s->rtotal = 0;
    for (int d = 0; d < r->p; d++) {
        s->rtotal += v[V_RCOUNT][d];
        if (r->split)
            v[V_LEFT][d] = v[V_RCOUNT][d] / s->unit;
    }
    r->rbuf = s->rbuf;
    if (r->split)
        return DSORT_OK;
    uint64_t most = 0;
    int w = dsort_waves_assign(v[V_RCOUNT], r->p, s->cap, r->wave_of, &most);
    /* Raw: fixed-size buffers on the stack of every rank, entered by all (agreed above). */
    MPI_Alltoall(r->wave_of, 1, MPI_INT, r->swave, 1, MPI_INT, j->c->comm);
    r->waves = (int)dsort_comm_max(j->c, (uint64_t)w);
    /* Receive into the format's buffer when the largest wave fits, else into new memory. */
    if ((most ? most : 1) > s->rsize) {
        r->rsize = most;
        if (!(r->rbuf = dsort_mem_alloc((size_t)most)))
            st = DSORT_ERR(&j->err, DSORT_ENOMEM, errno,
                           "cannot allocate %" PRIu64 " bytes to receive", most);
    }
    return dsort_comm_agree(j->c, st, &j->err);
}

/* The waves of a planned round: each wave's pieces, cursors in cur, spilled into a run or
 * handed to the format. Collective; agrees. */
static enum dsort_status waves(struct round *r, struct dsort_ooc_send *s,
                               const struct dsort_recfmt *f, const struct dsort_ooc_round_ops *ops,
                               void *x, struct dsort_phase_clock *pc)
{
    struct dsort_ooc *j = r->j;
    struct dsort_ooc_wave w = {.off = r->v[V_OFF],
                               .len = r->v[V_LEN],
                               .cur = r->cur,
                               .waves = r->split ? 0 : r->waves,
                               .rtotal = s->rtotal};
    enum dsort_status st = DSORT_OK;
    for (int done = 0;; w.wave++) {
        if (w.wave)
            dsort_job_phase_begin(pc, PH_EXCHANGE);
        if ((st = plan_wave(r, s, w.wave, &done)) || done || (st = move_wave(r, s, &w))) {
            dsort_job_phase_end(j->stats, PH_EXCHANGE, pc);
            return st;
        }
        dsort_job_phase_end(j->stats, PH_EXCHANGE, pc);
        w.buf = r->rbuf;
        for (size_t i = 0; i < w.n; i++)
            f->cursor_memory(&j->fx, dsort_recfmt_cursor(f, r->cur, i), r->rbuf + w.off[i],
                             (size_t)w.len[i]);
        if (ops->wave)
            st = ops->wave(x, &w);
        else if (w.n)
            st = dsort_ooc_spill(j, r->cur, w.n);
        if ((st = dsort_comm_agree(j->c, st, &j->err)))
            return st;
    }
}

enum dsort_status dsort_ooc_round(struct dsort_ooc *j, const struct dsort_recfmt *f,
                                  const struct dsort_ooc_round_ops *ops, void *x)
{
    const int p = j->c->size;
    struct round r = {.j = j, .p = p, .split = f->wave_split};
    struct dsort_ooc_send s = {0};
    enum dsort_status st = DSORT_OK;
    uint64_t *v = calloc((size_t)p * V_N, sizeof *v);
    int *wave_of = calloc((size_t)p * 2, sizeof *wave_of);
    r.cur = calloc((size_t)p, f->cur_size);
    if (!v || !wave_of || !r.cur)
        st = DSORT_ERR(&j->err, DSORT_ENOMEM, errno, "out of memory");
    for (int i = 0; !st && i < V_N; i++)
        r.v[i] = v + (size_t)i * (size_t)p;
    r.wave_of = wave_of;
    r.swave = wave_of ? wave_of + p : NULL;
    s.count = r.v[V_COUNT];
    s.displ = r.v[V_DISPL];
    if (!st)
        st = ops->frame(x, &s);
    if (!(st = dsort_comm_agree(j->c, st, &j->err))) {
        struct dsort_phase_clock pc;
        dsort_job_phase_begin(&pc, PH_EXCHANGE);
        st = plan_round(&r, &s);
        st = st ? st : waves(&r, &s, f, ops, x, &pc);
    }
    if (s.own)
        dsort_mem_free(s.buf, (size_t)s.own);
    if (r.rsize)
        dsort_mem_free(r.rbuf, (size_t)r.rsize);
    free(v);
    free(wave_of);
    free(r.cur);
    return st;
}

void dsort_ooc_runs_init(struct dsort_ooc *j, const struct dsort_recfmt *f,
                         const struct dsort_recfmt_ctx *fx, size_t block)
{
    j->fx = *fx;
    dsort_runmerge_init(&j->rm, f, &j->fx, &j->runs, &j->td, block);
    if (j->o->checkpoint) {
        j->rm.on_pass = dsort_ooc_ckpt_pass;
        j->rm.on_pass_ctx = j;
    }
}

/* The rounds, in the stop mode of the caller. */
static enum dsort_status rounds(struct dsort_ooc *j, const struct dsort_recfmt *f,
                                const struct dsort_ooc_round_ops *ops, void *x, int more)
{
    enum dsort_status st = DSORT_OK;
    for (uint64_t r = 1; more && !j->stopped; r++) {
        if ((st = ops->read(x, &more)) || (st = dsort_ooc_round(j, f, ops, x)))
            return st;
        dsort_progress_step(j->c, "rounds", ops->done(x));
        /* --checkpoint: a checkpoint at the end of every round that spilled (the last too:
         * then a stop in the final merge keeps it); a stop may come after the last one too */
        const uint64_t rounds = j->rounds_before + r;
        j->stats->rounds = rounds;
        if (!ops->wrote || !ops->wrote(x)) {
            const int stop = dsort_job_stop_now(j->c, j->o, rounds);
            if (stop || j->o->checkpoint) {
                if (ops->mark)
                    ops->mark(x);
                if ((st = dsort_ooc_end_round(j, rounds, stop)))
                    return st;
            }
        }
        if (more && !j->stopped && ops->next && (st = ops->next(x)))
            return st;
    }
    return st;
}

enum dsort_status dsort_ooc_rounds(struct dsort_ooc *j, const struct dsort_recfmt *f,
                                   const struct dsort_ooc_round_ops *ops, void *x, int more)
{
    /* --checkpoint: SIGUSR1 during the rounds stops at the end of one, keeping the runs; in the
     * final merge it stops as every signal does (nothing kept) */
    dsort_cleanup_stop_mode(j->o->checkpoint);
    enum dsort_status st = rounds(j, f, ops, x, more);
    dsort_cleanup_stop_mode(0);
    return st;
}
