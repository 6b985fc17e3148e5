/* Unit tests for keys.h: option parsing and its errors, GNU's inheritance rules, hand-checked
 * orders for each option, and the prefix contract on random lines. (keys_diff.py compares
 * whole sorts with GNU sort.) */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "keys.h"
#include "test_rng.h"

/* Apply sort-style options ("-k", "SPEC", "-t", "SEP", "-s", "-u", "-nr", ...; NULL-ended),
 * then finish. Returns the first failing status, with its message in err. */
static enum dsort_status setup_v(struct dsort_keys *k, struct dsort_error *err,
                                 const char *const *args)
{
    dsort_keys_init(k);
    dsort_error_clear(err);
    for (; *args; args++) {
        const char *a = *args;
        enum dsort_status st = DSORT_OK;
        if (strcmp(a, "-k") == 0)
            st = dsort_keys_add(k, *++args, err);
        else if (strcmp(a, "-t") == 0)
            st = dsort_keys_set_tab(k, *++args, err);
        else if (strcmp(a, "-s") == 0)
            k->stable = 1;
        else if (strcmp(a, "-u") == 0)
            k->unique = 1;
        else
            for (const char *c = a + 1; *c && st == DSORT_OK; c++)
                st = dsort_keys_set_global(k, *c, err);
        if (st != DSORT_OK)
            return st;
    }
    return dsort_keys_finish(k, err);
}

#define SETUP(k, err, ...) setup_v((k), (err), (const char *const[]){__VA_ARGS__, NULL})

static void setup_ok_v(struct dsort_keys *k, const char *const *args)
{
    struct dsort_error err;
    enum dsort_status st = setup_v(k, &err, args);
    if (st != DSORT_OK)
        print_error("setup failed: %s\n", err.msg);
    assert_int_equal(st, DSORT_OK);
}

#define SETUP_OK(k, ...) setup_ok_v((k), (const char *const[]){__VA_ARGS__, NULL})

static void expect_error_v(const char *msg, const char *const *args)
{
    struct dsort_keys k;
    struct dsort_error err;
    enum dsort_status st = setup_v(&k, &err, args);
    if (st != DSORT_EINVAL || strcmp(err.msg, msg) != 0)
        print_error("expected '%s', got status %d '%s'\n", msg, (int)st, err.msg);
    assert_int_equal(st, DSORT_EINVAL);
    assert_string_equal(err.msg, msg);
}

#define EXPECT_ERROR(msg, ...) expect_error_v((msg), (const char *const[]){__VA_ARGS__, NULL})

static int sgn(int v)
{
    return (v > 0) - (v < 0);
}

/* compare(a, b) has sign s, and compare(b, a) the opposite (lengths from strlen). */
static void expect_cmp(const struct dsort_keys *k, const char *a, const char *b, int s)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    int ab = sgn(dsort_keys_compare(k, x, strlen(a), y, strlen(b)));
    int ba = sgn(dsort_keys_compare(k, y, strlen(b), x, strlen(a)));
    if (ab != s || ba != -s)
        print_error("compare('%s', '%s') = %d, reversed %d; expected %d\n", a, b, ab, ba, s);
    assert_int_equal(ab, s);
    assert_int_equal(ba, -s);
}

/* compare_keys(a, b) has sign s (with explicit lengths: the strings may hold NUL). */
static void expect_keys_n(const struct dsort_keys *k, const char *a, size_t alen, const char *b,
                          size_t blen, int s)
{
    int d = sgn(
        dsort_keys_compare_keys(k, (const unsigned char *)a, alen, (const unsigned char *)b, blen));
    if (d != s)
        print_error("compare_keys('%.*s', '%.*s') = %d, expected %d\n", (int)alen, a, (int)blen, b,
                    d, s);
    assert_int_equal(d, s);
}

static void expect_keys(const struct dsort_keys *k, const char *a, const char *b, int s)
{
    expect_keys_n(k, a, strlen(a), b, strlen(b), s);
    expect_keys_n(k, b, strlen(b), a, strlen(a), -s);
}

/* Every adjacent pair of the NULL-ended list is in ascending (keys) order. */
static void expect_ascending_v(const struct dsort_keys *k, const char *const *lines)
{
    for (; lines[0] && lines[1]; lines++)
        expect_keys(k, lines[0], lines[1], -1);
}

#define EXPECT_ASCENDING(k, ...) expect_ascending_v((k), (const char *const[]){__VA_ARGS__, NULL})

static void test_spec_errors(void **state)
{
    (void)state;
    EXPECT_ERROR("field number is zero: invalid field specification '0'", "-k", "0");
    EXPECT_ERROR("character offset is zero: invalid field specification '1.0'", "-k", "1.0");
    EXPECT_ERROR("field number is zero: invalid field specification '1,0'", "-k", "1,0");
    EXPECT_ERROR("invalid number at field start: invalid count at start of 'a'", "-k", "a");
    EXPECT_ERROR("invalid number at field start: invalid count at start of ''", "-k", "");
    EXPECT_ERROR("invalid number at field start: invalid count at start of '-1'", "-k", "-1");
    EXPECT_ERROR("invalid number after '.': invalid count at start of ''", "-k", "1.");
    EXPECT_ERROR("invalid number after ',': invalid count at start of 'x'", "-k", "1,x");
    EXPECT_ERROR("invalid number after '.': invalid count at start of 'b'", "-k", "1,2.b");
    EXPECT_ERROR("stray character in field spec: invalid field specification '1x'", "-k", "1x");
    EXPECT_ERROR("stray character in field spec: invalid field specification '1.2.3'", "-k",
                 "1.2.3");
    EXPECT_ERROR("stray character in field spec: invalid field specification '1,2bq'", "-k",
                 "1,2bq");
    /* Messages quote as gnulib's quote() does in the C locale. */
    EXPECT_ERROR("stray character in field spec: invalid field specification '1\\'\\t\\200'", "-k",
                 "1'\t\x80");
    EXPECT_ERROR("empty tab", "-t", "");
    EXPECT_ERROR("multi-character tab 'ab'", "-t", "ab");
    EXPECT_ERROR("multi-character tab '\\\\t'", "-t", "\\t");
    EXPECT_ERROR("incompatible tabs", "-t", ":", "-t", ",");
    EXPECT_ERROR("invalid ordering option -- 'x'", "-x");
    /* R needs its seed, which only dsort's command line gives (test_random) */
    EXPECT_ERROR("random sort (R) needs a seed, which only dsort gives it (--random-source)", "-R");
    EXPECT_ERROR("random sort (R) needs a seed, which only dsort gives it (--random-source)", "-k",
                 "2,2fR");

    /* Accepted: what xstrtoumax accepts, huge counts, a repeated identical tab. */
    struct dsort_keys k;
    SETUP_OK(&k, "-k", " 2", "-k", "+3,4", "-k", "99999999999999999999999", "-t", ":", "-t", ":");
    assert_int_equal(k.n, 3);
    assert_int_equal(k.key[0].sfield, 1);
    assert_int_equal(k.key[1].sfield, 2);
    assert_int_equal(k.key[1].efield, 3);
    assert_int_equal(k.key[2].sfield, SIZE_MAX - 1);
    assert_int_equal(k.tab, ':');
    SETUP_OK(&k, "-t", "\\0");
    assert_int_equal(k.tab, 0);
}

