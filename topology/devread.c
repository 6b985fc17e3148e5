#include "devread.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "io.h"

struct shared {
    const struct dsort_devread_req *reqs;
    size_t chunk;
    const struct dsort_devread_hooks *hooks;
    atomic_int stop; /* set by the first failure; the others stop at their next chunk */
    pthread_mutex_t mu;
    int have_err;
    struct dsort_error first; /* the first failure, under mu */
};

struct group {
    struct shared *sh;
    const char *key;
    size_t *idx; /* its requests, in array order */
    size_t n;
    struct dsort_devread_stat stat;
    pthread_t tid;
    int threaded;
};

static void fail(struct shared *sh, const struct dsort_error *err)
{
    pthread_mutex_lock(&sh->mu);
    if (!sh->have_err) {
        sh->first = *err;
        sh->have_err = 1;
    }
    atomic_store(&sh->stop, 1);
    pthread_mutex_unlock(&sh->mu);
}

/* Read one request in chunks. */
static enum dsort_status read_req(struct group *g, int fd, const struct dsort_devread_req *r,
                                  struct dsort_error *err)
{
    unsigned char *dest = r->dest;
    size_t done = 0;
    while (done < r->length) {
        if (atomic_load(&g->sh->stop))
            return DSORT_EINTR; /* another group failed: its error is the one reported */
        size_t want = r->length - done < g->sh->chunk ? r->length - done : g->sh->chunk;
        enum dsort_status st =
            dsort_io_pread_full(fd, dest + done, want, r->offset + done, r->path, err);
        if (st)
            return st;
        done += want;
        g->stat.bytes += want;
    }
    return DSORT_OK;
}

static enum dsort_status read_group(struct group *g, struct dsort_error *err)
{
    const struct dsort_devread_req *reqs = g->sh->reqs;
    int own = -1; /* fd we opened, for path own_path */
    const char *own_path = NULL;
    enum dsort_status st = DSORT_OK;
    for (size_t k = 0; k < g->n && !st; k++) {
        const struct dsort_devread_req *r = &reqs[g->idx[k]];
        int fd = r->fd;
        if (fd < 0) {
            if (!own_path || strcmp(own_path, r->path) != 0) {
                if (own >= 0)
                    close(own);
                own_path = NULL;
                own = open(r->path, O_RDONLY | O_CLOEXEC);
                if (own < 0) {
                    st = DSORT_ERR(err, DSORT_EIO, errno,
                                   "cannot open '%s' to read at offset %" PRIu64, r->path,
                                   r->offset);
                    break;
                }
                own_path = r->path;
                /* Tell the kernel to read ahead aggressively: we read it front to back. */
                posix_fadvise(own, 0, 0, POSIX_FADV_SEQUENTIAL);
            }
            fd = own;
        }
        st = read_req(g, fd, r, err);
        if (!st)
            g->stat.requests++;
    }
    if (own >= 0)
        close(own);
    return st;
}

static void run_group(struct group *g)
{
    const struct dsort_devread_hooks *h = g->sh->hooks;
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = DSORT_OK;
    if (h && h->before) {
        double t0 = dsort_clock_now();
        st = h->before(g->key, h->arg, &err);
        g->stat.wait_seconds = dsort_clock_now() - t0;
        if (st && err.status == DSORT_OK)
            DSORT_ERR(&err, st, 0, "cannot take the turn on device %s", g->key);
    }
    if (!st) {
        double t0 = dsort_clock_now();
        st = read_group(g, &err);
        g->stat.seconds = dsort_clock_now() - t0;
    }
    if (st && st != DSORT_EINTR)
        fail(g->sh, &err);
    if (h && h->after)
        h->after(g->key, st == DSORT_OK, h->arg);
}

static void *group_thread(void *arg)
{
    run_group(arg);
    return NULL;
}

static enum dsort_status check_reqs(const struct dsort_devread_req *reqs, size_t n,
                                    struct dsort_error *err)
{
    if (n && !reqs)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "dsort_devread_run: no requests");
    for (size_t i = 0; i < n; i++) {
        const struct dsort_devread_req *r = &reqs[i];
        if (!r->key || !r->path || (r->length && !r->dest))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "dsort_devread_run: request %zu has no key, path or destination", i);
    }
    return DSORT_OK;
}

/* Group the requests by key: groups in order of first appearance, each with its indexes in
 * array order. Returns the number of groups; g and idx have room for n entries. */
static size_t make_groups(const struct dsort_devread_req *reqs, size_t n, struct group *g,
                          size_t *idx, size_t *of)
{
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < ng && strcmp(g[k].key, reqs[i].key) != 0)
            k++;
        if (k == ng) {
            g[ng].key = reqs[i].key;
            snprintf(g[ng].stat.key, sizeof g[ng].stat.key, "%s", reqs[i].key);
            ng++;
        }
        of[i] = k;
        g[k].n++;
    }
    size_t at = 0;
    for (size_t k = 0; k < ng; k++) {
        g[k].idx = idx + at;
        at += g[k].n;
        g[k].n = 0;
    }
    for (size_t i = 0; i < n; i++)
        g[of[i]].idx[g[of[i]].n++] = i;
    return ng;
}

enum dsort_status dsort_devread_run(const struct dsort_devread_req *reqs, size_t n, size_t chunk,
                                    const struct dsort_devread_hooks *hooks,
                                    struct dsort_devread_stat **stats, size_t *nstats,
                                    struct dsort_error *err)
{
    if (stats)
        *stats = NULL;
    if (nstats)
        *nstats = 0;
    enum dsort_status st = check_reqs(reqs, n, err);
    if (st || n == 0)
        return st;

    struct shared sh = {.reqs = reqs, .hooks = hooks};
    sh.chunk = chunk ? chunk : DSORT_DEVREAD_DEFAULT_CHUNK;
    if (sh.chunk < DSORT_DEVREAD_MIN_CHUNK)
        sh.chunk = DSORT_DEVREAD_MIN_CHUNK;
    atomic_init(&sh.stop, 0);
    struct group *g = calloc(n, sizeof *g);
    size_t *idx = malloc(2 * n * sizeof *idx);
    if (!g || !idx) {
        free(g);
        free(idx);
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for %zu read requests", n);
    }
    if (pthread_mutex_init(&sh.mu, NULL) != 0) {
        free(g);
        free(idx);
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "cannot create a mutex");
    }
    size_t ng = make_groups(reqs, n, g, idx, idx + n);
    for (size_t k = 0; k < ng; k++)
        g[k].sh = &sh;

    /* Groups 1.. in their own threads, group 0 here; a group whose thread cannot be created
     * runs here too, after group 0 (slower, still correct). */
    for (size_t k = 1; k < ng; k++)
        g[k].threaded = dsort_cleanup_thread_create(&g[k].tid, group_thread, &g[k]) == 0;
    run_group(&g[0]);
    for (size_t k = 1; k < ng; k++)
        if (!g[k].threaded)
            run_group(&g[k]);
    for (size_t k = 1; k < ng; k++)
        if (g[k].threaded)
            pthread_join(g[k].tid, NULL);

    if (sh.have_err) {
        st = sh.first.status;
        if (err)
            *err = sh.first;
    }
    if (stats && (*stats = malloc(ng * sizeof **stats))) {
        for (size_t k = 0; k < ng; k++)
            (*stats)[k] = g[k].stat;
        if (nstats)
            *nstats = ng;
    }
    pthread_mutex_destroy(&sh.mu);
    free(g);
    free(idx);
    return st;
}
