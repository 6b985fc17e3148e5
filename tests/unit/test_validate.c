/* Unit tests for validate.h: valsort-style summaries, their combination and serialisation.
 *
 * Random record sequences (seeded: the seed is printed, DSORT_TEST_SEED=<seed> replays it),
 * mostly sorted with duplicates and a few injected disorders, are summarised at once, in
 * pieces through repeated dsort_vsum_add, and in pieces combined with dsort_vsum_append
 * (random split points, empty pieces included, left- and right-leaning association); every
 * route must agree with a direct reference computation. */
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
#include "format.h"
#include "typedkey.h"
#include "validate.h"

static void parse(const char *spec, struct dsort_format *fmt)
{
    struct dsort_error err;
    assert_int_equal(dsort_format_parse(spec, fmt, &err), DSORT_OK);
}

/* ---- reference ---- */

struct expect {
    uint64_t records, unordered, first_unordered, duplicates;
    struct dsort_sum128 checksum;
};

/* Straight from the header: a record is unordered if its key is before its predecessor's
 * (under the order), or equal to it in strict (-u) mode; otherwise a duplicate if equal.
 * In strict mode an equal neighbour counts as unordered only, not also as a duplicate. */
static struct expect reference(const struct dsort_format *fmt, const struct dsort_order *ord,
                               const unsigned char *recs, size_t n)
{
    struct expect e = {n, 0, DSORT_VALIDATE_NONE, 0, {0, 0}};
    const size_t rs = fmt->rec_size;
    dsort_checksum_records(&e.checksum, recs, n, rs);
    for (size_t i = 1; i < n; i++) {
        int c = dsort_order_key_cmp(fmt, ord, recs + (i - 1) * rs, recs + i * rs);
        if (c > 0 || (c == 0 && ord->unique)) {
            if (e.unordered++ == 0)
                e.first_unordered = i;
        } else if (c == 0) {
            e.duplicates++;
        }
    }
    return e;
}

static void check_summary(const char *how, const struct dsort_format *fmt,
                          const struct dsort_order *ord, const struct dsort_vsum *s,
                          const unsigned char *recs, size_t n)
{
    const struct expect e = reference(fmt, ord, recs, n);
    const size_t rs = fmt->rec_size;
    int ok = s->records == e.records && s->unordered == e.unordered &&
             s->first_unordered == e.first_unordered && s->duplicates == e.duplicates &&
             s->checksum.lo == e.checksum.lo && s->checksum.hi == e.checksum.hi &&
             s->key_len == fmt->key_len;
    if (ok && n > 0)
        ok = !memcmp(s->first_key, dsort_format_key(fmt, recs), fmt->key_len) &&
             !memcmp(s->last_key, dsort_format_key(fmt, recs + (n - 1) * rs), fmt->key_len);
    if (!ok) {
        print_error("seed %" PRIu64 ": %s, format %s, order r%d u%d, n=%zu:\n"
                    "  got  records %" PRIu64 " unordered %" PRIu64 " first %" PRIu64
                    " dups %" PRIu64 " sum %016" PRIx64 "%016" PRIx64 "\n"
                    "  want records %" PRIu64 " unordered %" PRIu64 " first %" PRIu64
                    " dups %" PRIu64 " sum %016" PRIx64 "%016" PRIx64 "\n",
                    rng_seed_value, how, fmt->name, ord->reverse, ord->unique, n, s->records,
                    s->unordered, s->first_unordered, s->duplicates, s->checksum.hi, s->checksum.lo,
                    e.records, e.unordered, e.first_unordered, e.duplicates, e.checksum.hi,
                    e.checksum.lo);
        fail();
    }
}

/* ---- data ---- */

static const struct dsort_format *sort_fmt;
static int sort_reverse;

static int key_cmp(const void *a, const void *b)
{
    int c = dsort_format_key_cmp(sort_fmt, a, b);
    return sort_reverse ? -c : c;
}