static void test_too_many_keys(void **state)
{
    (void)state;
    struct dsort_keys k;
    struct dsort_error err;
    dsort_keys_init(&k);
    for (int i = 0; i < DSORT_KEYS_MAX; i++)
        assert_int_equal(dsort_keys_add(&k, "1,1", &err), DSORT_OK);
    assert_int_equal(dsort_keys_add(&k, "2", &err), DSORT_EINVAL);
    assert_int_equal(k.n, DSORT_KEYS_MAX);
}

static void test_positions(void **state)
{
    (void)state;
    struct dsort_keys k;
    SETUP_OK(&k, "-k", "2.3b,4.5bn");
    const struct dsort_key *key = &k.key[0];
    assert_int_equal(key->sfield, 1);
    assert_int_equal(key->schar, 2);
    assert_int_equal(key->efield, 3);
    assert_int_equal(key->echar, 5);
    assert_int_equal(key->flags,
                     DSORT_KEY_SKIP_START_BLANKS | DSORT_KEY_SKIP_END_BLANKS | DSORT_KEY_NUMERIC);
    SETUP_OK(&k, "-k", "3");
    assert_int_equal(k.key[0].efield, DSORT_KEY_EOL);
    assert_int_equal(k.key[0].flags, 0);
    SETUP_OK(&k, "-k", "1b,1");
    assert_int_equal(k.key[0].flags, DSORT_KEY_SKIP_START_BLANKS);
    SETUP_OK(&k, "-k", "1,1b");
    assert_int_equal(k.key[0].flags, DSORT_KEY_SKIP_END_BLANKS);
}

static void test_inheritance(void **state)
{
    (void)state;
    struct dsort_keys k;
    /* A key without options takes all the global ones, -r included. */
    SETUP_OK(&k, "-k", "2,2", "-n", "-r", "-b");
    assert_int_equal(k.key[0].flags, DSORT_KEY_NUMERIC | DSORT_KEY_REVERSE |
                                         DSORT_KEY_SKIP_START_BLANKS | DSORT_KEY_SKIP_END_BLANKS);
    assert_true(k.reverse);
    /* A key with any option, even only r or b, takes none. */
    SETUP_OK(&k, "-n", "-k", "2,2r", "-k", "3b", "-k", "4");
    assert_int_equal(k.key[0].flags, DSORT_KEY_REVERSE);
    assert_int_equal(k.key[1].flags, DSORT_KEY_SKIP_START_BLANKS);
    assert_int_equal(k.key[2].flags, DSORT_KEY_NUMERIC);
    assert_false(k.reverse);
    /* No -k: global options make one whole-line key... */
    SETUP_OK(&k, "-f");
    assert_int_equal(k.n, 1);
    assert_int_equal(k.key[0].sfield, 0);
    assert_int_equal(k.key[0].schar, 0);
    assert_int_equal(k.key[0].efield, DSORT_KEY_EOL);
    assert_int_equal(k.key[0].flags, DSORT_KEY_FOLD);
    /* ... but -r alone only reverses the last resort. */
    SETUP_OK(&k, "-r");
    assert_int_equal(k.n, 0);
    assert_true(k.reverse);
    assert_false(dsort_keys_plain(&k));
    SETUP_OK(&k, "-s", "-u");
    assert_true(dsort_keys_plain(&k));
    /* d wins over i, in either order. */
    SETUP_OK(&k, "-k", "1id");
    assert_int_equal(k.key[0].flags, DSORT_KEY_DICT);
    SETUP_OK(&k, "-d", "-i");
    assert_int_equal(k.key[0].flags, DSORT_KEY_DICT);
}

static void test_incompatible(void **state)
{
    (void)state;
    EXPECT_ERROR("options '-gn' are incompatible", "-g", "-n");
    EXPECT_ERROR("options '-gn' are incompatible", "-ng");
    EXPECT_ERROR("options '-dn' are incompatible", "-k", "1,1bnrd");
    EXPECT_ERROR("options '-dfn' are incompatible", "-k", "1,1fdn");
    EXPECT_ERROR("options '-in' are incompatible", "-k", "1n,1i");
    EXPECT_ERROR("options '-dM' are incompatible", "-k", "1Mid");
    EXPECT_ERROR("options '-hM' are incompatible", "-k", "1Mh");
    EXPECT_ERROR("options '-nV' are incompatible", "-k", "1Vn");
    EXPECT_ERROR("options '-dn' are incompatible", "-n", "-d", "-k", "1,1");
    /* Allowed: V with d or i, M with f; global options no key inherits are not checked. */
    struct dsort_keys k;
    SETUP_OK(&k, "-k", "1Vd");
    SETUP_OK(&k, "-k", "1Vif");
    SETUP_OK(&k, "-k", "1Mf");
    SETUP_OK(&k, "-g", "-n", "-k", "1,1r");
}

static void test_plain_and_last_resort(void **state)
{
    (void)state;
    struct dsort_keys k;
    SETUP_OK(&k, "-s");
    assert_true(dsort_keys_plain(&k));
    expect_cmp(&k, "a", "b", -1);
    expect_cmp(&k, "a", "ab", -1);
    expect_cmp(&k, "", "a", -1);
    expect_cmp(&k, "z", "\x80", -1);
    expect_cmp(&k, "same", "same", 0);
    expect_keys_n(&k, "a", 1, "a\0", 2, -1);

    /* Equal keys fall back to the whole line, reversed only by the global -r. */
    SETUP_OK(&k, "-k", "2,2");
    expect_cmp(&k, "b x", "a x", 1);
    expect_keys(&k, "b x", "a x", 0);
    SETUP_OK(&k, "-k", "2,2", "-r");
    expect_cmp(&k, "b x", "a x", -1);
    expect_cmp(&k, "a y", "a x", -1);
    SETUP_OK(&k, "-k", "2,2r");
    expect_cmp(&k, "b x", "a x", 1);
    expect_cmp(&k, "a y", "a x", -1);
    SETUP_OK(&k, "-k", "2,2", "-s");
    expect_cmp(&k, "b x", "a x", 0);
    SETUP_OK(&k, "-k", "2,2", "-u");
    expect_cmp(&k, "b x", "a x", 0);
    /* With no keys, -s and -u leave the whole-line comparison in place. */
    SETUP_OK(&k, "-r", "-u");
    expect_cmp(&k, "a", "b", 1);
    expect_keys(&k, "a", "b", 1);
}

