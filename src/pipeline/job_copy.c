/* The copying path in memory without a second copy of the share (job_copy.h).
 *
 * At several ranks the share is handled in two parts, so that the network starts early: E,
 * the share's first quarter, and R, the rest. Splitters are chosen first from a sample of the
 * whole share (sampled, as out of core: composite keys, so equal keys still split; the pieces
 * balanced within the sample's error). E is read, its entries made and split by their first
 * key byte, it is cut by the splitters and its pieces go out (the first flow), while a reader
 * thread reads R, making its entries as each piece comes in (made_piece), and splits them;
 * then R is cut and sent (the second flow) while the merge writes the output. Each part's
 * buckets are sorted as their entries are first wanted: by the sends' fills, by the merge, or
 * ahead of them by a sorter thread that then sums the input (sorter_main). At one rank the
 * share is one part, read and split, and merged into the output.
 *
 * Memory: the share A (read into it), E's entries, and one region W: X, of the share plus a
 * sixteenth (the pieces a rank receives; sampled splitters may send it a little more than its
 * share, and what does not fit gets its own buffer), then R's entries. R's entries are made in
 * X's start while E's received pieces land at X's end; R's received pieces land at X's start
 * after R's split. The records a rank keeps stay in A; the ones it sends are gathered, in
 * sorted order, into a 16 MiB stage just before they are sent; the merge streams into the
 * output's writer buffers. Fresh memory is about 2.2x the share at two ranks (against 2.16x
 * for job_mem.c's second share-sized buffer), three bucket scratches of at most 4 MiB each,
 * and the stage.
 */
#include "job_copy.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agree.h"
#include "cleanup.h"
#include "inmem.h"
#include "job_copy_impl.h"
#include "job_end.h"
#include "job_typed.h"
#include "mem.h"
#include "progress.h"

/* dsort_exchange_gather's fill: the piece of a part for rank to, from its byte at on. */
static void fill(void *ctx, int to, uint64_t at, size_t len, unsigned char *dst)
{
    struct part *pt = ctx;
    const size_t first = (size_t)(pt->cuts[to] + at / pt->x->rs), k = len / pt->x->rs;
    dsort_keysort_ready(&pt->lazy, first, first + k, pt->x->tmp_main);
    dsort_keysort_gather(&pt->x->o->fmt, pt->recs, pt->ents + first, k, dst);
}

/* Add A's records [summed, summed + k) (at most) to the input's checksums: computed here, not as
 * the share is read, so that most of it is done while the exchange waits on the network (A is
 * not written after the read). */
#define COPY_SUM_STEP ((size_t)1 << 20)
static void sum_input(struct copy *x, uint64_t k)
{
    k = k < x->n - x->summed ? k : x->n - x->summed;
    dsort_job_sum_records(x->o->verify, x->a + x->summed * x->rs, k, x->rs, &x->sums.sum_in,
                          &x->sums.con_in);
    x->summed += k;
}

/* The sorter thread (dsort-sort), from R's cut to the end of the merge: sorts the buckets of
 * R's pieces in the order the rounds send them and the merge takes them (a bucket of the piece
 * sorted least far next), so that the main thread's fills find their entries sorted and post
 * the rounds at once (MPI moves nothing while a fill runs), then sums the input. On its own
 * thread, not in the main thread's wait for a round: a bucket takes about a millisecond, ten
 * times the wait's sleep between its tests. Stops early when told. */
static void *sorter_main(void *arg)
{
    struct copy *x = arg;
    struct part *pt = &x->part[x->nparts - 1];
    for (;;) {
        if (atomic_load_explicit(&x->stop, memory_order_relaxed))
            return NULL;
        int best = -1;
        for (int r = 0; r < x->c->size; r++)
            if (pt->ahead[r] < pt->cuts[r + 1] &&
                (best < 0 || pt->ahead[r] - pt->cuts[r] < pt->ahead[best] - pt->cuts[best]))
                best = r;
        if (best < 0)
            break;
        const size_t e = dsort_keysort_ready(&pt->lazy, (size_t)pt->ahead[best],
                                             (size_t)pt->ahead[best] + 1, x->tmp_sorter);
        pt->ahead[best] = e < pt->cuts[best + 1] ? e : pt->cuts[best + 1];
    }
    while (x->summed < x->n && !atomic_load_explicit(&x->stop, memory_order_relaxed))
        sum_input(x, COPY_SUM_STEP / x->rs + 1);
    return NULL;
}

