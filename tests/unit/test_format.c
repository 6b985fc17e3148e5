/* Unit tests for format.h: parsing format specs, canonical names, key comparison and the
 * tie-order rule. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "format.h"

static void expect_good(const char *spec, size_t size, size_t off, size_t len, const char *name)
{
    struct dsort_format f;
    struct dsort_error err;
    dsort_error_clear(&err);
    memset(&f, 0xA5, sizeof f);
    enum dsort_status st = dsort_format_parse(spec, &f, &err);
    if (st != DSORT_OK)
        print_error("spec '%s': %s\n", spec, err.msg);
    assert_int_equal(st, DSORT_OK);
    assert_int_equal(f.kind, DSORT_FORMAT_FIXED);
    assert_int_equal(f.rec_size, size);
    assert_int_equal(f.key_off, off);
    assert_int_equal(f.key_len, len);
    assert_string_equal(f.name, name);
}

/* Returns 1 if spec is rejected with DSORT_EINVAL and a message naming it, else prints why. */
static int rejected(const char *spec)
{
    struct dsort_format f;
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_format_parse(spec, &f, &err);
    if (st != DSORT_EINVAL) {
        print_error("spec '%s' was accepted (status %d, name '%s')\n", spec, (int)st,
                    st == DSORT_OK ? f.name : "");
        return 0;
    }
    if (err.status != DSORT_EINVAL || !strstr(err.msg, spec)) {
        print_error("message for '%s' does not name it: %s\n", spec, err.msg);
        return 0;
    }
    return 1;
}

static void test_parse_good(void **state)
{
    (void)state;
    expect_good("gensort", 100, 0, 10, "gensort");
    expect_good("fixed:100:0:10", 100, 0, 10, "fixed:100:0:10");
    expect_good("fixed:10:5:5", 10, 5, 5, "fixed:10:5:5");
    expect_good("fixed:8:0:3", 8, 0, 3, "fixed:8:0:3");
    expect_good("fixed:40:2:30", 40, 2, 30, "fixed:40:2:30");
    expect_good("fixed:1:0:1", 1, 0, 1, "fixed:1:0:1");
    expect_good("fixed:64:0:64", 64, 0, 64, "fixed:64:0:64");
    /* Leading zeros are decimal, and the canonical name drops them. */
    expect_good("fixed:0100:00:010", 100, 0, 10, "fixed:100:0:10");
    /* The largest record the parser allows. */
    expect_good("fixed:16777216:0:16777216", 16777216, 0, 16777216, "fixed:16777216:0:16777216");
}

static void test_parse_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "gensort ",
        " gensort",
        "Gensort",
        "gensort:100",
        "fixed",
        "fixed:",
        "fixed:100",
        "fixed:100:0",
        "fixed:100:0:",
        "fixed:10:0:",
        "fixed::0:10",
        "fixed:0:0:0",
        "fixed:0:0:1",
        "fixed:10:0:0",
        "fixed:10:5:6",  /* key runs past the record */
        "fixed:10:10:1", /* key starts past the record */
        "fixed:a:b:c",
        "fixed:100:0:10x",
        "fixed:100:0:10:",
        "fixed:100:0:10:5",
        "fixed:100:0:10 ",
        "fixed:-100:0:10",
        "fixed:+100:0:10",
        "fixed: 100:0:10",
        "fixed:100:-1:10",
        "fixed:1e2:0:10",
        "fixed:0x64:0:10",
        "fixed:16777217:0:10",              /* above the 16 MiB limit */
        "fixed:18446744073709551616:0:10",  /* overflows uint64 */
        "fixed:100:18446744073709551615:2", /* off + len would wrap */
        "fixed:100:99999999999999999999999:10",
        "FIXED:100:0:10",
        "lines",
    };
    /* Try them all before failing, so that one run lists every accepted spec. */
    size_t accepted = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        accepted += !rejected(bad[i]);
    assert_int_equal(accepted, 0);
}

