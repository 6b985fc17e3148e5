#include "devread.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "io.h"
#include "mem.h"

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
        const struct dsort_devread_hooks *h = g->sh->hooks;
        if (h && h->populate)
            dsort_mem_populate(dest + done, want);
        enum dsort_status st =
            dsort_io_pread_full(fd, dest + done, want, r->offset + done, r->path, err);
        if (st)
            return st;
        if (h && h->chunk)
            h->chunk(h->chunk_arg, dest + done, want);
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
        if (!st && (err.status != DSORT_OK || err.msg[0])) { /* reads without its turn */
            g->stat.no_turn = 1;
            snprintf(g->stat.note, sizeof g->stat.note, "%s", err.msg);
            dsort_error_clear(&err);
        }
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
        g[k].threaded =
            dsort_cleanup_thread_create(&g[k].tid, group_thread, &g[k], "dsort-devread") == 0;
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

/* ---- stream tokens ---- */

static long token_wait_ms(long wait_ms)
{
    if (wait_ms >= 0)
        return wait_ms;
    const char *v = getenv("DSORT_TOKEN_WAIT_MS");
    if (v && *v) {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (!*end && !errno && x >= 0)
            return x;
    }
    return DSORT_DEVREAD_TOKEN_WAIT_MS;
}

enum dsort_status dsort_devread_token_path(const char *dir, const char *key, unsigned slot,
                                           char *buf, size_t n, struct dsort_error *err)
{
    if (!dir)
        dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    char safe[DSORT_BLOCKDEV_KEY_MAX];
    snprintf(safe, sizeof safe, "%s", key ? key : "");
    for (char *p = safe; *p; p++)
        if (*p == '/' || *p == ':')
            *p = '_';
    int len =
        snprintf(buf, n, "%s/.dsort-%u-device-%s-%u.lock", dir, (unsigned)geteuid(), safe, slot);
    if (len < 0 || (size_t)len >= n)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "lock file name too long in '%s'", dir);
    return DSORT_OK;
}

static double realtime_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Open (creating) a lock file that is ours: a regular file of our euid, mode 0600. Never
 * follows a symbolic link (O_NOFOLLOW) and never blocks on a FIFO planted there (O_NONBLOCK). */
static int token_open(const char *path, struct dsort_error *err)
{
    int fd = open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == ELOOP)
            DSORT_ERR(err, DSORT_EIO, 0, "lock file '%s' refused: a symbolic link", path);
        else
            DSORT_ERR(err, DSORT_EIO, errno, "cannot open lock file '%s'", path);
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb)) {
        DSORT_ERR(err, DSORT_EIO, errno, "cannot stat lock file '%s'", path);
    } else if (!S_ISREG(sb.st_mode)) {
        DSORT_ERR(err, DSORT_EIO, 0, "lock file '%s' refused: not a regular file", path);
    } else if (sb.st_uid != geteuid()) {
        DSORT_ERR(err, DSORT_EIO, 0, "lock file '%s' refused: owned by uid %u, not %u", path,
                  (unsigned)sb.st_uid, (unsigned)geteuid());
    } else {
        if ((sb.st_mode & 07777) != 0600)
            fchmod(fd, 0600); /* ours, made under another umask or by hand: tighten */
        return fd;
    }
    close(fd);
    return -1;
}

enum dsort_status dsort_devread_token_take(const char *path, long wait_ms, int *fd,
                                           struct dsort_error *err)
{
    *fd = -1;
    wait_ms = token_wait_ms(wait_ms);
    int lf = token_open(path, err);
    if (lf < 0)
        return err ? err->status : DSORT_EIO;
    double bound = (double)wait_ms / 1000.0, t0 = dsort_clock_now();
    long nap_ns = 1000000;
    for (;;) {
        if (flock(lf, LOCK_EX | LOCK_NB) == 0)
            break;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            close(lf);
            return DSORT_ERR(err, DSORT_EIO, e, "cannot lock '%s'", path);
        }
        double waited = dsort_clock_now() - t0;
        struct stat sb;
        if (waited >= bound && !fstat(lf, &sb)) {
            double idle =
                realtime_now() - ((double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec * 1e-9);
            if (idle >= bound) {
                close(lf);
                return DSORT_ERR(err, DSORT_EINTR, 0,
                                 "no turn after %.1f s: the holder of '%s' has shown no sign of "
                                 "life for %.1f s; reading without the turn",
                                 waited, path, idle);
            }
        }
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
        if (nap_ns < 50000000)
            nap_ns *= 2;
    }
    futimens(lf, NULL); /* alive: the heartbeat starts now */
    *fd = lf;
    return DSORT_OK;
}

