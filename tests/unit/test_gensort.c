/* Unit tests for gensort.h: byte-identity with gensort 1.5.
 *
 * Usage: test_gensort REFERENCE_DIR
 * REFERENCE_DIR holds files made by the real gensort 1.5 (see its README.md).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "gensort.h"

#define RS DSORT_GENSORT_REC_SIZE
#define REF_NREC 1000

static const char *ref_dir;

struct ref_file {
    const char *name;
    enum dsort_gensort_kind kind;
    int skew;
    uint64_t start;
    const char *checksum; /* `gensort -c` / valsort */
};

static const struct ref_file ref_files[] = {
    {"bin-1000.dat", DSORT_GENSORT_BINARY, 0, 0, "1ea6370b955"},
    {"ascii-1000.txt", DSORT_GENSORT_ASCII, 0, 0, "1f5dfb3631a"},
    {"skew-1000.dat", DSORT_GENSORT_BINARY, 1, 0, "1e96301166b"},
    {"bin-b1000000-1000.dat", DSORT_GENSORT_BINARY, 0, 1000000, "1f912af9809"},
    {"ascii-skew-1000.txt", DSORT_GENSORT_ASCII, 1, 0, "1eef17d1cac"},
};

/* Returns a malloc'ed buffer with records [start, start + nrec). */
static unsigned char *gen(enum dsort_gensort_kind kind, int skew, uint64_t start, size_t nrec)
{
    struct dsort_gensort g;
    unsigned char *buf = malloc(nrec * RS + 1);

    assert_non_null(buf);
    assert_int_equal(dsort_gensort_init(&g, kind, skew, start), 0);
    dsort_gensort_fill(&g, buf, nrec);
    return buf;
}

static unsigned char *read_ref(const char *name, size_t want)
{
    char path[4096];
    unsigned char *buf = malloc(want + 1);
    assert_non_null(buf);

    snprintf(path, sizeof path, "%s/%s", ref_dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open reference file '%s'", path);
    size_t got = fread(buf, 1, want + 1, f);
    fclose(f);
    if (got != want)
        fail_msg("'%s' has %zu bytes, expected %zu", path, got, want);
    return buf;
}

/* Fails naming the first differing record. */
static void assert_same_records(const unsigned char *got, const unsigned char *want, size_t nrec,
                                const char *what)
{
    for (size_t r = 0; r < nrec; r++)
        if (memcmp(got + r * RS, want + r * RS, RS) != 0)
            fail_msg("%s: record %zu differs", what, r);
}

static void checksum_hex(const unsigned char *recs, size_t nrec, char out[33])
{
    struct dsort_sum128 s = {0, 0};
    dsort_checksum_records(&s, recs, nrec, RS);
    dsort_sum128_hex(&s, out);
}

static void test_reference_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof ref_files / sizeof ref_files[0]; i++) {
        const struct ref_file *rf = &ref_files[i];
        unsigned char *want = read_ref(rf->name, REF_NREC * RS);
        unsigned char *got = gen(rf->kind, rf->skew, rf->start, REF_NREC);
        char hex[33];

        assert_same_records(got, want, REF_NREC, rf->name);
        checksum_hex(got, REF_NREC, hex);
        assert_string_equal(hex, rf->checksum);
        checksum_hex(want, REF_NREC, hex);
        assert_string_equal(hex, rf->checksum);
        free(got);
        free(want);
    }
}

static void test_first_key(void **state)
{
    (void)state;
    unsigned char *b = gen(DSORT_GENSORT_BINARY, 0, 0, 1);
    assert_memory_equal(b, "JimGrayRIP", DSORT_GENSORT_KEY_SIZE);
    free(b);
}

/* [0, 400) + [400, 1000) == [0, 1000), for every kind, skewed or not. */
static void test_split_equals_whole(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        for (int skew = 0; skew < 2; skew++) {
            unsigned char *whole = gen((enum dsort_gensort_kind)kind, skew, 0, 1000);
            unsigned char *a = gen((enum dsort_gensort_kind)kind, skew, 0, 400);
            unsigned char *b = gen((enum dsort_gensort_kind)kind, skew, 400, 600);

            assert_same_records(a, whole, 400, "first part");
            assert_same_records(b, whole + 400 * RS, 600, "second part");
            free(whole);
            free(a);
            free(b);
        }
    }
}

