/* Unit tests for devread.h on real files in a temp dir: bytes equal across chunk boundaries,
 * paths and fds, groups really run at once, per-group stats, hooks called once per group
 * (also on failure), the error of a missing file, a short file, a failing hook, bad requests. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "devread.h"
#include "fakesys.h"
#include "plan.h"

#define MiB ((size_t)1 << 20)

static char dir[PATH_MAX];
static char f1[PATH_MAX + 8], f2[PATH_MAX + 8], f3[PATH_MAX + 8], gone[PATH_MAX + 16];
static unsigned char *d1, *d2, *d3;
static const size_t n1 = 3 * MiB + 123, n2 = 2 * MiB, n3 = 1000;

static unsigned char *make_file(const char *path, size_t n, unsigned seed)
{
    unsigned char *data = malloc(n);
    if (!data)
        return NULL;
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        free(data);
        return NULL;
    }
    return data;
}

static int setup(void **state)
{
    (void)state;
    if (fakesys_tmpdir(dir, sizeof dir, "devread") != 0)
        return -1;
    snprintf(f1, sizeof f1, "%s/f1", dir);
    snprintf(f2, sizeof f2, "%s/f2", dir);
    snprintf(f3, sizeof f3, "%s/f3", dir);
    snprintf(gone, sizeof gone, "%s/missing", dir);
    d1 = make_file(f1, n1, 1);
    d2 = make_file(f2, n2, 2);
    d3 = make_file(f3, n3, 3);
    return d1 && d2 && d3 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(d1);
    free(d2);
    free(d3);
    return fakesys_remove(dir);
}

/* Hooks: count calls per key; optionally make groups A and B meet (proof that they run at
 * the same time: a serial reader would time out here). */
struct hookstate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int before[4], after[4], ok[4];
    int meet, arrived;
    int fail_key; /* index of a key whose before fails, or -1 */
};

static int key_index(const char *key)
{
    return key[0] >= 'A' && key[0] <= 'D' ? key[0] - 'A' : 3;
}

static enum dsort_status before(const char *key, void *arg, struct dsort_error *err)
{
    struct hookstate *h = arg;
    int k = key_index(key);
    pthread_mutex_lock(&h->mu);
    h->before[k]++;
    enum dsort_status st = DSORT_OK;
    if (h->meet && k < 2) {
        h->arrived++;
        pthread_cond_broadcast(&h->cv);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 20;
        while (h->arrived < 2 && st == DSORT_OK)
            if (pthread_cond_timedwait(&h->cv, &h->mu, &until) == ETIMEDOUT)
                st = DSORT_ERR(err, DSORT_EINTERNAL, 0, "groups did not run concurrently");
    }
    if (k == h->fail_key)
        st = DSORT_ERR(err, DSORT_EIO, 0, "token for %s lost", key);
    pthread_mutex_unlock(&h->mu);
    return st;
}

static void after(const char *key, int ok, void *arg)
{
    struct hookstate *h = arg;
    pthread_mutex_lock(&h->mu);
    h->after[key_index(key)]++;
    h->ok[key_index(key)] += ok;
    pthread_mutex_unlock(&h->mu);
}

static void hooks_init(struct hookstate *h, struct dsort_devread_hooks *hk)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->fail_key = -1;
    *hk = (struct dsort_devread_hooks){.before = before, .after = after, .arg = h};
}

/* The chunk hook (with populate): every byte of every request is handed to it once, in chunks
 * of at most the chunk size, already read when it is called (it compares them with the files'
 * bytes), from each group's thread; the destination is an anonymous mapping not touched before. */
struct chunkstate {
    pthread_mutex_t mu;
    const unsigned char *base, *want; /* the destination, and what must land there */
    unsigned char *seen;              /* times each byte was handed over */
    size_t len, biggest;
    int bad, calls;
};

static void on_chunk(void *arg, unsigned char *dest, size_t len)
{
    struct chunkstate *c = arg;
    pthread_mutex_lock(&c->mu);
    const size_t at = (size_t)(dest - c->base);
    if (dest < c->base || at + len > c->len || memcmp(dest, c->want + at, len) != 0)
        c->bad++;
    else
        for (size_t i = 0; i < len; i++)
            c->seen[at + i]++;
    c->biggest = len > c->biggest ? len : c->biggest;
    c->calls++;
    pthread_mutex_unlock(&c->mu);
}

