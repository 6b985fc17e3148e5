/* Unit tests for typedkey.h: the -k OFF:TYPE[:LEN][:r] parser, and the order of normalised keys
 * against a reference that decodes every key to its value and compares values (numpy's rules
 * for floats: NaNs last and all equal, -0.0 == +0.0), for every type and direction, one key and
 * random sets of three. tests/unit/typedkey_diff.py checks the same order against numpy. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_rng.h"
#include "typedkey.h"

static void expect_good(const char *spec, enum dsort_typedkey_type t, size_t off, size_t len,
                        int desc)
{
    struct dsort_typedkey tk;
    struct dsort_error err;
    dsort_typedkey_init(&tk);
    dsort_error_clear(&err);
    if (dsort_typedkey_add(&tk, spec, &err))
        fail_msg("'%s' rejected: %s", spec, err.msg);
    assert_int_equal(tk.count, 1);
    assert_int_equal(tk.keys[0].type, t);
    assert_int_equal(tk.keys[0].off, off);
    assert_int_equal(tk.keys[0].len, len);
    assert_int_equal(tk.keys[0].desc, desc);
    char name[128];
    dsort_typedkey_name(&tk, name, sizeof name);
    /* The canonical name parses back to the same key. */
    struct dsort_typedkey again;
    dsort_typedkey_init(&again);
    assert_int_equal(dsort_typedkey_add(&again, name, &err), DSORT_OK);
    assert_memory_equal(&again.keys[0], &tk.keys[0], sizeof tk.keys[0]);
}

static void test_parse_good(void **state)
{
    (void)state;
    static const char *names[] = {"u8",    "i8",    "u16le", "u16be", "i16le", "i16be",
                                  "u32le", "u32be", "i32le", "i32be", "u64le", "u64be",
                                  "i64le", "i64be", "f32le", "f32be", "f64le", "f64be"};
    static const size_t sizes[] = {1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8, 4, 4, 8, 8};
    for (int t = 0; t < 18; t++) {
        char spec[64];
        snprintf(spec, sizeof spec, "12:%s", names[t]);
        expect_good(spec, (enum dsort_typedkey_type)t, 12, sizes[t], 0);
        snprintf(spec, sizeof spec, "0:%s:r", names[t]);
        expect_good(spec, (enum dsort_typedkey_type)t, 0, sizes[t], 1);
        assert_string_equal(dsort_typedkey_type_name((enum dsort_typedkey_type)t), names[t]);
    }
    expect_good("3:bytes:10", DSORT_TK_BYTES, 3, 10, 0);
    expect_good("0:bytes:1:r", DSORT_TK_BYTES, 0, 1, 1);
    expect_good("007:u8", DSORT_TK_U8, 7, 1, 0);
    assert_true(dsort_typedkey_is_spec("0:u8"));
    assert_false(dsort_typedkey_is_spec("2,3n"));
    assert_false(dsort_typedkey_is_spec("1.2"));

    struct dsort_typedkey tk;
    struct dsort_error err;
    dsort_typedkey_init(&tk);
    assert_int_equal(dsort_typedkey_add(&tk, "8:i32le", &err), DSORT_OK);
    assert_int_equal(dsort_typedkey_add(&tk, "0:f64be:r", &err), DSORT_OK);
    assert_int_equal(dsort_typedkey_add(&tk, "12:bytes:4", &err), DSORT_OK);
    assert_int_equal(dsort_typedkey_finish(&tk, 16, &err), DSORT_OK);
    assert_int_equal(dsort_typedkey_norm_len(&tk), 16);
    assert_int_equal(tk.keys[1].norm_off, 4);
    assert_int_equal(tk.keys[2].norm_off, 12);
    char name[128];
    dsort_typedkey_name(&tk, name, sizeof name);
    assert_string_equal(name, "8:i32le 0:f64be:r 12:bytes:4");
}