/* Many fill calls of odd sizes on one generator equal one big fill. */
static void test_piecewise_fill(void **state)
{
    (void)state;
    enum { N = 5000 };
    for (int kind = 0; kind < 2; kind++) {
        for (int skew = 0; skew < 2; skew++) {
            unsigned char *whole = gen((enum dsort_gensort_kind)kind, skew, 1000, N);
            unsigned char *parts = malloc(N * RS);
            struct dsort_gensort g;
            size_t done = 0, step = 0;

            assert_non_null(parts);
            assert_int_equal(dsort_gensort_init(&g, (enum dsort_gensort_kind)kind, skew, 1000), 0);
            dsort_gensort_fill(&g, parts, 0);
            while (done < N) {
                size_t n = (step * step * 7 + 1) % 300;
                if (n > N - done)
                    n = N - done;
                dsort_gensort_fill(&g, parts + done * RS, n);
                done += n;
                step++;
            }
            assert_same_records(parts, whole, N, "piecewise");
            free(parts);
            free(whole);
        }
    }
}

/* -b1000000: starting by skip-ahead equals stepping across the boundary. */
static void test_start_b1000000(void **state)
{
    (void)state;
    unsigned char *want = read_ref("bin-b1000000-1000.dat", REF_NREC * RS);
    unsigned char *across = gen(DSORT_GENSORT_BINARY, 0, 1000000 - 500, 1000);

    assert_same_records(across + 500 * RS, want, 500, "b1000000 via 999500");
    free(across);
    free(want);
}

/* Skip-ahead to far positions agrees with stepping. */
static void test_skip_ahead_far(void **state)
{
    (void)state;
    static const uint64_t starts[] = {
        1,
        2,
        1023,
        1024,
        123456789012ULL,
        (1ULL << 40) - 3,
        (1ULL << 60) - 5,
        (1ULL << 63) + 12345,
        UINT64_MAX - 20,
    };
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        for (int kind = 0; kind < 2; kind++) {
            for (int skew = 0; skew < 2; skew++) {
                uint64_t s = starts[i];
                uint64_t back = s < 10 ? s : 10;
                unsigned char *a = gen((enum dsort_gensort_kind)kind, skew, s, 10);
                unsigned char *b = gen((enum dsort_gensort_kind)kind, skew, s - back, 10 + back);
                assert_same_records(a, b + back * RS, 10, "skip-ahead");
                free(a);
                free(b);
            }
        }
    }
}

/* The ASCII layout, and 128-bit record numbers past 2^64 - 1. */
static void test_ascii_layout(void **state)
{
    (void)state;
    static const char *const recno[] = {
        "0000000000000000FFFFFFFFFFFFFFFE",
        "0000000000000000FFFFFFFFFFFFFFFF",
        "00000000000000010000000000000000",
        "00000000000000010000000000000001",
    };
    unsigned char *b = gen(DSORT_GENSORT_ASCII, 0, UINT64_MAX - 1, 4);

    for (int r = 0; r < 4; r++) {
        const unsigned char *p = b + r * RS;
        for (int i = 0; i < DSORT_GENSORT_KEY_SIZE; i++)
            assert_true(p[i] >= 0x20 && p[i] <= 0x7E);
        assert_memory_equal(p + 10, "  ", 2);
        assert_memory_equal(p + 12, recno[r], 32);
        assert_memory_equal(p + 44, "  ", 2);
        for (int j = 0; j < 13; j++) {
            const unsigned char *f = p + 46 + 4 * j;
            assert_non_null(strchr("0123456789ABCDEF", f[0]));
            assert_true(f[0] == f[1] && f[0] == f[2] && f[0] == f[3]);
        }
        assert_memory_equal(p + 98, "\r\n", 2);
    }
    free(b);

    /* a generator that crosses 2^64 in one fill agrees with the above */
    struct dsort_gensort g;
    unsigned char two[2 * RS];
    assert_int_equal(dsort_gensort_init(&g, DSORT_GENSORT_ASCII, 0, UINT64_MAX), 0);
    dsort_gensort_fill(&g, two, 2);
    assert_memory_equal(two + 12, recno[1], 32);
    assert_memory_equal(two + RS + 12, recno[2], 32);
}

