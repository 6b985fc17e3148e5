/* awrite.h - an asynchronous, double-buffered writer.
 *
 * The producer fills one buffer while a thread writes the other, so sorting or merging goes
 * on while the previous block is on its way to disk. Buffers are allocated once (mmap, huge
 * pages) and reused. Each submit names the file offset, so the same writer serves a spill run
 * (appending) and a rank's range of a shared output file. Errors of a write are reported by
 * the next submit or by finish, naming the file and offset. The writer
 * * does not open files: give it an O_DIRECT descriptor only for aligned blocks.
 *
 * One producer thread per writer. Not async-signal-safe.
 */
#ifndef DSORT_AWRITE_H
#define DSORT_AWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct dsort_awriter;

/* Start a writer for fd (owned by the caller, who closes it after finish) with two buffers
 * of buf_len bytes. path is only used in messages. */
enum dsort_status dsort_awriter_create(struct dsort_awriter **w, int fd, const char *path,
                                       size_t buf_len, struct dsort_error *err);

/* A writer that owns one buffer and trades it with its producer (submit_swap): several such
 * writers (one per file of a striped run, runfile.h) and one buffer of the producer's keep as
 * many writes in flight as there are writers with one buffer more than that in all, where
 * double-buffered writers would take two each. */
enum dsort_status dsort_awriter_create_swap(struct dsort_awriter **w, int fd, const char *path,
                                            size_t buf_len, struct dsort_error *err);
/* Swap mode: hand over bytes [0, len) of *buf (a buffer of buf_len bytes from dsort_mem_alloc,
 * the producer's), to be written at offset off; waits until the writer's own buffer is written
 * and gives that back in *buf. The buffers circulate: finish frees the one the writer holds,
 * the producer frees its own with dsort_mem_free. Returns the error of an earlier write. */
enum dsort_status dsort_awriter_submit_swap(struct dsort_awriter *w, unsigned char **buf,
                                            size_t len, uint64_t off, struct dsort_error *err);

/* The buffer to fill now (buf_len bytes). It changes after every submit. */
unsigned char *dsort_awriter_buf(struct dsort_awriter *w);
size_t dsort_awriter_buf_len(const struct dsort_awriter *w);

/* Hand over bytes [0, len) of the current buffer, to be written at offset off. Waits while
 * the other buffer is still being written. Returns the error of an earlier write, if any. */
enum dsort_status dsort_awriter_submit(struct dsort_awriter *w, size_t len, uint64_t off,
                                       struct dsort_error *err);

/* As submit, for bytes [from, from + len) of the current buffer. */
enum dsort_status dsort_awriter_submit_range(struct dsort_awriter *w, size_t from, size_t len,
                                             uint64_t off, struct dsort_error *err);

/* Wait until the writer is idle (both buffers free). Returns the first write error. */
enum dsort_status dsort_awriter_drain(struct dsort_awriter *w, struct dsort_error *err);

/* Wait for all writes, stop the thread, free the buffers. Returns the first write error.
 * w may be NULL. */
enum dsort_status dsort_awriter_finish(struct dsort_awriter *w, struct dsort_error *err);

/* Bytes written so far and seconds the producer spent waiting for the writer. */
uint64_t dsort_awriter_bytes(const struct dsort_awriter *w);
double dsort_awriter_wait_seconds(const struct dsort_awriter *w);

#endif