static void test_fields(void **state)
{
    (void)state;
    struct dsort_keys k;
    /* Default fields include their leading blanks: " b" < "a" unless b is given. */
    SETUP_OK(&k, "-k", "2,2");
    expect_keys(&k, "x  b", "x a", -1);
    expect_keys(&k, "x  a", "y a", -1);
    SETUP_OK(&k, "-k", "2b,2");
    expect_keys(&k, "x  b", "x a", 1);
    expect_keys(&k, "x  a", "y a", 0);
    /* Tab and newline are blanks too. */
    expect_keys(&k, "x\t\na", "x a", 0);
    /* Characters within fields; an end before the start is an empty key. */
    SETUP_OK(&k, "-k", "1.2,1.3");
    expect_keys(&k, "abcz", "xbcy", 0);
    expect_keys(&k, "abd", "xbc", 1);
    SETUP_OK(&k, "-k", "2,1");
    expect_keys(&k, "a b", "c d", 0);
    /* -t: empty fields count, separators at the ends. */
    SETUP_OK(&k, "-t", ":", "-k", "2,2");
    expect_keys(&k, "a::b", "c:a:d", -1);
    expect_keys(&k, "a:x", "b:x:", 0);
    expect_keys(&k, ":x", "x", 1);
    SETUP_OK(&k, "-t", ":", "-k", "2");
    expect_keys(&k, "a:x:y", "b:x", 1);
    /* POS2 with a character offset may run into the next field. */
    SETUP_OK(&k, "-t", ":", "-k", "1,1.4");
    expect_keys(&k, "ab:cd", "ab:ce", 0);
    expect_keys(&k, "a:cd", "a:ce", -1);
    /* NUL as the separator. */
    SETUP_OK(&k, "-t", "\\0", "-k", "2,2");
    expect_keys_n(&k, "a\0b", 3, "b\0a", 3, 1);
}

static void test_numeric(void **state)
{
    (void)state;
    struct dsort_keys k;
    SETUP_OK(&k, "-n");
    EXPECT_ASCENDING(&k, "-10", "-9.5", "-1", "0", "0.001", ".5", "1", "1.5", "2", "10");
    expect_keys(&k, "-0", "0", 0);
    expect_keys(&k, "abc", "0", 0);
    expect_keys(&k, "", "-", 0);
    expect_keys(&k, "+5", "0", 0);  /* '+' is not a sign */
    expect_keys(&k, "  7", "7", 0); /* leading blanks */
    expect_keys(&k, "007.50", "7.5", 0);
    expect_keys(&k, "1,000", "1", 0); /* no thousands separator in C */
    expect_keys(&k, "-.5", "-0.50", 0);
    expect_keys(&k, "1e3", "1", 0);
    /* Byte 0x80 acts as a thousands separator (GNU's NON_CHAR is 128). */
    expect_keys(&k,
                "1\x80"
                "2",
                "12", 0);
    expect_keys(&k,
                "1\x80"
                "2\x80.5",
                "12.5", 0);
    /* A NUL ends the number, as in GNU's C strings. */
    expect_keys_n(&k,
                  "5\0"
                  "9",
                  3, "5", 1, 0);
    /* Reversed per key, with the last resort still ascending. */
    SETUP_OK(&k, "-k", "1,1nr");
    expect_cmp(&k, "2", "10", 1);
    expect_cmp(&k, "1 b", "01 a", 1);
}

static void test_general(void **state)
{
    (void)state;
    struct dsort_keys k;
    SETUP_OK(&k, "-g");
    EXPECT_ASCENDING(&k, "abc", "nan", "-inf", "-1e308", "-1", "0", "1e-5", "0x10p-8", "1", "9",
                     "1e3", "0x1p20", "1e400", "inf");
    expect_keys(&k, "0x10", "16", 0);
    expect_keys(&k, "+1.5", " 1.50", 0);
    expect_keys(&k, "-0", "0", 0);
    expect_keys(&k, "\v\r 2", "2", 0); /* strtold skips all white space */
    expect_keys(&k, "xyz", "", 0);
    expect_keys(&k, "INFINITY", "inf", 0);
    /* NaNs by their bits: payload first (x86), then -nan after nan. */
    EXPECT_ASCENDING(&k, "nan", "-nan", "nan(1)", "nan(2)");
    expect_keys_n(&k,
                  "5\0"
                  "9",
                  3, "5", 1, 0);

    /* Numbers too long for the short copy are rewritten without changing their value. */
    char a[400], b[400];
    snprintf(a, sizeof a, "0.%0200d1", 0);
    expect_keys(&k, a, "1e-201", 0);
    memset(a, '9', 300);
    a[300] = '\0';
    expect_keys(&k, a, "1e300", 0);
    memset(b, '9', 300);
    strcpy(b + 300, "e-10");
    expect_keys(&k, b, "1e290", 0);
    memset(a, '0', 350);
    a[0] = '1';
    strcpy(a + 350, "e-5000");
    expect_keys(&k, a, "1e-4651", 0);
    memset(a, '0', 380);
    memcpy(a, "0x1", 3);
    a[380] = '\0';
    expect_keys(&k, a, "0x1p1508", 0);
    snprintf(a, sizeof a, "%0100d", 7);
    expect_keys(&k, a, "7", 0);
    snprintf(a, sizeof a, "nan(%0100d)", 3);
    expect_keys(&k, a, "nan(3)", 0);
    snprintf(a, sizeof a, "1%0100d", 0);
    snprintf(b, sizeof b, "1%0100d1", 0);
    expect_keys(&k, a, b, -1);
}

static void test_human(void **state)
{
    (void)state;
    struct dsort_keys k;
    SETUP_OK(&k, "-h");
    EXPECT_ASCENDING(&k, "-1G", "-5K", "-10", "0", "5", "999", "1K", "1.5K", "2K", "1M", "1G", "1T",
                     "1P", "1E", "1Z", "1Y");
    expect_keys(&k, "1k", "1K", 0);
    expect_keys(&k, "0K", "0", 0);
    expect_keys(&k, "2000", "1K", -1); /* the suffix decides first */
    expect_keys(&k, "1m", "1", 0);     /* only k in lower case */
    expect_keys(&k, "1Q", "1", 0);     /* R and Q came after coreutils 9.1 */
    /* With f the suffix is folded first. */
    SETUP_OK(&k, "-h", "-f");
    expect_keys(&k, "1m", "1M", 0);
}

