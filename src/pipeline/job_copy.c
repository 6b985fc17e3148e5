/* The copying path in memory without a second copy of the share (job_copy.h).
 *
 * Memory: the share A (read into it), and one region W of n * rec_size + 16 n bytes of which
 * only what is used is touched: the sort entries at its end, the radix scratch at its start,
 * then the records received from the other ranks at its start. The records a rank keeps stay
 * in A; the ones it sends are gathered, in sorted order, into a 16 MiB stage just before they
 * are sent; the merge streams into the output's writer buffers. The merge runs on a thread of
 * its own while the main thread drives the exchange, on what has arrived so far (merge_out).
 * Fresh memory is A, the received records or the scratch (whichever is more) and the entries,
 * and the stage and the writer's two buffers: about 1.66x the share at two ranks, against 2.16x
 * for job_mem.c's second share-sized buffer (docs/performance.md, "The copying path"); and
 * three bucket scratches of at most 4 MiB each.
 *
 * The sort before the exchange is only its first pass (the entries made and split by their
 * first key byte, dsort_keysort_split); each bucket is sorted when its entries are first
 * wanted: by the splitters, by the sends' fills, by the merge, or, ahead of them, by a sorter
 * thread that also sums the input while the exchange waits on the network (sorter_main).
 */
#include "job_copy.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "cleanup.h"
#include "exchange.h"
#include "inmem.h"
#include "job_end.h"
#include "job_topo.h"
#include "job_typed.h"
#include "keysort.h"
#include "mem.h"
#include "merge.h"
#include "outsink.h"
#include "phase.h"
#include "progress.h"

#define COPY_STAGE ((size_t)16 << 20)  /* the sends' stage */
#define COPY_OUT_BUF ((size_t)8 << 20) /* each of the output writer's two buffers */
#define COPY_OWN_BUF ((size_t)1 << 20) /* the kept records, gathered for the merge */

