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
    enum dsort_status st = dsort_awriter_submit(w->aw, len, w->off, err);
    if (st)
        return st;
    w->off += len;
    w->records += h.records;
    s->buf = dsort_awriter_buf(w->aw) + DSORT_RUN_HEADER;
    s->len = 0;
    return DSORT_OK;
}

enum dsort_status dsort_runwriter_open(struct dsort_runwriter *w, const char *path, size_t rec_size,
                                       size_t block, struct dsort_error *err)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->rec_size = rec_size;
    snprintf(w->path, sizeof w->path, "%s", path);
    if (!(w->last = malloc(rec_size ? rec_size : 1)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    /* Run files are removed on signals through their temp directory's series (tempdir.h). */
    enum dsort_status st;
    w->fd = open_maybe_direct(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (w->fd < 0) {
        dsort_runwriter_free(w);
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot create run file '%s'", path);
    }
    st = dsort_awriter_create(&w->aw, w->fd, path, dsort_run_stride(rec_size, block), err);
    if (st) {
        dsort_runwriter_abort(w);
        return st;
    }
    dsort_sink_memory(&w->sink, dsort_awriter_buf(w->aw) + DSORT_RUN_HEADER,
                      dsort_run_payload(rec_size, block));
    w->sink.flush = run_flush;
    w->sink.ctx = w;
    return DSORT_OK;
}

enum dsort_status dsort_runwriter_open_framed(struct dsort_runwriter *w, const char *path,
                                              size_t block, struct dsort_error *err)
{
    return dsort_runwriter_open(w, path, 0, block, err);
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
    enum dsort_status st = dsort_io_pwrite_full(w->fd, w->big, len, w->off, w->path, err);
    free(w->big);
    w->big = NULL;
    if (st)
        return st;
    w->off += len;
    w->records++;
    return DSORT_OK;
}

enum dsort_status dsort_runwriter_close(struct dsort_runwriter *w, struct dsort_error *err)
{
    enum dsort_status st = run_flush(&w->sink, err);
    enum dsort_status st2 = dsort_awriter_finish(w->aw, st ? NULL : err);
    w->aw = NULL;
    if (!st)
        st = st2;
    if (close(w->fd) && !st)
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot write run file '%s'", w->path);
    w->fd = -1;
    return st;
}

void dsort_runwriter_abort(struct dsort_runwriter *w)
{
    dsort_awriter_finish(w->aw, NULL);
    w->aw = NULL;
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    unlink(w->path);
    dsort_cleanup_forget(w->path);
    dsort_runwriter_free(w);
}

void dsort_runwriter_free(struct dsort_runwriter *w)
{
    free(w->last);
    w->last = NULL;
    free(w->big);
    w->big = NULL;
}

size_t dsort_runreader_buf_len(size_t rec_size, size_t block)
{
    return 2 * dsort_run_stride(rec_size, block);
}

/* Ask for the next block into buffer b (the one not being merged). */
static void request(struct dsort_runreader *r, int b)
{
    if (r->next >= r->size)
        return;
    uint64_t left = r->size - r->next;
    r->rq.fd = r->fd;
    r->rq.buf = r->buf[b];
    r->rq.len = left < r->stride ? (size_t)align_up((size_t)left) : r->stride;
    r->rq.off = r->next;
    r->rq.path = r->path;
    r->rq_buf = b;
    r->pending = 1;
    if (r->pf)
        dsort_prefetch_post(r->pf, &r->rq);
    else
        dsort_prefetch_read(&r->rq);
}

/* Load the next non-empty block. Empty blocks are skipped in a loop (a file of many of them
 * must not take a stack frame each); the end of the run, reached directly or after empty
 * blocks, checks the record count the writer recorded. */
static enum dsort_status run_refill(struct dsort_cursor *c, struct dsort_error *err)
{
    struct dsort_runreader *r = c->ctx;
    for (;;) {
        if (!r->pending) {
            c->cur = c->end; /* end of run */
            if (r->expected != UINT64_MAX && r->records < r->expected)
                return DSORT_ERR(err, DSORT_EFORMAT, 0,
                                 "run file '%s' ends after %" PRIu64 " of its %" PRIu64
                                 " records (truncated on the temp disk?)",
                                 r->path, r->records, r->expected);
            if (r->expected != UINT64_MAX && r->records > r->expected)
                return DSORT_ERR(err, DSORT_EFORMAT, 0,
                                 "run file '%s' holds %" PRIu64
                                 " records, but its writer wrote %" PRIu64
                                 " (changed on the temp disk?)",
                                 r->path, r->records, r->expected);
            return DSORT_OK;
        }
        enum dsort_status st = r->pf ? dsort_prefetch_wait(r->pf, &r->rq, err) : r->rq.st;
        r->pending = 0;
        if (st) {
            if (!r->pf && err)
                *err = r->rq.err;
            return st;
        }
        const unsigned char *blk = r->buf[r->rq_buf];
        uint64_t at = r->rq.off;
        struct block_header h;
        free(r->big); /* the last oversize block is used up */
        r->big = NULL;
        if (r->rq.got < DSORT_RUN_HEADER)
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
        if (DSORT_RUN_HEADER + h.payload > r->rq.got) {
            if (at + took > r->size)
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
            memcpy(r->big, blk, r->rq.got);
            if ((st = dsort_io_pread_full(r->fd, r->big + r->rq.got, (size_t)took - r->rq.got,
                                          at + r->rq.got, r->path, err)))
                return st;
            blk = r->big;
            r->bytes_read += took - r->rq.got;
        }
        const unsigned char *payload = blk + DSORT_RUN_HEADER;
        if (dsort_crc32c(0, payload, (size_t)h.payload) != h.crc)
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "run file '%s': the block at offset %" PRIu64
                             " fails its CRC32C check (the temp disk corrupted it)",
                             r->path, at);
        r->records += h.records;
        r->bytes_read += r->rq.got;
        r->blk_off = at;
        r->blk_records = h.records;
        c->cur = payload;
        c->end = payload + h.payload;
        r->next = at + took;
        request(r, !r->rq_buf); /* the next block, into the other buffer */
        if (h.payload != 0)
            return DSORT_OK;
        c->cur = c->end; /* an empty block: on to the next, or to the end checks */
    }
}

static enum dsort_status open_reader(struct dsort_runreader *r, const char *path, size_t rec_size,
                                     size_t block, size_t max_payload, unsigned char *buf,
                                     struct dsort_prefetch *pf, uint64_t expected,
                                     struct dsort_error *err)
{
    memset(r, 0, sizeof *r);
    r->expected = expected;
    snprintf(r->path, sizeof r->path, "%s", path);
    r->rec_size = rec_size;
    r->payload = dsort_run_payload(rec_size, block);
    r->stride = dsort_run_stride(rec_size, block);
    r->max_payload = max_payload > r->payload ? max_payload : r->payload;
    r->buf[0] = buf;
    r->buf[1] = buf + r->stride;
    r->pf = pf;
    r->fd = open_maybe_direct(path, O_RDONLY | O_CLOEXEC, 0);
    if (r->fd < 0)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot open run file '%s'", path);
    struct stat sb;
    if (fstat(r->fd, &sb)) {
        int e = errno;
        dsort_runreader_close(r);
        return DSORT_ERR(err, DSORT_EIO, e, "cannot stat run file '%s'", path);
    }
    r->size = (uint64_t)sb.st_size;
    r->cur.refill = run_refill;
    r->cur.ctx = r;
    request(r, 0);
    enum dsort_status st = run_refill(&r->cur, err);
    if (st)
        dsort_runreader_close(r);
    return st;
}

enum dsort_status dsort_runreader_open(struct dsort_runreader *r, const char *path, size_t rec_size,
                                       size_t block, unsigned char *buf, struct dsort_prefetch *pf,
                                       uint64_t expected, struct dsort_error *err)
{
    return open_reader(r, path, rec_size, block, 0, buf, pf, expected, err);
}

enum dsort_status dsort_runreader_open_framed(struct dsort_runreader *r, const char *path,
                                              size_t block, size_t max_payload, unsigned char *buf,
                                              struct dsort_prefetch *pf, uint64_t expected,
                                              struct dsort_error *err)
{
    return open_reader(r, path, 0, block, max_payload, buf, pf, expected, err);
}

void dsort_runreader_close(struct dsort_runreader *r)
{
    if (r->pending && r->pf)
        dsort_prefetch_wait(r->pf, &r->rq, NULL);
    r->pending = 0;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    free(r->big);
    r->big = NULL;
}