static void test_chunk_hook(void **state)
{
    (void)state;
    const size_t half = MiB + MiB / 2 + 7, len = n1 + n2 + n3;
    unsigned char *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *want = malloc(len), *seen = calloc(len, 1);
    assert_true(b != MAP_FAILED && want && seen);
    /* in the destination: f1's second part, f2, f3, f1's first part */
    memcpy(want, d1 + half, n1 - half);
    memcpy(want + n1 - half, d2, n2);
    memcpy(want + n1 - half + n2, d3, n3);
    memcpy(want + n1 - half + n2 + n3, d1, half);
    struct dsort_devread_req reqs[4] = {
        {f1, -1, half, n1 - half, b, "A"},
        {f2, -1, 0, n2, b + n1 - half, "B"},
        {f3, -1, 0, n3, b + n1 - half + n2, "A"},
        {f1, -1, 0, half, b + n1 - half + n2 + n3, "C"},
    };
    struct chunkstate c = {.base = b, .want = want, .seen = seen, .len = len};
    pthread_mutex_init(&c.mu, NULL);
    struct dsort_devread_hooks hk = {.chunk = on_chunk, .chunk_arg = &c, .populate = 1};
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_devread_run(reqs, 4, 1, &hk, NULL, NULL, &err), DSORT_OK);
    assert_int_equal(c.bad, 0);
    for (size_t i = 0; i < len; i++)
        if (seen[i] != 1)
            fail_msg("byte %zu handed to the hook %d times", i, seen[i]);
    assert_true(c.biggest <= DSORT_DEVREAD_MIN_CHUNK);
    assert_int_equal(c.calls,
                     2 + 2 + 1 + 2); /* 1 MiB chunks: 1.5 MiB+116, 2 MiB, 1000, 1.5 MiB+7 */
    assert_memory_equal(b, want, len);
    pthread_mutex_destroy(&c.mu);
    munmap(b, len);
    free(want);
    free(seen);
}

static void test_reads_equal(void **state)
{
    (void)state;
    unsigned char *b1 = malloc(n1), *b2 = malloc(n2), *b3 = malloc(n3), *b4 = malloc(100);
    assert_true(b1 && b2 && b3 && b4);
    int fd3 = open(f3, O_RDONLY);
    assert_true(fd3 >= 0);
    size_t half = MiB + MiB / 2 + 7;
    struct dsort_devread_req reqs[5] = {
        {f1, -1, 0, half, b1, "A"},
        {f2, -1, 0, n2, b2, "B"},
        {f1, -1, half, n1 - half, b1 + half, "A"},
        {f3, fd3, 0, n3, b3, "C"},
        {f3, -1, 10, 100, b4, "A"}, /* another file in group A */
    };
    struct hookstate h;
    struct dsort_devread_hooks hk;
    hooks_init(&h, &hk);
    h.meet = 1;
    struct dsort_devread_stat *stats = NULL;
    size_t nstats = 0;
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_devread_run(reqs, 5, 1, &hk, &stats, &nstats, &err);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, DSORT_OK);
    assert_memory_equal(b1, d1, n1);
    assert_memory_equal(b2, d2, n2);
    assert_memory_equal(b3, d3, n3);
    assert_memory_equal(b4, d3 + 10, 100);
    assert_int_equal(nstats, 3);
    assert_string_equal(stats[0].key, "A");
    assert_string_equal(stats[1].key, "B");
    assert_string_equal(stats[2].key, "C");
    assert_int_equal(stats[0].bytes, n1 + 100);
    assert_int_equal(stats[0].requests, 3);
    assert_int_equal(stats[1].bytes, n2);
    assert_int_equal(stats[2].bytes, n3);
    assert_true(stats[0].seconds >= 0.0 && stats[0].wait_seconds >= 0.0);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(h.before[k], 1);
        assert_int_equal(h.after[k], 1);
        assert_int_equal(h.ok[k], 1);
    }
    /* The fd given is left open and its offset untouched. */
    assert_int_equal(lseek(fd3, 0, SEEK_CUR), 0);
    close(fd3);
    free(stats);
    free(b1);
    free(b2);
    free(b3);
    free(b4);

    /* Without hooks or stats, one group (run in the calling thread). */
    unsigned char *c = malloc(n2);
    struct dsort_devread_req one = {f2, -1, 0, n2, c, "vda"};
    assert_int_equal(dsort_devread_run(&one, 1, 0, NULL, NULL, NULL, &err), DSORT_OK);
    assert_memory_equal(c, d2, n2);
    free(c);
}

static void test_missing_file(void **state)
{
    (void)state;
    unsigned char *b1 = malloc(n1), *b2 = malloc(16);
    struct dsort_devread_req reqs[3] = {
        {f1, -1, 0, n1, b1, "A"},
        {gone, -1, 4096, 16, b2, "B"},
        {f1, -1, 0, 16, b2, "C"},
    };
    struct hookstate h;
    struct dsort_devread_hooks hk;
    hooks_init(&h, &hk);
    struct dsort_devread_stat *stats = NULL;
    size_t nstats = 0;
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_devread_run(reqs, 3, 0, &hk, &stats, &nstats, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, "missing"));
    assert_int_equal(err.errnum, ENOENT);
    assert_int_equal(nstats, 3);
    assert_int_equal(stats[1].bytes, 0);
    /* Every group passed its turn on, failed or not. */
    for (int k = 0; k < 3; k++) {
        assert_int_equal(h.before[k], 1);
        assert_int_equal(h.after[k], 1);
    }
    assert_int_equal(h.ok[1], 0);
    free(stats);
    free(b1);
    free(b2);
}