/* n records, keys from `distinct` values, sorted under ord, then `disorder` random swaps. */
static unsigned char *make_records(const struct dsort_format *fmt, const struct dsort_order *ord,
                                   size_t n, size_t distinct, size_t disorder)
{
    const size_t rs = fmt->rec_size, kl = fmt->key_len;
    unsigned char *recs = malloc(n * rs + 1), *pool = malloc(distinct * kl);
    assert_true(recs && pool);
    fill_random(recs, n * rs);
    fill_random(pool, distinct * kl);
    for (size_t i = 0; i < n; i++)
        memcpy(recs + i * rs + fmt->key_off, pool + (rng_next() % distinct) * kl, kl);
    sort_fmt = fmt;
    sort_reverse = ord->reverse;
    qsort(recs, n, rs, key_cmp);
    unsigned char *t = malloc(rs);
    assert_non_null(t);
    for (size_t d = 0; d < disorder && n > 1; d++) {
        size_t a = (size_t)(rng_next() % n), b = (size_t)(rng_next() % n);
        memcpy(t, recs + a * rs, rs);
        memcpy(recs + a * rs, recs + b * rs, rs);
        memcpy(recs + b * rs, t, rs);
    }
    free(t);
    free(pool);
    return recs;
}

static void vinit(struct dsort_vsum *s, const struct dsort_format *fmt)
{
    struct dsort_error err;
    assert_int_equal(dsort_vsum_init(s, fmt, &err), DSORT_OK);
}

static const struct dsort_order orders[] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}};
#define NORDERS (sizeof orders / sizeof orders[0])

/* Summarise recs in every way and compare with the reference. */
static void check_all_routes(const struct dsort_format *fmt, const struct dsort_order *ord,
                             const unsigned char *recs, size_t n)
{
    const size_t rs = fmt->rec_size;

    /* at once */
    struct dsort_vsum whole;
    vinit(&whole, fmt);
    dsort_vsum_add(&whole, fmt, ord, recs, n);
    check_summary("at once", fmt, ord, &whole, recs, n);

    /* random pieces (some empty) */
    enum { MAXP = 12 };
    size_t np = 1 + (size_t)(rng_next() % MAXP);
    size_t cut[MAXP + 1];
    cut[0] = 0;
    cut[np] = n;
    for (size_t i = 1; i < np; i++)
        cut[i] = n ? (size_t)(rng_next() % (n + 1)) : 0;
    /* sort the interior cut points (insertion sort) */
    for (size_t i = 2; i < np; i++)
        for (size_t j = i; j > 1 && cut[j - 1] > cut[j]; j--) {
            size_t t = cut[j];
            cut[j] = cut[j - 1];
            cut[j - 1] = t;
        }

    /* one summary, several adds */
    struct dsort_vsum inc;
    vinit(&inc, fmt);
    for (size_t i = 0; i < np; i++)
        dsort_vsum_add(&inc, fmt, ord, recs + cut[i] * rs, cut[i + 1] - cut[i]);
    check_summary("repeated add", fmt, ord, &inc, recs, n);

    /* a summary per piece */
    struct dsort_vsum piece[MAXP];
    for (size_t i = 0; i < np; i++) {
        vinit(&piece[i], fmt);
        dsort_vsum_add(&piece[i], fmt, ord, recs + cut[i] * rs, cut[i + 1] - cut[i]);
        check_summary("piece", fmt, ord, &piece[i], recs + cut[i] * rs, cut[i + 1] - cut[i]);
    }

    /* left fold into an empty summary: ((0 + p0) + p1) + ... */
    struct dsort_vsum left;
    vinit(&left, fmt);
    for (size_t i = 0; i < np; i++)
        dsort_vsum_append(&left, &piece[i], ord);
    check_summary("append, left fold", fmt, ord, &left, recs, n);

    /* right fold: p0 + (p1 + (... + p_last)), built from copies through pack/unpack */
    const size_t psz = dsort_vsum_packed_size(fmt->key_len);
    unsigned char *buf = malloc(psz);
    assert_non_null(buf);
    struct dsort_vsum right;
    vinit(&right, fmt);
    dsort_vsum_pack(&piece[np - 1], buf);
    dsort_vsum_unpack(&right, buf);
    for (size_t i = np - 1; i-- > 0;) {
        struct dsort_vsum t;
        vinit(&t, fmt);
        dsort_vsum_pack(&piece[i], buf);
        dsort_vsum_unpack(&t, buf);
        dsort_vsum_append(&t, &right, ord);
        dsort_vsum_destroy(&right);
        right = t;
    }
    check_summary("append, right fold", fmt, ord, &right, recs, n);

    /* pack/unpack of the whole summary */
    struct dsort_vsum copy;
    vinit(&copy, fmt);
    dsort_vsum_pack(&whole, buf);
    dsort_vsum_unpack(&copy, buf);
    check_summary("pack/unpack", fmt, ord, &copy, recs, n);

    free(buf);
    for (size_t i = 0; i < np; i++)
        dsort_vsum_destroy(&piece[i]);
    dsort_vsum_destroy(&whole);
    dsort_vsum_destroy(&inc);
    dsort_vsum_destroy(&left);
    dsort_vsum_destroy(&right);
    dsort_vsum_destroy(&copy);
}