static void test_month(void **state)
{
    (void)state;
    struct dsort_keys k;
    SETUP_OK(&k, "-M");
    EXPECT_ASCENDING(&k, "xyz", "jan", "FEB", " Mar", "apr", "May", "jun", "JUL", "aug", "sep",
                     "oct", "nov", "dec");
    expect_keys(&k, "January", "JAN", 0);
    expect_keys(&k, "Ja", "", 0);
    expect_keys(&k, "\tjun", "JUNE", 0);
}

static void test_version(void **state)
{
    (void)state;
    struct dsort_keys k;
    SETUP_OK(&k, "-V");
    EXPECT_ASCENDING(&k, "", ".", "..", ".a", ".0", "..a", "1.2.9", "1.2.10", "1.10",
                     "file-1.0.tar.gz", "file-1.0a.tar.gz", "file-1.1.tar.gz");
    EXPECT_ASCENDING(&k, "1.0~rc1", "1.0", "1.0a", "1.0.1");
    expect_keys(&k, "a01", "a1", 0);
    expect_keys(&k, "1.2.9a", "1.2.10", -1);
    /* NUL is an ordinary (non-letter) byte for -V. */
    expect_keys_n(&k, "a\0", 2, "a", 1, 1);
    /* d drops punctuation before the comparison. */
    SETUP_OK(&k, "-k", "1Vd");
    expect_keys(&k, "1-2", "12", 0);
    SETUP_OK(&k, "-k", "1Vf");
    expect_keys(&k, "a", "B", -1);
    expect_keys(&k, "1.0A", "1.0a", 0);
}

static void test_text_options(void **state)
{
    (void)state;
    struct dsort_keys k;
    SETUP_OK(&k, "-f");
    expect_keys(&k, "abc", "ABC", 0);
    expect_keys(&k, "a", "B", -1);
    expect_keys(&k, "_", "a", 1); /* 'A' < '_' < 'a' */
    SETUP_OK(&k, "-d");
    expect_keys(&k, "a-b c", "ab c", 0);
    expect_keys(&k, "a\tb", "ab", -1); /* blanks count */
    SETUP_OK(&k, "-i");
    expect_keys(&k,
                "a\x01\x80"
                "b",
                "ab", 0);
    expect_keys(&k, "a\tb", "ab", 0); /* tab is not printable */
    SETUP_OK(&k, "-df");
    expect_keys(&k, "A.b", "ab", 0);
    SETUP_OK(&k, "-b");
    expect_keys(&k, "  x", "x", 0);
}

/* The keys' first key alone (with no keys: none, the whole line). */
static struct dsort_keys first_key_only(const struct dsort_keys *k)
{
    struct dsort_keys f = *k;
    if (f.n > 1)
        f.n = 1;
    return f;
}

/* When lines a and b have equal prefixes that decide, their first keys must compare equal
 * and the after_first comparisons must agree with the full ones. Returns false if not. */
static bool decides_ok(const struct dsort_keys *k, const unsigned char *a, size_t alen, uint64_t pa,
                       const unsigned char *b, size_t blen, uint64_t pb)
{
    if (pa != pb || !dsort_keys_prefix_decides(k, pa))
        return true;
    struct dsort_keys f = first_key_only(k);
    return dsort_keys_compare_keys(&f, a, alen, b, blen) == 0 &&
           sgn(dsort_keys_compare_after_first(k, a, alen, b, blen)) ==
               sgn(dsort_keys_compare(k, a, alen, b, blen)) &&
           sgn(dsort_keys_compare_keys_after_first(k, a, alen, b, blen)) ==
               sgn(dsort_keys_compare_keys(k, a, alen, b, blen));
}

/* prefix(a) < prefix(b) must mean compare(a, b) < 0, and equal keys equal prefixes; equal
 * prefixes that decide mean equal first keys. */
static void test_prefix_contract(void **state)
{
    (void)state;
    static const char *const sets[][8] = {
        {NULL},
        {"-r", NULL},
        {"-f", NULL},
        {"-b", "-r", NULL},
        {"-k", "2,2", NULL},
        {"-k", "2bfr,2", "-k", "1n", NULL},
        {"-t", "a", "-k", "2.2", "-s", NULL},
        {"-u", "-k", "1.3,1.4f", NULL},
        {"-n", NULL},
        {"-k", "1d", NULL},
        {"-k", "1,1", "-k", "2r", NULL},
        {"-k", "1.2,1.5f", "-k", "1.1,1.1", NULL},
        {"-t", "a", "-k", "2,2r", "-k", "3", NULL},
        {"-r", "-k", "1,1b", "-k", "1.3", "-s", NULL},
        {"-b", "-f", NULL},
    };
    static const char alphabet[] = "aAbB \t01-.\x80\x01\0";
    rng_seed();
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        struct dsort_keys k;
        setup_ok_v(&k, sets[s]);
        unsigned char lines[64][12];
        size_t len[64];
        uint64_t pre[64];
        for (int i = 0; i < 64; i++) {
            len[i] = rng_next() % 13;
            for (size_t j = 0; j < len[i]; j++)
                lines[i][j] = (unsigned char)alphabet[rng_next() % (sizeof alphabet - 1)];
            pre[i] = dsort_keys_prefix(&k, lines[i], len[i]);
            if (!dsort_keys_has_prefix(&k))
                assert_true(pre[i] == 0);
        }
        for (int i = 0; i < 64; i++)
            for (int j = 0; j < 64; j++) {
                int c = dsort_keys_compare(&k, lines[i], len[i], lines[j], len[j]);
                int ck = dsort_keys_compare_keys(&k, lines[i], len[i], lines[j], len[j]);
                if ((pre[i] < pre[j] && c >= 0) || (ck == 0 && pre[i] != pre[j]) ||
                    !decides_ok(&k, lines[i], len[i], pre[i], lines[j], len[j], pre[j])) {
                    print_error("set %zu, seed %" PRIu64 ": lines %d %d\n", s, rng_seed_value, i,
                                j);
                    fail();
                }
            }
    }
    struct dsort_keys k;
    SETUP_OK(&k, "-k", "1,1");
    assert_true(dsort_keys_has_prefix(&k));
    SETUP_OK(&k, "-k", "1,1V");
    assert_false(dsort_keys_has_prefix(&k));
}

/* A line for the number prefix tests: bytes and length (NUL and 0x80 inside allowed). */
struct pline {
    unsigned char b[300];
    size_t len;
};

static void pline_set(struct pline *l, const char *s, size_t len)
{
    assert_true(len <= sizeof l->b);
    memcpy(l->b, s, len);
    l->len = len;
}

