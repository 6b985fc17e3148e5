/* prefetch.h - one I/O thread that reads ahead for a group of readers.
 *
 * A reader posts a request (fd, buffer, offset, length) and later waits for it; the thread
 * serves requests in order with whole-buffer preads, so the next block of every run is on
 * its way while the merge works on the current ones. This is what lets spilled runs be read
 * with O_DIRECT (no page cache) and still overlap I/O with merging. A request that reaches
 * the end of the file is not an error: `got` says how much was read.
 * Posting and waiting are thread-safe; a request must stay alive until it is waited for.
 */
#ifndef DSORT_PREFETCH_H
#define DSORT_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct dsort_prefetch;

struct dsort_preq {
    int fd;
    unsigned char *buf;
    size_t len;
    uint64_t off;
    const char *path;
    /* results, valid after dsort_prefetch_wait */
    size_t got;
    enum dsort_status st;
    struct dsort_error err;
    /* private */
    int done;
    struct dsort_preq *next;
};

enum dsort_status dsort_prefetch_create(struct dsort_prefetch **pf, struct dsort_error *err);
/* Stops the thread after the queued requests. NULL does nothing. */
void dsort_prefetch_destroy(struct dsort_prefetch *pf);

void dsort_prefetch_post(struct dsort_prefetch *pf, struct dsort_preq *rq);
/* Wait for rq; returns its status (its error copied to err). */
enum dsort_status dsort_prefetch_wait(struct dsort_prefetch *pf, struct dsort_preq *rq,
                                      struct dsort_error *err);

/* Read rq now, in the calling thread (what the I/O thread does for a request). */
void dsort_prefetch_read(struct dsort_preq *rq);

#endif
