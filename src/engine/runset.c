#include "runset.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cleanup.h"
#include "mem.h"

void dsort_runset_init(struct dsort_runset *s)
{
    memset(s, 0, sizeof *s);
}

enum dsort_status dsort_runset_add(struct dsort_runset *s, const char *path, uint64_t records,
                                   uint64_t bytes, struct dsort_error *err)
{
    return dsort_runset_add_striped(s, &path, 1, records, bytes, err);
}

size_t dsort_run_files(const struct dsort_run *r, const char **paths)
{
    size_t k = r->k ? r->k : 1;
    paths[0] = r->path;
    const char *p = r->more;
    for (size_t i = 1; i < k; i++) {
        paths[i] = p;
        p += strlen(p) + 1;
    }
    return k;
}

enum dsort_status dsort_runset_add_run(struct dsort_runset *s, const struct dsort_run *r,
                                       struct dsort_error *err)
{
    const char *paths[DSORT_RUN_MAX_STRIPES];
    size_t k = dsort_run_files(r, paths);
    return dsort_runset_add_striped(s, paths, k, r->records, r->bytes, err);
}

enum dsort_status dsort_runset_add_striped(struct dsort_runset *s, const char *const *paths,
                                           size_t k, uint64_t records, uint64_t bytes,
                                           struct dsort_error *err)
{
    if (k < 1 || k > DSORT_RUN_MAX_STRIPES)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "a run of %zu files (1 to %d)", k,
                         DSORT_RUN_MAX_STRIPES);
    char *more = NULL;
    if (k > 1) {
        size_t len = 0;
        for (size_t i = 1; i < k; i++)
            len += strlen(paths[i]) + 1;
        if (!(more = malloc(len)))
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory for the list of runs");
        char *p = more;
        for (size_t i = 1; i < k; i++) {
            size_t n = strlen(paths[i]) + 1;
            memcpy(p, paths[i], n);
            p += n;
        }
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct dsort_run *r = realloc(s->runs, cap * sizeof *r);
        if (!r) {
            free(more);
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory for the list of runs");
        }
        s->runs = r;
        s->cap = cap;
    }
    struct dsort_run *r = &s->runs[s->n++];
    snprintf(r->path, sizeof r->path, "%s", paths[0]);
    r->records = records;
    r->bytes = bytes;
    r->k = k;
    r->more = more;
    return DSORT_OK;
}

void dsort_runset_drop(struct dsort_runset *s, size_t from, size_t k)
{
    if (from >= s->n || k == 0)
        return;
    if (k > s->n - from)
        k = s->n - from;
    for (size_t i = from; i < from + k; i++) {
        const char *paths[DSORT_RUN_MAX_STRIPES];
        size_t nf = dsort_run_files(&s->runs[i], paths);
        for (size_t j = 0; j < nf; j++) {
            unlink(paths[j]);
            dsort_cleanup_forget(paths[j]);
        }
        free(s->runs[i].more);
    }
    memmove(s->runs + from, s->runs + from + k, (s->n - from - k) * sizeof *s->runs);
    s->n -= k;
}

void dsort_runset_sort_smallest(struct dsort_runset *s)
{
    /* Insertion sort: stable, and the sets are small (tens to thousands of runs). */
    for (size_t i = 1; i < s->n; i++) {
        struct dsort_run t = s->runs[i];
        size_t j = i;
        while (j > 0 && (s->runs[j - 1].bytes > t.bytes ||
                         (s->runs[j - 1].bytes == t.bytes && s->runs[j - 1].records > t.records))) {
            s->runs[j] = s->runs[j - 1];
            j--;
        }
        s->runs[j] = t;
    }
}

uint64_t dsort_runset_records(const struct dsort_runset *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->runs[i].records;
    return n;
}

uint64_t dsort_runset_bytes(const struct dsort_runset *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->runs[i].bytes;
    return n;
}

void dsort_runset_keep(struct dsort_runset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->runs[i].more);
    free(s->runs);
    memset(s, 0, sizeof *s);
}

