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
#include "recfmt.h"
#include "splitters.h"

#define COPY_STAGE ((size_t)16 << 20)  /* the sends' stage */
#define COPY_OUT_BUF ((size_t)8 << 20) /* each of the output writer's two buffers */
#define COPY_OWN_BUF ((size_t)1 << 20) /* the kept records, gathered for the merge */
#define COPY_EARLY_DIV 4               /* E: the share's first quarter (at several ranks) */
#define COPY_SAMPLES 4096              /* sample keys a rank */
#define COPY_SAMPLE_BYTES ((uint64_t)4 << 20)
#define COPY_SAMPLE_TOL 0.002 /* the splitters within this much of a bucket's samples */

struct copy;

/* A part of the share (E or R): its records in A, its entries sorted a bucket at a time as
 * they are wanted (dsort_keysort_ready: each thread with its own scratch), cut by the
 * splitters, sent in a flow of its own; where the other ranks' pieces of it land. */
struct part {
    struct copy *x;
    int index;           /* 0: E (or the whole share at one rank), 1: R */
    unsigned char *recs; /* in A */
    uint64_t first, n;   /* the share's records [first, first + n) */
    struct dsort_keysort_lazy lazy;
    struct dsort_sortent *ents;
    uint64_t *cuts; /* [p + 1]: sorted entries [cuts[r], cuts[r + 1]) go to rank r */
    uint64_t *scount, *rcount, *rdispl; /* [p] each, bytes: sent, received, where it lands */
    unsigned char *rbuf;                /* the received pieces (rdispl into it) */
    unsigned char *rown; /* rbuf when it did not fit in X (its own mapping), else NULL */
    uint64_t rown_len;
    unsigned char *stage; /* the sends' stage, while its flow runs */
    size_t stage_len;
    uint64_t *ahead; /* [p]: the sorter has sorted piece r up to entry ahead[r] */
};

