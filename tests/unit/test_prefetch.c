/* Unit tests for prefetch.h: the read-ahead thread.
 *
 * A file of known bytes (1 MiB and a bit, in a fresh temp directory under $TMPDIR or /tmp) is
 * read through requests, on a plain descriptor and on an O_DIRECT one where the file system
 * has it: whole buffers, requests that reach or start past the end of the file (not errors:
 * got says how much was read), many requests posted before any is waited for (served in
 * order: when the last is done, so are all before it), a request posted again, requests from
 * several threads at once, and the synchronous dsort_prefetch_read. Errors: a descriptor that
 * cannot be read is DSORT_EIO naming the path and offset, for that request only. destroy
 * serves what is queued; destroy(NULL) does nothing. Last, pread is wrapped at link time
 * (-Wl,--wrap=pread) to make short reads and EINTR: a request still gets all its bytes. */
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
#include <unistd.h>

#include "fixture.h"
#include "prefetch.h"

#define FILE_SIZE ((size_t)(1 << 20) + 123)
#define ALIGN 4096

static char path[PATH_MAX]; /* dsort_test_dir/data: FILE_SIZE bytes of pat() */

/* pread, wrapped (see the CMakeLists): with choppy set, every third call fails with EINTR and
 * the others read at most 1000 bytes. */
ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
static int choppy;
static unsigned choppy_calls;

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
    if (__atomic_load_n(&choppy, __ATOMIC_RELAXED)) {
        if (__atomic_fetch_add(&choppy_calls, 1, __ATOMIC_RELAXED) % 3 == 1) {
            errno = EINTR;
            return -1;
        }
        if (n > 1000)
            n = 1000;
    }
    return __real_pread(fd, buf, n, off);
}

static unsigned char pat(uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15u;
    return (unsigned char)(x >> 56 ^ x >> 23 ^ i);
}

static int setup(void **state)
{
    if (dsort_test_dir_setup(state) != 0)
        return -1;
    dsort_test_path(path, sizeof path, "data");
    unsigned char *b = malloc(FILE_SIZE);
    if (!b)
        return -1;
    for (size_t i = 0; i < FILE_SIZE; i++)
        b[i] = pat(i);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int ok = fd >= 0 && write(fd, b, FILE_SIZE) == (ssize_t)FILE_SIZE;
    if (fd >= 0 && close(fd))
        ok = 0;
    free(b);
    return ok ? 0 : -1;
}

/* Are bytes [off, off + len) of the file in buf? */
static int matches(const unsigned char *buf, uint64_t off, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != pat(off + i))
            return 0;
    return 1;
}

static unsigned char *aligned(size_t len)
{
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, ALIGN, len), 0);
    return p;
}

/* The file, read-only, with O_DIRECT if direct is set and the file system has it. */
static int open_data(int direct)
{
    int fd = -1;
    if (direct)
        fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}

static void init_rq(struct dsort_preq *rq, int fd, unsigned char *buf, size_t len, uint64_t off)
{
    memset(rq, 0, sizeof *rq);
    rq->fd = fd;
    rq->buf = buf;
    rq->len = len;
    rq->off = off;
    rq->path = path;
    rq->got = SIZE_MAX; /* a result not filled in shows */
    rq->st = DSORT_EINTERNAL;
}

