#include "runfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "cleanup.h"
#include "io.h"
#include "mem.h"

#define RUN_MAGIC UINT32_C(0x42525344) /* "DSRB" little-endian */

struct block_header {
    uint32_t magic, crc;
    uint64_t payload, records;
};

static size_t align_up(size_t n)
{
    return (n + DSORT_RUN_ALIGN - 1) / DSORT_RUN_ALIGN * DSORT_RUN_ALIGN;
}

size_t dsort_run_payload(size_t rec_size, size_t block)
{
    if (!rec_size)
        return dsort_run_stride(0, block) - DSORT_RUN_HEADER;
    size_t n = block / rec_size;
    return (n ? n : 1) * rec_size;
}

size_t dsort_run_stride(size_t rec_size, size_t block)
{
    if (!rec_size)
        return block > DSORT_RUN_ALIGN ? align_up(block) : DSORT_RUN_ALIGN;
    return align_up(DSORT_RUN_HEADER + dsort_run_payload(rec_size, block));
}

/* Open, then turn O_DIRECT on where the file system has it. Not open(flags | O_DIRECT): where
 * O_DIRECT is refused (EINVAL) Linux has already created the file, and a second open with
 * O_EXCL would then fail with EEXIST and leave an empty file behind. */
static int open_maybe_direct(const char *path, int flags, mode_t mode)
{
    int fd = open(path, flags, mode);
    if (fd < 0)
        return fd;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl | O_DIRECT); /* EINVAL: buffered I/O, as before */
    return fd;
}

/* The name of file i of a run (its stripe i). */
static const char *stripe_path(char *paths, size_t i)
{
    return paths + i * DSORT_RUN_PATH_MAX;
}

static enum dsort_status run_flush(struct dsort_sink *s, struct dsort_error *err)
{
    struct dsort_runwriter *w = s->ctx;
    if (s->len == 0)
        return DSORT_OK;
    struct block_header h = {RUN_MAGIC, dsort_crc32c(0, s->buf, s->len), s->len,
                             w->rec_size ? s->len / w->rec_size : w->blk_records};
    unsigned char *blk = s->buf - DSORT_RUN_HEADER;
    memcpy(blk, &h, sizeof h);
    if (w->rec_size)
        memcpy(w->last, s->buf + s->len - w->rec_size, w->rec_size);
    w->blk_records = 0;
    size_t used = DSORT_RUN_HEADER + s->len, len = align_up(used);
    memset(blk + used, 0, len - used);
    /* Block b of the run goes to file b % k, at that file's end. */
    const size_t i = (size_t)(w->nblk % w->k);
    enum dsort_status st =
        w->k == 1 ? dsort_awriter_submit(w->aw[0], len, w->soff[0], err)
                  : dsort_awriter_submit_swap(w->aw[i], &w->fill, len, w->soff[i], err);
    if (st)
        return st;
    w->soff[i] += len;
    w->off += len;
    w->nblk++;
    w->records += h.records;
    s->buf = (w->k == 1 ? dsort_awriter_buf(w->aw[0]) : w->fill) + DSORT_RUN_HEADER;
    s->len = 0;
    return DSORT_OK;
}