/* A number too large says the limit; a field that is not a number says what a field is. */
static void test_parse_messages(void **state)
{
    (void)state;
    static const char *const big[] = {"fixed:20971520:5:10", "fixed:100:16777217:10",
                                      "fixed:100:0:18446744073709551616"};
    struct dsort_format f;
    struct dsort_error err;
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        assert_int_equal(dsort_format_parse(big[i], &f, &err), DSORT_EINVAL);
        if (!strstr(err.msg, "at most 16777216")) {
            print_error("message for '%s' does not give the limit: %s\n", big[i], err.msg);
            fail();
        }
    }
    assert_int_equal(dsort_format_parse("fixed:100:0:10x", &f, &err), DSORT_EINVAL);
    assert_non_null(strstr(err.msg, "decimal numbers"));
    assert_null(strstr(err.msg, "at most"));
}

static void test_gensort_helper(void **state)
{
    (void)state;
    struct dsort_format a, b;
    struct dsort_error err;
    dsort_format_gensort(&a);
    assert_int_equal(dsort_format_parse("fixed:100:0:10", &b, &err), DSORT_OK);
    assert_int_equal(a.kind, b.kind);
    assert_int_equal(a.rec_size, b.rec_size);
    assert_int_equal(a.key_off, b.key_off);
    assert_int_equal(a.key_len, b.key_len);
    assert_string_equal(a.name, "gensort");
}

static void test_name_round_trip(void **state)
{
    (void)state;
    /* The canonical name parses back to the same format. */
    static const char *const specs[] = {"gensort", "fixed:8:0:3", "fixed:40:2:30",
                                        "fixed:00012:0003:9"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        struct dsort_format a, b;
        struct dsort_error err;
        assert_int_equal(dsort_format_parse(specs[i], &a, &err), DSORT_OK);
        assert_int_equal(dsort_format_parse(a.name, &b, &err), DSORT_OK);
        assert_string_equal(a.name, b.name);
        assert_int_equal(a.rec_size, b.rec_size);
        assert_int_equal(a.key_off, b.key_off);
        assert_int_equal(a.key_len, b.key_len);
    }
}

static void test_key_cmp(void **state)
{
    (void)state;
    struct dsort_format f;
    struct dsort_error err;
    assert_int_equal(dsort_format_parse("fixed:6:2:3", &f, &err), DSORT_OK);
    const unsigned char a[6] = {9, 9, 1, 2, 3, 0};
    const unsigned char b[6] = {0, 0, 1, 2, 4, 9};
    const unsigned char c[6] = {7, 7, 1, 2, 3, 7}; /* same key as a, other bytes differ */
    const unsigned char d[6] = {0, 0, 0x80, 0, 0, 0};
    assert_ptr_equal(dsort_format_key(&f, a), a + 2);
    assert_true(dsort_format_key_cmp(&f, a, b) < 0);
    assert_true(dsort_format_key_cmp(&f, b, a) > 0);
    assert_int_equal(dsort_format_key_cmp(&f, a, c), 0);
    /* Unsigned bytes: 0x80 is above 0x01. */
    assert_true(dsort_format_key_cmp(&f, d, a) > 0);

    struct dsort_order fwd = {0, 0, 0}, rev = {1, 0, 0};
    assert_true(dsort_order_key_cmp(&f, &fwd, a, b) < 0);
    assert_true(dsort_order_key_cmp(&f, &rev, a, b) > 0);
    assert_int_equal(dsort_order_key_cmp(&f, &rev, a, c), 0);
}

static void test_last_resort(void **state)
{
    (void)state;
    for (int r = 0; r < 2; r++)
        for (int u = 0; u < 2; u++)
            for (int s = 0; s < 2; s++) {
                struct dsort_order o = {r, u, s};
                assert_int_equal(dsort_order_last_resort(&o), !u && !s);
            }
}

