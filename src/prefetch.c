#include "prefetch.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"

struct dsort_prefetch {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct dsort_preq *head, *tail;
    int stop;
};

void dsort_prefetch_read(struct dsort_preq *rq)
{
    rq->got = 0;
    rq->st = DSORT_OK;
    while (rq->got < rq->len) {
        ssize_t n = pread(rq->fd, rq->buf + rq->got, rq->len - rq->got, (off_t)(rq->off + rq->got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rq->st = DSORT_ERR(&rq->err, DSORT_EIO, errno, "cannot read '%s' at offset %" PRIu64,
                               rq->path, rq->off + rq->got);
            return;
        }
        if (n == 0)
            return; /* end of file */
        rq->got += (size_t)n;
    }
}

static void *prefetch_main(void *arg)
{
    struct dsort_prefetch *pf = arg;
    pthread_mutex_lock(&pf->mu);
    for (;;) {
        while (!pf->head && !pf->stop)
            pthread_cond_wait(&pf->cv, &pf->mu);
        if (!pf->head)
            break;
        struct dsort_preq *rq = pf->head;
        pf->head = rq->next;
        if (!pf->head)
            pf->tail = NULL;
        pthread_mutex_unlock(&pf->mu);
        dsort_prefetch_read(rq);
        pthread_mutex_lock(&pf->mu);
        rq->done = 1;
        pthread_cond_broadcast(&pf->cv);
    }
    pthread_mutex_unlock(&pf->mu);
    return NULL;
}

enum dsort_status dsort_prefetch_create(struct dsort_prefetch **out, struct dsort_error *err)
{
    struct dsort_prefetch *pf = calloc(1, sizeof *pf);
    *out = NULL;
    if (!pf)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    pthread_mutex_init(&pf->mu, NULL);
    pthread_cond_init(&pf->cv, NULL);
    int rc = dsort_cleanup_thread_create(&pf->thread, prefetch_main, pf, "dsort-readahd");
    if (rc) {
        free(pf);
        return dsort_cleanup_thread_error(err, rc, "a read-ahead thread");
    }
    *out = pf;
    return DSORT_OK;
}

void dsort_prefetch_destroy(struct dsort_prefetch *pf)
{
    if (!pf)
        return;
    pthread_mutex_lock(&pf->mu);
    pf->stop = 1;
    pthread_cond_broadcast(&pf->cv);
    pthread_mutex_unlock(&pf->mu);
    pthread_join(pf->thread, NULL);
    pthread_mutex_destroy(&pf->mu);
    pthread_cond_destroy(&pf->cv);
    free(pf);
}

void dsort_prefetch_post(struct dsort_prefetch *pf, struct dsort_preq *rq)
{
    rq->done = 0;
    rq->next = NULL;
    pthread_mutex_lock(&pf->mu);
    if (pf->tail)
        pf->tail->next = rq;
    else
        pf->head = rq;
    pf->tail = rq;
    pthread_cond_broadcast(&pf->cv);
    pthread_mutex_unlock(&pf->mu);
}

enum dsort_status dsort_prefetch_wait(struct dsort_prefetch *pf, struct dsort_preq *rq,
                                      struct dsort_error *err)
{
    pthread_mutex_lock(&pf->mu);
    while (!rq->done)
        pthread_cond_wait(&pf->cv, &pf->mu);
    pthread_mutex_unlock(&pf->mu);
    if (rq->st && err)
        *err = rq->err;
    return rq->st;
}
