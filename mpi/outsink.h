/* outsink.h - streaming this rank's share of the output, from its first byte on, through a
 * writer thread: a struct dsort_sink (merge.h) that a merge fills and flushes.
 *
 * With O_DIRECT (the output opened with direct, on a file system that has it) the buffer is
 * laid out so that memory alignment follows file alignment: whole 4 KiB pages go to the writer
 * thread through the O_DIRECT descriptor; the partial first page of the share is written
 * through the page cache (a neighbouring rank may write the other part of that page), and the
 * partial last page of each flush is carried over to the start of the next buffer, which is
 * then page-aligned in the file; finish writes the last partial page through the page cache.
 * Without O_DIRECT every flush goes to the writer thread whole.
 *
 * Records: the sink is given whole records of rec_size bytes (a flush with a partial record
 * is the caller's bug); every byte passed on is shown once to on_bytes (for checksums), in
 * whole records. With typed keys (out->narrow) the records given are widened, and each flush
 * narrows its new records in the buffer before anything else: on_bytes, the file and pos see
 * the user's records. Local (no MPI calls); not thread-safe; one sink per output at a time.
 */
#ifndef DSORT_OUTSINK_H
#define DSORT_OUTSINK_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "merge.h"
#include "output.h"

struct dsort_awriter;

struct dsort_output_sink {
    struct dsort_sink sink; /* first: the merge's sink (flush is set by open) */
    /* called with the bytes of every flush that were not passed on before (may be NULL) */
    void (*on_bytes)(void *ctx, const unsigned char *p, size_t len);
    void *ctx;
    uint64_t pos; /* bytes of the share passed on so far */
    /* private */
    struct dsort_awriter *aw;
    int fd;         /* buffered descriptor */
    int direct;     /* aw writes through an O_DIRECT descriptor */
    uint64_t fbase; /* file offset of sink.buf[0] */
    size_t lead;    /* sink.buf - the writer's buffer */
    size_t carried; /* bytes at sink.buf that an earlier flush already passed on */
    const char *path;
    const struct dsort_typedkey *narrow; /* out->narrow */
};

/* Start streaming out's share (after dsort_output_open and, if it changed, _set_share).
 * buf_len: bytes of each of the writer's buffers; with O_DIRECT at least one page more than
 * what is flushed at once. On failure nothing is left to finish. */
enum dsort_status dsort_output_sink_open(struct dsort_output_sink *os, struct dsort_output *out,
                                         size_t buf_len,
                                         void (*on_bytes)(void *, const unsigned char *, size_t),
                                         void *ctx, struct dsort_error *err);

/* Flush what is left, wait for the writer, write any carried partial page; then stop the
 * writer. st: the caller's status so far (not DSORT_OK: only stop the writer, write nothing
 * more). Returns st, or the first error of the flushes and the writer. */
enum dsort_status dsort_output_sink_finish(struct dsort_output_sink *os, enum dsort_status st,
                                           struct dsort_error *err);

#endif