struct copy {
    const struct dsort_comm *c;
    const struct dsort_job_options *o;
    size_t rs;
    uint64_t n;
    unsigned char *a; /* the share, in input order */
    unsigned char *w; /* W: scratch, then received records; entries at its end */
    size_t wlen;
    struct dsort_sortent *ents; /* the sorted entries (in W) */
    /* The sort finished a bucket at a time as the entries are wanted (dsort_keysort_ready),
     * each thread with a scratch of lazy.lazy_max entries: the main thread (splitters, sends'
     * fills), the merge thread (kept records) and the sorter thread (sorter_main), which sorts
     * ahead of both during the exchange. */
    struct dsort_keysort_lazy lazy;
    struct dsort_sortent *tmp_main, *tmp_merge, *tmp_sorter;
    uint64_t *ahead; /* [p]: the sorter has sorted piece r up to entry ahead[r] */
    uint64_t summed; /* A's records [0, summed) are in sums.sum_in, con_in (the sorter's, then
                      * the main thread's once it is joined) */
    atomic_int stop; /* the sorter: stop (the job failed) */
    uint64_t *cuts;  /* [p + 1]: sorted entries [cuts[r], cuts[r + 1]) go to r */
    struct dsort_job_sums sums;
    uint64_t written;
    uint64_t mark; /* --progress: where the write starts */
    /* The exchange, driven by the main thread while the merge thread writes what has arrived
     * (NULL at one rank): */
    struct dsort_exchange_flow *flow;
    unsigned char *stage;
    size_t stage_len;
    struct dsort_job_stats *stats;
    struct dsort_phase_clock pc;
    int exchanging; /* the phase clock runs PH_EXCHANGE (else PH_WRITE) */
    /* What has arrived, as the merge thread sees it (under mu; published by the main thread):
     * bytes of each piece, the exchange over, its error. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t *have;
    int over;
    enum dsort_status xst;
    struct dsort_error xerr;
};

/* The i-th sorted record (dsort_inmem_cut's rec_at; the main thread's). */
static const unsigned char *sorted_rec(const void *ctx, uint64_t i)
{
    struct copy *x = (struct copy *)(uintptr_t)ctx;
    dsort_keysort_ready(&x->lazy, (size_t)i, (size_t)i + 1, x->tmp_main);
    return x->a + dsort_sortent_index(&x->ents[i]) * x->rs;
}

/* dsort_exchange_gather's fill: the piece for rank to, from its byte at on. */
static void fill(void *ctx, int to, uint64_t at, size_t len, unsigned char *dst)
{
    struct copy *x = ctx;
    const size_t first = (size_t)(x->cuts[to] + at / x->rs), k = len / x->rs;
    dsort_keysort_ready(&x->lazy, first, first + k, x->tmp_main);
    dsort_keysort_gather(&x->o->fmt, x->a, x->ents + first, k, dst);
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

/* The sorter thread (dsort-sort), from the splitters to the end of the merge: sorts the
 * pieces' buckets in the order the rounds send them and the merge takes them (a bucket of the
 * piece sorted least far next), so that the main thread's fills find their entries sorted and
 * post the rounds at once (MPI moves nothing while a fill runs), then sums the input. On its
 * own thread, not in the main thread's wait for a round: a bucket takes about a millisecond,
 * ten times the wait's sleep between its tests. Stops early when told. */
static void *sorter_main(void *arg)
{
    struct copy *x = arg;
    for (;;) {
        if (atomic_load_explicit(&x->stop, memory_order_relaxed))
            return NULL;
        int best = -1;
        for (int r = 0; r < x->c->size; r++)
            if (x->ahead[r] < x->cuts[r + 1] &&
                (best < 0 || x->ahead[r] - x->cuts[r] < x->ahead[best] - x->cuts[best]))
                best = r;
        if (best < 0)
            break;
        const size_t e = dsort_keysort_ready(&x->lazy, (size_t)x->ahead[best],
                                             (size_t)x->ahead[best] + 1, x->tmp_sorter);
        x->ahead[best] = e < x->cuts[best + 1] ? e : x->cuts[best + 1];
    }
    while (x->summed < x->n && !atomic_load_explicit(&x->stop, memory_order_relaxed))
        sum_input(x, COPY_SUM_STEP / x->rs + 1);
    return NULL;
}

/* Buckets above this many entries are sorted before the exchange (with W's scratch), the
 * others as they are wanted, with a scratch of their size a thread (at most 4 MiB).
 * DSORT_COPY_EAGER=N (a testing aid) sets it: 0 sorts every bucket before the exchange; more
 * than the default (or not a number) is the default. */
#define COPY_EAGER ((size_t)1 << 18)
static size_t copy_eager(void)
{
    const char *v = getenv("DSORT_COPY_EAGER");
    char *end;
    errno = 0;
    const unsigned long long n = v && *v ? strtoull(v, &end, 10) : 0;
    return v && *v && !errno && !*end && n <= COPY_EAGER ? (size_t)n : COPY_EAGER;
}

/* Read the share into A (summed later: sorter_main), make its entries and split them by their first
 * key byte: the rest of the sort is done as the entries are wanted (struct copy's lazy), most
 * of it while the exchange waits on the network. Agrees. */
static enum dsort_status read_and_sort(struct copy *x, const struct dsort_inputs *in,
                                       const struct dsort_share *sh, struct dsort_job_stats *stats,
                                       struct dsort_error *err)
{
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_READ);
    dsort_mem_populate(x->a, (size_t)x->n * x->rs); /* faulted in at once, not page by page */
    /* (not typed: dsort_job_copy_usable; summed later, sum_input) */
    enum dsort_status st = dsort_job_topo_read(x->o->topo, in, sh->first, x->n, x->a, err);
    stats->bytes_read = x->n * dsort_job_out_rec(x->o);
    dsort_job_phase_end(stats, PH_READ, &pc);
    if ((st = dsort_comm_agree(x->c, st, err)))
        return st;
    dsort_progress_step(x->c, "sort", x->n * x->rs);
    dsort_job_phase_begin(&pc, PH_SORT);
    const size_t elen = (size_t)x->n * sizeof *x->ents;
    dsort_mem_populate(x->w, elen);    /* the scratch */
    dsort_mem_populate(x->ents, elen); /* the entries */
    dsort_keysort_split(&x->lazy, &x->o->fmt, &x->o->ord, x->a, (size_t)x->n, x->ents,
                        (struct dsort_sortent *)(void *)x->w, copy_eager());
    const size_t tn = x->lazy.lazy_max; /* entries of each thread's scratch, in one block */
    x->tmp_main = malloc(3 * tn * sizeof *x->ents + 1);
    x->tmp_merge = x->tmp_main ? x->tmp_main + tn : NULL;
    x->tmp_sorter = x->tmp_main ? x->tmp_main + 2 * tn : NULL;
    if (!x->tmp_main)
        st = dsort_job_alloc_error(err, errno, "the sort's scratch", 3 * tn * sizeof *x->ents);
    dsort_job_phase_end(stats, PH_SORT, &pc);
    return dsort_comm_agree(x->c, st, err);
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

/* Where the pieces for the other ranks land in W (from rank 0 up, this rank's own piece left
 * out), and the sends' stage; rcount gets what each rank sends here, in bytes. Agrees. */
static enum dsort_status exchange_plan(struct copy *x, uint64_t *scount, uint64_t *rcount,
                                       uint64_t *rdispl, struct dsort_error *err)
{
    const struct dsort_comm *c = x->c;
    const int me = c->rank;
    for (int r = 0; r < c->size; r++)
        scount[r] = (x->cuts[r + 1] - x->cuts[r]) * x->rs;
    uint64_t rbytes = 0, off = 0;
    enum dsort_status st = dsort_inmem_counts(c, scount, rcount, &rbytes, err);
    if (st)
        return st;
    for (int r = 0; r < c->size; r++) {
        rdispl[r] = off;
        off += r == me ? 0 : rcount[r];
    }
    /* the received records must leave the entries at W's end alone */
    if (off > x->wlen - x->n * sizeof *x->ents || rbytes > x->n * x->rs)
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "receiving %" PRIu64 " bytes for a share of %" PRIu64, rbytes, x->n * x->rs);
    x->stage_len = stage_size(c, scount, x->rs);
    x->stage = st ? NULL : dsort_mem_alloc(x->stage_len);
    if (!st && !x->stage)
        st = dsort_job_alloc_error(err, errno, "the exchange's stage", x->stage_len);
    if ((st = dsort_comm_agree(c, st, err)))
        return st;
    /* (where the pieces land is faulted in by the exchange, a round at a time) */
    dsort_mem_populate(x->stage, x->stage_len);
    x->stats->bytes_received += rbytes - rcount[me];
    for (int r = 0; r < c->size; r++)
        x->stats->bytes_sent += r == me ? 0 : scount[r];
    return DSORT_OK;
}

/* Start the exchange: it runs while the merge consumes what has arrived. Agrees (the start
 * agrees on its own state). */
static enum dsort_status exchange_start(struct copy *x, const uint64_t *scount,
                                        const uint64_t *rcount, const uint64_t *rdispl,
                                        struct dsort_error *err)
{
    if (x->o->exchange)
        x->o->exchange->moves++; /* --stats "exchanges": one more, by the direct path */
    /* (the flow does not look at this rank's own counts: its piece stays in A) */
    return dsort_exchange_gather_start(
        &x->flow, x->c->comm, fill, x, scount, x->w, rcount, rdispl, x->stage, x->stage_len, x->rs,
        x->o->chunk ? (size_t)x->o->chunk : DSORT_EXCHANGE_CHUNK, err);
}

/* Tell the merge thread what has arrived (over: the exchange is over, st its error). */
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

/* The main thread: drive the exchange to its end, round by round, publishing what arrives;
 * the phase clock turns from the exchange to the write when the last round is in. Then free
 * its stage. Returns its first error. (The partners need every round of this rank's, whatever
 * went wrong here: it is driven to the end even when the merge has failed.) */
static enum dsort_status exchange_drive(struct copy *x, struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    while (!st && !dsort_exchange_flow_done(x->flow)) {
        /* (sleeping between tests: the merge and writer threads need the cores) */
        st = dsort_exchange_flow_progress(x->flow, DSORT_EXCHANGE_WAIT_IDLE, err);
        publish(x, 0, st, err);
    }
    int rounds = 0;
    enum dsort_status fst = dsort_exchange_flow_finish(x->flow, &rounds, st ? NULL : err);
    st = st ? st : fst;
    x->flow = NULL;
    publish(x, 1, st, err); /* (what has arrived stays as last published) */
    dsort_job_phase_next(x->stats, PH_EXCHANGE, &x->pc, PH_WRITE);
    x->exchanging = 0;
    x->stats->exchange_rounds += rounds;
    dsort_mem_free(x->stage, x->stage_len);
    x->stage = NULL;
    return st;
}

/* The kept records as a run: gathered from A through their entries, a block at a time. */
struct own_run {
    struct copy *x;
    const struct dsort_sortent *next, *end;
    unsigned char *buf;
    size_t cap; /* records */
};

static enum dsort_status own_refill(struct dsort_cursor *cur, struct dsort_error *err)
{
    (void)err;
    struct own_run *r = cur->ctx;
    size_t k = (size_t)(r->end - r->next) < r->cap ? (size_t)(r->end - r->next) : r->cap;
    const size_t first = (size_t)(r->next - r->x->ents);
    dsort_keysort_ready(&r->x->lazy, first, first + k, r->x->tmp_merge);
    dsort_keysort_gather(&r->x->o->fmt, r->x->a, r->next, k, r->buf);
    r->next += k;
    cur->cur = r->buf;
    cur->end = r->buf + k * r->x->rs;
    return DSORT_OK;
}

/* A received piece as a run: what has arrived of it, up to a slice at a time (the merge
 * thread's; it waits for the main thread to publish more). */
#define COPY_RECV_SLICE ((size_t)1 << 20)
struct recv_run {
    struct copy *x;
    int from;
    const unsigned char *base;
    uint64_t len, got; /* bytes: the piece, and what the merge has been given of it */
};

static enum dsort_status recv_refill(struct dsort_cursor *cur, struct dsort_error *err)
{
    struct recv_run *r = cur->ctx;
    struct copy *x = r->x;
    if (r->got == r->len)
        return DSORT_OK; /* cur == end: the piece is merged */
    pthread_mutex_lock(&x->mu);
    while (!x->xst && !x->over && x->have[r->from] <= r->got)
        pthread_cond_wait(&x->cv, &x->mu);
    const uint64_t have = x->have[r->from];
    const enum dsort_status st = x->xst;
    if (st)
        *err = x->xerr;
    pthread_mutex_unlock(&x->mu);
    if (st)
        return st;
    if (have <= r->got)
        return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                         "the exchange ended with %" PRIu64 " of %" PRIu64 " bytes from rank %d",
                         have, r->len, r->from);
    const size_t slice = COPY_RECV_SLICE / x->rs ? COPY_RECV_SLICE / x->rs * x->rs : x->rs;
    const uint64_t n = have - r->got < slice ? have - r->got : slice;
    cur->cur = r->base + r->got;
    cur->end = cur->cur + n;
    r->got += n;
    return DSORT_OK;
}

