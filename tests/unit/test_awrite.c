/* Unit tests for awrite.h: the asynchronous, double-buffered writer.
 *
 * Blocks filled with a pattern of their index go to a file in a fresh temp directory (under
 * $TMPDIR or /tmp) at the offsets submitted: appended one after another, out of order, as
 * ranges of the buffer, with empty submits in between, and as aligned blocks through an
 * O_DIRECT descriptor where the file system has one; after drain or finish the file holds
 * exactly those bytes and the byte count agrees. The producer's buffer alternates between two
 * and is never the one being written (each is scribbled over and refilled right after the
 * previous submit, so a buffer handed out too early shows in the file). Errors: a read-only
 * descriptor (EBADF) and /dev/full (ENOSPC) are DSORT_EIO naming the path and the offset of
 * the first failed write, reported by a later submit, drain or finish, and they stay reported. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "awrite.h"
#include "fixture.h"

static char path[PATH_MAX]; /* dsort_test_dir/out */

static int setup(void **state)
{
    (void)state;
    if (dsort_test_dir_setup(state) != 0)
        return -1;
    dsort_test_path(path, sizeof path, "out");
    return 0;
}

/* The byte that block `blk` holds at index i. */
static unsigned char pat(uint64_t blk, uint64_t i)
{
    uint64_t x = (blk + 1) * 0x9E3779B97F4A7C15u ^ (i * 0xBF58476D1CE4E5B9u);
    return (unsigned char)(x >> 56 ^ x >> 17 ^ i);
}

static void fill(unsigned char *p, size_t len, uint64_t blk)
{
    for (size_t i = 0; i < len; i++)
        p[i] = pat(blk, i);
}

/* The whole file at path (malloc'd), its size in *len. */
static unsigned char *load(const char *p, size_t *len)
{
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    *len = (size_t)sb.st_size;
    unsigned char *b = malloc(*len ? *len : 1);
    assert_non_null(b);
    size_t got = 0;
    while (got < *len) {
        ssize_t n = pread(fd, b + got, *len - got, (off_t)got);
        assert_true(n > 0);
        got += (size_t)n;
    }
    close(fd);
    return b;
}

static int create_out(void)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    return fd;
}

/* Blocks of varying lengths, appended: the file is their concatenation; the buffer alternates
 * between two distinct buffers; bytes counts what was written. */
static void test_append_blocks(void **state)
{
    (void)state;
    const size_t buf_len = 256 * 1024;
    const size_t nblk = 64;
    int fd = create_out();
    struct dsort_awriter *w;
    struct dsort_error err;
    assert_int_equal(dsort_awriter_create(&w, fd, path, buf_len, &err), DSORT_OK);
    assert_non_null(w);
    assert_int_equal(dsort_awriter_buf_len(w), buf_len);
    unsigned char *seen[2] = {NULL, NULL};
    size_t lens[64];
    uint64_t off = 0;
    for (size_t b = 0; b < nblk; b++) {
        unsigned char *p = dsort_awriter_buf(w);
        assert_non_null(p);
        if (b >= 2)
            assert_ptr_equal(p, seen[b % 2]); /* two buffers, reused in turn */
        if (b >= 1)
            assert_ptr_not_equal(p, seen[(b - 1) % 2]);
        seen[b % 2] = p;
        /* scribble over the whole buffer first: if it were still being written, the file
         * would show it */
        memset(p, 0xA5, buf_len);
        lens[b] = b % 5 == 4 ? buf_len : buf_len - 1 - (b * 997) % (buf_len / 2);
        fill(p, lens[b], b);
        assert_int_equal(dsort_awriter_submit(w, lens[b], off, &err), DSORT_OK);
        off += lens[b];
    }
    assert_int_equal(dsort_awriter_drain(w, &err), DSORT_OK);
    assert_int_equal(dsort_awriter_bytes(w), off);
    assert_true(dsort_awriter_wait_seconds(w) >= 0.0);
    assert_int_equal(dsort_awriter_finish(w, &err), DSORT_OK);
    assert_int_equal(close(fd), 0);

    size_t len;
    unsigned char *got = load(path, &len);
    assert_int_equal(len, off);
    unsigned char *want = malloc(buf_len);
    assert_non_null(want);
    off = 0;
    for (size_t b = 0; b < nblk; b++) {
        fill(want, lens[b], b);
        assert_memory_equal(got + off, want, lens[b]);
        off += lens[b];
    }
    free(want);
    free(got);
}