/* gensort's skew index is 64 for every record number in [2^60, 2^64), not
 * its bit length: check that skewed ASCII keys there take their leading bytes
 * from record 64's key. */
static void test_skew_index_quirk(void **state)
{
    (void)state;
    enum { N = 64 };
    const uint64_t start = 1ULL << 60;
    unsigned char *plain = gen(DSORT_GENSORT_ASCII, 0, start, N);
    unsigned char *skew = gen(DSORT_GENSORT_ASCII, 1, start, N);
    unsigned char *row = gen(DSORT_GENSORT_ASCII, 0, 64, 1);
    int replaced = 0;

    for (int r = 0; r < N; r++) {
        const unsigned char *p = plain + r * RS, *s = skew + r * RS;
        int c = 0;
        while (c < 6 && s[c] == row[c] && s[c] != p[c])
            c++;
        /* s is row[0..c) followed by the plain record (c may be
         * ambiguous where bytes coincide; then p[c] == s[c]) */
        assert_memory_equal(s + c, p + c, RS - c);
        replaced += c > 0;
    }
    assert_true(replaced > N / 2); /* about 3/4 of records are skewed */
    free(plain);
    free(skew);
    free(row);
}

static void test_init_rejects_bad_kind(void **state)
{
    (void)state;
    struct dsort_gensort g;
    memset(&g, 0xA5, sizeof g);
    struct dsort_gensort copy = g;

    assert_int_equal(dsort_gensort_init(&g, (enum dsort_gensort_kind)7, 0, 0), -1);
    assert_memory_equal(&g, &copy, sizeof g);
    assert_int_equal(dsort_gensort_init(NULL, DSORT_GENSORT_BINARY, 0, 0), -1);
}

/* README "Larger figures": gensort -c for 1,000,000 records. */
static void large_checksum(enum dsort_gensort_kind kind, const char *want)
{
    enum { TOTAL = 1000000, CHUNK = 10000 };
    unsigned char *buf = malloc(CHUNK * RS);
    struct dsort_gensort g;
    struct dsort_sum128 s = {0, 0};
    char hex[33];

    assert_non_null(buf);
    assert_int_equal(dsort_gensort_init(&g, kind, 0, 0), 0);
    for (int done = 0; done < TOTAL; done += CHUNK) {
        dsort_gensort_fill(&g, buf, CHUNK);
        dsort_checksum_records(&s, buf, CHUNK, RS);
    }
    dsort_sum128_hex(&s, hex);
    assert_string_equal(hex, want);
    free(buf);
}

static void test_checksum_1m_binary(void **state)
{
    (void)state;
    large_checksum(DSORT_GENSORT_BINARY, "7a0e0d4868cd4");
}

static void test_checksum_1m_ascii(void **state)
{
    (void)state;
    large_checksum(DSORT_GENSORT_ASCII, "7a19cff467438");
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '\0') {
        fprintf(stderr, "usage: %s REFERENCE_DIR (gensort reference files)\n", argv[0]);
        return 1;
    }
    ref_dir = argv[1];

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_files),       cmocka_unit_test(test_first_key),
        cmocka_unit_test(test_split_equals_whole),    cmocka_unit_test(test_piecewise_fill),
        cmocka_unit_test(test_start_b1000000),        cmocka_unit_test(test_skip_ahead_far),
        cmocka_unit_test(test_ascii_layout),          cmocka_unit_test(test_skew_index_quirk),
        cmocka_unit_test(test_init_rejects_bad_kind), cmocka_unit_test(test_checksum_1m_binary),
        cmocka_unit_test(test_checksum_1m_ascii),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
