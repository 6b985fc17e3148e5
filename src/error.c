#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum dsort_status dsort_error_set(struct dsort_error *err, enum dsort_status status, int errnum,
                                  const char *file, int line, const char *fmt, ...)
{
    if (!err)
        return status;
    err->status = status;
    err->errnum = errnum;
    err->file = file;
    err->line = line;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (errnum && (size_t)n < sizeof err->msg)
        snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(errnum));
    return status;
}

void dsort_error_clear(struct dsort_error *err)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
}

const char *dsort_status_name(enum dsort_status status)
{
    switch (status) {
    case DSORT_OK:
        return "success";
    case DSORT_EINVAL:
        return "invalid argument";
    case DSORT_EIO:
        return "I/O error";
    case DSORT_ENOMEM:
        return "out of memory";
    case DSORT_EFORMAT:
        return "bad input format";
    case DSORT_EINTR:
        return "interrupted";
    case DSORT_EINTERNAL:
        return "internal error";
    }
    return "unknown error";
}
