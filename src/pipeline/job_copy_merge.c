/* The copying path's merge into the output (job_copy_impl.h; the design: job_copy.c). */
#include "job_copy_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "cleanup.h"
#include "job_end.h"
#include "job_typed.h"
#include "outsink.h"
#include "progress.h"

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

/* Agrees. */
enum dsort_status dsort_copy_merge_prepare(struct copy *x, struct merge_src *m,
                                           struct dsort_error *err)
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

void dsort_copy_merge_free(struct merge_src *m)
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
enum dsort_status dsort_copy_merge_out(struct copy *x, struct merge_src *m,
                                       struct dsort_output *out, struct dsort_job_stats *stats,
                                       struct dsort_error *err)
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
        enum dsort_status xst = dsort_copy_exchange_drive(x, &xerr);
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
