/* The copying path in memory without a second copy of the share (job_copy.h).
 *
 * Memory: the share A (read into it), and one region W of n * rec_size + 16 n bytes of which
 * only what is used is touched: the sort entries at its end, the radix scratch at its start,
 * then the records received from the other ranks at its start. The records a rank keeps stay
 * in A; the ones it sends are gathered, in sorted order, into a 16 MiB stage just before they
 * are sent; the merge streams into the output's writer buffers. Fresh memory is A, the
 * received records or the scratch (whichever is more) and the entries, and the stage and the
 * writer's two buffers: about 1.66x the share at two ranks, against 2.16x for job_mem.c's
 * second share-sized buffer (docs/performance.md, "The copying path").
 */
#include "job_copy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "exchange.h"
#include "inmem.h"
#include "job_end.h"
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
    uint64_t *cuts;             /* [p + 1]: sorted entries [cuts[r], cuts[r + 1]) go to r */
    struct dsort_job_sums sums;
    uint64_t written;
    uint64_t mark; /* --progress: where the write starts */
};

/* The i-th sorted record (dsort_inmem_cut's rec_at). */
static const unsigned char *sorted_rec(const void *ctx, uint64_t i)
{
    const struct copy *x = ctx;
    return x->a + dsort_sortent_index(&x->ents[i]) * x->rs;
}

/* dsort_exchange_gather's fill: the piece for rank to, from its byte at on. */
static void fill(void *ctx, int to, uint64_t at, size_t len, unsigned char *dst)
{
    const struct copy *x = ctx;
    dsort_keysort_gather(&x->o->fmt, x->a, x->ents + x->cuts[to] + at / x->rs, len / x->rs, dst);
}

/* The kept records as a run: gathered from A through their entries, a block at a time. */
struct own_run {
    const struct copy *x;
    const struct dsort_sortent *next, *end;
    unsigned char *buf;
    size_t cap; /* records */
};

static enum dsort_status own_refill(struct dsort_cursor *cur, struct dsort_error *err)
{
    (void)err;
    struct own_run *r = cur->ctx;
    size_t k = (size_t)(r->end - r->next) < r->cap ? (size_t)(r->end - r->next) : r->cap;
    dsort_keysort_gather(&r->x->o->fmt, r->x->a, r->next, k, r->buf);
    r->next += k;
    cur->cur = r->buf;
    cur->end = r->buf + k * r->x->rs;
    return DSORT_OK;
}

/* Read the share into A (and checksum it), sort its entries. Agrees. */
static enum dsort_status read_and_sort(struct copy *x, const struct dsort_inputs *in,
                                       const struct dsort_share *sh, struct dsort_job_stats *stats,
                                       struct dsort_error *err)
{
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_READ);
    dsort_mem_populate(x->a, (size_t)x->n * x->rs); /* faulted in at once, not page by page */
    enum dsort_status st =
        dsort_job_read(x->o, in, sh->first, x->n, x->a, &x->sums.sum_in, &x->sums.con_in, err);
    stats->bytes_read = x->n * dsort_job_out_rec(x->o);
    dsort_job_phase_end(stats, PH_READ, &pc);
    if ((st = dsort_comm_agree(x->c, st, err)))
        return st;
    dsort_progress_step(x->c, "sort", x->n * x->rs);
    dsort_job_phase_begin(&pc, PH_SORT);
    const size_t elen = (size_t)x->n * sizeof *x->ents;
    dsort_mem_populate(x->w, elen);    /* the scratch */
    dsort_mem_populate(x->ents, elen); /* the entries */
    dsort_keysort_sort(&x->o->fmt, &x->o->ord, x->a, (size_t)x->n, x->ents,
                       (struct dsort_sortent *)(void *)x->w);
    dsort_job_phase_end(stats, PH_SORT, &pc);
    return DSORT_OK;
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

/* The pieces for the other ranks, gathered as they are sent, into W (from rank 0 up, this
 * rank's own piece left out); rcount gets what each rank sends here, in bytes. Agrees. */
static enum dsort_status exchange(struct copy *x, uint64_t *scount, uint64_t *rcount,
                                  uint64_t *rdispl, struct dsort_job_stats *stats,
                                  struct dsort_error *err)
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
    const size_t stage_len = stage_size(c, scount, x->rs);
    unsigned char *stage = st ? NULL : dsort_mem_alloc(stage_len);
    if (!st && !stage)
        st = dsort_job_alloc_error(err, errno, "the exchange's stage", stage_len);
    if ((st = dsort_comm_agree(c, st, err)))
        return st;
    dsort_mem_populate(x->w, (size_t)off); /* where the pieces land */
    dsort_mem_populate(stage, stage_len);
    const uint64_t keep = scount[me];
    scount[me] = rcount[me] = 0;
    int rounds = 0;
    if (x->o->exchange)
        x->o->exchange->moves++; /* --stats "exchanges": one more, by the direct path */
    st = dsort_exchange_gather(c->comm, fill, x, scount, x->w, rcount, rdispl, stage, stage_len,
                               x->rs, x->o->chunk ? (size_t)x->o->chunk : DSORT_EXCHANGE_CHUNK,
                               &rounds, err);
    dsort_mem_free(stage, stage_len);
    scount[me] = rcount[me] = keep;
    stats->exchange_rounds += rounds;
    stats->bytes_received += rbytes - keep;
    for (int r = 0; r < c->size; r++)
        stats->bytes_sent += r == me ? 0 : scount[r];
    return dsort_comm_agree(c, st, err);
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