/* dsort_prefetch_read: inside the file, reaching its end, past its end, zero bytes. */
static void test_read_sync(void **state)
{
    (void)state;
    for (int direct = 0; direct < 2; direct++) {
        int fd = open_data(direct);
        unsigned char *buf = aligned(3 * ALIGN);
        struct dsort_preq rq;

        init_rq(&rq, fd, buf, 3 * ALIGN, 5 * ALIGN);
        dsort_prefetch_read(&rq);
        assert_int_equal(rq.st, DSORT_OK);
        assert_int_equal(rq.got, 3 * ALIGN);
        assert_true(matches(buf, 5 * ALIGN, 3 * ALIGN));

        /* the last partial page: 123 bytes of 2 pages asked for */
        init_rq(&rq, fd, buf, 2 * ALIGN, FILE_SIZE - 123);
        dsort_prefetch_read(&rq);
        assert_int_equal(rq.st, DSORT_OK);
        assert_int_equal(rq.got, 123);
        assert_true(matches(buf, FILE_SIZE - 123, 123));

        /* 2 pages and 123 bytes of 3 */
        init_rq(&rq, fd, buf, 3 * ALIGN, FILE_SIZE - 123 - 2 * ALIGN);
        dsort_prefetch_read(&rq);
        assert_int_equal(rq.st, DSORT_OK);
        assert_int_equal(rq.got, 2 * ALIGN + 123);
        assert_true(matches(buf, FILE_SIZE - 123 - 2 * ALIGN, 2 * ALIGN + 123));

        /* past the end */
        init_rq(&rq, fd, buf, ALIGN, (uint64_t)FILE_SIZE + 10 * ALIGN - 123);
        dsort_prefetch_read(&rq);
        assert_int_equal(rq.st, DSORT_OK);
        assert_int_equal(rq.got, 0);

        init_rq(&rq, fd, buf, 0, 0);
        dsort_prefetch_read(&rq);
        assert_int_equal(rq.st, DSORT_OK);
        assert_int_equal(rq.got, 0);

        free(buf);
        close(fd);
    }
}

/* Post and wait one at a time; a request may be posted again once waited for. */
static void test_post_wait(void **state)
{
    (void)state;
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    assert_non_null(pf);
    for (int direct = 0; direct < 2; direct++) {
        int fd = open_data(direct);
        unsigned char *buf = aligned(16 * ALIGN);
        struct dsort_preq rq;
        init_rq(&rq, fd, buf, 16 * ALIGN, 0);
        dsort_prefetch_post(pf, &rq);
        assert_int_equal(dsort_prefetch_wait(pf, &rq, &err), DSORT_OK);
        assert_int_equal(rq.st, DSORT_OK);
        assert_int_equal(rq.got, 16 * ALIGN);
        assert_true(matches(buf, 0, 16 * ALIGN));

        /* again, same request, at the end of the file */
        memset(buf, 0, 16 * ALIGN);
        rq.off = FILE_SIZE - 123 - 4 * ALIGN;
        rq.got = SIZE_MAX;
        dsort_prefetch_post(pf, &rq);
        assert_int_equal(dsort_prefetch_wait(pf, &rq, &err), DSORT_OK);
        assert_int_equal(rq.got, 4 * ALIGN + 123);
        assert_true(matches(buf, rq.off, rq.got));

        /* and past it */
        rq.off = (uint64_t)FILE_SIZE - 123 + ALIGN;
        rq.got = SIZE_MAX;
        dsort_prefetch_post(pf, &rq);
        assert_int_equal(dsort_prefetch_wait(pf, &rq, NULL), DSORT_OK);
        assert_int_equal(rq.got, 0);
        free(buf);
        close(fd);
    }
    dsort_prefetch_destroy(pf);
}

/* Many requests posted at once are served in order: once the last is done, every earlier one
 * already has its result; each then waits at once with the right bytes. */
