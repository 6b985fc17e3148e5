/* error.h - status codes and error records for the dsort core.
 *
 * Every fallible core function returns an enum dsort_status and, on failure, fills a
 * caller-owned struct dsort_error with a one-line human message ("cannot open 'x': No such
 * file or directory") and the source location where the error was first raised. Library
 * code never prints and never exits; the programs decide what to do with the error.
 * Functions are local (no communication) and thread-compatible (one error per thread).
 */
#ifndef DSORT_ERROR_H
#define DSORT_ERROR_H

#include <stddef.h>

enum dsort_status {
    DSORT_OK = 0,
    DSORT_EINVAL,  /* bad argument or option value */
    DSORT_EIO,     /* a system call failed; errnum holds errno */
    DSORT_ENOMEM,  /* an allocation failed or the memory budget is too small */
    DSORT_EFORMAT, /* input data does not match the record format */
    DSORT_EINTR,   /* stopped by a signal */
    DSORT_EINTERNAL
};

#define DSORT_ERROR_MSG_MAX 640

struct dsort_error {
    enum dsort_status status;
    int errnum;       /* errno of the failing call, or 0 */
    const char *file; /* where the error was raised */
    int line;
    char msg[DSORT_ERROR_MSG_MAX];
};

/* Record an error; returns status so that callers can write `return DSORT_ERR(...)`. If errnum
 * is non-zero, ": strerror(errnum)" is appended to the message. err may be NULL. */
enum dsort_status dsort_error_set(struct dsort_error *err, enum dsort_status status, int errnum,
                                  const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#define DSORT_ERR(err, status, errnum, ...)                                                        \
    dsort_error_set((err), (status), (errnum), __FILE__, __LINE__, __VA_ARGS__)

/* Clear an error record to DSORT_OK with an empty message. */
void dsort_error_clear(struct dsort_error *err);

/* A short English name for a status ("I/O error"). Never NULL. */
const char *dsort_status_name(enum dsort_status status);

#endif