/* PREFIX, then `digits` copies of c, then SUFFIX. */
static void pline_rep(struct pline *l, const char *prefix, char c, size_t digits,
                      const char *suffix)
{
    size_t a = strlen(prefix), z = strlen(suffix);
    assert_true(a + digits + z <= sizeof l->b);
    memcpy(l->b, prefix, a);
    memset(l->b + a, c, digits);
    memcpy(l->b + a + digits, suffix, z);
    l->len = a + digits + z;
}

/* Hand-picked -n and -h corners: signs, zeros, leading zeros, trailing fraction zeros, byte
 * 0x80 (a thousands separator in -n, not in -h's suffix scan), NULs, blanks, junk, values
 * that differ only past the prefix's digits, and digit counts on both sides of the exponent
 * clamps (63 integer digits and 62 leading fraction zeros for -n, 31 and 30 for -h). */
static size_t number_corners(struct pline *l, size_t cap)
{
    static const char *const plain[] = {
        "",
        "-",
        "-0",
        "+0",
        "+5",
        ".",
        "-.",
        "0",
        "00",
        "0.000",
        "-0.000",
        "-00.00",
        "0.",
        ".0",
        "-.0",
        "1",
        "01",
        "001",
        "00012",
        "12",
        "1.5",
        "1.50",
        "1.500",
        "-1.5",
        "-1.50",
        "0.5",
        ".5",
        "-.5",
        "0.05",
        "0.0500",
        "-0.05",
        "-.050",
        "9.99",
        "10",
        "-10",
        "-9.99",
        "1\x80"
        "5",
        "15",
        "\x80\x80"
        "1",
        "1\x80",
        "1\x80.5",
        "0\x80.5",
        "-\x80"
        "1",
        "1.\x80"
        "5",
        "1\x80\x80"
        "2",
        "\x80",
        "-\x80",
        "\x80.5",
        " 5",
        "\t-5",
        "\n5",
        "  -0",
        "5abc",
        "5 6",
        "1e5",
        "- 1",
        "--1",
        "12345678901234567",
        "12345678901234568",
        "1234567890123456",
        "-12345678901234567",
        "-12345678901234568",
        "0.12345678901234567",
        "0.12345678901234568",
        "1234567890123456.7",
        "1234567890123456.8",
        "99999999999999999",
        "100000000000000000",
        "-99999999999999999",
        "1K",
        "1k",
        "1M",
        "1m",
        "-1K",
        "-1M",
        "0K",
        "-0K",
        "0.0K",
        "1.5K",
        "1500",
        "1K5",
        "1 K",
        "1\x80K",
        "\x80"
        "1K",
        "1\x80"
        "5K",
        "1Ki",
        "1KB",
        "1R",
        "1Q",
        "1E",
        "1Y",
        "1Z",
        "999Y",
        "-999Y",
        "-1Y",
        "0.001Y",
        "-.5G",
        "1G",
        "1T",
        "1P",
        "1e",
        "1y",
        "1g",
        "Ka",
        "K",
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        assert_true(n < cap);
        pline_set(&l[n++], plain[i], strlen(plain[i]));
    }
    static const char nul1[] = "1\0"
                               "2";
    static const char nul2[] = "-3\0"
                               ".5";
    static const char nul3[] = "\0"
                               "7";
    static const char nul4[] = "1.5\0"
                               "9K";
    pline_set(&l[n++], nul1, sizeof nul1 - 1);
    pline_set(&l[n++], nul2, sizeof nul2 - 1);
    pline_set(&l[n++], nul3, sizeof nul3 - 1);
    pline_set(&l[n++], nul4, sizeof nul4 - 1);
    /* Integer digit counts around the clamps: 1 followed by zeros, 9s, and 2s. */
    static const size_t counts[] = {14, 15, 16, 17, 29, 30,  31,  32,  33,
                                    61, 62, 63, 64, 65, 126, 127, 128, 200};
    static const char *const signs[] = {"", "-"};
    for (size_t s = 0; s < 2; s++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            assert_true(n + 6 <= cap);
            pline_rep(&l[n], signs[s], '0', counts[c], "");
            l[n].b[strlen(signs[s])] = '1';
            n++;
            pline_rep(&l[n++], signs[s], '9', counts[c], "");
            pline_rep(&l[n++], signs[s], '2', counts[c], s ? "K" : ".5");
            /* 0.000...01, with counts[c] zeros after the point */
            char pre[8];
            snprintf(pre, sizeof pre, "%s0.", signs[s]);
            pline_rep(&l[n++], pre, '0', counts[c], "1");
            pline_rep(&l[n++], pre, '0', counts[c], "9K");
            pline_rep(&l[n++], pre, '0', counts[c], "10");
        }
    return n;
}

/* The prefix contract on every pair of corner lines (and of the lines with a second field
 * appended), under numeric and human first keys with b, f, r, s, u and later keys. */
static void test_number_prefix(void **state)
{
    (void)state;
    static const char *const sets[][8] = {
        {"-n", NULL},
        {"-nr", NULL},
        {"-k", "1n", NULL},
        {"-k", "1,1nr", NULL},
        {"-b", "-n", NULL},
        {"-k", "1bn,1b", "-k", "2r", NULL},
        {"-k", "1.2n", NULL},
        {"-s", "-n", NULL},
        {"-u", "-nr", NULL},
        {"-t", ",", "-k", "2n", "-k", "1", NULL},
        {"-t", "\t", "-k", "1,1nrb", "-k", "2,2n", NULL},
        {"-h", NULL},
        {"-hr", NULL},
        {"-k", "1,1hf", NULL},
        {"-k", "1hbr", "-k", "2n", NULL},
        {"-f", "-h", NULL},
        {"-u", "-h", NULL},
        {"-t", ",", "-k", "2h", "-s", NULL},
    };
    static struct pline lines[800];
    size_t base = number_corners(lines, 400), n = base;
    /* Each corner also with a second field: "x,CORNER\tY" style lines mixing separators. */
    for (size_t i = 0; i < base && n < 800; i++) {
        struct pline *l = &lines[n++];
        const struct pline *c = &lines[i];
        const char *tail[] = {"\t7", ",-3", " a", "\t-0.5,1K"};
        const char *t = tail[i % 4];
        size_t tl = strlen(t);
        if (c->len + tl + 2 > sizeof l->b) {
            n--;
            continue;
        }
        l->b[0] = i % 2 ? 'x' : ',';
        memcpy(l->b + 1, c->b, c->len);
        memcpy(l->b + 1 + c->len, t, tl);
        l->len = 1 + c->len + tl;
        /* Also a variant without the first byte: the corner first, then the tail. */
        if (n < 800 && i % 3 == 0) {
            pline_set(&lines[n], (const char *)l->b + 1, l->len - 1);
            n++;
        }
    }
    static uint64_t pre[800];
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        struct dsort_keys k;
        setup_ok_v(&k, sets[s]);
        assert_true(dsort_keys_has_prefix(&k));
        for (size_t i = 0; i < n; i++)
            pre[i] = dsort_keys_prefix(&k, lines[i].b, lines[i].len);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                const struct pline *a = &lines[i], *b = &lines[j];
                int c = dsort_keys_compare(&k, a->b, a->len, b->b, b->len);
                int ck = dsort_keys_compare_keys(&k, a->b, a->len, b->b, b->len);
                if ((c < 0 && pre[i] > pre[j]) || (ck == 0 && pre[i] != pre[j]) ||
                    !decides_ok(&k, a->b, a->len, pre[i], b->b, b->len, pre[j])) {
                    print_error("set %zu: lines %zu and %zu: compare %d keys %d, prefixes "
                                "%016llx %016llx\n",
                                s, i, j, c, ck, (unsigned long long)pre[i],
                                (unsigned long long)pre[j]);
                    fail();
                }
            }
    }
}