void dsort_runset_release(struct dsort_runset *s)
{
    dsort_runset_drop(s, 0, s->n);
    free(s->runs);
    memset(s, 0, sizeof *s);
}

void dsort_fan_in_plan(uint64_t files_limit, uint64_t open_now, uint64_t mem, uint64_t buf_len,
                       size_t cap, struct dsort_fan_in *out)
{
    memset(out, 0, sizeof *out);
    out->files_limit = files_limit;
    out->open_now = open_now;
    out->buf_len = buf_len;
    uint64_t by_files = SIZE_MAX, by_mem = buf_len ? mem / buf_len : SIZE_MAX;
    if (files_limit)
        by_files = files_limit > open_now + 8 ? files_limit - open_now - 8 : 0;
    out->by_files = by_files > SIZE_MAX ? SIZE_MAX : (size_t)by_files;
    out->by_mem = by_mem > SIZE_MAX ? SIZE_MAX : (size_t)by_mem;
    size_t f = out->by_files < out->by_mem ? out->by_files : out->by_mem;
    if (cap && f > cap)
        f = cap;
    out->f = f < 2 ? 2 : f;
}

void dsort_fan_in_per_run(struct dsort_fan_in *fi, size_t k, size_t cap)
{
    if (k <= 1)
        return;
    fi->by_files = fi->by_files > k ? (fi->by_files - k) / k : 0;
    size_t f = fi->by_files < fi->by_mem ? fi->by_files : fi->by_mem;
    if (cap && f > cap)
        f = cap;
    fi->f = f < 2 ? 2 : f;
}

void dsort_fan_in_now(uint64_t mem, uint64_t buf_len, size_t cap, struct dsort_fan_in *out)
{
    uint64_t open_now = 64; /* a guess when /proc is not there */
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        open_now = 0;
        const struct dirent *e;
        while ((e = readdir(d)))
            open_now += e->d_name[0] != '.'; /* not "." and ".." */
        if (open_now)
            open_now--; /* the directory's own descriptor, closed now */
        closedir(d);
    }
    struct rlimit rl;
    uint64_t files = 0;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
        files = (uint64_t)rl.rlim_cur;
    dsort_fan_in_plan(files, open_now, mem, buf_len, cap, out);
}

void dsort_fan_in_explain(const struct dsort_fan_in *fi, size_t nruns, char *out, size_t len)
{
    if (!len)
        return;
    out[0] = 0;
    if (nruns <= fi->f)
        return;
    char b1[32];
    if (fi->by_files <= fi->by_mem)
        snprintf(out, len,
                 "%zu runs, but the open-file limit (ulimit -n %" PRIu64 ", %" PRIu64
                 " open) allows %zu at once",
                 nruns, fi->files_limit, fi->open_now, fi->f);
    else
        snprintf(out, len, "%zu runs, but the budget's merge buffers (%s a run) hold %zu at once",
                 nruns, dsort_mem_format(fi->buf_len, b1, sizeof b1), fi->f);
}

size_t dsort_fan_in_step(size_t n, size_t f)
{
    if (f < 2)
        f = 2;
    if (n <= f)
        return n;
    return n - f + 1 < f ? n - f + 1 : f;
}

uint64_t dsort_waves_allot(const uint64_t *left, int p, uint64_t cap, uint64_t *allot)
{
    uint64_t room = cap, pending = 0;
    for (int s = 0; s < p; s++) {
        allot[s] = left[s] < room ? left[s] : room;
        room -= allot[s];
        pending += left[s];
    }
    return pending;
}

int dsort_waves_assign(const uint64_t *counts, int p, uint64_t cap, int *wave_of, uint64_t *most)
{
    int w = 0;
    uint64_t acc = 0, big = 0;
    for (int s = 0; s < p; s++) {
        if (counts[s] && acc && acc + counts[s] > cap) { /* an empty piece joins any wave */
            w++;
            acc = 0;
        }
        wave_of[s] = w;
        acc += counts[s];
        big = acc > big ? acc : big;
    }
    if (most)
        *most = big;
    return w + 1;
}