/* The output sink's view of the records written: their checksums and the progress. */
static void count_out(void *ctx, const unsigned char *p, size_t len)
{
    struct copy *x = ctx;
    const struct dsort_job_options *o = x->o;
    const size_t ors = dsort_job_out_rec(o);
    dsort_job_sum_records(o->output_dir || o->verify, p, len / ors, ors, &x->sums.sum_out,
                          &x->sums.con_out);
    x->written += len;
    dsort_progress_local("write", x->mark + x->written);
}

/* The merge's sources, in the input order of their sources (a stable merge): the kept records
 * (through their entries) and the received pieces as they arrive. Agrees. */
struct merge_src {
    struct dsort_cursor *cur;
    struct recv_run *recv;
    struct own_run own;
};

static enum dsort_status merge_prepare(struct copy *x, struct merge_src *m, const uint64_t *rcount,
                                       const uint64_t *rdispl, uint64_t g0, struct dsort_error *err)
{
    const struct dsort_comm *c = x->c;
    const size_t p = (size_t)c->size;
    uint64_t *g0s = NULL;
    enum dsort_status st = dsort_agree_allgather(c, c->comm, &g0, sizeof g0, (void **)&g0s, err);
    size_t *order = calloc(p, sizeof *order);
    m->cur = calloc(p, sizeof *m->cur);
    m->recv = calloc(p, sizeof *m->recv);
    m->own = (struct own_run){x, x->ents + x->cuts[c->rank], x->ents + x->cuts[c->rank + 1], NULL,
                              COPY_OWN_BUF / x->rs ? COPY_OWN_BUF / x->rs : 1};
    m->own.buf = malloc(m->own.cap * x->rs);
    if (!st && (!m->cur || !m->recv || !order || !m->own.buf))
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if (!(st = dsort_comm_agree(c, st, err))) {
        /* sources by (g0, rank): insertion sort of p indices */
        for (size_t i = 0; i < p; i++) {
            size_t j = i;
            while (j > 0 && g0s[order[j - 1]] > g0s[i])
                order[j] = order[j - 1], j--;
            order[j] = i;
        }
        for (size_t i = 0; i < p; i++) {
            const size_t r = order[i];
            if ((int)r == c->rank) {
                m->cur[i] = (struct dsort_cursor){m->own.buf, m->own.buf, own_refill, &m->own};
            } else {
                m->recv[r] = (struct recv_run){x, (int)r, x->w + rdispl[r], rcount[r], 0};
                m->cur[i] = (struct dsort_cursor){NULL, NULL, recv_refill, &m->recv[r]};
            }
        }
    }
    free(g0s);
    free(order);
    return st;
}