/* spec is rejected by add (or, when it parses, by finish for rec_size) with DSORT_EINVAL and a
 * message that names it and contains want. */
static void expect_bad(const char *spec, size_t rec_size, const char *want)
{
    struct dsort_typedkey tk;
    struct dsort_error err;
    dsort_typedkey_init(&tk);
    dsort_error_clear(&err);
    enum dsort_status st = dsort_typedkey_add(&tk, spec, &err);
    if (st == DSORT_OK)
        st = dsort_typedkey_finish(&tk, rec_size, &err);
    if (st != DSORT_EINVAL)
        fail_msg("'%s' accepted for %zu-byte records", spec, rec_size);
    if (!strstr(err.msg, spec) || !strstr(err.msg, want))
        fail_msg("message for '%s' does not name it or lack '%s': %s", spec, want, err.msg);
}

static void test_parse_bad(void **state)
{
    (void)state;
    expect_bad("8:u64le", 12, "reach past the end of the 12-byte record");
    expect_bad("12:u8", 12, "reach past");
    expect_bad("4:bytes:9", 12, "reach past");
    expect_bad("0:u63le", 12, "unknown type 'u63le'");
    expect_bad("0:U64LE", 12, "unknown type");
    expect_bad("0:u64", 12, "unknown type");
    expect_bad("0:", 12, "unknown type ''");
    expect_bad("0:bytes", 12, "bytes needs a length");
    expect_bad("0:bytes:r", 12, "bytes needs a length");
    expect_bad("0:bytes:0", 12, "LEN must be at least 1");
    expect_bad("0:bytes:99999999999", 12, "LEN must be at most");
    expect_bad("0:u32le:4", 12, "a LEN goes with bytes only");
    expect_bad("0:u32le:x", 12, "'x' after the type");
    expect_bad("0:u32le:r:r", 12, "after the type");
    expect_bad("0:u32le:", 12, "after the type");
    expect_bad("0:u32le:desc", 12, "after the type");
    expect_bad(":u8", 12, "expected OFF:TYPE");
    expect_bad("x:u8", 12, "expected OFF:TYPE");
    expect_bad("-1:u8", 12, "expected OFF:TYPE");
    expect_bad("99999999999:u8", 12, "expected OFF:TYPE");
    expect_bad("1 :u8", 12, "expected OFF:TYPE");

    struct dsort_typedkey tk;
    struct dsort_error err;
    dsort_typedkey_init(&tk);
    assert_int_equal(dsort_typedkey_finish(&tk, 8, &err), DSORT_EINVAL);
    assert_non_null(strstr(err.msg, "no typed key"));
    for (int i = 0; i < DSORT_TYPEDKEY_MAX; i++)
        assert_int_equal(dsort_typedkey_add(&tk, "0:u8", &err), DSORT_OK);
    assert_int_equal(dsort_typedkey_add(&tk, "1:u8", &err), DSORT_EINVAL);
    assert_non_null(strstr(err.msg, "at most 16 keys"));
    assert_int_equal(tk.count, DSORT_TYPEDKEY_MAX);
}

/* ---- the order, against decoded values ---- */

static uint64_t get_bits(const unsigned char *p, size_t n, int le)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[le ? n - 1 - i : i];
    return v;
}

static void put_bits(unsigned char *p, uint64_t v, size_t n, int le)
{
    for (size_t i = 0; i < n; i++)
        p[le ? i : n - 1 - i] = (unsigned char)(v >> (8 * i));
}

static int is_le(enum dsort_typedkey_type t)
{
    const char *name = dsort_typedkey_type_name(t);
    return strstr(name, "le") != NULL;
}