enum dsort_status dsort_runwriter_open_striped(struct dsort_runwriter *w, const char *const *paths,
                                               size_t k, size_t rec_size, size_t block,
                                               struct dsort_error *err)
{
    memset(w, 0, sizeof *w);
    for (size_t i = 0; i < DSORT_RUN_MAX_STRIPES; i++)
        w->fd[i] = -1;
    w->rec_size = rec_size;
    if (k < 1 || k > DSORT_RUN_MAX_STRIPES)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "a run of %zu files (1 to %d)", k,
                         DSORT_RUN_MAX_STRIPES);
    snprintf(w->path, sizeof w->path, "%s", paths[0]);
    w->paths = calloc(k, DSORT_RUN_PATH_MAX);
    if (!w->paths || !(w->last = malloc(rec_size ? rec_size : 1))) {
        dsort_runwriter_free(w);
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    }
    const size_t stride = dsort_run_stride(rec_size, block);
    /* Run files are removed on signals through their temp directory's series (tempdir.h).
     * w->k counts the files made so far: abort removes those and nothing else. */
    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < k && !st; i++) {
        snprintf(w->paths + i * DSORT_RUN_PATH_MAX, DSORT_RUN_PATH_MAX, "%s", paths[i]);
        w->fd[i] = open_maybe_direct(paths[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (w->fd[i] < 0) {
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot create run file '%s'", paths[i]);
            break;
        }
        w->k = i + 1;
        /* One file: double-buffered, as ever. Several: one buffer each and one to fill, so
         * that a write is in flight on every file while the next block is filled. */
        st = k == 1 ? dsort_awriter_create(&w->aw[i], w->fd[i], paths[i], stride, err)
                    : dsort_awriter_create_swap(&w->aw[i], w->fd[i], paths[i], stride, err);
    }
    if (!st && k > 1) {
        w->fill_len = stride;
        if (!(w->fill = dsort_mem_alloc(stride)))
            st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate write buffers");
    }
    if (st) {
        dsort_runwriter_abort(w);
        return st;
    }
    dsort_sink_memory(&w->sink, (k == 1 ? dsort_awriter_buf(w->aw[0]) : w->fill) + DSORT_RUN_HEADER,
                      dsort_run_payload(rec_size, block));
    w->sink.flush = run_flush;
    w->sink.ctx = w;
    return DSORT_OK;
}

enum dsort_status dsort_runwriter_open(struct dsort_runwriter *w, const char *path, size_t rec_size,
                                       size_t block, struct dsort_error *err)
{
    return dsort_runwriter_open_striped(w, &path, 1, rec_size, block, err);
}

enum dsort_status dsort_runwriter_open_framed(struct dsort_runwriter *w, const char *path,
                                              size_t block, struct dsort_error *err)
{
    return dsort_runwriter_open_striped(w, &path, 1, 0, block, err);
}

const char *dsort_runwriter_path(const struct dsort_runwriter *w, size_t i)
{
    return stripe_path(w->paths, i);
}

size_t dsort_runwriter_buf_len(size_t rec_size, size_t block, size_t k)
{
    return (k > 1 ? k + 1 : 2) * dsort_run_stride(rec_size, block);
}

unsigned char *dsort_runwriter_reserve(struct dsort_runwriter *w, size_t len,
                                       struct dsort_error *err)
{
    struct dsort_sink *s = &w->sink;
    w->resv = len;
    if (s->len + len <= s->cap)
        return s->buf + s->len;
    if (s->len && run_flush(s, err))
        return NULL;
    if (len <= s->cap)
        return s->buf;
    /* Oversize: a block of its own, aligned for O_DIRECT. */
    void *big = NULL;
    int e = posix_memalign(&big, DSORT_RUN_ALIGN, align_up(DSORT_RUN_HEADER + len));
    if (e) {
        DSORT_ERR(err, DSORT_ENOMEM, e, "cannot allocate a %zu-byte block of run file '%s'",
                  align_up(DSORT_RUN_HEADER + len), w->path);
        return NULL;
    }
    w->big = big;
    return w->big + DSORT_RUN_HEADER;
}

enum dsort_status dsort_runwriter_commit(struct dsort_runwriter *w, struct dsort_error *err)
{
    if (!w->big) {
        w->sink.len += w->resv;
        w->blk_records++;
        return DSORT_OK;
    }
    const size_t used = DSORT_RUN_HEADER + w->resv, len = align_up(used);
    struct block_header h = {RUN_MAGIC, dsort_crc32c(0, w->big + DSORT_RUN_HEADER, w->resv),
                             w->resv, 1};
    memcpy(w->big, &h, sizeof h);
    memset(w->big + used, 0, len - used);
    /* A block like any other for the striping: the next file's, at its end. */
    const size_t i = (size_t)(w->nblk % w->k);
    enum dsort_status st =
        dsort_io_pwrite_full(w->fd[i], w->big, len, w->soff[i], stripe_path(w->paths, i), err);
    free(w->big);
    w->big = NULL;
    if (st)
        return st;
    w->soff[i] += len;
    w->off += len;
    w->nblk++;
    w->records++;
    return DSORT_OK;
}

enum dsort_status dsort_runwriter_close(struct dsort_runwriter *w, struct dsort_error *err)
{
    enum dsort_status st = run_flush(&w->sink, err);
    for (size_t i = 0; i < w->k; i++) {
        enum dsort_status st2 = dsort_awriter_finish(w->aw[i], st ? NULL : err);
        w->aw[i] = NULL;
        if (!st)
            st = st2;
    }
    for (size_t i = 0; i < w->k; i++) {
        if (close(w->fd[i]) && !st)
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot write run file '%s'",
                           stripe_path(w->paths, i));
        w->fd[i] = -1;
    }
    dsort_mem_free(w->fill, w->fill_len);
    w->fill = NULL;
    return st;
}