/* Typed keys (fmt->typed): records sorted by their normalised keys are in order, in one piece
 * or in three appended through pack/unpack; f64 keys with NaNs and -0.0 count as duplicates of
 * NaNs and +0.0; a swapped pair of different keys is found at its index. */
static const struct dsort_typedkey *typed_cmp_tk;

static int typed_cmp(const void *a, const void *b)
{
    unsigned char na[16], nb[16];
    dsort_typedkey_normalize(typed_cmp_tk, a, na);
    dsort_typedkey_normalize(typed_cmp_tk, b, nb);
    return memcmp(na, nb, typed_cmp_tk->norm_len);
}

static void typed_figures(const struct dsort_format *fmt, const struct dsort_order *ord,
                          const unsigned char *recs, size_t n, size_t cut1, size_t cut2,
                          struct dsort_vsum *total)
{
    const size_t rs = fmt->rec_size, cuts[4] = {0, cut1, cut2, n};
    assert_int_equal(dsort_vsum_init(total, fmt, NULL), DSORT_OK);
    assert_int_equal(total->key_len, rs);
    for (int k = 0; k < 3; k++) {
        struct dsort_vsum part;
        assert_int_equal(dsort_vsum_init(&part, fmt, NULL), DSORT_OK);
        dsort_vsum_add(&part, fmt, ord, recs + cuts[k] * rs, cuts[k + 1] - cuts[k]);
        unsigned char *buf = malloc(dsort_vsum_packed_size(part.key_len));
        assert_non_null(buf);
        dsort_vsum_pack(&part, buf);
        dsort_vsum_unpack(&part, buf);
        dsort_vsum_append(total, &part, ord);
        free(buf);
        dsort_vsum_destroy(&part);
    }
}

static void test_typed(void **state)
{
    (void)state;
    struct dsort_format fmt;
    struct dsort_error err;
    struct dsort_typedkey tk;
    assert_int_equal(dsort_format_parse("fixed:16:0:16", &fmt, &err), DSORT_OK);
    dsort_typedkey_init(&tk);
    assert_int_equal(dsort_typedkey_add(&tk, "8:f64le", &err), DSORT_OK);
    assert_int_equal(dsort_typedkey_add(&tk, "0:i16be:r", &err), DSORT_OK);
    assert_int_equal(dsort_typedkey_finish(&tk, 16, &err), DSORT_OK);
    fmt.typed = &tk;
    const size_t n = 500, rs = 16;
    static const uint64_t special[] = {
        0x7ff8000000000000u, 0xfff0000000000001u, 0x8000000000000000u, 0,
        0x7ff0000000000000u, 0xfff0000000000000u, 0x3ff0000000000000u};
    unsigned char *recs = malloc(n * rs);
    assert_non_null(recs);
    fill_random(recs, n * rs);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = special[rng_next() % 7];
        memcpy(recs + i * rs + 8, &v, 8); /* (this machine is little-endian: x86-64, arm64) */
        recs[i * rs] = (unsigned char)(rng_next() % 2);
        recs[i * rs + 1] = 0;
    }
    typed_cmp_tk = &tk;
    qsort(recs, n, rs, typed_cmp);
    struct dsort_order ord = {0, 0, 0};
    struct dsort_vsum s, whole;
    typed_figures(&fmt, &ord, recs, n, n / 3, n / 2, &s);
    assert_int_equal(dsort_vsum_init(&whole, &fmt, NULL), DSORT_OK);
    dsort_vsum_add(&whole, &fmt, &ord, recs, n);
    assert_int_equal(s.records, n);
    assert_int_equal(s.unordered, 0);
    assert_int_equal(s.first_unordered, DSORT_VALIDATE_NONE);
    assert_int_equal(s.duplicates, whole.duplicates);
    /* 5 float values (NaNs alike, -0.0 == +0.0) x 2 second keys: 10 distinct keys at most */
    assert_true(s.duplicates >= n - 10);
    dsort_vsum_destroy(&s);
    dsort_vsum_destroy(&whole);
    /* Swap a pair of neighbours whose keys differ. */
    size_t p = n / 2;
    while (p < n - 1 && !typed_cmp(recs + (p - 1) * rs, recs + p * rs))
        p++;
    assert_true(p < n - 1);
    unsigned char tmp[16];
    memcpy(tmp, recs + p * rs, rs);
    memcpy(recs + p * rs, recs + (p - 1) * rs, rs);
    memcpy(recs + (p - 1) * rs, tmp, rs);
    typed_figures(&fmt, &ord, recs, n, n / 3, p, &s);
    assert_int_equal(s.unordered, 1);
    assert_int_equal(s.first_unordered, p);
    dsort_vsum_destroy(&s);
    /* -r: the reversed sequence is in order, the original is not. */
    ord.reverse = 1;
    typed_figures(&fmt, &ord, recs, n, 1, 2, &s);
    assert_true(s.unordered > 0);
    dsort_vsum_destroy(&s);
    free(recs);
}

