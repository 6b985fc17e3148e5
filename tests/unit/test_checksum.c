/* Unit tests for checksum.h: CRC-32 (zlib), CRC-32C, valsort's 128-bit sum. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_rng.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checksum.h"

/* Bit-at-a-time references, independent of the table-driven code. */
static uint32_t ref_crc(uint32_t poly, uint32_t crc, const unsigned char *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (poly & (0u - (crc & 1)));
    }
    return ~crc;
}

static uint32_t ref_crc32(uint32_t crc, const unsigned char *p, size_t len)
{
    return ref_crc(0xEDB88320u, crc, p, len);
}

static uint32_t ref_crc32c(uint32_t crc, const unsigned char *p, size_t len)
{
    return ref_crc(0x82F63B78u, crc, p, len);
}

/* Seeded generator for the random tests; the seed is printed so that a
 * failure can be replayed with DSORT_TEST_SEED=<seed>. */
static const char check_str[] = "123456789";
static const char fox[] = "The quick brown fox jumps over the lazy dog";

static void test_crc32_vectors(void **state)
{
    (void)state;
    assert_int_equal(dsort_crc32(0, check_str, 9), 0xCBF43926u);
    assert_int_equal(dsort_crc32(0, "", 0), 0);
    assert_int_equal(dsort_crc32(0, NULL, 0), 0);
    assert_int_equal(dsort_crc32(0x12345678u, NULL, 0), 0x12345678u);
    assert_int_equal(dsort_crc32(0, "a", 1), 0xE8B7BE43u);
    assert_int_equal(dsort_crc32(0, fox, strlen(fox)), 0x414FA339u);

    unsigned char zeros[32] = {0};
    assert_int_equal(dsort_crc32(0, zeros, sizeof zeros), 0x190A55ADu);
    assert_int_equal(dsort_crc32(0, zeros, sizeof zeros), ref_crc32(0, zeros, sizeof zeros));
}

static void test_crc32_incremental(void **state)
{
    (void)state;
    const size_t len = strlen(fox);
    const uint32_t whole = dsort_crc32(0, fox, len);

    for (size_t cut = 0; cut <= len; cut++) {
        uint32_t c = dsort_crc32(0, fox, cut);
        assert_int_equal(dsort_crc32(c, fox + cut, len - cut), whole);
    }
    /* three pieces, exercising the 8-byte loop and the byte tail */
    unsigned char buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 7 + 3);
    uint32_t c = dsort_crc32(0, buf, 3);
    c = dsort_crc32(c, buf + 3, 500);
    c = dsort_crc32(c, buf + 503, sizeof buf - 503);
    assert_int_equal(c, dsort_crc32(0, buf, sizeof buf));
}

static void test_crc32_random(void **state)
{
    (void)state;
    enum { MAX = 4096 };
    unsigned char *buf = malloc(MAX + 8);
    assert_non_null(buf);

    rng_seed();
    for (int iter = 0; iter < 500; iter++) {
        size_t len = (size_t)(rng_next() % MAX);
        size_t off = (size_t)(rng_next() % 8); /* unaligned starts */
        uint32_t init = (iter % 3 == 0) ? 0 : (uint32_t)rng_next();
        fill_random(buf + off, len);
        assert_int_equal(dsort_crc32(init, buf + off, len), ref_crc32(init, buf + off, len));
    }
    free(buf);
}

static void test_crc32c_vectors(void **state)
{
    (void)state;
    unsigned char b[32];

    assert_int_equal(dsort_crc32c(0, check_str, 9), 0xE3069283u);
    assert_int_equal(dsort_crc32c_sw(0, check_str, 9), 0xE3069283u);
    assert_int_equal(dsort_crc32c(0, "", 0), 0);
    assert_int_equal(dsort_crc32c(0, NULL, 0), 0);
    assert_int_equal(dsort_crc32c(0, "a", 1), 0xC1D04330u);

    /* RFC 3720 (iSCSI) appendix B.4 */
    memset(b, 0, sizeof b);
    assert_int_equal(dsort_crc32c(0, b, sizeof b), 0x8A9136AAu);
    memset(b, 0xFF, sizeof b);
    assert_int_equal(dsort_crc32c(0, b, sizeof b), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)i;
    assert_int_equal(dsort_crc32c(0, b, sizeof b), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)(31 - i);
    assert_int_equal(dsort_crc32c(0, b, sizeof b), 0x113FDB5Cu);
    assert_int_equal(dsort_crc32c_sw(0, b, sizeof b), 0x113FDB5Cu);
}

static void test_crc32c_random(void **state)
{
    (void)state;
    enum { MAX = 4096 };
    unsigned char *buf = malloc(MAX + 8);
    assert_non_null(buf);

    rng_seed();
    for (int iter = 0; iter < 500; iter++) {
        size_t len = (size_t)(rng_next() % MAX);
        size_t off = (size_t)(rng_next() % 8);
        uint32_t init = (iter % 3 == 0) ? 0 : (uint32_t)rng_next();
        fill_random(buf + off, len);
        uint32_t want = ref_crc32c(init, buf + off, len);
        assert_int_equal(dsort_crc32c(init, buf + off, len), want);
        assert_int_equal(dsort_crc32c_sw(init, buf + off, len), want);

        size_t cut = len ? (size_t)(rng_next() % len) : 0;
        uint32_t c = dsort_crc32c(init, buf + off, cut);
        assert_int_equal(dsort_crc32c(c, buf + off + cut, len - cut), want);
    }
    free(buf);
}