void dsort_runwriter_abort(struct dsort_runwriter *w)
{
    for (size_t i = 0; i < w->k; i++) {
        dsort_awriter_finish(w->aw[i], NULL);
        w->aw[i] = NULL;
        if (w->fd[i] >= 0)
            close(w->fd[i]);
        w->fd[i] = -1;
        unlink(stripe_path(w->paths, i));
        dsort_cleanup_forget(stripe_path(w->paths, i));
    }
    dsort_mem_free(w->fill, w->fill_len);
    w->fill = NULL;
    dsort_runwriter_free(w);
}

void dsort_runwriter_free(struct dsort_runwriter *w)
{
    free(w->last);
    w->last = NULL;
    free(w->big);
    w->big = NULL;
    free(w->paths);
    w->paths = NULL;
}

size_t dsort_runreader_bufs(size_t k)
{
    return k > 1 ? DSORT_RUN_READ_BUFS : 2;
}

size_t dsort_runreader_buf_len(size_t rec_size, size_t block, size_t k)
{
    return dsort_runreader_bufs(k) * dsort_run_stride(rec_size, block);
}

/* A buffer that is neither merged nor being read into. */
static int free_buf(const struct dsort_runreader *r)
{
    for (int b = 0; b < r->nbuf; b++) {
        int used = b == r->cur_buf;
        for (int i = 0; i < r->npend && !used; i++)
            used = r->rq[(r->head + i) % (DSORT_RUN_READ_BUFS - 1)].buf == b;
        if (!used)
            return b;
    }
    return -1;
}

/* Ask for the next blocks, into the free buffers: block nblk of the run is in file nblk % k at
 * that file's next offset, known once the file's previous block was loaded; fewer than k
 * blocks in flight keeps it so. At the end of a file the run is over. */
static void request(struct dsort_runreader *r)
{
    while (!r->ended && r->npend < r->nbuf - 1 && (size_t)r->npend < r->k) {
        const size_t i = (size_t)(r->nblk % r->k);
        if (r->snext[i] >= r->ssize[i]) {
            r->end_file = i;
            r->ended = 1;
            return;
        }
        struct dsort_runreq *q = &r->rq[(r->head + r->npend) % (DSORT_RUN_READ_BUFS - 1)];
        uint64_t left = r->ssize[i] - r->snext[i];
        q->buf = free_buf(r);
        q->file = i;
        q->pf = r->pf[i];
        q->pq.fd = r->fd[i];
        q->pq.buf = r->buf[q->buf];
        q->pq.len = left < r->stride ? (size_t)align_up((size_t)left) : r->stride;
        q->pq.off = r->snext[i];
        q->pq.path = stripe_path(r->paths, i);
        r->npend++;
        r->nblk++;
        if (q->pf)
            dsort_prefetch_post(q->pf, &q->pq);
        else
            dsort_prefetch_read(&q->pq);
    }
}

/* Wait for the oldest block asked for and take it off the queue; *q gets it. */
static enum dsort_status take(struct dsort_runreader *r, struct dsort_runreq **q,
                              struct dsort_error *err)
{
    *q = &r->rq[r->head];
    r->head = (r->head + 1) % (DSORT_RUN_READ_BUFS - 1);
    r->npend--;
    enum dsort_status st = (*q)->pf ? dsort_prefetch_wait((*q)->pf, &(*q)->pq, err) : (*q)->pq.st;
    if (st && !(*q)->pf && err)
        *err = (*q)->pq.err;
    return st;
}