/* The sends' stage: a part per other rank, each no larger than the largest piece any rank
 * sends (the same length on every rank, so dsort_exchange_gather's part size agrees), at most
 * COPY_STAGE in all: a tiny share at 64 ranks took 16 MiB each, 1 GiB of the node. Collective. */
static size_t stage_size(const struct dsort_comm *c, const uint64_t *scount, size_t rs)
{
    uint64_t big = 0;
    for (int r = 0; r < c->size; r++)
        big = r != c->rank && scount[r] > big ? scount[r] : big;
    big = dsort_comm_max(c, big);
    const size_t others = c->size > 1 ? (size_t)(c->size - 1) : 1;
    uint64_t part = COPY_STAGE / others / rs * rs;
    part = big < part ? (big + rs - 1) / rs * rs : part;
    return others * (size_t)(part > rs ? part : rs);
}

/* Part pt's exchange: what each rank sends here, in bytes (rcount), and where its pieces land:
 * in [area, area + len) (at its end when at_end, else at its start), or in a buffer of their
 * own when they do not fit; and the sends' stage. Agrees. */
static enum dsort_status exchange_plan(struct copy *x, struct part *pt, unsigned char *area,
                                       uint64_t len, int at_end, struct dsort_error *err)
{
    const struct dsort_comm *c = x->c;
    const int me = c->rank;
    for (int r = 0; r < c->size; r++)
        pt->scount[r] = (pt->cuts[r + 1] - pt->cuts[r]) * x->rs;
    uint64_t rbytes = 0, off = 0;
    enum dsort_status st = dsort_inmem_counts(c, pt->scount, pt->rcount, &rbytes, err);
    if (st)
        return st;
    for (int r = 0; r < c->size; r++) {
        pt->rdispl[r] = off;
        off += r == me ? 0 : pt->rcount[r];
    }
    if (off <= len) {
        pt->rbuf = area + (at_end ? len - off : 0);
    } else if (!(pt->rown = dsort_mem_alloc((size_t)off))) {
        st = dsort_job_alloc_error(err, errno, "the received records", off);
    } else {
        pt->rbuf = pt->rown;
        pt->rown_len = off;
    }
    pt->stage_len = stage_size(c, pt->scount, x->rs);
    pt->stage = st ? NULL : dsort_mem_alloc(pt->stage_len);
    if (!st && !pt->stage)
        st = dsort_job_alloc_error(err, errno, "the exchange's stage", pt->stage_len);
    if ((st = dsort_comm_agree(c, st, err)))
        return st;
    /* (where the pieces land is faulted in by the exchange, a round at a time) */
    dsort_mem_populate(pt->stage, pt->stage_len);
    x->stats->bytes_received += rbytes - pt->rcount[me];
    for (int r = 0; r < c->size; r++)
        x->stats->bytes_sent += r == me ? 0 : pt->scount[r];
    if (x->o->exchange)
        x->o->exchange->moves++; /* --stats "exchanges": one more, by the direct path */
    return DSORT_OK;
}

/* Start part pt's exchange (the flow is driven by exchange_drive, or early_drive). Agrees
 * (the start agrees on its own state). */
static enum dsort_status exchange_start(struct copy *x, struct part *pt, struct dsort_error *err)
{
    /* (the flow does not look at this rank's own counts: its piece stays in A) */
    return dsort_exchange_gather_start(
        &x->flow, x->c->comm, fill, pt, pt->scount, pt->rbuf, pt->rcount, pt->rdispl, pt->stage,
        pt->stage_len, x->rs, x->o->chunk ? (size_t)x->o->chunk : DSORT_EXCHANGE_CHUNK, err);
}