/* The reference: one key of a and b compared by value. */
static int ref_field(const struct dsort_typedkey_field *f, const unsigned char *a,
                     const unsigned char *b)
{
    const char *name = dsort_typedkey_type_name(f->type);
    int c;
    if (f->type == DSORT_TK_BYTES) {
        c = memcmp(a + f->off, b + f->off, f->len);
    } else {
        uint64_t x = get_bits(a + f->off, f->len, is_le(f->type));
        uint64_t y = get_bits(b + f->off, f->len, is_le(f->type));
        if (name[0] == 'u') {
            c = (x > y) - (x < y);
        } else if (name[0] == 'i') {
            unsigned sh = 64 - 8 * (unsigned)f->len; /* sign-extend */
            int64_t sx = (int64_t)(x << sh) >> sh, sy = (int64_t)(y << sh) >> sh;
            c = (sx > sy) - (sx < sy);
        } else {
            double dx, dy;
            if (f->len == 4) {
                uint32_t bx = (uint32_t)x, by = (uint32_t)y;
                float fx, fy;
                memcpy(&fx, &bx, 4);
                memcpy(&fy, &by, 4);
                dx = fx, dy = fy;
            } else {
                memcpy(&dx, &x, 8);
                memcpy(&dy, &y, 8);
            }
            if (isnan(dx) || isnan(dy))
                c = !!isnan(dx) - !!isnan(dy);
            else
                c = (dx > dy) - (dx < dy);
        }
    }
    c = (c > 0) - (c < 0);
    return f->desc ? -c : c;
}

static int ref_cmp(const struct dsort_typedkey *tk, const unsigned char *a, const unsigned char *b)
{
    for (size_t i = 0; i < tk->count; i++) {
        int c = ref_field(&tk->keys[i], a, b);
        if (c)
            return c;
    }
    return 0;
}

/* A value of n bytes for type t, as bits: the corners (zeros, infinities, NaNs of both signs
 * and any payload, subnormals, min and max), random bits, or small numbers (many ties). */
static uint64_t draw(enum dsort_typedkey_type t, size_t n)
{
    const char *name = dsort_typedkey_type_name(t);
    const unsigned w = 8 * (unsigned)n;
    const uint64_t mask = w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1,
                   top = (uint64_t)1 << (w - 1);
    uint64_t r = rng_next();
    int kind = (int)(rng_next() % 8);
    if (name[0] == 'f') {
        const unsigned mant = n == 8 ? 52 : 23;
        const uint64_t inf = (mask >> 1) & ~(((uint64_t)1 << mant) - 1);
        uint64_t sign = (r & 1) ? top : 0;
        switch (kind) {
        case 0:
            return sign; /* +-0 */
        case 1:
            return sign | inf;
        case 2: /* NaN: quiet or signalling, any payload */
            return sign | inf | ((r >> 8) & (((uint64_t)1 << mant) - 1)) | (r & 2 ? 1 : 0) |
                   (r & 4 ? (uint64_t)1 << (mant - 1) : 0);
        case 3:
            return sign | ((r >> 8) & (((uint64_t)1 << mant) - 1)); /* subnormal */
        case 4:
            return sign | (inf - 1); /* largest finite */
        case 5:
            return sign | ((uint64_t)1 << mant); /* smallest normal */
        case 6: {
            double d = (double)(int)(r % 7) - 3; /* small integers: ties */
            if (n == 8) {
                uint64_t b;
                memcpy(&b, &d, 8);
                return b;
            }
            float f = (float)d;
            uint32_t b;
            memcpy(&b, &f, 4);
            return b;
        }
        default:
            return r & mask;
        }
    }
    switch (kind) {
    case 0:
        return 0;
    case 1:
        return mask; /* unsigned max, signed -1 */
    case 2:
        return top; /* signed min */
    case 3:
        return top - 1; /* signed max */
    case 4:
        return 1;
    case 5:
        return (r % 5) & mask; /* ties */
    default:
        return r & mask;
    }
}