/* At the end of the run: the records the writer wrote, and (striped) nothing left in the other
 * files, whose blocks would come after the end (one of them was cut short). */
static enum dsort_status run_end(struct dsort_runreader *r, struct dsort_error *err)
{
    const char *at = stripe_path(r->paths, r->end_file);
    if (r->expected != UINT64_MAX && r->records < r->expected)
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "run file '%s' ends after %" PRIu64 " of its %" PRIu64
                         " records (truncated on the temp disk?)",
                         at, r->records, r->expected);
    if (r->expected != UINT64_MAX && r->records > r->expected)
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "run file '%s' holds %" PRIu64 " records, but its writer wrote %" PRIu64
                         " (changed on the temp disk?)",
                         at, r->records, r->expected);
    for (size_t i = 0; i < r->k; i++)
        if (r->snext[i] < r->ssize[i])
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "run file '%s' ends at offset %" PRIu64
                             ", but '%s' of the same run has more blocks from offset %" PRIu64
                             " (truncated on the temp disk?)",
                             at, r->snext[r->end_file], stripe_path(r->paths, i), r->snext[i]);
    return DSORT_OK;
}

/* Load the next non-empty block. Empty blocks are skipped in a loop (a file of many of them
 * must not take a stack frame each); the end of the run, reached directly or after empty
 * blocks, checks the record count the writer recorded. */
static enum dsort_status run_refill(struct dsort_cursor *c, struct dsort_error *err)
{
    struct dsort_runreader *r = c->ctx;
    for (;;) {
        r->cur_buf = -1; /* the merge is done with the current block */
        if (!r->npend) {
            c->cur = c->end; /* end of run */
            return run_end(r, err);
        }
        struct dsort_runreq *q;
        enum dsort_status st = take(r, &q, err);
        if (st)
            return st;
        r->cur_buf = q->buf;
        const unsigned char *blk = r->buf[q->buf];
        const size_t f = q->file;
        const uint64_t at = q->pq.off, got = q->pq.got;
        r->path = stripe_path(r->paths, f); /* messages name the file of the block */
        struct block_header h;
        free(r->big); /* the last oversize block is used up */
        r->big = NULL;
        if (got < DSORT_RUN_HEADER)
            return DSORT_ERR(err, DSORT_EFORMAT, 0, "run file '%s' is truncated at offset %" PRIu64,
                             r->path, at);
        memcpy(&h, blk, sizeof h);
        int bad = h.magic != RUN_MAGIC;
        if (r->rec_size)
            bad = bad || h.payload > r->payload || h.payload % r->rec_size ||
                  h.records != h.payload / r->rec_size;
        else /* framed: no empty record; a block past the payload holds one record */
            bad = bad || h.payload > r->max_payload || h.records > h.payload ||
                  (h.payload > r->payload && h.records != 1) || (h.payload && !h.records);
        if (bad)
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "run file '%s': bad block header at offset %" PRIu64, r->path, at);
        const uint64_t took = align_up((size_t)(DSORT_RUN_HEADER + h.payload));
        if (DSORT_RUN_HEADER + h.payload > got) {
            if (at + took > r->ssize[f])
                return DSORT_ERR(err, DSORT_EFORMAT, 0,
                                 "run file '%s' is truncated at offset %" PRIu64
                                 " (the block there ends past the end of the file)",
                                 r->path, at);
            /* an oversize block (framed): the rest of it, now */
            void *big = NULL;
            int e = posix_memalign(&big, DSORT_RUN_ALIGN, (size_t)took);
            if (e)
                return DSORT_ERR(err, DSORT_ENOMEM, e,
                                 "cannot allocate a %" PRIu64 "-byte block of run file '%s'", took,
                                 r->path);
            r->big = big;
            memcpy(r->big, blk, got);
            if ((st = dsort_io_pread_full(r->fd[f], r->big + got, (size_t)took - got, at + got,
                                          r->path, err)))
                return st;
            blk = r->big;
            r->bytes_read += took - got;
        }
        const unsigned char *payload = blk + DSORT_RUN_HEADER;
        if (dsort_crc32c(0, payload, (size_t)h.payload) != h.crc)
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "run file '%s': the block at offset %" PRIu64
                             " fails its CRC32C check (the temp disk corrupted it)",
                             r->path, at);
        r->records += h.records;
        r->bytes_read += got;
        r->blk_off = at;
        r->blk_records = h.records;
        c->cur = payload;
        c->end = payload + h.payload;
        r->snext[f] = at + took;
        request(r); /* the next blocks, into the free buffers */
        if (h.payload != 0)
            return DSORT_OK;
        c->cur = c->end; /* an empty block: on to the next, or to the end checks */
    }
}