static void test_random(void **state)
{
    (void)state;
    rng_seed();
    static const char *const specs[] = {"gensort", "fixed:8:0:3", "fixed:24:5:13", "fixed:4:3:1"};
    static const size_t sizes[] = {0, 1, 2, 3, 10, 100, 1000};
    for (size_t f = 0; f < sizeof specs / sizeof specs[0]; f++) {
        struct dsort_format fmt;
        parse(specs[f], &fmt);
        for (size_t o = 0; o < NORDERS; o++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int rep = 0; rep < 20; rep++) {
                    size_t n = sizes[s];
                    size_t distinct = 1 + (size_t)(rng_next() % (rep < 5 ? 3 : n + 1));
                    size_t disorder = rep % 3 == 0 ? 0 : (size_t)(rng_next() % 4);
                    unsigned char *recs = make_records(&fmt, &orders[o], n, distinct, disorder);
                    check_all_routes(&fmt, &orders[o], recs, n);
                    free(recs);
                }
    }
}

/* Hand-made figures, so that a wrong reference cannot hide a bug. */
static void test_known(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("fixed:2:0:1", &fmt);
    /* keys: a a c b b d a */
    const unsigned char recs[] = {'a', 0, 'a', 1, 'c', 2, 'b', 3, 'b', 4, 'd', 5, 'a', 6};
    const size_t n = 7;
    struct dsort_vsum s;

    const struct dsort_order fwd = {0, 0, 0};
    vinit(&s, &fmt);
    dsort_vsum_add(&s, &fmt, &fwd, recs, n);
    assert_int_equal(s.records, 7);
    assert_int_equal(s.unordered, 2);       /* b after c, a after d */
    assert_int_equal(s.first_unordered, 3); /* the first b */
    assert_int_equal(s.duplicates, 2);      /* a a, b b */
    assert_int_equal(s.first_key[0], 'a');
    assert_int_equal(s.last_key[0], 'a');
    struct dsort_sum128 sum = {0, 0};
    dsort_checksum_records(&sum, recs, n, 2);
    assert_true(s.checksum.lo == sum.lo && s.checksum.hi == sum.hi);
    dsort_vsum_destroy(&s);

    const struct dsort_order strict = {0, 1, 0};
    vinit(&s, &fmt);
    dsort_vsum_add(&s, &fmt, &strict, recs, n);
    assert_int_equal(s.unordered, 4); /* a=a, c>b, b=b, d>a */
    assert_int_equal(s.first_unordered, 1);
    dsort_vsum_destroy(&s);

    const struct dsort_order rev = {1, 0, 0};
    vinit(&s, &fmt);
    dsort_vsum_add(&s, &fmt, &rev, recs, n);
    assert_int_equal(s.unordered, 2); /* c after a, d after b */
    assert_int_equal(s.first_unordered, 2);
    assert_int_equal(s.duplicates, 2);
    dsort_vsum_destroy(&s);

    /* The boundary between two summaries is checked: [a a c] + [b b d a]. */
    struct dsort_vsum l, r;
    vinit(&l, &fmt);
    vinit(&r, &fmt);
    dsort_vsum_add(&l, &fmt, &fwd, recs, 3);
    dsort_vsum_add(&r, &fmt, &fwd, recs + 6, 4);
    assert_int_equal(l.unordered, 0);
    assert_int_equal(l.first_unordered, DSORT_VALIDATE_NONE);
    assert_int_equal(r.unordered, 1);
    assert_int_equal(r.first_unordered, 3);
    dsort_vsum_append(&l, &r, &fwd);
    assert_int_equal(l.unordered, 2);
    assert_int_equal(l.first_unordered, 3);
    assert_int_equal(l.records, 7);
    /* r is unchanged */
    assert_int_equal(r.records, 4);
    assert_int_equal(r.first_key[0], 'b');
    dsort_vsum_destroy(&l);
    dsort_vsum_destroy(&r);
}

