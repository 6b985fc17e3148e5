/* The out-of-core rounds' read-ahead (ooc_ahead.h). */
#include "ooc_ahead.h"

#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "job_typed.h"

static void *reader(void *arg)
{
    struct dsort_ooc_ahead *a = arg;
    a->st = dsort_job_read(a->o, a->in, a->first, a->n, a->buf, &a->sum, &a->con, &a->err);
    return NULL;
}

int dsort_ooc_ahead_start(struct dsort_ooc_ahead *a, const struct dsort_job_options *o,
                          const struct dsort_inputs *in, uint64_t first, uint64_t n,
                          unsigned char *buf)
{
    *a = (struct dsort_ooc_ahead){.o = o, .in = in, .first = first, .n = n, .buf = buf};
    if (dsort_cleanup_thread_create(&a->tid, reader, a, "dsort-readahead"))
        return -1;
    a->running = 1;
    return 0;
}

int dsort_ooc_ahead_is(const struct dsort_ooc_ahead *a, uint64_t first, uint64_t n)
{
    return a->running && a->first == first && a->n == n;
}

enum dsort_status dsort_ooc_ahead_wait(struct dsort_ooc_ahead *a, struct dsort_sum128 *sum,
                                       struct dsort_sum128 *con, struct dsort_error *err)
{
    if (!a->running)
        return DSORT_OK;
    pthread_join(a->tid, NULL);
    a->running = 0;
    if (a->st) {
        *err = a->err;
        return a->st;
    }
    dsort_sum128_merge(sum, &a->sum);
    dsort_sum128_merge(con, &a->con);
    return DSORT_OK;
}

void dsort_ooc_ahead_drop(struct dsort_ooc_ahead *a)
{
    if (a->running)
        pthread_join(a->tid, NULL);
    a->running = 0;
}

uint64_t dsort_ooc_ahead_rchar(void)
{
    FILE *f = fopen("/proc/self/io", "re");
    if (!f)
        return 0;
    char name[64];
    unsigned long long v, r = 0;
    while (fscanf(f, "%63s %llu", name, &v) == 2)
        if (!strcmp(name, "rchar:"))
            r = v;
    fclose(f);
    return (uint64_t)r;
}