enum dsort_status dsort_runreader_open_striped(struct dsort_runreader *r, const char *const *paths,
                                               size_t k, size_t rec_size, size_t block,
                                               size_t max_payload, unsigned char *buf,
                                               struct dsort_prefetch *const *pf, uint64_t expected,
                                               struct dsort_error *err)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < DSORT_RUN_MAX_STRIPES; i++)
        r->fd[i] = -1;
    if (k < 1 || k > DSORT_RUN_MAX_STRIPES)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "a run of %zu files (1 to %d)", k,
                         DSORT_RUN_MAX_STRIPES);
    if (!(r->paths = calloc(k, DSORT_RUN_PATH_MAX)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    r->k = k;
    r->path = r->paths;
    r->expected = expected;
    r->rec_size = rec_size;
    r->payload = dsort_run_payload(rec_size, block);
    r->stride = dsort_run_stride(rec_size, block);
    r->max_payload = max_payload > r->payload ? max_payload : r->payload;
    r->nbuf = (int)dsort_runreader_bufs(k);
    r->cur_buf = -1;
    for (int b = 0; b < r->nbuf; b++)
        r->buf[b] = buf + (size_t)b * r->stride;
    for (size_t i = 0; i < k; i++) {
        char *p = r->paths + i * DSORT_RUN_PATH_MAX;
        snprintf(p, DSORT_RUN_PATH_MAX, "%s", paths[i]);
        r->pf[i] = pf ? pf[i] : NULL;
        r->fd[i] = open_maybe_direct(p, O_RDONLY | O_CLOEXEC, 0);
        if (r->fd[i] < 0) {
            int e = errno;
            dsort_runreader_close(r);
            return DSORT_ERR(err, DSORT_EIO, e, "cannot open run file '%s'", paths[i]);
        }
        struct stat sb;
        if (fstat(r->fd[i], &sb)) {
            int e = errno;
            dsort_runreader_close(r);
            return DSORT_ERR(err, DSORT_EIO, e, "cannot stat run file '%s'", paths[i]);
        }
        r->ssize[i] = (uint64_t)sb.st_size;
    }
    r->cur.refill = run_refill;
    r->cur.ctx = r;
    request(r);
    enum dsort_status st = run_refill(&r->cur, err);
    if (st)
        dsort_runreader_close(r);
    return st;
}

enum dsort_status dsort_runreader_open(struct dsort_runreader *r, const char *path, size_t rec_size,
                                       size_t block, unsigned char *buf, struct dsort_prefetch *pf,
                                       uint64_t expected, struct dsort_error *err)
{
    return dsort_runreader_open_striped(r, &path, 1, rec_size, block, 0, buf, &pf, expected, err);
}

enum dsort_status dsort_runreader_open_framed(struct dsort_runreader *r, const char *path,
                                              size_t block, size_t max_payload, unsigned char *buf,
                                              struct dsort_prefetch *pf, uint64_t expected,
                                              struct dsort_error *err)
{
    return dsort_runreader_open_striped(r, &path, 1, 0, block, max_payload, buf, &pf, expected,
                                        err);
}

void dsort_runreader_close(struct dsort_runreader *r)
{
    while (r->npend) {
        struct dsort_runreq *q;
        (void)take(r, &q, NULL);
    }
    for (size_t i = 0; i < r->k; i++) {
        if (r->fd[i] >= 0)
            close(r->fd[i]);
        r->fd[i] = -1;
    }
    free(r->big);
    r->big = NULL;
    free(r->paths);
    r->paths = NULL;
    r->path = "";
}