static void merge_free(struct merge_src *m)
{
    free(m->cur);
    free(m->recv);
    free(m->own.buf);
}

/* The merge, on a thread of its own while the main thread drives the exchange. */
struct merger {
    struct copy *x;
    struct merge_src *m;
    struct dsort_sink *sink;
    enum dsort_status st;
    struct dsort_error err;
};

static void *merge_main(void *arg)
{
    struct merger *mg = arg;
    const struct copy *x = mg->x;
    mg->st =
        dsort_merge(&x->o->fmt, &x->o->ord, mg->m->cur, (size_t)x->c->size, mg->sink, &mg->err);
    return NULL;
}

/* Merge the sources into the output: on a merge thread while this one drives the exchange
 * (after it, on this thread, if no thread can be had). Agrees. */
static enum dsort_status merge_out(struct copy *x, struct merge_src *m, struct dsort_output *out,
                                   struct dsort_job_stats *stats, struct dsort_error *err)
{
    struct dsort_output_sink os = {0};
    const size_t buf_len = COPY_OUT_BUF > 2 * x->rs ? COPY_OUT_BUF + 4096 : 2 * x->rs + 8192;
    enum dsort_status st = dsort_output_sink_open(&os, out, buf_len, count_out, x, err);
    const int opened = !st;
    struct merger mg = {.x = x, .m = m, .sink = &os.sink};
    pthread_t tid;
    const int threaded =
        opened && x->flow && dsort_cleanup_thread_create(&tid, merge_main, &mg, "dsort-merge") == 0;
    if (x->flow) {
        struct dsort_error xerr = {0};
        enum dsort_status xst = exchange_drive(x, &xerr);
        if (!st && xst) {
            st = xst;
            *err = xerr;
        }
    }
    if (threaded)
        pthread_join(tid, NULL);
    else if (opened && !st)
        merge_main(&mg);
    if (!st && mg.st) {
        st = mg.st;
        *err = mg.err;
    }
    stats->records_out = os.sink.records;
    if (opened)
        st = dsort_output_sink_finish(&os, st, err);
    stats->bytes_written = os.pos;
    dsort_job_phase_end(stats, PH_WRITE, &x->pc);
    x->sums.n_out = stats->records_out;
    x->sums.bytes_out = os.pos;
    return dsort_comm_agree(x->c, st, err);
}