static uint64_t prefix_of(const struct dsort_keys *k, const char *s)
{
    return dsort_keys_prefix(k, (const unsigned char *)s, strlen(s));
}

/* The number prefixes tell apart what they should: distinct values with few digits, the
 * classes, and exponents up to the clamps. */
static void test_number_prefix_resolution(void **state)
{
    (void)state;
    struct dsort_keys k;
    static const char *const up[] = {"-1000",
                                     "-999.5",
                                     "-10",
                                     "-1",
                                     "-0.5",
                                     "-0.05",
                                     "0",
                                     "0.05",
                                     "0.5",
                                     "1",
                                     "1.5",
                                     "9.99",
                                     "10",
                                     "1234567",
                                     "1234567.01",
                                     "1234568",
                                     "1234567890123456"};
    SETUP_OK(&k, "-k", "1n");
    for (size_t i = 0; i + 1 < sizeof up / sizeof up[0]; i++)
        assert_true(prefix_of(&k, up[i]) < prefix_of(&k, up[i + 1]));
    assert_true(prefix_of(&k, "1.50") == prefix_of(&k, "1.5"));
    assert_true(prefix_of(&k, "-0") == prefix_of(&k, "abc"));
    assert_true(prefix_of(&k, "1\x80"
                              "2") == prefix_of(&k, "12"));
    /* 16 significant digits are kept, the 17th is not. */
    assert_true(prefix_of(&k, "1234567890123456") < prefix_of(&k, "1234567890123457"));
    assert_true(prefix_of(&k, "12345678901234567") == prefix_of(&k, "12345678901234568"));
    SETUP_OK(&k, "-nr");
    assert_true(prefix_of(&k, "2") < prefix_of(&k, "1"));
    assert_true(prefix_of(&k, "-1") > prefix_of(&k, "0"));

    /* The exponent clamps: 63 integer digits and 62 fraction zeros are still exact. */
    struct pline a, b;
    SETUP_OK(&k, "-n");
    pline_rep(&a, "", '9', 63, "");
    pline_rep(&b, "1", '0', 63, "");
    assert_true(dsort_keys_prefix(&k, a.b, a.len) < dsort_keys_prefix(&k, b.b, b.len));
    pline_rep(&a, "2", '0', 64, "");
    assert_true(dsort_keys_prefix(&k, a.b, a.len) == dsort_keys_prefix(&k, b.b, b.len));
    pline_rep(&a, "0.", '0', 62, "1");
    pline_rep(&b, "0.", '0', 61, "1");
    assert_true(dsort_keys_prefix(&k, a.b, a.len) < dsort_keys_prefix(&k, b.b, b.len));
    pline_rep(&b, "0.", '0', 63, "9");
    assert_true(dsort_keys_prefix(&k, b.b, b.len) < dsort_keys_prefix(&k, a.b, a.len));
    assert_true(prefix_of(&k, "0") < dsort_keys_prefix(&k, b.b, b.len));

    static const char *const hup[] = {"-1Y", "-999K", "-1K",  "-5", "-0.5", "0", "1",
                                      "999", "1k",    "1.5K", "1M", "1G",   "1Y"};
    SETUP_OK(&k, "-h");
    for (size_t i = 0; i + 1 < sizeof hup / sizeof hup[0]; i++)
        assert_true(prefix_of(&k, hup[i]) < prefix_of(&k, hup[i + 1]));
    assert_true(prefix_of(&k, "0") == prefix_of(&k, "0K"));
    assert_true(prefix_of(&k, "1m") == prefix_of(&k, "1")); /* without f, 'm' is no suffix */
    SETUP_OK(&k, "-hf");
    assert_true(prefix_of(&k, "1m") == prefix_of(&k, "1M"));

    /* Still nothing for g, V, M, d, i first keys. */
    SETUP_OK(&k, "-g");
    assert_false(dsort_keys_has_prefix(&k));
    SETUP_OK(&k, "-M");
    assert_false(dsort_keys_has_prefix(&k));
    SETUP_OK(&k, "-k", "1d");
    assert_false(dsort_keys_has_prefix(&k));
    SETUP_OK(&k, "-k", "1,1h", "-k", "2g");
    assert_true(dsort_keys_has_prefix(&k));
}

static bool decides_of(const struct dsort_keys *k, const char *s)
{
    return dsort_keys_prefix_decides(k, prefix_of(k, s));
}

/* dsort_keys_prefix_decides: exact numbers and zeros, short plain keys; never for other
 * first keys. And the after_first comparisons skip the first key. */
/* Global options (letters) and -k specs (NULL-ended) on a zero seed, finished: *err's status. */
static enum dsort_status random_setup(struct dsort_keys *k, const char *globals,
                                      const char *const *specs, struct dsort_error *err)
{
    static const unsigned char zero[16];
    dsort_keys_init(k);
    dsort_keys_set_random_seed(k, zero);
    for (; *globals; globals++)
        assert_int_equal(dsort_keys_set_global(k, *globals, err), DSORT_OK);
    for (; *specs; specs++)
        assert_int_equal(dsort_keys_add(k, *specs, err), DSORT_OK);
    return dsort_keys_finish(k, err);
}

/* R: GNU's keyed MD5 order. The digests (MD5 of the 16-byte seed, then the key) were computed
 * apart (Python's hashlib): with a zero seed, "a" 0531103a..., "b" 286488e1..., "c"
 * fb8dd257...; 100 'x' 5ab3192f...; seed 0..15 then 47 'A' (63 bytes: the padding's edge)
 * 1988c4db.... */