/* Tell the merge thread what has arrived of R (over: the exchange is over, st its error). */
static void publish(struct copy *x, int over, enum dsort_status st, const struct dsort_error *err)
{
    pthread_mutex_lock(&x->mu);
    for (int r = 0; r < x->c->size && x->flow; r++)
        x->have[r] = dsort_exchange_flow_received(x->flow, r);
    x->over = over;
    if (st && !x->xst) {
        x->xst = st;
        x->xerr = *err;
    }
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

/* Drive part pt's flow to its end (publishing what arrives when publishing; calling between
 * rounds, while the flow is not done, between(x, arg) until it returns 1), then free its stage.
 * Returns its first error. (The partners need every round of this rank's, whatever went
 * wrong here: it is driven to the end even when the merge has failed.) */
static enum dsort_status flow_drive(struct copy *x, struct part *pt, int publishing,
                                    int (*between)(struct copy *x, void *arg), void *arg,
                                    struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    int quiet = !between;
    while (!st && !dsort_exchange_flow_done(x->flow)) {
        /* (sleeping between tests: the other threads need the cores) Until between is done,
         * a test and a sleep at a time, never a wait for a round: between's collectives may
         * hold a partner that has not posted the round this rank would wait for. */
        st = dsort_exchange_flow_progress(
            x->flow, quiet ? DSORT_EXCHANGE_WAIT_IDLE : DSORT_EXCHANGE_TEST, err);
        if (publishing)
            publish(x, 0, st, err);
        if (!st && !quiet && !(quiet = between(x, arg))) {
            const struct timespec ts = {0, DSORT_EXCHANGE_IDLE_US * 1000L};
            nanosleep(&ts, NULL);
        }
    }
    int rounds = 0;
    enum dsort_status fst = dsort_exchange_flow_finish(x->flow, &rounds, st ? NULL : err);
    st = st ? st : fst;
    x->flow = NULL;
    if (publishing)
        publish(x, 1, st, err); /* (what has arrived stays as last published) */
    x->stats->exchange_rounds += rounds;
    dsort_mem_free(pt->stage, pt->stage_len);
    pt->stage = NULL;
    return st;
}

/* R's exchange, while the merge writes: the phase clock turns from the exchange to the write
 * when the last round is in. */
enum dsort_status dsort_copy_exchange_drive(struct copy *x, struct dsort_error *err)
{
    enum dsort_status st = flow_drive(x, &x->part[x->nparts - 1], 1, NULL, NULL, err);
    dsort_job_phase_next(x->stats, PH_EXCHANGE, &x->pc, PH_WRITE);
    x->exchanging = 0;
    return st;
}

/* The reader thread (dsort-read): R read and split while E's flow runs. */
struct reader {
    struct copy *x;
    pthread_t tid;
    int threaded;
    atomic_int done;
    enum dsort_status st, rest; /* the read's; R's preparation's (prepare_rest) */
    struct dsort_error err;
    int prepared;
};

static void *reader_main(void *arg)
{
    struct reader *rd = arg;
    struct copy *x = rd->x;
    rd->st = dsort_copy_read_and_split(&x->part[1], NULL, &rd->err);
    atomic_store_explicit(&rd->done, 1, memory_order_release);
    return NULL;
}

/* Once R is read (the reader joined): agree, cut R, plan its exchange, set this rank's output
 * share (its pieces of both parts) and start the sorter. Called by flow_drive between E's
 * rounds when the reader is done first (the collectives then run while E's flow moves, MPI
 * progressing it inside them), else after E's flow, so once on every rank, in the same order.
 * Returns 1 (done: flow_drive's between); the status is rd->rest. Agrees. */
static int prepare_rest(struct copy *x, void *arg)
{
    struct reader *rd = arg;
    if (!atomic_load_explicit(&rd->done, memory_order_acquire) || rd->prepared)
        return rd->prepared;
    rd->prepared = 1;
    if (rd->threaded)
        pthread_join(rd->tid, NULL);
    struct part *e = &x->part[0], *r = &x->part[1];
    const int p = x->c->size;
    struct dsort_error *err = &rd->err;
    enum dsort_status st = rd->st;
    x->stats->bytes_read += r->n * dsort_job_out_rec(x->o);
    if ((st = dsort_comm_agree(x->c, st, err)) ||
        (st = dsort_comm_agree(x->c, dsort_copy_cut_part(x, r, err), err)))
        return rd->rest = st, 1;
    /* R's pieces land at X's start (R's entries are split out of it), before E's */
    uint64_t eoth = 0, mine = 0;
    for (int k = 0; k < p; k++)
        eoth += k == x->c->rank ? 0 : e->rcount[k];
    if ((st = exchange_plan(x, r, x->w, x->cap - (e->rown ? 0 : eoth), 0, err)))
        return rd->rest = st, 1;
    for (int k = 0; k < x->nparts; k++)
        for (int q = 0; q < p; q++)
            mine += q == x->c->rank ? x->part[k].cuts[q + 1] - x->part[k].cuts[q]
                                    : x->part[k].rcount[q] / x->rs;
    if ((st = dsort_output_set_share(x->c, x->out, mine * dsort_job_out_rec(x->o), err)))
        return rd->rest = st, 1;
    /* The sorter sorts ahead of the sends and the merge (without it, they sort what they
     * want themselves, and the input is summed at the end) */
    memcpy(r->ahead, r->cuts, (size_t)p * sizeof *r->ahead);
    x->sorting = dsort_cleanup_thread_create(&x->sorter, sorter_main, x, "dsort-sort") == 0;
    return rd->rest = DSORT_OK, 1;
}

/* Several ranks: the splitters, then E read, split, cut and sent while R is read on a reader
 * thread and split; then R cut and its exchange planned. On return (DSORT_OK) R's flow is
 * ready to start. Agrees. */
static enum dsort_status early(struct copy *x, struct dsort_job_stats *stats,
                               struct dsort_error *err)
{
    struct part *e = &x->part[0], *r = &x->part[1];
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SAMPLE);
    enum dsort_status st = dsort_copy_choose_splitters(x, err);
    dsort_job_phase_end(stats, PH_SAMPLE, &pc);
    if (st)
        return st;
    if ((st = dsort_copy_read_and_split(e, stats, err)))
        return st;
    dsort_job_phase_begin(&pc, PH_SPLIT);
    st = dsort_comm_agree(x->c, dsort_copy_cut_part(x, e, err), err);
    dsort_job_phase_end(stats, PH_SPLIT, &pc);
    if (st)
        return st;
    /* E's pieces land at X's end, beside R's entries being made at its start */
    const uint64_t rents = r->n * sizeof *r->ents;
    x->exchanging = 1;
    dsort_job_phase_begin(&x->pc, PH_EXCHANGE);
    if ((st = exchange_plan(x, e, x->w + rents, x->cap - rents, 1, err)) ||
        (st = dsort_comm_agree(x->c, exchange_start(x, e, err), err)))
        return st;
    /* R is read and split on the reader thread while E's flow runs; once it is (and the other
     * ranks' are), R is cut and its exchange planned, still during E's flow when it is long
     * enough, so that R's flow starts the moment E's ends */
    struct reader rd = {.x = x};
    rd.threaded = dsort_cleanup_thread_create(&rd.tid, reader_main, &rd, "dsort-read") == 0;
    if (!rd.threaded)
        reader_main(&rd);
    st = flow_drive(x, e, 0, prepare_rest, &rd, err);
    if (!rd.prepared) { /* (E's flow ended first, or failed) */
        atomic_store_explicit(&rd.done, 1, memory_order_release);
        prepare_rest(x, &rd);
    }
    if (!st && rd.rest) {
        st = rd.rest;
        *err = rd.err;
    }
    return dsort_comm_agree(x->c, st, err);
}