int dsort_job_sort_copy(const struct dsort_comm *c, const struct dsort_job_options *o,
                        const struct dsort_inputs *in, const struct dsort_share *sh,
                        struct dsort_job_stats *stats)
{
    struct dsort_error err = {0};
    const size_t rs = o->fmt.rec_size, p = (size_t)c->size;
    struct copy x = {.c = c, .o = o, .rs = rs, .n = sh->n};
    const size_t bytes = (size_t)(x.n * rs), elen = (size_t)x.n * sizeof *x.ents;
    stats->records_in = x.n;
    struct dsort_output out;
    if (dsort_job_output_open(c, o, x.n * dsort_job_out_rec(o), &out, &err))
        return 2;
    /* --progress: read, sort, exchange, merge and write: four passes over the data */
    dsort_progress_start(c, o->progress, bytes, 4);
    x.mark = 3 * (uint64_t)bytes;
    /* the entries after the received records (or the scratch), 16-byte aligned: n * rs is
     * not a multiple of 8 for odd n with 100-byte records */
    const size_t head = ((bytes > elen ? bytes : elen) + 15) & ~(size_t)15;
    x.wlen = head + elen;
    x.a = dsort_mem_alloc(bytes);
    x.w = dsort_mem_alloc(x.wlen);
    x.ents = x.w ? (struct dsort_sortent *)(void *)(x.w + head) : NULL;
    x.cuts = calloc(p + 1, sizeof *x.cuts);
    x.have = calloc(p, sizeof *x.have);
    x.ahead = calloc(p, sizeof *x.ahead);
    pthread_mutex_init(&x.mu, NULL);
    pthread_cond_init(&x.cv, NULL);
    uint64_t *counts = calloc(3 * p, sizeof *counts);
    enum dsort_status st = DSORT_OK;
    int rc = 2, sorting = 0;
    pthread_t sorter;
    if (!x.a || !x.w || !x.cuts || !x.have || !x.ahead || !counts)
        st = dsort_job_alloc_error(&err, errno, "buffers", bytes + x.wlen);
    if ((st = dsort_comm_agree(c, st, &err)) || (st = read_and_sort(&x, in, sh, stats, &err)))
        goto fail;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SPLIT);
    if ((st = dsort_inmem_cut(c, o, in, x.n, sh->g0, sorted_rec, &x, x.cuts, stats, &err)))
        goto fail;
    /* The sorter sorts ahead of the sends and the merge (without it, they sort what they
     * want themselves, and the input is summed at the end) */
    memcpy(x.ahead, x.cuts, p * sizeof *x.ahead);
    sorting = dsort_cleanup_thread_create(&sorter, sorter_main, &x, "dsort-sort") == 0;
    dsort_job_phase_end(stats, PH_SPLIT, &pc);
    dsort_progress_step(c, "exchange", 2 * (uint64_t)bytes);
    /* The exchange runs while the merge writes what has arrived (exchange_drive, merge_main):
     * its phase lasts until the last round is in, the write's from then to the output's end. */
    x.stats = stats;
    x.exchanging = p > 1;
    dsort_job_phase_begin(&x.pc, p > 1 ? PH_EXCHANGE : PH_WRITE);
    if (p > 1 && (st = exchange_plan(&x, counts, counts + p, counts + 2 * p, &err)))
        goto fail;
    if (p == 1)
        counts[p] = bytes;
    struct merge_src m;
    st = merge_prepare(&x, &m, counts + p, counts + 2 * p, sh->g0, &err);
    if (!st && p > 1)
        st =
            dsort_comm_agree(c, exchange_start(&x, counts, counts + p, counts + 2 * p, &err), &err);
    dsort_progress_step(c, "write", x.mark);
    x.sums.n_in = x.n;
    if (!st)
        st = merge_out(&x, &m, &out, stats, &err);
    merge_free(&m);
    if (st)
        atomic_store_explicit(&x.stop, 1, memory_order_relaxed);
    if (sorting)
        pthread_join(sorter, NULL);
    sorting = 0;
    if (!st)
        sum_input(&x, x.n); /* what the sorter left */
    if (!st)
        rc = dsort_job_finish(c, o, in, &out, &x.sums, stats, &err);
fail:
    if (sorting) { /* (a failure after the splitters: freeing what the sorter uses) */
        atomic_store_explicit(&x.stop, 1, memory_order_relaxed);
        pthread_join(sorter, NULL);
    }
    if (x.flow) /* (not reached: a started exchange is driven to its end in merge_out) */
        dsort_exchange_flow_finish(x.flow, NULL, NULL);
    if (x.exchanging) /* failed before the exchange could start */
        dsort_job_phase_end(stats, PH_EXCHANGE, &x.pc);
    if (st)
        dsort_output_abandon(&out);
    dsort_mem_free(x.stage, x.stage_len);
    dsort_mem_free(x.a, bytes);
    dsort_mem_free(x.w, x.wlen);
    pthread_cond_destroy(&x.cv);
    pthread_mutex_destroy(&x.mu);
    free(x.have);
    free(x.cuts);
    free(x.tmp_main); /* (the three scratches) */
    free(x.ahead);
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