static void fill_record(const struct dsort_typedkey *tk, unsigned char *rec, size_t rs)
{
    fill_random(rec, rs);
    for (size_t i = 0; i < tk->count; i++) {
        const struct dsort_typedkey_field *f = &tk->keys[i];
        if (f->type == DSORT_TK_BYTES) {
            /* few distinct byte strings, so that the next key matters */
            memset(rec + f->off, (int)(rng_next() % 3), f->len);
            rec[f->off + f->len - 1] = (unsigned char)(rng_next() % 4 * 85);
        } else {
            put_bits(rec + f->off, draw(f->type, f->len), f->len, is_le(f->type));
        }
    }
}

/* Normalise n random records and check every pair's memcmp against the reference. */
static void check_set(const struct dsort_typedkey *tk, size_t rs, size_t n, const char *what)
{
    unsigned char *recs = malloc(n * rs), *norm = malloc(n * tk->norm_len + 1);
    assert_non_null(recs);
    assert_non_null(norm);
    for (size_t i = 0; i < n; i++) {
        fill_record(tk, recs + i * rs, rs);
        dsort_typedkey_normalize(tk, recs + i * rs, norm + i * tk->norm_len);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            int m = memcmp(norm + i * tk->norm_len, norm + j * tk->norm_len, tk->norm_len);
            m = (m > 0) - (m < 0);
            int r = ref_cmp(tk, recs + i * rs, recs + j * rs);
            if (m != r) {
                char name[256];
                dsort_typedkey_name(tk, name, sizeof name);
                fail_msg("seed %" PRIu64 ", %s, keys '%s': records %zu and %zu: normalised "
                         "keys compare %d, values %d",
                         rng_seed_value, what, name, i, j, m, r);
            }
        }
    free(recs);
    free(norm);
}

static void test_order_each_type(void **state)
{
    (void)state;
    for (int t = 0; t < DSORT_TK_NTYPES; t++)
        for (int desc = 0; desc < 2; desc++) {
            char spec[64];
            snprintf(spec, sizeof spec, "3:%s%s%s", dsort_typedkey_type_name(t),
                     t == DSORT_TK_BYTES ? ":5" : "", desc ? ":r" : "");
            struct dsort_typedkey tk;
            struct dsort_error err;
            dsort_typedkey_init(&tk);
            assert_int_equal(dsort_typedkey_add(&tk, spec, &err), DSORT_OK);
            assert_int_equal(dsort_typedkey_finish(&tk, 13, &err), DSORT_OK);
            check_set(&tk, 13, 400, "one key");
        }
}

/* Random sets of three keys at random (unaligned, possibly overlapping) offsets. */
static void test_order_sets(void **state)
{
    (void)state;
    const size_t rs = 24;
    for (int iter = 0; iter < 60; iter++) {
        struct dsort_typedkey tk;
        struct dsort_error err;
        dsort_typedkey_init(&tk);
        for (int k = 0; k < 3; k++) {
            int t = (int)(rng_next() % DSORT_TK_NTYPES);
            size_t len = t == DSORT_TK_BYTES ? 1 + rng_next() % 4 : dsort_typedkey_type_size(t);
            size_t off = (size_t)(rng_next() % (rs - len + 1));
            char spec[64];
            snprintf(spec, sizeof spec, "%zu:%s", off, dsort_typedkey_type_name(t));
            if (t == DSORT_TK_BYTES)
                snprintf(spec + strlen(spec), sizeof spec - strlen(spec), ":%zu", len);
            if (rng_next() & 1)
                strcat(spec, ":r");
            assert_int_equal(dsort_typedkey_add(&tk, spec, &err), DSORT_OK);
        }
        assert_int_equal(dsort_typedkey_finish(&tk, rs, &err), DSORT_OK);
        check_set(&tk, rs, 150, "three keys");
    }
}

/* tk: the one key spec, finished for records of rs bytes. */
static void one_key(struct dsort_typedkey *tk, const char *spec, size_t rs)
{
    struct dsort_error err;
    dsort_typedkey_init(tk);
    assert_int_equal(dsort_typedkey_add(tk, spec, &err), DSORT_OK);
    assert_int_equal(dsort_typedkey_finish(tk, rs, &err), DSORT_OK);
}