/* Merge the kept records (through their entries) and the received pieces, in the input order
 * of their sources (a stable merge), into the output. Agrees. */
static enum dsort_status merge_out(struct copy *x, struct dsort_output *out, const uint64_t *rcount,
                                   const uint64_t *rdispl, uint64_t g0,
                                   struct dsort_job_stats *stats, struct dsort_error *err)
{
    const struct dsort_comm *c = x->c;
    const size_t p = (size_t)c->size;
    uint64_t *g0s = NULL;
    enum dsort_status st = dsort_agree_allgather(c, c->comm, &g0, sizeof g0, (void **)&g0s, err);
    struct dsort_cursor *cur = calloc(p, sizeof *cur);
    size_t *order = calloc(p, sizeof *order);
    struct own_run own = {x, x->ents + x->cuts[c->rank], x->ents + x->cuts[c->rank + 1], NULL,
                          COPY_OWN_BUF / x->rs ? COPY_OWN_BUF / x->rs : 1};
    own.buf = malloc(own.cap * x->rs);
    if (!st && (!cur || !order || !own.buf))
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    /* sources by (g0, rank): insertion sort of p indices */
    for (size_t i = 0; i < p; i++) {
        size_t j = i;
        while (j > 0 && g0s[order[j - 1]] > g0s[i])
            order[j] = order[j - 1], j--;
        order[j] = i;
    }
    for (size_t i = 0; i < p; i++) {
        size_t r = order[i];
        if ((int)r == c->rank) {
            cur[i] = (struct dsort_cursor){own.buf, own.buf, own_refill, &own};
        } else {
            dsort_cursor_memory(&cur[i], x->w + rdispl[r], (size_t)(rcount[r] / x->rs), x->rs);
        }
    }
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_WRITE);
    struct dsort_output_sink os;
    const size_t buf_len = COPY_OUT_BUF > 2 * x->rs ? COPY_OUT_BUF + 4096 : 2 * x->rs + 8192;
    st = dsort_output_sink_open(&os, out, buf_len, count_out, x, err);
    if (!st) {
        st = dsort_merge(&x->o->fmt, &x->o->ord, cur, p, &os.sink, err);
        stats->records_out = os.sink.records;
        st = dsort_output_sink_finish(&os, st, err);
        stats->bytes_written = os.pos;
    }
    dsort_job_phase_end(stats, PH_WRITE, &pc);
    x->sums.n_out = stats->records_out;
    x->sums.bytes_out = os.pos;
    st = dsort_comm_agree(c, st, err);
out:
    free(g0s);
    free(cur);
    free(order);
    free(own.buf);
    return st;
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
    uint64_t *counts = calloc(3 * p, sizeof *counts);
    enum dsort_status st = DSORT_OK;
    if (!x.a || !x.w || !x.cuts || !counts)
        st = dsort_job_alloc_error(&err, errno, "buffers", bytes + x.wlen);
    if ((st = dsort_comm_agree(c, st, &err)) || (st = read_and_sort(&x, in, sh, stats, &err)))
        goto fail;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SPLIT);
    if ((st = dsort_inmem_cut(c, o, in, x.n, sh->g0, sorted_rec, &x, x.cuts, stats, &err)))
        goto fail;
    dsort_job_phase_end(stats, PH_SPLIT, &pc);
    dsort_progress_step(c, "exchange", 2 * (uint64_t)bytes);
    if (p > 1) {
        dsort_job_phase_begin(&pc, PH_EXCHANGE);
        if ((st = exchange(&x, counts, counts + p, counts + 2 * p, stats, &err)))
            goto fail;
        dsort_job_phase_end(stats, PH_EXCHANGE, &pc);
    } else {
        counts[p] = bytes;
    }
    dsort_progress_step(c, "write", x.mark);
    x.sums.n_in = x.n;
    if ((st = merge_out(&x, &out, counts + p, counts + 2 * p, sh->g0, stats, &err)))
        goto fail;
    int rc = dsort_job_finish(c, o, in, &out, &x.sums, stats, &err);
    dsort_mem_free(x.a, bytes);
    dsort_mem_free(x.w, x.wlen);
    free(x.cuts);
    free(counts);
    return rc;
fail:
    dsort_output_abandon(&out);
    dsort_mem_free(x.a, bytes);
    dsort_mem_free(x.w, x.wlen);
    free(x.cuts);
    free(counts);
    return 2;
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