static void test_random(void **state)
{
    (void)state;
    struct dsort_keys k;
    struct dsort_error err;
    const char *none[] = {NULL};
    assert_int_equal(random_setup(&k, "R", none, &err), DSORT_OK);
    expect_cmp(&k, "a", "b", -1);
    expect_cmp(&k, "b", "c", -1);
    assert_true(prefix_of(&k, "a") == UINT64_C(0x0531103ad8fc7dd4));
    char x[101], a[48];
    memset(x, 'x', 100);
    x[100] = '\0';
    memset(a, 'A', 47);
    a[47] = '\0';
    assert_true(prefix_of(&k, x) == UINT64_C(0x5ab3192fbf1e0552));
    assert_false(dsort_keys_prefix_decides(&k, prefix_of(&k, "a")));
    unsigned char seed[16];
    for (int i = 0; i < 16; i++)
        seed[i] = (unsigned char)i;
    dsort_keys_set_random_seed(&k, seed);
    assert_true(prefix_of(&k, a) == UINT64_C(0x1988c4db7a6faefc));

    /* -Rr reverses; f folds before hashing, so "abc" and "ABC" are equal keys, and the last
     * resort orders them; with -s they tie; d drops the '.' first. */
    assert_int_equal(random_setup(&k, "Rr", none, &err), DSORT_OK);
    expect_cmp(&k, "c", "b", -1);
    expect_cmp(&k, "b", "a", -1);
    assert_true(prefix_of(&k, "a") == ~UINT64_C(0x0531103ad8fc7dd4));
    assert_int_equal(random_setup(&k, "", (const char *[]){"1,1fR", NULL}, &err), DSORT_OK);
    expect_keys(&k, "abc", "ABC", 0);
    expect_cmp(&k, "ABC", "abc", -1);
    assert_true(prefix_of(&k, "abc") == prefix_of(&k, "ABC"));
    assert_int_equal(random_setup(&k, "", (const char *[]){"1,1dfR", NULL}, &err), DSORT_OK);
    k.stable = 1;
    assert_int_equal(dsort_keys_finish(&k, &err), DSORT_OK);
    expect_cmp(&k, "a.b.C", "AbC", 0);
    /* a key with R inherits nothing; R goes with V, d and i but not with n (GNU's letters) */
    assert_int_equal(random_setup(&k, "RV", none, &err), DSORT_OK);
    expect_cmp(&k, "a", "b", -1);
    assert_int_equal(random_setup(&k, "nR", none, &err), DSORT_EINVAL);
    assert_string_equal(err.msg, "options '-nR' are incompatible");
    assert_int_equal(random_setup(&k, "dfgiMnR", none, &err), DSORT_EINVAL);
    assert_string_equal(err.msg, "options '-dfgMnR' are incompatible");
}

/* +POS1 [-POS2]: GNU's obsolete keys, as the -k keys that its manual gives for them. */
static void expect_obsolete(const char *pos1, const char *pos2, const char *k_spec)
{
    struct dsort_keys a, b;
    struct dsort_error err;
    int not_key = 1;
    dsort_keys_init(&a);
    dsort_keys_init(&b);
    assert_int_equal(dsort_keys_add_obsolete(&a, pos1, pos2, &not_key, &err), DSORT_OK);
    assert_int_equal(not_key, 0);
    assert_int_equal(dsort_keys_add(&b, k_spec, &err), DSORT_OK);
    if (memcmp(&a.key[0], &b.key[0], sizeof a.key[0]))
        print_error("+POS '%s' '%s' is not -k %s\n", pos1, pos2 ? pos2 : "", k_spec);
    assert_memory_equal(&a.key[0], &b.key[0], sizeof a.key[0]);
}

static void test_obsolete(void **state)
{
    (void)state;
    expect_obsolete("+1", "-3", "2,3");
    expect_obsolete("+0", NULL, "1");
    expect_obsolete("+1.1", "-1.2", "2.2,2.2");
    expect_obsolete("+0.1n", NULL, "1.2n");
    expect_obsolete("+0", "-1.0", "1,1");
    expect_obsolete("+0", "-1.1b", "1,2.1b");
    expect_obsolete("+2b", "-4.3fr", "3b,5.3fr");
    expect_obsolete("+1", "-0", "2,1"); /* -0 keeps field 0 (1-based 1), as GNU does */
    struct dsort_keys k;
    struct dsort_error err;
    int not_key = 0;
    dsort_keys_init(&k);
    /* not keys: GNU takes them for files */
    const char *files[] = {"+1x", "+", "+a", "1", "+1.x", NULL};
    for (const char *const *f = files; *f; f++) {
        not_key = 0;
        assert_int_equal(dsort_keys_add_obsolete(&k, *f, NULL, &not_key, &err), DSORT_EINVAL);
        assert_int_equal(not_key, 1);
    }
    assert_int_equal(k.n, 0);
    assert_int_equal(dsort_keys_add_obsolete(&k, "+1", "-2x", &not_key, &err), DSORT_EINVAL);
    assert_int_equal(not_key, 0);
    assert_string_equal(err.msg,
                        "stray character in field spec: invalid field specification '-2x'");
    assert_int_equal(dsort_keys_add_obsolete(&k, "+1", "-2.y", &not_key, &err), DSORT_EINVAL);
    assert_string_equal(err.msg, "invalid number after '.': invalid count at start of 'y'");
}