static void test_empty(void **state)
{
    (void)state;
    struct dsort_format fmt;
    dsort_format_gensort(&fmt);
    const struct dsort_order ord = {0, 0, 0};
    struct dsort_vsum a, b;
    vinit(&a, &fmt);
    vinit(&b, &fmt);
    assert_int_equal(a.records, 0);
    assert_int_equal(a.unordered, 0);
    assert_int_equal(a.first_unordered, DSORT_VALIDATE_NONE);
    assert_int_equal(a.duplicates, 0);
    assert_true(a.checksum.lo == 0 && a.checksum.hi == 0);
    assert_int_equal(a.key_len, 10);
    dsort_vsum_add(&a, &fmt, &ord, NULL, 0);
    dsort_vsum_append(&a, &b, &ord);
    assert_int_equal(a.records, 0);
    assert_int_equal(a.first_unordered, DSORT_VALIDATE_NONE);

    /* pack/unpack keeps an empty summary empty */
    unsigned char *buf = malloc(dsort_vsum_packed_size(10));
    assert_non_null(buf);
    memset(a.first_key, 0, 20);
    dsort_vsum_pack(&a, buf);
    dsort_vsum_unpack(&b, buf);
    assert_int_equal(b.records, 0);
    assert_int_equal(b.first_unordered, DSORT_VALIDATE_NONE);
    free(buf);
    dsort_vsum_destroy(&a);
    dsort_vsum_destroy(&b);
    dsort_vsum_destroy(NULL);
}

/* pack/unpack carries every field, big values included. */
static void test_pack_fields(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("fixed:40:2:30", &fmt);
    struct dsort_vsum a, b;
    vinit(&a, &fmt);
    vinit(&b, &fmt);
    a.records = UINT64_C(0x0123456789abcdef);
    a.unordered = UINT64_C(0xfedcba9876543210);
    a.first_unordered = 42;
    a.duplicates = UINT64_MAX - 1;
    a.checksum.lo = UINT64_C(0x1111222233334444);
    a.checksum.hi = UINT64_C(0x5555666677778888);
    for (size_t i = 0; i < 30; i++) {
        a.first_key[i] = (unsigned char)i;
        a.last_key[i] = (unsigned char)(0xff - i);
    }
    const size_t psz = dsort_vsum_packed_size(30);
    assert_true(psz >= 6 * 8 + 60);
    unsigned char *buf = malloc(psz);
    assert_non_null(buf);
    dsort_vsum_pack(&a, buf);
    dsort_vsum_unpack(&b, buf);
    assert_int_equal(b.records, a.records);
    assert_int_equal(b.unordered, a.unordered);
    assert_int_equal(b.first_unordered, a.first_unordered);
    assert_int_equal(b.duplicates, a.duplicates);
    assert_int_equal(b.checksum.lo, a.checksum.lo);
    assert_int_equal(b.checksum.hi, a.checksum.hi);
    assert_int_equal(b.key_len, 30);
    assert_memory_equal(b.first_key, a.first_key, 30);
    assert_memory_equal(b.last_key, a.last_key, 30);
    free(buf);
    dsort_vsum_destroy(&a);
    dsort_vsum_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known),       cmocka_unit_test(test_empty),
        cmocka_unit_test(test_pack_fields), cmocka_unit_test(test_random),
        cmocka_unit_test(test_typed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