struct held {
    char key[DSORT_BLOCKDEV_KEY_MAX];
    int fd;
};

struct dsort_devread_tokens {
    char *dir; /* NULL: the default */
    long wait_ms;
    unsigned (*slot)(const char *key, void *arg);
    void *slot_arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct held *held; /* under mu */
    size_t nheld, cap;
    int beating, stopping; /* the heartbeat thread: started, asked to stop */
    pthread_t beat;
};

/* Touch every held lock file every period until asked to stop. */
static void *heartbeat(void *arg)
{
    struct dsort_devread_tokens *t = arg;
    long period_ms = t->wait_ms / 4;
    period_ms = period_ms < 10 ? 10 : period_ms > 1000 ? 1000 : period_ms;
    pthread_mutex_lock(&t->mu);
    while (!t->stopping) {
        for (size_t i = 0; i < t->nheld; i++)
            futimens(t->held[i].fd, NULL);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (period_ms % 1000) * 1000000;
        until.tv_sec += period_ms / 1000 + until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&t->cv, &t->mu, &until);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Remember fd as key's token (under mu). 0, or -1 when out of memory. */
static int hold(struct dsort_devread_tokens *t, const char *key, int fd)
{
    if (t->nheld == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        struct held *h = realloc(t->held, cap * sizeof *h);
        if (!h)
            return -1;
        t->held = h;
        t->cap = cap;
    }
    snprintf(t->held[t->nheld].key, sizeof t->held[t->nheld].key, "%s", key);
    t->held[t->nheld++].fd = fd;
    if (!t->beating && dsort_cleanup_thread_create(&t->beat, heartbeat, t, "dsort-tokbeat") == 0)
        t->beating = 1; /* without it a long read may be passed: more streams, still correct */
    return 0;
}

static enum dsort_status tokens_before(const char *key, void *arg, struct dsort_error *err)
{
    struct dsort_devread_tokens *t = arg;
    unsigned slot = t->slot ? t->slot(key, t->slot_arg) : 0;
    char path[1024];
    struct dsort_error e;
    dsort_error_clear(&e);
    int fd = -1;
    if (dsort_devread_token_path(t->dir, key, slot, path, sizeof path, &e) == DSORT_OK)
        dsort_devread_token_take(path, t->wait_ms, &fd, &e);
    if (fd < 0) { /* read without the turn, and say why */
        DSORT_ERR(err, e.status ? e.status : DSORT_EIO, 0, "device %s: %s", key, e.msg);
        return DSORT_OK;
    }
    pthread_mutex_lock(&t->mu);
    int kept = hold(t, key, fd);
    pthread_mutex_unlock(&t->mu);
    if (kept) {
        close(fd);
        DSORT_ERR(err, DSORT_ENOMEM, 0, "device %s: no memory to hold the turn", key);
    }
    return DSORT_OK;
}

static void tokens_after(const char *key, int ok, void *arg)
{
    struct dsort_devread_tokens *t = arg;
    (void)ok;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->nheld; i++)
        if (!strcmp(t->held[i].key, key)) {
            close(t->held[i].fd); /* closing gives the flock back */
            t->held[i] = t->held[--t->nheld];
            break;
        }
    pthread_mutex_unlock(&t->mu);
}

enum dsort_status dsort_devread_tokens_create(const char *dir, long wait_ms,
                                              unsigned (*slot)(const char *key, void *arg),
                                              void *slot_arg, struct dsort_devread_tokens **out,
                                              struct dsort_error *err)
{
    *out = NULL;
    struct dsort_devread_tokens *t = calloc(1, sizeof *t);
    if (!t || (dir && !(t->dir = strdup(dir)))) {
        free(t);
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the device tokens");
    }
    if (pthread_mutex_init(&t->mu, NULL)) {
        free(t->dir);
        free(t);
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "cannot create a mutex");
    }
    if (pthread_cond_init(&t->cv, NULL)) {
        pthread_mutex_destroy(&t->mu);
        free(t->dir);
        free(t);
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "cannot create a condition variable");
    }
    t->wait_ms = token_wait_ms(wait_ms);
    t->slot = slot;
    t->slot_arg = slot_arg;
    *out = t;
    return DSORT_OK;
}

void dsort_devread_tokens_destroy(struct dsort_devread_tokens *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stopping = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (t->beating)
        pthread_join(t->beat, NULL);
    for (size_t i = 0; i < t->nheld; i++)
        close(t->held[i].fd);
    free(t->held);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t->dir);
    free(t);
}

struct dsort_devread_hooks dsort_devread_tokens_hooks(struct dsort_devread_tokens *t)
{
    return (struct dsort_devread_hooks){.before = tokens_before, .after = tokens_after, .arg = t};
}
