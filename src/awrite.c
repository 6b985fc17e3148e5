#include "awrite.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "clock.h"
#include "io.h"
#include "mem.h"

struct dsort_awriter {
    int fd;
    char path[1024];
    size_t buf_len;
    unsigned char *buf[2];
    int cur; /* the producer's buffer */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* The pending job, owned by the thread while busy. */
    int busy, stop;
    size_t job_from, job_len;
    uint64_t job_off;
    int job_buf;
    struct dsort_error job_err;
    enum dsort_status status; /* first error */
    uint64_t bytes;
    double waited;
};

static void *writer_main(void *arg)
{
    struct dsort_awriter *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->busy && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->busy && w->stop)
            break;
        size_t len = w->job_len;
        uint64_t off = w->job_off;
        unsigned char *p = w->buf[w->job_buf] + w->job_from;
        pthread_mutex_unlock(&w->mu);
        struct dsort_error e = {0};
        enum dsort_status st = dsort_io_pwrite_full(w->fd, p, len, off, w->path, &e);
        pthread_mutex_lock(&w->mu);
        if (st && !w->status) {
            w->status = st;
            w->job_err = e;
        }
        if (!st)
            w->bytes += len;
        w->busy = 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static enum dsort_status wait_idle(struct dsort_awriter *w, struct dsort_error *err);

static enum dsort_status create(struct dsort_awriter **out, int fd, const char *path,
                                size_t buf_len, int nbuf, struct dsort_error *err)
{
    *out = NULL;
    struct dsort_awriter *w = calloc(1, sizeof *w);
    if (!w)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    w->fd = fd;
    snprintf(w->path, sizeof w->path, "%s", path);
    w->buf_len = buf_len;
    w->buf[0] = dsort_mem_alloc(buf_len);
    w->buf[1] = nbuf > 1 ? dsort_mem_alloc(buf_len) : NULL;
    if (!w->buf[0] || (nbuf > 1 && !w->buf[1])) {
        dsort_mem_free(w->buf[0], buf_len);
        dsort_mem_free(w->buf[1], buf_len);
        free(w);
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate write buffers");
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int rc = dsort_cleanup_thread_create(&w->thread, writer_main, w, "dsort-writer");
    if (rc) {
        dsort_mem_free(w->buf[0], buf_len);
        dsort_mem_free(w->buf[1], buf_len);
        free(w);
        return dsort_cleanup_thread_error(err, rc, "a writer thread");
    }
    *out = w;
    return DSORT_OK;
}

enum dsort_status dsort_awriter_create(struct dsort_awriter **out, int fd, const char *path,
                                       size_t buf_len, struct dsort_error *err)
{
    return create(out, fd, path, buf_len, 2, err);
}

enum dsort_status dsort_awriter_create_swap(struct dsort_awriter **out, int fd, const char *path,
                                            size_t buf_len, struct dsort_error *err)
{
    return create(out, fd, path, buf_len, 1, err);
}

enum dsort_status dsort_awriter_submit_swap(struct dsort_awriter *w, unsigned char **buf,
                                            size_t len, uint64_t off, struct dsort_error *err)
{
    pthread_mutex_lock(&w->mu);
    enum dsort_status st = wait_idle(w, err);
    if (!st && len > 0) {
        /* The writer's buffer is idle: it becomes the producer's, the producer's is written. */
        unsigned char *mine = w->buf[0];
        w->buf[0] = *buf;
        *buf = mine;
        w->job_from = 0;
        w->job_len = len;
        w->job_off = off;
        w->job_buf = 0;
        w->busy = 1;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return st;
}

unsigned char *dsort_awriter_buf(struct dsort_awriter *w)
{
    return w->buf[w->cur];
}

size_t dsort_awriter_buf_len(const struct dsort_awriter *w)
{
    return w->buf_len;
}

static enum dsort_status wait_idle(struct dsort_awriter *w, struct dsort_error *err)
{
    double t = dsort_clock_now();
    while (w->busy)
        pthread_cond_wait(&w->cv, &w->mu);
    w->waited += dsort_clock_now() - t;
    if (w->status && err)
        *err = w->job_err;
    return w->status;
}

enum dsort_status dsort_awriter_submit(struct dsort_awriter *w, size_t len, uint64_t off,
                                       struct dsort_error *err)
{
    return dsort_awriter_submit_range(w, 0, len, off, err);
}

enum dsort_status dsort_awriter_submit_range(struct dsort_awriter *w, size_t from, size_t len,
                                             uint64_t off, struct dsort_error *err)
{
    pthread_mutex_lock(&w->mu);
    enum dsort_status st = wait_idle(w, err);
    if (!st && len > 0) {
        w->job_from = from;
        w->job_len = len;
        w->job_off = off;
        w->job_buf = w->cur;
        w->busy = 1;
        w->cur ^= 1;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return st;
}

enum dsort_status dsort_awriter_drain(struct dsort_awriter *w, struct dsort_error *err)
{
    pthread_mutex_lock(&w->mu);
    enum dsort_status st = wait_idle(w, err);
    pthread_mutex_unlock(&w->mu);
    return st;
}

enum dsort_status dsort_awriter_finish(struct dsort_awriter *w, struct dsort_error *err)
{
    if (!w)
        return DSORT_OK;
    pthread_mutex_lock(&w->mu);
    enum dsort_status st = wait_idle(w, err);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    dsort_mem_free(w->buf[0], w->buf_len);
    dsort_mem_free(w->buf[1], w->buf_len);
    free(w);
    return st;
}

uint64_t dsort_awriter_bytes(const struct dsort_awriter *w)
{
    return w->bytes;
}

double dsort_awriter_wait_seconds(const struct dsort_awriter *w)
{
    return w->waited;
}