/* Offsets in any order, ranges of the buffer, empty submits; finish without a drain still
 * writes everything. */
static void test_ranges_out_of_order(void **state)
{
    (void)state;
    const size_t buf_len = 8192;
    int fd = create_out();
    struct dsort_awriter *w;
    struct dsort_error err;
    assert_int_equal(dsort_awriter_create(&w, fd, path, buf_len, &err), DSORT_OK);

    /* block 0: bytes [100, 1100) of the buffer at offset 5000 */
    fill(dsort_awriter_buf(w), buf_len, 0);
    assert_int_equal(dsort_awriter_submit_range(w, 100, 1000, 5000, &err), DSORT_OK);
    /* nothing (len 0) */
    assert_int_equal(dsort_awriter_submit(w, 0, 123456, &err), DSORT_OK);
    /* block 1: bytes [0, 5000) at offset 0 */
    fill(dsort_awriter_buf(w), buf_len, 1);
    assert_int_equal(dsort_awriter_submit(w, 5000, 0, &err), DSORT_OK);
    /* block 2: the last 10 bytes of the buffer at offset 6000 */
    fill(dsort_awriter_buf(w), buf_len, 2);
    assert_int_equal(dsort_awriter_submit_range(w, buf_len - 10, 10, 6000, &err), DSORT_OK);
    assert_int_equal(dsort_awriter_submit_range(w, 7, 0, 99999, &err), DSORT_OK);
    assert_int_equal(dsort_awriter_finish(w, &err), DSORT_OK);
    assert_int_equal(close(fd), 0);

    size_t len;
    unsigned char *got = load(path, &len);
    assert_int_equal(len, 6010);
    unsigned char want[8192];
    fill(want, buf_len, 1);
    assert_memory_equal(got, want, 5000);
    fill(want, buf_len, 0);
    assert_memory_equal(got + 5000, want + 100, 1000);
    fill(want, buf_len, 2);
    assert_memory_equal(got + 6000, want + buf_len - 10, 10);
    free(got);
}

/* An O_DIRECT descriptor (where the file system has it) with aligned blocks, as the run files
 * use it: the writer's buffers are suitably aligned and the blocks land where submitted. */
static void test_direct_fd(void **state)
{
    (void)state;
    const size_t buf_len = 64 * 1024;
    close(create_out());
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0 && errno == EINVAL)
        fd = open(path, O_WRONLY | O_CLOEXEC); /* no O_DIRECT here: the same, buffered */
    assert_true(fd >= 0);
    struct dsort_awriter *w;
    struct dsort_error err;
    assert_int_equal(dsort_awriter_create(&w, fd, path, buf_len, &err), DSORT_OK);
    for (size_t b = 0; b < 8; b++) {
        unsigned char *p = dsort_awriter_buf(w);
        assert_int_equal((uintptr_t)p % 4096, 0);
        fill(p, buf_len, b);
        /* blocks 7, 6, ..., 0 from the end of the file back; every other one a 4 KiB range */
        size_t from = b % 2 ? 8192 : 0, len = b % 2 ? 4096 : buf_len;
        if (b % 2)
            assert_int_equal(
                dsort_awriter_submit_range(w, from, len, (7 - b) * (uint64_t)buf_len, &err),
                DSORT_OK);
        else
            assert_int_equal(dsort_awriter_submit(w, len, (7 - b) * (uint64_t)buf_len, &err),
                             DSORT_OK);
    }
    assert_int_equal(dsort_awriter_drain(w, &err), DSORT_OK);
    assert_int_equal(dsort_awriter_bytes(w), 4 * buf_len + 4 * 4096);
    assert_int_equal(dsort_awriter_finish(w, &err), DSORT_OK);
    assert_int_equal(close(fd), 0);

    size_t len;
    unsigned char *got = load(path, &len);
    assert_int_equal(len, 8 * buf_len);
    unsigned char *want = malloc(buf_len);
    assert_non_null(want);
    for (size_t b = 0; b < 8; b++) {
        const unsigned char *at = got + (7 - b) * buf_len;
        fill(want, buf_len, b);
        if (b % 2) {
            assert_memory_equal(at, want + 8192, 4096);
            for (size_t i = 4096; i < buf_len; i++) /* a hole */
                assert_int_equal(at[i], 0);
        } else {
            assert_memory_equal(at, want, buf_len);
        }
    }
    free(want);
    free(got);
}

