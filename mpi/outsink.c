#include "outsink.h"

#include <string.h>

#include "awrite.h"
#include "io.h"
#include "runfile.h"
#include "typedkey.h"

static enum dsort_status sink_flush(struct dsort_sink *s, struct dsort_error *err)
{
    struct dsort_output_sink *o = (struct dsort_output_sink *)s;
    const size_t A = DSORT_RUN_ALIGN;
    if (s->len == o->carried)
        return DSORT_OK;
    if (o->narrow) { /* typed keys: the new records, widened, become the user's */
        size_t n = (s->len - o->carried) / (o->narrow->wide_prefix + o->narrow->rec_size);
        dsort_typedkey_narrow_inplace(o->narrow, s->buf + o->carried, n);
        s->len = o->carried + n * o->narrow->rec_size;
    }
    if (o->on_bytes)
        o->on_bytes(o->ctx, s->buf + o->carried, s->len - o->carried);
    o->pos += s->len - o->carried;
    if (!o->direct) {
        enum dsort_status st = dsort_awriter_submit(o->aw, s->len, o->fbase, err);
        if (st)
            return st;
        o->fbase += s->len;
        s->buf = dsort_awriter_buf(o->aw);
        s->len = 0;
        return DSORT_OK;
    }
    unsigned char *mem = s->buf - o->lead;
    size_t end = o->lead + s->len, from = 0;
    uint64_t page0 = o->fbase - o->lead; /* file offset of mem[0], page-aligned */
    if (o->lead) {                       /* the share's partial first page */
        size_t n = end < A ? s->len : A - o->lead;
        enum dsort_status st = dsort_io_pwrite_full(o->fd, s->buf, n, o->fbase, o->path, err);
        if (st)
            return st;
        from = A;
    }
    size_t aligned = end / A * A, tail = 0;
    if (aligned > from) {
        enum dsort_status st =
            dsort_awriter_submit_range(o->aw, from, aligned - from, page0 + from, err);
        if (st)
            return st;
    }
    if (end > from && end > aligned)
        tail = end - aligned; /* a partial last page: carry it to the next buffer */
    unsigned char *next = dsort_awriter_buf(o->aw);
    if (tail) {
        memmove(next, mem + aligned, tail);
        o->fbase = page0 + aligned;
    } else {
        o->fbase = page0 + end;
    }
    /* Keep memory offset = file offset modulo the page size. */
    o->lead = (size_t)(o->fbase % A);
    s->buf = next + o->lead;
    s->cap = dsort_awriter_buf_len(o->aw) - o->lead;
    s->len = tail;
    o->carried = tail;
    return DSORT_OK;
}

enum dsort_status dsort_output_sink_open(struct dsort_output_sink *os, struct dsort_output *out,
                                         size_t buf_len,
                                         void (*on_bytes)(void *, const unsigned char *, size_t),
                                         void *ctx, struct dsort_error *err)
{
    memset(os, 0, sizeof *os);
    os->on_bytes = on_bytes;
    os->ctx = ctx;
    os->fd = out->fd;
    os->direct = out->dfd >= 0;
    os->path = out->mode == DSORT_OUTPUT_FILE ? out->final : out->part;
    os->narrow = out->narrow;
    os->fbase = dsort_output_file_offset(out, 0);
    enum dsort_status st =
        dsort_awriter_create(&os->aw, os->direct ? out->dfd : out->fd, os->path, buf_len, err);
    if (st)
        return st;
    os->lead = os->direct ? (size_t)(os->fbase % DSORT_RUN_ALIGN) : 0;
    dsort_sink_memory(&os->sink, dsort_awriter_buf(os->aw) + os->lead, buf_len - os->lead);
    os->sink.flush = sink_flush;
    return DSORT_OK;
}

enum dsort_status dsort_output_sink_finish(struct dsort_output_sink *os, enum dsort_status st,
                                           struct dsort_error *err)
{
    if (!os->aw)
        return st;
    if (!st)
        st = sink_flush(&os->sink, err);
    if (!st)
        st = dsort_awriter_drain(os->aw, err);
    if (!st && os->direct && os->sink.len)
        st = dsort_io_pwrite_full(os->fd, os->sink.buf, os->sink.len, os->fbase, os->path, err);
    enum dsort_status st2 = dsort_awriter_finish(os->aw, st ? NULL : err);
    os->aw = NULL;
    return st ? st : st2;
}