/* One rank: the share read and split. Agrees. */
static enum dsort_status alone(struct copy *x, struct dsort_job_stats *stats,
                               struct dsort_error *err)
{
    struct part *pt = &x->part[0];
    enum dsort_status st = dsort_copy_read_and_split(pt, stats, err);
    if (!st)
        st = dsort_copy_cut_part(x, pt, err);
    if ((st = dsort_comm_agree(x->c, st, err)))
        return st;
    memcpy(pt->ahead, pt->cuts, sizeof *pt->ahead); /* the sorter, as prepare_rest starts it */
    x->sorting = dsort_cleanup_thread_create(&x->sorter, sorter_main, x, "dsort-sort") == 0;
    return DSORT_OK;
}

int dsort_job_sort_copy(const struct dsort_comm *c, const struct dsort_job_options *o,
                        const struct dsort_inputs *in, const struct dsort_share *sh,
                        struct dsort_job_stats *stats)
{
    struct dsort_error err = {0};
    const size_t rs = o->fmt.rec_size, p = (size_t)c->size;
    struct dsort_output out;
    struct copy x = {
        .c = c, .o = o, .in = in, .rs = rs, .n = sh->n, .g0 = sh->g0, .stats = stats, .out = &out};
    x.nparts = p > 1 ? 2 : 1;
    const uint64_t ne = p > 1 ? x.n / COPY_EARLY_DIV : x.n, nr = x.n - ne;
    const size_t bytes = (size_t)(x.n * rs);
    stats->records_in = x.n;
    if (dsort_job_output_open(c, o, x.n * dsort_job_out_rec(o), &out, &err))
        return 2;
    /* --progress: read, sort, exchange, merge and write: four passes over the data */
    dsort_progress_start(c, o->progress, bytes, 4);
    x.mark = 3 * (uint64_t)bytes;
    x.ks = dsort_recfmt_fixed_init(&x.fx, &x.cmp, &o->fmt, &o->ord); /* the splitters' keys */
    /* X: the received records (a sixteenth over the share: sampled splitters) or the entries
     * being made, whichever is more, 16-byte aligned; then the last part's entries */
    /* (the last part is the larger: R, or the whole share; its entries are made in X too) */
    const size_t elast = (size_t)(p > 1 ? nr : ne) * sizeof(struct dsort_sortent);
    size_t cap = bytes + (p > 1 ? bytes / 16 : 0);
    cap = ((cap > elast ? cap : elast) + 15) & ~(size_t)15;
    x.cap = cap;
    x.wlen = cap + elast;
    x.a = dsort_mem_alloc(bytes);
    x.w = dsort_mem_alloc(x.wlen);
    x.ents_e_len = p > 1 ? (size_t)ne * sizeof(struct dsort_sortent) : 0;
    x.ents_e = p > 1 ? dsort_mem_alloc(x.ents_e_len) : NULL;
    const size_t stride = 4 * p + 1; /* a part's cuts, scount, rcount, rdispl */
    uint64_t *counts = calloc(stride * (size_t)x.nparts + p, sizeof *counts);
    x.have = calloc(p, sizeof *x.have);
    const size_t tn =
        dsort_copy_eager() ? dsort_copy_eager() : 1; /* the scratches: the largest lazy bucket */
    x.tmp_main = malloc(3 * tn * sizeof *x.tmp_main);
    x.tmp_merge = x.tmp_main ? x.tmp_main + tn : NULL;
    x.tmp_sorter = x.tmp_main ? x.tmp_main + 2 * tn : NULL;
    pthread_mutex_init(&x.mu, NULL);
    pthread_cond_init(&x.cv, NULL);
    enum dsort_status st = DSORT_OK;
    int rc = 2;
    if (!x.a || !x.w || (p > 1 && !x.ents_e) || !counts || !x.have || !x.tmp_main)
        st = dsort_job_alloc_error(&err, errno, "buffers", bytes + x.wlen + x.ents_e_len);
    for (int k = 0; !st && k < x.nparts; k++) {
        struct part *pt = &x.part[k];
        uint64_t *cn = counts + (size_t)k * stride;
        *pt = (struct part){.x = &x,
                            .recs = x.a + (k ? ne * rs : 0),
                            .first = sh->first + (k ? ne : 0),
                            .n = k ? nr : ne,
                            .ents = k || p == 1 ? (struct dsort_sortent *)(void *)(x.w + cap)
                                                : x.ents_e,
                            .cuts = cn,
                            .scount = cn + p + 1,
                            .rcount = cn + 2 * p + 1,
                            .rdispl = cn + 3 * p + 1};
        pt->ahead = counts + stride * (size_t)x.nparts; /* (the last part's: the sorter's) */
    }
    if ((st = dsort_comm_agree(c, st, &err)) ||
        (st = p > 1 ? early(&x, stats, &err) : alone(&x, stats, &err)))
        goto fail;
    struct part *last = &x.part[x.nparts - 1];
    dsort_progress_step(c, "exchange", 2 * (uint64_t)bytes);
    /* R's exchange runs while the merge writes what has arrived (exchange_drive, merge_main):
     * its phase lasts until the last round is in, the write's from then to the output's end. */
    if (p == 1)
        dsort_job_phase_begin(&x.pc, PH_WRITE);
    struct merge_src m = {0};
    st = dsort_copy_merge_prepare(&x, &m, &err);
    if (!st && p > 1)
        st = dsort_comm_agree(c, exchange_start(&x, last, &err), &err);
    dsort_progress_step(c, "write", x.mark);
    x.sums.n_in = x.n;
    if (!st)
        st = dsort_copy_merge_out(&x, &m, &out, stats, &err);
    dsort_copy_merge_free(&m);
    if (st)
        atomic_store_explicit(&x.stop, 1, memory_order_relaxed);
    if (x.sorting)
        pthread_join(x.sorter, NULL);
    x.sorting = 0;
    if (!st)
        sum_input(&x, x.n); /* what the sorter left */
    if (!st)
        rc = dsort_job_finish(c, o, in, &out, &x.sums, stats, &err);
fail:
    if (x.sorting) { /* (a failure after the cut: freeing what the sorter uses) */
        atomic_store_explicit(&x.stop, 1, memory_order_relaxed);
        pthread_join(x.sorter, NULL);
    }
    if (x.flow) /* (not reached: a started exchange is driven to its end) */
        dsort_exchange_flow_finish(x.flow, NULL, NULL);
    if (x.exchanging) /* failed before the exchange was over */
        dsort_job_phase_end(stats, PH_EXCHANGE, &x.pc);
    if (st)
        dsort_output_abandon(&out);
    for (int k = 0; k < x.nparts; k++) {
        dsort_mem_free(x.part[k].rown, x.part[k].rown_len);
        dsort_mem_free(x.part[k].stage, x.part[k].stage_len);
    }
    dsort_mem_free(x.a, bytes);
    dsort_mem_free(x.w, x.wlen);
    dsort_mem_free(x.ents_e, x.ents_e_len);
    pthread_cond_destroy(&x.cv);
    pthread_mutex_destroy(&x.mu);
    free(x.have);
    free(x.tmp_main); /* (the three scratches) */
    free(x.splitters);
    free(counts);
    return rc;
}

/* DSORT_COPY_TWO_BUFFERS=1 (a comparison aid): the old path (job_mem.c); 0 or empty: this one. */
static int two_buffers_wanted(void)
{
    return dsort_job_env_flag("DSORT_COPY_TWO_BUFFERS");
}

int dsort_job_copy_usable(const struct dsort_job_options *o)
{
    const struct dsort_exchange *x = o->exchange;
    if (o->ord.unique || o->typed || two_buffers_wanted())
        return 0;
    return !x || x->kind == DSORT_EXCHANGE_DIRECT ||
           (x->kind == DSORT_EXCHANGE_AUTO && (x->nodes <= 1 || x->nodes >= x->size));
}