struct copy {
    const struct dsort_comm *c;
    const struct dsort_job_options *o;
    const struct dsort_inputs *in;
    size_t rs;
    uint64_t n, g0;   /* the share */
    unsigned char *a; /* the share, in input order */
    unsigned char *w; /* W: X (cap bytes), then R's entries */
    size_t wlen, cap;
    struct dsort_sortent *ents_e; /* E's entries (their own allocation) */
    size_t ents_e_len;
    struct part part[2];
    int nparts;
    /* The sampled splitters (several ranks): p - 1 composite keys of ks bytes */
    struct dsort_cmp cmp;
    struct dsort_recfmt_ctx fx;
    size_t ks;
    unsigned char *splitters;
    struct dsort_sortent *tmp_main, *tmp_merge, *tmp_sorter; /* bucket scratches, one block */
    uint64_t summed; /* A's records [0, summed) are in sums.sum_in, con_in (the sorter's, then
                      * the main thread's once it is joined) */
    atomic_int stop; /* the sorter: stop (the job failed) */
    struct dsort_job_sums sums;
    uint64_t written;
    uint64_t mark; /* --progress: where the write starts */
    /* The exchange flow being driven by the main thread (E's, then R's while the merge thread
     * writes what has arrived; NULL at one rank): */
    struct dsort_exchange_flow *flow;
    struct dsort_job_stats *stats;
    struct dsort_output *out;
    pthread_t sorter;
    int sorting; /* the sorter thread runs */
    struct dsort_phase_clock pc;
    int exchanging; /* the phase clock runs PH_EXCHANGE (else PH_WRITE) */
    /* What has arrived of R's pieces, as the merge thread sees it (under mu; published by the
     * main thread): bytes of each piece, the exchange over, its error. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t *have;
    int over;
    enum dsort_status xst;
    struct dsort_error xerr;
};

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

/* Buckets above this many entries are sorted when a part is split (with the split's scratch),
 * the others as they are wanted, with a scratch of their size a thread (at most 4 MiB).
 * DSORT_COPY_EAGER=N (a testing aid) sets it: 0 sorts every bucket at the split; more than the
 * default (or not a number) is the default. */
#define COPY_EAGER ((size_t)1 << 18)
static size_t copy_eager(void)
{
    const char *v = getenv("DSORT_COPY_EAGER");
    char *end;
    errno = 0;
    const unsigned long long n = v && *v ? strtoull(v, &end, 10) : 0;
    return v && *v && !errno && !*end && n <= COPY_EAGER ? (size_t)n : COPY_EAGER;
}

/* The entries made as a part is read (dsort_job_topo_read_each's hook, made_piece): those of
 * the records wholly inside each piece, while it is in the cache, counted by first byte; a
 * record that a piece's start or end cuts is noted (cut) and its entry made after the read. */
struct made {
    const struct part *pt;
    struct dsort_sortent *tmp; /* the part's entries, in index order (in X) */
    pthread_mutex_t mu;        /* (the pieces of a share on several devices: several threads) */
    size_t cnt[256];
    size_t *cut, ncut, cap;
    int nomem;
};

static void made_piece(void *arg, unsigned char *piece, size_t len)
{
    struct made *m = arg;
    const struct part *pt = m->pt;
    const struct copy *x = pt->x;
    const size_t rs = x->rs, off = (size_t)(piece - pt->recs), end = off + len;
    const size_t i0 = (off + rs - 1) / rs, i1 = end / rs; /* wholly inside: [i0, i1) */
    size_t cnt[256] = {0};
    if (i1 > i0)
        dsort_keysort_entries(&x->o->fmt, &x->o->ord, pt->recs, i0, i1 - i0, m->tmp, cnt);
    pthread_mutex_lock(&m->mu);
    for (int b = 0; b < 256; b++)
        m->cnt[b] += cnt[b];
    for (int k = 0; k < 2; k++) {
        const size_t at = k ? end : off;
        if (at % rs == 0)
            continue;
        if (m->ncut == m->cap) {
            size_t *c = realloc(m->cut, (2 * m->cap + 16) * sizeof *c);
            if (!c) {
                m->nomem = 1;
                break;
            }
            m->cut = c;
            m->cap = 2 * m->cap + 16;
        }
        m->cut[m->ncut++] = at / rs;
    }
    pthread_mutex_unlock(&m->mu);
}

static int size_cmp(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Read part pt into A, making its entries in tmp (n of them) as it comes in, counted by their
 * first key byte in cnt. Local; on the reader thread for R. */
static enum dsort_status read_part(struct part *pt, struct dsort_sortent *tmp, size_t *cnt,
                                   struct dsort_error *err)
{
    struct copy *x = pt->x;
    struct made m = {.pt = pt, .tmp = tmp};
    pthread_mutex_init(&m.mu, NULL);
    dsort_mem_populate(tmp, (size_t)pt->n * sizeof *tmp); /* (A: a piece at a time, as read) */
    /* (not typed: dsort_job_copy_usable; summed later, sum_input) */
    enum dsort_status st = dsort_job_topo_read_each(x->o->topo, x->in, pt->first, pt->n, pt->recs,
                                                    made_piece, &m, err);
    if (!st && m.nomem)
        st = dsort_job_alloc_error(err, ENOMEM, "the read's notes", (m.cap + 16) * sizeof *m.cut);
    if (!st && m.ncut) /* the entries of the records the pieces cut, each once */
        qsort(m.cut, m.ncut, sizeof *m.cut, size_cmp);
    for (size_t k = 0; !st && k < m.ncut; k++)
        if (k == 0 || m.cut[k] != m.cut[k - 1])
            dsort_keysort_entries(&x->o->fmt, &x->o->ord, pt->recs, m.cut[k], 1, tmp, m.cnt);
    uint64_t made = 0;
    for (int b = 0; b < 256; b++)
        made += cnt[b] = m.cnt[b];
    if (!st && made != pt->n)
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "the read made %" PRIu64 " entries for %" PRIu64 " records", made, pt->n);
    pthread_mutex_destroy(&m.mu);
    free(m.cut);
    return st;
}

/* Split part pt's entries (made in tmp, cnt their counts by first byte) into pt->ents by their
 * first key byte: the radix sort's first pass (the rest is done as they are wanted). Local. */
static void split_part(struct part *pt, struct dsort_sortent *tmp, const size_t *cnt)
{
    const struct copy *x = pt->x;
    dsort_mem_populate(pt->ents, (size_t)pt->n * sizeof *pt->ents);
    dsort_keysort_split_made(&pt->lazy, &x->o->fmt, &x->o->ord, pt->recs, (size_t)pt->n, pt->ents,
                             tmp, cnt, copy_eager());
}

/* Read part pt and split it, in the read and sort phases (stats; NULL: none, on the reader
 * thread during the exchange). Local. */
static enum dsort_status read_and_split(struct part *pt, struct dsort_job_stats *stats,
                                        struct dsort_error *err)
{
    struct copy *x = pt->x;
    struct dsort_sortent *tmp = (struct dsort_sortent *)(void *)x->w; /* (X's start) */
    size_t cnt[256];
    struct dsort_phase_clock pc;
    if (stats)
        dsort_job_phase_begin(&pc, PH_READ);
    enum dsort_status st = read_part(pt, tmp, cnt, err);
    if (stats) {
        stats->bytes_read += pt->n * dsort_job_out_rec(x->o);
        dsort_job_phase_end(stats, PH_READ, &pc);
        if ((st = dsort_comm_agree(x->c, st, err)))
            return st;
        dsort_progress_step(x->c, "sort", x->n * x->rs); /* (a pass: R is read meanwhile) */
        dsort_job_phase_begin(&pc, PH_SORT);
    }
    if (!st)
        split_part(pt, tmp, cnt);
    if (stats)
        dsort_job_phase_end(stats, PH_SORT, &pc);
    return st;
}

/* The sampled splitters (several ranks): composite keys (as out of core: fmt_fixed.c) of a few
 * thousand records at evenly spaced positions of the share, selected over every rank's sample
 * (dsort_splitters_sample: no rank gathers them). Collective. */
static enum dsort_status choose_splitters(struct copy *x, struct dsort_error *err)
{
    const struct dsort_job_options *o = x->o;
    /* DSORT_COPY_SAMPLES=N (a testing aid): at most N a rank (0: none anywhere sends every
     * record to the last rank) */
    const char *v = getenv("DSORT_COPY_SAMPLES");
    char *vend;
    errno = 0;
    const unsigned long long want = v && *v ? strtoull(v, &vend, 10) : COPY_SAMPLES;
    const uint64_t per = v && *v && !errno && !*vend && want < COPY_SAMPLES ? want : COPY_SAMPLES;
    uint64_t ns = dsort_splitters_sample_count(x->n, 1, x->ks, COPY_SAMPLES, COPY_SAMPLE_BYTES);
    ns = ns < per ? ns : per;
    unsigned char *sample = malloc(ns * x->ks + 1), *rec = malloc(x->rs);
    x->splitters = calloc((size_t)x->c->size, x->ks);
    enum dsort_status st = DSORT_OK;
    if (!sample || !rec || !x->splitters)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    /* every sample's page asked for first (ooc_fixed.c) */
    for (uint64_t k = 0; !st && k < ns; k++)
        dsort_inputs_advise(x->in, x->part[0].first + (k * x->n + x->n / 2) / ns, 1);
    for (uint64_t k = 0; !st && k < ns; k++) {
        const uint64_t i = (k * x->n + x->n / 2) / ns;
        st = dsort_job_read_one(o, x->in, x->part[0].first + i, rec, err);
        if (!st)
            dsort_recfmt_fixed.sample_key(&x->fx, rec, x->rs, x->g0 + i, sample + k * x->ks);
    }
    free(rec);
    if (!(st = dsort_comm_agree(x->c, st, err)))
        st = dsort_comm_agree(x->c,
                              dsort_splitters_sample(x->c->comm, sample, ns, x->ks, COPY_SAMPLE_TOL,
                                                     x->splitters, &x->stats->splitter_rounds, err),
                              err);
    free(sample);
    return st;
}

/* Cut part pt by the splitters (at one rank: all of it to this rank). The search reads only
 * the bucket each splitter falls in (its first byte; every entry of a lower bucket is below
 * it, of a higher one above), sorted first. Local. */
static enum dsort_status cut_part(struct copy *x, struct part *pt, struct dsort_error *err)
{
    const int p = x->c->size;
    pt->cuts[0] = 0;
    pt->cuts[p] = pt->n;
    if (p == 1)
        return DSORT_OK;
    for (int d = 0; d < p - 1; d++) {
        const int b = x->o->fmt.key_len ? x->splitters[(size_t)d * x->ks] : -1;
        const size_t lo = b < 0 ? 0 : pt->lazy.off[b], hi = b < 0 ? pt->n : pt->lazy.off[b + 1];
        dsort_keysort_ready(&pt->lazy, lo, hi, x->tmp_main);
    }
    size_t *end = malloc((size_t)p * sizeof *end);
    if (!end)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    const struct dsort_recfmt_chunk ch = {.data = pt->recs,
                                          .n = (size_t)pt->n,
                                          .ents = pt->ents,
                                          .g0 = x->g0 + (pt->first - x->part[0].first)};
    const struct dsort_recfmt_splits sp = {.n = (size_t)(p - 1), .keys = x->splitters, .ks = x->ks};
    enum dsort_status st = dsort_recfmt_fixed.cut(&x->fx, &ch, &sp, end, err);
    for (int d = 0; !st && d < p - 1; d++)
        pt->cuts[d + 1] = end[d];
    free(end);
    return st;
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
static enum dsort_status exchange_drive(struct copy *x, struct dsort_error *err)
{
    enum dsort_status st = flow_drive(x, &x->part[x->nparts - 1], 1, NULL, NULL, err);
    dsort_job_phase_next(x->stats, PH_EXCHANGE, &x->pc, PH_WRITE);
    x->exchanging = 0;
    return st;
}

/* A part's kept records as a run: gathered from A through their entries, a block at a time. */
struct own_run {
    struct part *pt;
    const struct dsort_sortent *next, *end;
    unsigned char *buf;
    size_t cap; /* records */
};

static enum dsort_status own_refill(struct dsort_cursor *cur, struct dsort_error *err)
{
    (void)err;
    struct own_run *r = cur->ctx;
    const struct part *pt = r->pt;
    size_t k = (size_t)(r->end - r->next) < r->cap ? (size_t)(r->end - r->next) : r->cap;
    const size_t first = (size_t)(r->next - pt->ents);
    dsort_keysort_ready(&r->pt->lazy, first, first + k, pt->x->tmp_merge);
    dsort_keysort_gather(&pt->x->o->fmt, pt->recs, r->next, k, r->buf);
    r->next += k;
    cur->cur = r->buf;
    cur->end = r->buf + k * pt->x->rs;
    return DSORT_OK;
}

/* A received piece as a run: what has arrived of it, up to a slice at a time (the merge
 * thread's; for R it waits for the main thread to publish more, E's are in before the merge
 * starts). */
#define COPY_RECV_SLICE ((size_t)1 << 20)
struct recv_run {
    struct copy *x;
    int from, arrived; /* arrived: the piece is all in (E's) */
    const unsigned char *base;
    uint64_t len, got; /* bytes: the piece, and what the merge has been given of it */
};

static enum dsort_status recv_refill(struct dsort_cursor *cur, struct dsort_error *err)
{
    struct recv_run *r = cur->ctx;
    struct copy *x = r->x;
    if (r->got == r->len)
        return DSORT_OK; /* cur == end: the piece is merged */
    uint64_t have = r->len;
    if (!r->arrived) {
        pthread_mutex_lock(&x->mu);
        while (!x->xst && !x->over && x->have[r->from] <= r->got)
            pthread_cond_wait(&x->cv, &x->mu);
        have = x->have[r->from];
        const enum dsort_status st = x->xst;
        if (st)
            *err = x->xerr;
        pthread_mutex_unlock(&x->mu);
        if (st)
            return st;
    }
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

/* The merge's sources, in the input order of their records (a stable merge): by rank in the
 * job's input order, each rank's parts in order; this rank's kept records through their
 * entries, the received pieces as they arrive. */
struct merge_src {
    struct dsort_cursor *cur;
    struct recv_run *recv; /* [nparts * p] */
    struct own_run own[2];
};

/* Agrees. */
static enum dsort_status merge_prepare(struct copy *x, struct merge_src *m, struct dsort_error *err)
{
    const struct dsort_comm *c = x->c;
    const size_t p = (size_t)c->size, np = (size_t)x->nparts;
    uint64_t *g0s = NULL;
    enum dsort_status st =
        dsort_agree_allgather(c, c->comm, &x->g0, sizeof x->g0, (void **)&g0s, err);
    size_t *order = calloc(p, sizeof *order);
    m->cur = calloc(np * p, sizeof *m->cur);
    m->recv = calloc(np * p, sizeof *m->recv);
    const size_t cap = COPY_OWN_BUF / x->rs ? COPY_OWN_BUF / x->rs : 1;
    for (size_t k = 0; k < np; k++) {
        struct part *pt = &x->part[k];
        m->own[k] = (struct own_run){pt, pt->ents + pt->cuts[c->rank],
                                     pt->ents + pt->cuts[c->rank + 1], malloc(cap * x->rs), cap};
        if (!m->own[k].buf && !st)
            st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    }
    if (!st && (!m->cur || !m->recv || !order))
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if (!(st = dsort_comm_agree(c, st, err))) {
        /* ranks by g0: insertion sort of p indices */
        for (size_t i = 0; i < p; i++) {
            size_t j = i;
            while (j > 0 && g0s[order[j - 1]] > g0s[i])
                order[j] = order[j - 1], j--;
            order[j] = i;
        }
        for (size_t i = 0; i < p; i++)
            for (size_t k = 0; k < np; k++) {
                const size_t r = order[i], s = i * np + k;
                struct part *pt = &x->part[k];
                if ((int)r == c->rank) {
                    m->cur[s] =
                        (struct dsort_cursor){m->own[k].buf, m->own[k].buf, own_refill, &m->own[k]};
                } else {
                    m->recv[s] = (struct recv_run){
                        x, (int)r, k + 1 < np, pt->rbuf + pt->rdispl[r], pt->rcount[r], 0};
                    m->cur[s] = (struct dsort_cursor){NULL, NULL, recv_refill, &m->recv[s]};
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
    free(m->own[0].buf);
    free(m->own[1].buf);
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
    mg->st = dsort_merge(&x->o->fmt, &x->o->ord, mg->m->cur, (size_t)(x->nparts * x->c->size),
                         mg->sink, &mg->err);
    return NULL;
}

/* Merge the sources into the output: on a merge thread while this one drives R's exchange
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
    rd->st = read_and_split(&x->part[1], NULL, &rd->err);
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
        (st = dsort_comm_agree(x->c, cut_part(x, r, err), err)))
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
    enum dsort_status st = choose_splitters(x, err);
    dsort_job_phase_end(stats, PH_SAMPLE, &pc);
    if (st)
        return st;
    if ((st = read_and_split(e, stats, err)))
        return st;
    dsort_job_phase_begin(&pc, PH_SPLIT);
    st = dsort_comm_agree(x->c, cut_part(x, e, err), err);
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
    enum dsort_status st = read_and_split(pt, stats, err);
    if (!st)
        st = cut_part(x, pt, err);
    if ((st = dsort_comm_agree(x->c, st, err)))
        return st;
    memcpy(pt->ahead, pt->cuts, sizeof *pt->ahead); /* the sorter, as prepare_rest starts it */
    x->sorting = dsort_cleanup_thread_create(&x->sorter, sorter_main, x, "dsort-sort") == 0;
    return DSORT_OK;
}

/* The composite keys' order (fmt_fixed.c's, as out of core sets it up): the key, then the
 * whole record as the last resort unless -s, then the position. */
static void setup_keys(struct copy *x)
{
    const struct dsort_job_options *o = x->o;
    const int tagged = !dsort_order_last_resort(&o->ord);
    dsort_cmp_init(&x->cmp, &o->fmt, &o->ord);
    if (tagged) { /* ties by the position suffix, ascending */
        x->cmp.tie_off = x->rs;
        x->cmp.tie_len = 8;
        x->cmp.tie_reverse = 0;
    }
    x->ks = o->fmt.key_len + (tagged ? 0 : x->cmp.tie_len) + 8;
    x->fx = (struct dsort_recfmt_ctx){.cmp = &x->cmp,
                                      .rec = x->rs + (tagged ? 8 : 0),
                                      .fmt = &o->fmt,
                                      .order = &o->ord,
                                      .rec_in = x->rs,
                                      .tagged = tagged,
                                      .ks = x->ks};
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
    setup_keys(&x);
    /* X: the received records (a sixteenth over the share: sampled splitters) or the entries
     * being made, whichever is more, 16-byte aligned; then the last part's entries */
    const size_t elast = (size_t)(p > 1 ? nr : ne) * sizeof(struct dsort_sortent);
    const size_t emade = (size_t)(p > 1 ? (ne > nr ? ne : nr) : ne) * sizeof(struct dsort_sortent);
    size_t cap = bytes + (p > 1 ? bytes / 16 : 0);
    cap = ((cap > emade ? cap : emade) + 15) & ~(size_t)15;
    x.cap = cap;
    x.wlen = cap + elast;
    x.a = dsort_mem_alloc(bytes);
    x.w = dsort_mem_alloc(x.wlen);
    x.ents_e_len = p > 1 ? (size_t)ne * sizeof(struct dsort_sortent) : 0;
    x.ents_e = p > 1 ? dsort_mem_alloc(x.ents_e_len) : NULL;
    const size_t stride = 4 * p + 1; /* a part's cuts, scount, rcount, rdispl */
    uint64_t *counts = calloc(stride * (size_t)x.nparts + p, sizeof *counts);
    x.have = calloc(p, sizeof *x.have);
    const size_t tn = copy_eager() ? copy_eager() : 1; /* the scratches: the largest lazy bucket */
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
                            .index = k,
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
    st = merge_prepare(&x, &m, &err);
    if (!st && p > 1)
        st = dsort_comm_agree(c, exchange_start(&x, last, &err), &err);
    dsort_progress_step(c, "write", x.mark);
    x.sums.n_in = x.n;
    if (!st)
        st = merge_out(&x, &m, &out, stats, &err);
    merge_free(&m);
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
