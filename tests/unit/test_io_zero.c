/* A pwrite that returns 0 (no progress, no errno) is an error, never a reason to retry: it
 * used to make dsort_io_pwrite_full loop forever. pwrite is wrapped at link time
 * (-Wl,--wrap=pwrite) so that the library's own calls meet the fault. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io.h"

ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);

static int zero_after = -1; /* calls that work before pwrite starts returning 0; -1: never */
static int calls;

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    calls++;
    if (zero_after >= 0 && calls > zero_after)
        return 0;
    /* Short writes (half, at least one byte) so that the loop has to go round. */
    return __real_pwrite(fd, buf, n > 1 ? n / 2 : n, off);
}

static int tmpfile_fd(char *path, size_t len)
{
    snprintf(path, len, "/tmp/dsort-test-io-zero-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    return fd;
}

static void test_short_writes_complete(void **state)
{
    (void)state;
    char path[64], buf[1000], back[1000];
    int fd = tmpfile_fd(path, sizeof path);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)(i * 7);
    zero_after = -1;
    calls = 0;
    struct dsort_error err = {0};
    assert_int_equal(dsort_io_pwrite_full(fd, buf, sizeof buf, 0, path, &err), DSORT_OK);
    assert_true(calls > 1);
    assert_int_equal(pread(fd, back, sizeof back, 0), (ssize_t)sizeof back);
    assert_memory_equal(buf, back, sizeof buf);
    close(fd);
    unlink(path);
}

static void test_zero_write_is_an_error(void **state)
{
    (void)state;
    char path[64], buf[1000] = {0};
    int fd = tmpfile_fd(path, sizeof path);
    zero_after = 2;
    calls = 0;
    struct dsort_error err = {0};
    assert_int_equal(dsort_io_pwrite_full(fd, buf, sizeof buf, 0, path, &err), DSORT_EIO);
    assert_int_equal(calls, 3); /* two short writes, then the 0: no retry */
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(err.errnum, EIO);
    zero_after = -1;
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_writes_complete),
        cmocka_unit_test(test_zero_write_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