static void test_in_order(void **state)
{
    (void)state;
    enum { N = 64 };
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    int fd = open_data(1);
    unsigned char *buf = aligned((size_t)N * 4 * ALIGN);
    struct dsort_preq rq[N];
    for (size_t i = 0; i < N; i++) {
        /* spread over the file, the last few past its end */
        uint64_t off = (uint64_t)((i * 37) % 260) * ALIGN;
        init_rq(&rq[i], fd, buf + i * 4 * ALIGN, 4 * ALIGN, off);
    }
    for (size_t i = 0; i < N; i++)
        dsort_prefetch_post(pf, &rq[i]);
    assert_int_equal(dsort_prefetch_wait(pf, &rq[N - 1], &err), DSORT_OK);
    for (size_t i = 0; i < N; i++) {
        assert_int_not_equal(rq[i].got, SIZE_MAX);
        assert_int_equal(rq[i].st, DSORT_OK);
    }
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(dsort_prefetch_wait(pf, &rq[i], &err), DSORT_OK);
        size_t want = rq[i].off >= FILE_SIZE              ? 0
                      : FILE_SIZE - rq[i].off < 4 * ALIGN ? FILE_SIZE - (size_t)rq[i].off
                                                          : 4 * ALIGN;
        assert_int_equal(rq[i].got, want);
        assert_true(matches(rq[i].buf, rq[i].off, rq[i].got));
    }
    dsort_prefetch_destroy(pf);
    free(buf);
    close(fd);
}

/* A descriptor that cannot be read (write-only): DSORT_EIO with EBADF, naming path and
 * offset, in err and in rq.err; requests before and after it are unaffected. */
static void test_read_error(void **state)
{
    (void)state;
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    int fd = open_data(0);
    int wfd = open(path, O_WRONLY | O_CLOEXEC);
    assert_true(wfd >= 0);
    unsigned char *buf = aligned(3 * ALIGN);
    struct dsort_preq a, bad, c;
    init_rq(&a, fd, buf, ALIGN, 0);
    init_rq(&bad, wfd, buf + ALIGN, ALIGN, 4096);
    init_rq(&c, fd, buf + 2 * ALIGN, ALIGN, 8192);
    dsort_prefetch_post(pf, &a);
    dsort_prefetch_post(pf, &bad);
    dsort_prefetch_post(pf, &c);
    assert_int_equal(dsort_prefetch_wait(pf, &c, &err), DSORT_OK);
    assert_int_equal(c.got, ALIGN);
    assert_true(matches(c.buf, 8192, ALIGN));
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_prefetch_wait(pf, &bad, &err), DSORT_EIO);
    assert_int_equal(bad.st, DSORT_EIO);
    assert_int_equal(err.status, DSORT_EIO);
    assert_int_equal(err.errnum, EBADF);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "offset 4096"));
    assert_string_equal(bad.err.msg, err.msg);
    assert_int_equal(dsort_prefetch_wait(pf, &bad, NULL), DSORT_EIO);
    assert_int_equal(dsort_prefetch_wait(pf, &a, &err), DSORT_OK);
    assert_true(matches(a.buf, 0, ALIGN));

    /* the synchronous read reports the same */
    init_rq(&bad, wfd, buf, ALIGN, 3 * ALIGN);
    dsort_prefetch_read(&bad);
    assert_int_equal(bad.st, DSORT_EIO);
    assert_int_equal(bad.err.errnum, EBADF);
    assert_non_null(strstr(bad.err.msg, path));
    assert_non_null(strstr(bad.err.msg, "offset 12288"));
    dsort_prefetch_destroy(pf);
    free(buf);
    close(wfd);
    close(fd);
}

struct worker {
    struct dsort_prefetch *pf;
    int fd;
    unsigned seed;
    int bad; /* requests that came back wrong */
};

/* 200 requests, two in flight at a time, at pseudo-random offsets and lengths. */
static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    unsigned char *buf = malloc(2 * 8192);
    if (!buf) {
        wk->bad = -1;
        return NULL;
    }
    struct dsort_preq rq[2];
    uint64_t x = wk->seed * 0x9E3779B97F4A7C15u + 1;
    for (int i = 0; i < 200; i++) {
        struct dsort_preq *r = &rq[i % 2];
        if (i >= 2) {
            struct dsort_error err;
            if (dsort_prefetch_wait(wk->pf, r, &err) || r->got != r->len ||
                !matches(r->buf, r->off, r->len))
                wk->bad++;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memset(r, 0, sizeof *r);
        r->fd = wk->fd;
        r->buf = buf + (i % 2) * 8192;
        r->len = 1 + (size_t)(x % 8192);
        r->off = (x >> 20) % (FILE_SIZE - 8192);
        r->path = path;
        dsort_prefetch_post(wk->pf, r);
    }
    for (int i = 0; i < 2; i++) {
        struct dsort_error err;
        if (dsort_prefetch_wait(wk->pf, &rq[i], &err) || rq[i].got != rq[i].len ||
            !matches(rq[i].buf, rq[i].off, rq[i].len))
            wk->bad++;
    }
    free(buf);
    return NULL;
}