static void test_prefix_decides(void **state)
{
    (void)state;
    struct dsort_keys k;
    static const char *const exact[] = {"0",
                                        "-0",
                                        "abc",
                                        "",
                                        "0.000",
                                        "5",
                                        "5.0",
                                        "-5",
                                        "1.5",
                                        "-1.50",
                                        "0.05",
                                        "-.05",
                                        "1234567890123456",
                                        "-1234567890123456",
                                        "1234567890123456000",
                                        "1\x80"
                                        "000",
                                        "0.1234567890123456",
                                        "-123456789012345.6",
                                        "100000000000000000000",
                                        "7 junk"};
    static const char *const inexact[] = {"12345678901234567",   "-12345678901234567",
                                          "1234567890123456.1",  "0.12345678901234567",
                                          "-1000000000000000.5", "10000000000000000000001"};
    static const char *const nsets[][8] = {
        {"-n", NULL}, {"-nr", NULL}, {"-k", "1,1n", "-k", "2", NULL}, {"-k", "1bnr", NULL}};
    for (size_t s = 0; s < sizeof nsets / sizeof nsets[0]; s++) {
        setup_ok_v(&k, nsets[s]);
        for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
            assert_true(decides_of(&k, exact[i]));
        for (size_t i = 0; i < sizeof inexact / sizeof inexact[0]; i++)
            assert_false(decides_of(&k, inexact[i]));
    }
    /* Exact values sort below inexact ones with the same digits, and above for negatives. */
    SETUP_OK(&k, "-n");
    assert_true(prefix_of(&k, "1234567890123456") < prefix_of(&k, "1234567890123456.0001"));
    assert_true(prefix_of(&k, "1234567890123456.0001") < prefix_of(&k, "1234567890123457"));
    assert_true(prefix_of(&k, "-1234567890123456") > prefix_of(&k, "-1234567890123456.0001"));
    assert_true(prefix_of(&k, "-1234567890123456.0001") > prefix_of(&k, "-1234567890123457"));
    assert_true(prefix_of(&k, "12345678901234560") < prefix_of(&k, "12345678901234561"));
    assert_true(prefix_of(&k, "1234567890123456000") == prefix_of(&k, "1234567890123456000.0"));
    assert_true(prefix_of(&k, "12345678901234567") == prefix_of(&k, "12345678901234568"));
    /* Past the exponent clamps, never. */
    struct pline a;
    pline_rep(&a, "1", '0', 63, "");
    assert_false(dsort_keys_prefix_decides(&k, dsort_keys_prefix(&k, a.b, a.len)));
    pline_rep(&a, "1", '0', 62, "");
    assert_true(dsort_keys_prefix_decides(&k, dsort_keys_prefix(&k, a.b, a.len)));
    pline_rep(&a, "-0.", '0', 62, "5");
    assert_true(dsort_keys_prefix_decides(&k, dsort_keys_prefix(&k, a.b, a.len)));
    pline_rep(&a, "-0.", '0', 63, "5");
    assert_false(dsort_keys_prefix_decides(&k, dsort_keys_prefix(&k, a.b, a.len)));

    /* -h: 15 digits, the suffix order held too. */
    SETUP_OK(&k, "-h");
    assert_true(decides_of(&k, "1.5K"));
    assert_true(decides_of(&k, "-3M"));
    assert_true(decides_of(&k, "0K"));
    assert_true(decides_of(&k, "123456789012345G"));
    assert_false(decides_of(&k, "1234567890123456G"));
    assert_true(prefix_of(&k, "1K") != prefix_of(&k, "1M"));
    SETUP_OK(&k, "-hr");
    assert_true(decides_of(&k, "-1.5K"));
    assert_false(decides_of(&k, "-1234567890123456K"));

    /* Plain bytes: keys (or lines) of at most 7 bytes, with f, b, r; not 8 bytes. */
    static const char *const psets[][8] = {
        {NULL}, {"-r", NULL}, {"-f", NULL}, {"-k", "1,1r", NULL}, {"-k", "1b,1", NULL}};
    for (size_t s = 0; s < sizeof psets / sizeof psets[0]; s++) {
        setup_ok_v(&k, psets[s]);
        assert_true(decides_of(&k, ""));
        assert_true(decides_of(&k, "abcdefg"));
        assert_true(decides_of(&k, "a"));
        assert_false(decides_of(&k, "abcdefgh"));
        assert_false(decides_of(&k, "abcdefg\x01"));
    }
    SETUP_OK(&k, "-t", ",", "-k", "2,2");
    assert_true(decides_of(&k, "abcdefghij,xyz"));
    assert_false(decides_of(&k, "a,abcdefghij"));
    assert_true(prefix_of(&k, "x,ab") < prefix_of(&k, "x,abc"));
    assert_true(prefix_of(&k, "x,abcdefg") < prefix_of(&k, "x,abcdefg\x01"));
    assert_true(prefix_of(&k, "x,abcdefg\x01") == prefix_of(&k, "x,abcdefg\x07"));
    assert_true(prefix_of(&k, "x,abcdefg\x07") < prefix_of(&k, "x,abcdefg\x09"));
    assert_true(prefix_of(&k, "x,abcdefgh") < prefix_of(&k, "x,abcdefgi"));

    /* Nothing for the other first keys. */
    static const char *const nones[][4] = {
        {"-g", NULL}, {"-M", NULL}, {"-V", NULL}, {"-d", NULL}, {"-i", NULL}};
    for (size_t s = 0; s < sizeof nones / sizeof nones[0]; s++) {
        setup_ok_v(&k, nones[s]);
        assert_false(decides_of(&k, "1"));
        assert_false(decides_of(&k, ""));
        assert_false(dsort_keys_prefix_decides(&k, 0));
    }

    /* after_first skips the first key: here it would say a > b. */
    SETUP_OK(&k, "-k", "1,1", "-k", "2,2r");
#define AF(fn, a, b)                                                                               \
    fn(&k, (const unsigned char *)(a), strlen(a), (const unsigned char *)(b), strlen(b))
    assert_true(AF(dsort_keys_compare_keys_after_first, "b 1", "a 2") > 0);
    assert_true(AF(dsort_keys_compare_after_first, "b 1", "a 2") > 0);
    assert_true(AF(dsort_keys_compare_keys_after_first, "b 1", "a 1") == 0);
    assert_true(AF(dsort_keys_compare_after_first, "b 1", "a 1") > 0); /* last resort */
    SETUP_OK(&k, "-s", "-k", "1,1", "-k", "2,2r");
    assert_true(AF(dsort_keys_compare_after_first, "b 1", "a 1") == 0);
    SETUP_OK(&k, "-r");
    assert_true(AF(dsort_keys_compare_after_first, "a", "b") > 0);
    assert_true(AF(dsort_keys_compare_keys_after_first, "a", "b") > 0);
    SETUP_OK(&k, "-t", ",", "-k", "2,2n");
    assert_true(AF(dsort_keys_compare_after_first, "b,5", "a,7") > 0);
    assert_true(AF(dsort_keys_compare_keys_after_first, "b,5", "a,7") == 0);
#undef AF
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_errors),    cmocka_unit_test(test_too_many_keys),
        cmocka_unit_test(test_positions),      cmocka_unit_test(test_inheritance),
        cmocka_unit_test(test_incompatible),   cmocka_unit_test(test_plain_and_last_resort),
        cmocka_unit_test(test_fields),         cmocka_unit_test(test_numeric),
        cmocka_unit_test(test_general),        cmocka_unit_test(test_human),
        cmocka_unit_test(test_month),          cmocka_unit_test(test_version),
        cmocka_unit_test(test_text_options),   cmocka_unit_test(test_prefix_contract),
        cmocka_unit_test(test_number_prefix),  cmocka_unit_test(test_number_prefix_resolution),
        cmocka_unit_test(test_prefix_decides), cmocka_unit_test(test_random),
        cmocka_unit_test(test_obsolete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
