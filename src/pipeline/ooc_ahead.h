/* ooc_ahead.h - the out-of-core rounds' read-ahead: a reader thread reads the next chunk of the
 * share (dsort_job_read) while the round sorts, exchanges and spills the one before. One read
 * in flight at a time; the thread is started per chunk and joined by the next read, which
 * takes its status, its error and its input sums (kept apart while it runs, merged at the
 * join, so the caller's sums are only ever touched by the caller's thread). The caller must
 * not touch the buffer, the inputs' topology reader or the options while a read is in flight.
 * Internal to src/pipeline/. Local.
 */
#ifndef DSORT_OOC_AHEAD_H
#define DSORT_OOC_AHEAD_H

#include <pthread.h>
#include <stdint.h>

#include "checksum.h"
#include "error.h"
#include "job.h"

struct dsort_ooc_ahead {
    pthread_t tid;
    int running; /* a read is in flight (the thread not joined yet) */
    const struct dsort_job_options *o;
    const struct dsort_inputs *in;
    uint64_t first, n; /* the records read: [first, first + n) of the inputs */
    unsigned char *buf;
    struct dsort_sum128 sum, con; /* the read's sums (dsort_job_read's) */
    struct dsort_error err;
    enum dsort_status st;
};

/* Start reading records [first, first + n) of in into buf on a reader thread
 * (dsort_cleanup_thread_create). 0: started; else the thread could not be started (nothing
 * in flight: the caller reads when it needs the records). a must not have a read in flight. */
int dsort_ooc_ahead_start(struct dsort_ooc_ahead *a, const struct dsort_job_options *o,
                          const struct dsort_inputs *in, uint64_t first, uint64_t n,
                          unsigned char *buf);

/* Whether the read in flight is of records [first, first + n). */
int dsort_ooc_ahead_is(const struct dsort_ooc_ahead *a, uint64_t first, uint64_t n);

/* Wait for the read in flight: its status; on success its sums are added to sum and con, on
 * failure its error is copied to err. Nothing in flight: DSORT_OK. */
enum dsort_status dsort_ooc_ahead_wait(struct dsort_ooc_ahead *a, struct dsort_sum128 *sum,
                                       struct dsort_sum128 *con, struct dsort_error *err);

/* The process's bytes read so far (/proc/self/io's rchar, what --stats' phases count; 0 when
 * it cannot be read). */
uint64_t dsort_ooc_ahead_rchar(void);

/* Wait for the read in flight, if any, and drop it (a stop, an error, the rounds' end). */
void dsort_ooc_ahead_drop(struct dsort_ooc_ahead *a);

#endif
