/* Unit tests for mem.h: size parsing, physical memory, big buffers, human-readable sizes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mem.h"

static void expect_size(const char *text, uint64_t want)
{
    uint64_t got = 12345;
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_mem_parse_size(text, &got, &err);
    if (st != DSORT_OK || got != want)
        print_error("'%s': status %d, %" PRIu64 " bytes (%s); expected %" PRIu64 "\n", text,
                    (int)st, got, err.msg, want);
    assert_int_equal(st, DSORT_OK);
    assert_int_equal(got, want);
}

static void test_parse_good(void **state)
{
    (void)state;
    const uint64_t K = 1024, M = K * K, G = M * K, T = G * K;
    expect_size("0", 0);
    expect_size("1", 1);
    expect_size("100", 100);
    expect_size("1000000", 1000000);
    expect_size("100B", 100);
    expect_size("100b", 100);
    expect_size("1K", K);
    expect_size("1k", K);
    expect_size("1KB", K);
    expect_size("1kb", K);
    expect_size("512M", 512 * M);
    expect_size("512MB", 512 * M);
    expect_size("4G", 4 * G);
    expect_size("4g", 4 * G);
    expect_size("2T", 2 * T);
    expect_size("1.5K", 1536);
    expect_size("0.5G", G / 2);
}

static void test_parse_large(void **state)
{
    (void)state;
    /* The largest values that fit comfortably; 2^64 bytes and above are rejected. */
    expect_size("1048575T", UINT64_C(1048575) << 40);
    uint64_t v;
    struct dsort_error err;
    assert_int_equal(dsort_mem_parse_size("16777216T", &v, &err), DSORT_EINVAL); /* 2^64 */
    assert_int_equal(dsort_mem_parse_size("99999999999999999999", &v, &err), DSORT_EINVAL);
}

static void test_parse_percent(void **state)
{
    (void)state;
    const uint64_t phys = dsort_mem_physical();
    assert_true(phys > 0);
    expect_size("10%", (uint64_t)(10 / 100.0 * (double)phys));
    expect_size("100%", phys);
    expect_size("0%", 0);
    expect_size("50%", (uint64_t)(0.5 * (double)phys));
    uint64_t v;
    struct dsort_error err;
    assert_int_equal(dsort_mem_parse_size("1%", &v, &err), DSORT_OK);
    assert_true(v > 0 && v < phys / 50);
}

static void test_parse_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",      "abc",  "-1",  "5Q",  "200%", "100.5%", "10%%", "10%x", "%",
        "K",     "M10",  "1KK", "1BB", "1 K",  " 1",     "1 ",   "+1",   "1e30",
        "1.5.5", "4GiB", "inf", "nan", "1MBB", "1Kb5",   ".5G",
    };
    size_t accepted = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 777;
        struct dsort_error err;
        dsort_error_clear(&err);
        enum dsort_status st = dsort_mem_parse_size(bad[i], &v, &err);
        if (st != DSORT_EINVAL) {
            print_error("'%s' was accepted as %" PRIu64 " bytes\n", bad[i], v);
            accepted++;
            continue;
        }
        /* the message names the text */
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        if (!strstr(err.msg, quoted)) {
            print_error("message for '%s' does not name it: %s\n", bad[i], err.msg);
            accepted++;
        }
    }
    assert_int_equal(accepted, 0);
}

static void test_alloc(void **state)
{
    (void)state;
    void *z = dsort_mem_alloc(0);
    assert_non_null(z);
    dsort_mem_free(z, 0);
    dsort_mem_free(NULL, 0);
    dsort_mem_free(NULL, 4096);

    static const size_t lens[] = {1, 4095, 4096, 100000, (size_t)3 << 20};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        unsigned char *p = dsort_mem_alloc(lens[i]);
        assert_non_null(p);
        /* fresh memory is zero and writable end to end */
        assert_int_equal(p[0], 0);
        assert_int_equal(p[lens[i] - 1], 0);
        memset(p, 0x5a, lens[i]);
        assert_int_equal(p[lens[i] / 2], 0x5a);
        dsort_mem_free(p, lens[i]);
    }
    /* an impossible size fails cleanly */
    assert_null(dsort_mem_alloc(SIZE_MAX - 4095));
}

/* Pages of this process that are resident (/proc/self/statm's second field), or -1. */
static long resident_pages(void)
{
    long size = 0, res = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &size, &res) != 2)
        res = -1;
    if (f)
        fclose(f);
    return res;
}

/* dsort_mem_populate faults in the range it is given (where the kernel has
 * MADV_POPULATE_WRITE: the resident set grows by about the range before any touch), leaves
 * the bytes zero and writable, and takes NULL, 0 and an unaligned start. */
static void test_populate(void **state)
{
    (void)state;
    const size_t len = (size_t)32 << 20, part = (size_t)8 << 20;
    unsigned char *p = dsort_mem_alloc(len);
    assert_non_null(p);
    dsort_mem_populate(NULL, 100);
    dsort_mem_populate(p, 0);
    long before = resident_pages();
    dsort_mem_populate(p + 123, part);
    long after = resident_pages();
    /* where the kernel has it (probed on a page of its own), the range is resident now */
    void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(probe != MAP_FAILED);
    const int has = madvise(probe, 4096, 23 /* MADV_POPULATE_WRITE */) == 0;
    munmap(probe, 4096);
    if (has && before >= 0 && after >= 0)
        assert_true(after - before >= (long)(part / (size_t)sysconf(_SC_PAGESIZE)));
    else
        print_message("(MADV_POPULATE_WRITE: %s; resident pages %ld -> %ld)\n", has ? "yes" : "no",
                      before, after);
    for (size_t i = 0; i < len; i += 4096)
        assert_int_equal(p[i], 0);
    memset(p, 0x5a, part + 123);
    assert_int_equal(p[part + 122], 0x5a);
    dsort_mem_free(p, len);
}

static void test_format(void **state)
{
    (void)state;
    char buf[32];
    assert_ptr_equal(dsort_mem_format(0, buf, sizeof buf), buf);
    assert_string_equal(buf, "0 B");
    assert_string_equal(dsort_mem_format(1023, buf, sizeof buf), "1023 B");
    assert_string_equal(dsort_mem_format(1024, buf, sizeof buf), "1.00 KiB");
    assert_string_equal(dsort_mem_format(1536, buf, sizeof buf), "1.50 KiB");
    assert_string_equal(dsort_mem_format(UINT64_C(3) << 29, buf, sizeof buf), "1.50 GiB");
    assert_string_equal(dsort_mem_format(UINT64_C(1) << 40, buf, sizeof buf), "1.00 TiB");
    assert_string_equal(dsort_mem_format(UINT64_C(1) << 50, buf, sizeof buf), "1.00 PiB");
    assert_string_equal(dsort_mem_format(UINT64_MAX, buf, sizeof buf), "16384.00 PiB");
    /* a short buffer is truncated, still terminated */
    char small[4];
    dsort_mem_format(1536, small, sizeof small);
    assert_string_equal(small, "1.5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),    cmocka_unit_test(test_parse_large),
        cmocka_unit_test(test_parse_percent), cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_alloc),         cmocka_unit_test(test_format),
        cmocka_unit_test(test_populate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
