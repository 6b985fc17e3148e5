#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

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
        n += snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(errnum));
    /* EFBIG is most often the process's file size limit (ulimit -f, a batch system's), which
     * strerror does not name. */
    struct rlimit rl;
    if (errnum == EFBIG && (size_t)n < sizeof err->msg && getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY)
        snprintf(err->msg + n, sizeof err->msg - (size_t)n,
                 " (the file size limit of this process is %llu bytes: ulimit -f %llu)",
                 (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_cur / 1024);
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