/* finish(NULL) is allowed and succeeds. */
static void test_finish_null(void **state)
{
    (void)state;
    struct dsort_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_awriter_finish(NULL, &err), DSORT_OK);
}

/* A read-only descriptor: the first submit cannot know yet; the write's EBADF is reported by
 * the next submit, by drain and by finish, always that first error (offset 8192), and nothing
 * more is written or counted. */
static void test_read_only_fd(void **state)
{
    (void)state;
    close(create_out());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct dsort_awriter *w;
    struct dsort_error err;
    assert_int_equal(dsort_awriter_create(&w, fd, path, 4096, &err), DSORT_OK);
    fill(dsort_awriter_buf(w), 4096, 0);
    assert_int_equal(dsort_awriter_submit(w, 4096, 8192, &err), DSORT_OK);

    fill(dsort_awriter_buf(w), 4096, 1);
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_awriter_submit(w, 4096, 0, &err), DSORT_EIO);
    assert_int_equal(err.status, DSORT_EIO);
    assert_int_equal(err.errnum, EBADF);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "offset 8192"));

    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_awriter_submit_range(w, 0, 100, 300, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, "offset 8192"));
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_awriter_drain(w, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "offset 8192"));
    assert_int_equal(dsort_awriter_bytes(w), 0);
    /* an error needs no err to be reported */
    assert_int_equal(dsort_awriter_drain(w, NULL), DSORT_EIO);

    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_awriter_finish(w, &err), DSORT_EIO);
    assert_int_equal(err.errnum, EBADF);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "offset 8192"));
    assert_int_equal(close(fd), 0);

    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 0);
}

/* A full device: ENOSPC, reported by finish with the path given and the offset. */
static void test_full_device(void **state)
{
    (void)state;
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        skip();
    struct dsort_awriter *w;
    struct dsort_error err;
    assert_int_equal(dsort_awriter_create(&w, fd, "full-device-out", 65536, &err), DSORT_OK);
    fill(dsort_awriter_buf(w), 65536, 0);
    assert_int_equal(dsort_awriter_submit(w, 65536, 12345, &err), DSORT_OK);
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_awriter_finish(w, &err), DSORT_EIO);
    assert_int_equal(err.status, DSORT_EIO);
    assert_int_equal(err.errnum, ENOSPC);
    assert_non_null(strstr(err.msg, "'full-device-out'"));
    assert_non_null(strstr(err.msg, "offset 12345"));
    close(fd);
}

/* A good write then a failing one (a descriptor swapped to /dev/full between them): bytes
 * counts only the good one and the error names the second offset. */
static void test_error_after_success(void **state)
{
    (void)state;
    int fd = create_out();
    int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (full < 0) {
        close(fd);
        skip();
    }
    struct dsort_awriter *w;
    struct dsort_error err;
    assert_int_equal(dsort_awriter_create(&w, fd, path, 4096, &err), DSORT_OK);
    fill(dsort_awriter_buf(w), 4096, 0);
    assert_int_equal(dsort_awriter_submit(w, 4096, 0, &err), DSORT_OK);
    assert_int_equal(dsort_awriter_drain(w, &err), DSORT_OK);
    assert_int_equal(dsort_awriter_bytes(w), 4096);
    /* the writer's fd now names /dev/full */
    assert_int_equal(dup2(full, fd), fd);
    fill(dsort_awriter_buf(w), 4096, 1);
    assert_int_equal(dsort_awriter_submit(w, 4096, 4096, &err), DSORT_OK);
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_awriter_drain(w, &err), DSORT_EIO);
    assert_int_equal(err.errnum, ENOSPC);
    assert_non_null(strstr(err.msg, "offset 4096"));
    assert_int_equal(dsort_awriter_bytes(w), 4096);
    assert_int_equal(dsort_awriter_finish(w, &err), DSORT_EIO);
    close(full);
    close(fd);

    size_t len;
    unsigned char *got = load(path, &len);
    unsigned char want[4096];
    fill(want, sizeof want, 0);
    assert_int_equal(len, 4096);
    assert_memory_equal(got, want, 4096);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_blocks, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_ranges_out_of_order, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_direct_fd, setup, dsort_test_dir_teardown),
        cmocka_unit_test(test_finish_null),
        cmocka_unit_test_setup_teardown(test_read_only_fd, setup, dsort_test_dir_teardown),
        cmocka_unit_test(test_full_device),
        cmocka_unit_test_setup_teardown(test_error_after_success, setup, dsort_test_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