static void test_short_file(void **state)
{
    (void)state;
    unsigned char *b = malloc(2 * MiB);
    struct dsort_devread_req r = {f3, -1, 500, 2 * MiB, b, "A"};
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_devread_run(&r, 1, 0, NULL, NULL, NULL, &err), DSORT_EFORMAT);
    assert_non_null(strstr(err.msg, "f3"));
    assert_non_null(strstr(err.msg, "offset 1000"));
    free(b);
}

static void test_failing_hook(void **state)
{
    (void)state;
    unsigned char *b1 = malloc(n1), *b2 = malloc(n2);
    struct dsort_devread_req reqs[2] = {{f1, -1, 0, n1, b1, "A"}, {f2, -1, 0, n2, b2, "B"}};
    struct hookstate h;
    struct dsort_devread_hooks hk;
    hooks_init(&h, &hk);
    h.fail_key = 1;
    struct dsort_error err;
    assert_int_equal(dsort_devread_run(reqs, 2, 0, &hk, NULL, NULL, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, "token for B lost"));
    assert_int_equal(h.after[1], 1);
    assert_int_equal(h.ok[1], 0);
    assert_int_equal(h.after[0], 1);
    free(b1);
    free(b2);
}

static void test_bad_requests(void **state)
{
    (void)state;
    unsigned char b[8];
    struct dsort_devread_req r = {f3, -1, 0, 8, b, NULL};
    struct dsort_error err;
    struct dsort_devread_stat *stats = (struct dsort_devread_stat *)1;
    size_t nstats = 9;
    assert_int_equal(dsort_devread_run(&r, 1, 0, NULL, &stats, &nstats, &err), DSORT_EINVAL);
    assert_null(stats);
    assert_int_equal(nstats, 0);
    r.key = "A";
    r.dest = NULL;
    assert_int_equal(dsort_devread_run(&r, 1, 0, NULL, NULL, NULL, &err), DSORT_EINVAL);
    assert_int_equal(dsort_devread_run(NULL, 0, 0, NULL, &stats, &nstats, &err), DSORT_OK);
    assert_null(stats);
}

/* A plan over the real files (sysfs pointed nowhere: one device per st_dev), read through
 * dsort_plan_requests: each rank's bytes land back to back in its buffer. */
static void test_plan_requests(void **state)
{
    (void)state;
    struct stat sb;
    assert_int_equal(stat(f1, &sb), 0);
    uint32_t maj = major(sb.st_dev), min = minor(sb.st_dev);
    const int32_t ranks[2] = {0, 1};
    struct dsort_plan_read_in reads[3] = {
        {f1, 100, MiB, maj, min, 0}, {f2, 0, n2, maj, min, 1}, {f3, 0, n3, maj, min, 0}};
    struct dsort_plan_input in = {0};
    in.hostname = "h";
    in.ranks = ranks;
    in.nranks = 2;
    in.reads = reads;
    in.nreads = 3;
    in.sysfs_root = gone;
    struct dsort_plan_node *node;
    struct dsort_error err;
    assert_int_equal(dsort_plan_build(&in, &node, &err), DSORT_OK);
    assert_int_equal(node->ndevices, 1);
    assert_int_equal(node->devices[0].dev.kind,
                     maj ? DSORT_BLOCKDEV_UNKNOWN : DSORT_BLOCKDEV_NODISK);
    const struct dsort_plan_rank *rk = dsort_plan_rank_find(node, 0);
    unsigned char *buf = malloc(MiB + n3);
    struct dsort_devread_req reqs[2];
    dsort_plan_requests(node, rk, buf, reqs);
    assert_string_equal(reqs[1].key, node->devices[0].dev.key);
    struct dsort_devread_stat *stats;
    size_t nstats;
    assert_int_equal(dsort_devread_run(reqs, rk->nreads, 0, NULL, &stats, &nstats, &err), DSORT_OK);
    assert_memory_equal(buf, d1 + 100, MiB);
    assert_memory_equal(buf + MiB, d3, n3);
    assert_int_equal(nstats, 1);
    assert_int_equal(dsort_plan_add_stats(node, stats[0].key, stats[0].bytes, stats[0].seconds), 0);
    assert_int_equal(node->devices[0].stat_bytes, MiB + n3);
    free(stats);
    free(buf);
    dsort_plan_destroy(node);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_equal),   cmocka_unit_test(test_chunk_hook),
        cmocka_unit_test(test_missing_file),  cmocka_unit_test(test_short_file),
        cmocka_unit_test(test_failing_hook),  cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_plan_requests),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