/* The full comparison: key, then the whole record unless -s or -u, both reversed by -r. */
static void test_cmp(void **state)
{
    (void)state;
    struct dsort_format f;
    struct dsort_error err;
    assert_int_equal(dsort_format_parse("fixed:6:2:3", &f, &err), DSORT_OK);
    for (int r = 0; r < 2; r++)
        for (int u = 0; u < 2; u++)
            for (int st = 0; st < 2; st++) {
                const struct dsort_order o = {r, u, st};
                struct dsort_cmp c;
                memset(&c, 0x5a, sizeof c);
                dsort_cmp_init(&c, &f, &o);
                const int lr = !u && !st;
                assert_int_equal(dsort_order_last_resort(&o), lr);
                assert_int_equal(c.key_off, 2);
                assert_int_equal(c.key_len, 3);
                assert_int_equal(c.reverse, r);
                assert_int_equal(c.tie_len, lr ? 6 : 0);
                if (lr) {
                    assert_int_equal(c.tie_off, 0);
                    assert_int_equal(c.tie_reverse, r);
                }
            }

    const unsigned char a[6] = {9, 9, 1, 2, 3, 0};
    const unsigned char b[6] = {0, 0, 1, 2, 4, 9};
    const unsigned char c[6] = {7, 7, 1, 2, 3, 7}; /* a's key, other bytes smaller first */
    const struct dsort_order fwd = {0, 0, 0}, rev = {1, 0, 0}, fwd_s = {0, 0, 1}, rev_u = {1, 1, 0};
    struct dsort_cmp cf, cr, cs, cu;
    dsort_cmp_init(&cf, &f, &fwd);
    dsort_cmp_init(&cr, &f, &rev);
    dsort_cmp_init(&cs, &f, &fwd_s);
    dsort_cmp_init(&cu, &f, &rev_u);
    /* different keys: the key decides, whatever the other bytes */
    assert_true(dsort_cmp_records(&cf, a, b) < 0);
    assert_true(dsort_cmp_records(&cr, a, b) > 0);
    assert_true(dsort_cmp_records(&cs, b, a) > 0);
    assert_true(dsort_cmp_records(&cu, b, a) < 0);
    assert_true(dsort_cmp_keys(&cf, a, b) < 0);
    assert_true(dsort_cmp_keys(&cr, a, b) > 0);
    /* equal keys: the whole record decides by default, reversed by -r; -s and -u tie */
    assert_true(dsort_cmp_records(&cf, a, c) > 0);
    assert_true(dsort_cmp_records(&cf, c, a) < 0);
    assert_true(dsort_cmp_records(&cr, a, c) < 0);
    assert_int_equal(dsort_cmp_records(&cs, a, c), 0);
    assert_int_equal(dsort_cmp_records(&cu, a, c), 0);
    assert_int_equal(dsort_cmp_keys(&cf, a, c), 0);
    assert_int_equal(dsort_cmp_records(&cf, a, a), 0);
    assert_int_equal(dsort_cmp_records(&cr, a, a), 0);

    /* tie bytes beyond the record: an 8-byte position suffix */
    const unsigned char p[7] = {0, 0, 5, 5, 5, 0, 1}, q[7] = {9, 9, 5, 5, 5, 0, 2};
    const struct dsort_cmp pos = {2, 3, 5, 2, 0, 0}, pos_r = {2, 3, 5, 2, 1, 0};
    assert_true(dsort_cmp_records(&pos, p, q) < 0);
    assert_true(dsort_cmp_records(&pos_r, p, q) < 0); /* keys descending, ties still ascending */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),      cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_parse_messages),  cmocka_unit_test(test_gensort_helper),
        cmocka_unit_test(test_name_round_trip), cmocka_unit_test(test_key_cmp),
        cmocka_unit_test(test_last_resort),     cmocka_unit_test(test_cmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
