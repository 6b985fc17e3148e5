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

size_t dsort_run_payload(size_t rec_size, size_t block)
{
    size_t n = block / rec_size;
    return (n ? n : 1) * rec_size;
}

static enum dsort_status run_flush(struct dsort_sink *s, struct dsort_error *err)
{
    struct dsort_runwriter *w = s->ctx;
    if (s->len == 0)
        return DSORT_OK;
    struct block_header h = {RUN_MAGIC, dsort_crc32c(0, s->buf, s->len), s->len,
                             s->len / w->rec_size};
    unsigned char *blk = s->buf - DSORT_RUN_HEADER;
    memcpy(blk, &h, sizeof h);
    memcpy(w->last, s->buf + s->len - w->rec_size, w->rec_size);
    size_t len = DSORT_RUN_HEADER + s->len;
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
    if (!(w->last = malloc(rec_size)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status st = dsort_cleanup_add(path, 0, err);
    if (st) {
        free(w->last);
        w->last = NULL;
        return st;
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (w->fd < 0) {
        dsort_cleanup_forget(path);
        free(w->last);
        w->last = NULL;
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot create run file '%s'", path);
    }
    size_t payload = dsort_run_payload(rec_size, block);
    st = dsort_awriter_create(&w->aw, w->fd, path, DSORT_RUN_HEADER + payload, err);
    if (st) {
        dsort_runwriter_abort(w);
        return st;
    }
    dsort_sink_memory(&w->sink, dsort_awriter_buf(w->aw) + DSORT_RUN_HEADER, payload);
    w->sink.flush = run_flush;
    w->sink.ctx = w;
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
    free(w->last);
    w->last = NULL;
}

void dsort_runwriter_free(struct dsort_runwriter *w)
{
    free(w->last);
    w->last = NULL;
}

size_t dsort_runreader_buf_len(size_t rec_size, size_t block)
{
    return DSORT_RUN_HEADER + dsort_run_payload(rec_size, block);
}

static enum dsort_status run_refill(struct dsort_cursor *c, struct dsort_error *err)
{
    struct dsort_runreader *r = c->ctx;
    c->cur = c->end = r->buf + DSORT_RUN_HEADER;
    if (r->off >= r->size)
        return DSORT_OK; /* end of run */
    uint64_t left = r->size - r->off;
    size_t want = DSORT_RUN_HEADER + r->payload;
    if (left < want)
        want = (size_t)left;
    if (want < DSORT_RUN_HEADER)
        return DSORT_ERR(err, DSORT_EFORMAT, 0, "run file '%s' is truncated at offset %" PRIu64,
                         r->path, r->off);
    enum dsort_status st = dsort_io_pread_full(r->fd, r->buf, want, r->off, r->path, err);
    if (st)
        return st;
    struct block_header h;
    memcpy(&h, r->buf, sizeof h);
    if (h.magic != RUN_MAGIC || h.payload > want - DSORT_RUN_HEADER || h.payload % r->rec_size ||
        h.records != h.payload / r->rec_size)
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "run file '%s': bad block header at offset %" PRIu64, r->path, r->off);
    const unsigned char *payload = r->buf + DSORT_RUN_HEADER;
    if (dsort_crc32c(0, payload, (size_t)h.payload) != h.crc)
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "run file '%s': CRC32C mismatch in the block at offset %" PRIu64
                         " (the temp disk corrupted it)",
                         r->path, r->off);
    r->off += DSORT_RUN_HEADER + h.payload;
    r->records += h.records;
    r->bytes_read += DSORT_RUN_HEADER + h.payload;
    c->cur = payload;
    c->end = payload + h.payload;
    /* Let the kernel fetch the next block while this one is merged. */
    if (r->off < r->size)
        posix_fadvise(r->fd, (off_t)r->off, (off_t)(DSORT_RUN_HEADER + r->payload),
                      POSIX_FADV_WILLNEED);
    return DSORT_OK;
}

enum dsort_status dsort_runreader_open(struct dsort_runreader *r, const char *path, size_t rec_size,
                                       size_t block, unsigned char *buf, struct dsort_error *err)
{
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->rec_size = rec_size;
    r->payload = dsort_run_payload(rec_size, block);
    r->buf = buf;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot open run file '%s'", path);
    struct stat sb;
    if (fstat(r->fd, &sb)) {
        int e = errno;
        dsort_runreader_close(r);
        return DSORT_ERR(err, DSORT_EIO, e, "cannot stat run file '%s'", path);
    }
    r->size = (uint64_t)sb.st_size;
    posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    r->cur.refill = run_refill;
    r->cur.ctx = r;
    enum dsort_status st = run_refill(&r->cur, err);
    if (st)
        dsort_runreader_close(r);
    return st;
}

void dsort_runreader_close(struct dsort_runreader *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}