/* Four threads post and wait on one read-ahead thread at once. */
static void test_threads(void **state)
{
    (void)state;
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    int fd = open_data(0);
    struct worker wk[4];
    pthread_t t[4];
    for (unsigned i = 0; i < 4; i++) {
        wk[i] = (struct worker){pf, fd, i + 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &wk[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(wk[i].bad, 0);
    }
    dsort_prefetch_destroy(pf);
    close(fd);
}

/* destroy serves the requests still queued before it stops; destroy(NULL) does nothing. */
static void test_destroy_serves_queue(void **state)
{
    (void)state;
    enum { N = 32 };
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    int fd = open_data(1);
    unsigned char *buf = aligned((size_t)N * 2 * ALIGN);
    struct dsort_preq rq[N];
    for (size_t i = 0; i < N; i++) {
        init_rq(&rq[i], fd, buf + i * 2 * ALIGN, 2 * ALIGN, (uint64_t)i * 7 * ALIGN);
        dsort_prefetch_post(pf, &rq[i]);
    }
    dsort_prefetch_destroy(pf);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(rq[i].st, DSORT_OK);
        assert_int_equal(rq[i].got, 2 * ALIGN);
        assert_true(matches(rq[i].buf, rq[i].off, rq[i].got));
    }
    dsort_prefetch_destroy(NULL);
    free(buf);
    close(fd);
}

static int unchop(void **state)
{
    (void)state;
    __atomic_store_n(&choppy, 0, __ATOMIC_RELAXED);
    return 0;
}

/* Short reads and EINTR are retried until the request is whole or the file ends, in the
 * calling thread and in the read-ahead thread. */
static void test_short_reads(void **state)
{
    (void)state;
    int fd = open_data(0);
    unsigned char *buf = aligned(16 * ALIGN);
    struct dsort_preq rq;
    __atomic_store_n(&choppy_calls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&choppy, 1, __ATOMIC_RELAXED);

    init_rq(&rq, fd, buf, 10000, 777);
    dsort_prefetch_read(&rq);
    assert_int_equal(rq.st, DSORT_OK);
    assert_int_equal(rq.got, 10000);
    assert_true(matches(buf, 777, 10000));
    assert_true(__atomic_load_n(&choppy_calls, __ATOMIC_RELAXED) >= 10); /* the wrap took effect */

    init_rq(&rq, fd, buf, 8192, FILE_SIZE - 2500);
    dsort_prefetch_read(&rq);
    assert_int_equal(rq.st, DSORT_OK);
    assert_int_equal(rq.got, 2500);
    assert_true(matches(buf, FILE_SIZE - 2500, 2500));

    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    init_rq(&rq, fd, buf, 16 * ALIGN, 3 * ALIGN + 5);
    dsort_prefetch_post(pf, &rq);
    assert_int_equal(dsort_prefetch_wait(pf, &rq, &err), DSORT_OK);
    assert_int_equal(rq.got, 16 * ALIGN);
    assert_true(matches(buf, 3 * ALIGN + 5, 16 * ALIGN));
    dsort_prefetch_destroy(pf);
    __atomic_store_n(&choppy, 0, __ATOMIC_RELAXED);
    free(buf);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_sync),
        cmocka_unit_test(test_post_wait),
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_read_error),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_destroy_serves_queue),
        cmocka_unit_test_teardown(test_short_reads, unchop),
    };
    return cmocka_run_group_tests(tests, setup, dsort_test_dir_teardown);
}