/* widen puts the normalised key before each record (floats, keys not back to back) or in
 * place of the key bytes (integers and bytes back to back), narrow takes it off again; the
 * u64le fast paths give what normalize gives. */
static void test_widen(void **state)
{
    (void)state;
    static const struct {
        const char *keys[3];
        size_t prefix; /* wide_prefix */
    } sets[] = {
        {{"8:u64le"}, 0},
        {{"8:u64le:r"}, 0},
        {{"0:f32be"}, 4},
        {{"4:i16le"}, 0},
        {{"2:i8:r", "3:u16be", "5:bytes:3:r"}, 0},
        {{"4:i32le", "8:i64be:r", "16:u32le"}, 0},
        {{"4:u16le", "0:u16le"}, 4},
        {{"0:u32le", "4:f32le"}, 8},
        {{"0:i16be", "3:u8"}, 3},
    };
    const size_t rs = 32, n = 100;
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        struct dsort_typedkey tk;
        struct dsort_error err = {0};
        dsort_typedkey_init(&tk);
        for (size_t k = 0; k < 3 && sets[s].keys[k]; k++)
            assert_int_equal(dsort_typedkey_add(&tk, sets[s].keys[k], &err), DSORT_OK);
        assert_int_equal(dsort_typedkey_finish(&tk, rs, &err), DSORT_OK);
        assert_int_equal(tk.wide_prefix, sets[s].prefix);
        const size_t ws = tk.wide_prefix + rs, ko = tk.wide_key_off, nl = tk.norm_len;
        unsigned char recs[100 * 32], wide[100 * 48], back[100 * 32], norm[16];
        fill_random(recs, sizeof recs);
        dsort_typedkey_widen(&tk, recs, n, wide);
        for (size_t i = 0; i < n; i++) {
            dsort_typedkey_normalize(&tk, recs + i * rs, norm);
            assert_memory_equal(wide + i * ws + ko, norm, nl);
            if (tk.wide_prefix) {
                assert_memory_equal(wide + i * ws + nl, recs + i * rs, rs);
            } else { /* the other bytes are the record's */
                assert_memory_equal(wide + i * ws, recs + i * rs, ko);
                assert_memory_equal(wide + i * ws + ko + nl, recs + i * rs + ko + nl, rs - ko - nl);
            }
        }
        dsort_typedkey_narrow(&tk, wide, n, back);
        assert_memory_equal(back, recs, n * rs);
    }
}

/* The in-place forms give what widen and narrow give into another buffer, for record counts
 * from 1 up (the last records move one at a time) and keys longer than the record's rest. */
static void test_inplace(void **state)
{
    (void)state;
    static const char *sets[] = {"8:u64le", "0:bytes:30", "2:f64be:r", "0:u8", "1:i64le:r"};
    const size_t rs = 32;
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        struct dsort_typedkey tk;
        one_key(&tk, sets[s], rs);
        const size_t ws = tk.wide_prefix + rs;
        for (size_t n = 1; n <= 300; n += n < 20 ? 1 : 37) {
            unsigned char recs[300 * 32], want[300 * 62], buf[300 * 62];
            fill_random(recs, n * rs);
            dsort_typedkey_widen(&tk, recs, n, want);
            memcpy(buf + n * tk.wide_prefix, recs, n * rs);
            dsort_typedkey_widen_inplace(&tk, buf, n);
            assert_memory_equal(buf, want, n * ws);
            dsort_typedkey_narrow_inplace(&tk, buf, n);
            assert_memory_equal(buf, recs, n * rs);
        }
    }
}

int main(void)
{
    rng_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),      cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_order_each_type), cmocka_unit_test(test_order_sets),
        cmocka_unit_test(test_widen),           cmocka_unit_test(test_inplace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
