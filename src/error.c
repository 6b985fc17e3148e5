#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* Append " (the address-space limit of this process is N KiB: ulimit -v N)" to msg for the
 * tighter of RLIMIT_AS and RLIMIT_DATA that is set; nothing when neither is. */
static void add_memory_limit(char *msg, size_t cap)
{
    struct rlimit as, data;
    int has_as = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
    int has_data = getrlimit(RLIMIT_DATA, &data) == 0 && data.rlim_cur != RLIM_INFINITY;
    if (!has_as && !has_data)
        return;
    const int is_as = has_as && (!has_data || as.rlim_cur <= data.rlim_cur);
    const unsigned long long kib = (unsigned long long)(is_as ? as.rlim_cur : data.rlim_cur) / 1024;
    size_t n = strlen(msg);
    if (n < cap)
        snprintf(msg + n, cap - n, " (the %s limit of this process is %llu KiB: ulimit -%c %llu)",
                 is_as ? "address-space" : "data", kib, is_as ? 'v' : 'd', kib);
}

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
    /* Out of memory under an address-space or data limit (ulimit -v, -d: a batch system's
     * memory limit) is most often that limit, which strerror does not name either. */
    if (status == DSORT_ENOMEM && !strstr(err->msg, "ulimit"))
        add_memory_limit(err->msg, sizeof err->msg);
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