static void test_sum128_add_carry(void **state)
{
    (void)state;
    struct dsort_sum128 s = {0, 0};

    dsort_sum128_add(&s, UINT64_MAX);
    assert_true(s.lo == UINT64_MAX && s.hi == 0);
    dsort_sum128_add(&s, 1);
    assert_true(s.lo == 0 && s.hi == 1);
    dsort_sum128_add(&s, UINT64_MAX);
    dsort_sum128_add(&s, UINT64_MAX);
    assert_true(s.lo == UINT64_MAX - 1 && s.hi == 2);
    dsort_sum128_add(&s, 0);
    assert_true(s.lo == UINT64_MAX - 1 && s.hi == 2);

    /* wraps modulo 2^128 */
    struct dsort_sum128 m = {UINT64_MAX, UINT64_MAX};
    dsort_sum128_add(&m, 2);
    assert_true(m.lo == 1 && m.hi == 0);
}

static void test_sum128_merge(void **state)
{
    (void)state;
    struct dsort_sum128 a = {UINT64_MAX, 5};
    const struct dsort_sum128 b = {2, 7};

    dsort_sum128_merge(&a, &b);
    assert_true(a.lo == 1 && a.hi == 13);

    struct dsort_sum128 c = {0x8000000000000000ULL, 1};
    dsort_sum128_merge(&c, &c); /* aliasing */
    assert_true(c.lo == 0 && c.hi == 3);

    /* merging partial sums equals one sum over everything */
    struct dsort_sum128 whole = {0, 0}, p1 = {0, 0}, p2 = {0, 0};
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t v = UINT64_MAX - i * 12345;
        dsort_sum128_add(&whole, v);
        dsort_sum128_add(i % 3 ? &p1 : &p2, v);
    }
    dsort_sum128_merge(&p1, &p2);
    assert_true(p1.lo == whole.lo && p1.hi == whole.hi);
}

static void test_sum128_hex(void **state)
{
    (void)state;
    char out[33];
    struct dsort_sum128 s;

    s = (struct dsort_sum128){0, 0};
    dsort_sum128_hex(&s, out);
    assert_string_equal(out, "0");
    s = (struct dsort_sum128){0x1ea6370b955ULL, 0};
    dsort_sum128_hex(&s, out);
    assert_string_equal(out, "1ea6370b955");
    s = (struct dsort_sum128){UINT64_MAX, 0};
    dsort_sum128_hex(&s, out);
    assert_string_equal(out, "ffffffffffffffff");
    s = (struct dsort_sum128){0, 1};
    dsort_sum128_hex(&s, out);
    assert_string_equal(out, "10000000000000000");
    s = (struct dsort_sum128){5, 0xabc};
    dsort_sum128_hex(&s, out);
    assert_string_equal(out, "abc0000000000000005");
    s = (struct dsort_sum128){UINT64_MAX, UINT64_MAX};
    dsort_sum128_hex(&s, out);
    assert_string_equal(out, "ffffffffffffffffffffffffffffffff");
    assert_int_equal(strlen(out), 32);
}

static void test_checksum_records(void **state)
{
    (void)state;
    enum { NREC = 37, RS = 100 };
    unsigned char *recs = malloc(NREC * RS);
    assert_non_null(recs);
    for (size_t i = 0; i < NREC * RS; i++)
        recs[i] = (unsigned char)(i * 31 + (i >> 8));

    struct dsort_sum128 want = {0, 0}, got = {0, 0};
    for (size_t r = 0; r < NREC; r++)
        dsort_sum128_add(&want, ref_crc32(0, recs + r * RS, RS));
    dsort_checksum_records(&got, recs, NREC, RS);
    assert_true(got.lo == want.lo && got.hi == want.hi);

    /* accumulates into an existing sum; nrec == 0 is a no-op */
    dsort_checksum_records(&got, NULL, 0, RS);
    assert_true(got.lo == want.lo && got.hi == want.hi);
    struct dsort_sum128 twice = want;
    dsort_sum128_merge(&twice, &want);
    dsort_checksum_records(&got, recs, NREC, RS);
    assert_true(got.lo == twice.lo && got.hi == twice.hi);

    /* other record sizes, including one not a multiple of 8 */
    struct dsort_sum128 a = {0, 0}, b = {0, 0};
    dsort_checksum_records(&a, recs, 100, 37);
    for (size_t r = 0; r < 100; r++)
        dsort_sum128_add(&b, ref_crc32(0, recs + r * 37, 37));
    assert_true(a.lo == b.lo && a.hi == b.hi);
    free(recs);
}

/* The conservation sum (CRC32C per record, four records at a time where the CPU has the
 * instruction) equals the sum of dsort_crc32c of each record, for every record size (words
 * and tails) and every count (whole groups of four and the rest). */
static void test_checksum_records_c(void **state)
{
    (void)state;
    unsigned char buf[7 * 131];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 37 + 11);
    for (size_t rs = 1; rs <= 131; rs += 5)
        for (size_t n = 0; n <= 7 && n * rs <= sizeof buf; n++) {
            struct dsort_sum128 a = {0, 0}, b = {0, 0};
            dsort_checksum_records_c(&a, buf, n, rs);
            for (size_t k = 0; k < n; k++)
                dsort_sum128_add(&b, dsort_crc32c(0, buf + k * rs, rs));
            assert_true(a.lo == b.lo && a.hi == b.hi);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32_vectors),    cmocka_unit_test(test_crc32_incremental),
        cmocka_unit_test(test_crc32_random),     cmocka_unit_test(test_crc32c_vectors),
        cmocka_unit_test(test_crc32c_random),    cmocka_unit_test(test_sum128_add_carry),
        cmocka_unit_test(test_sum128_merge),     cmocka_unit_test(test_sum128_hex),
        cmocka_unit_test(test_checksum_records), cmocka_unit_test(test_checksum_records_c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
