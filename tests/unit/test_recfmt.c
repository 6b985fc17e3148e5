/* Unit tests for the formats' chunk operations (src/engine/recfmt.h: sort_chunk, cut, frame,
 * frame_bytes, sample_key, key_cmp) of both record formats, without MPI.
 *
 * Seeded random chunks (the seed is printed; DSORT_TEST_SEED=<seed> replays it) with many
 * equal keys. Each operation is checked against an oracle written here, independent of the
 * engine: qsort with an explicit tie on the input position, sample keys built byte by byte,
 * the cut found by a linear scan over the oracle's order, the frames built record by record
 * (and, for -u, by dropping repeats of the previous line). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "keysort.h"
#include "lines.h"
#include "recfmt.h"

/* ---- fixed-size records ---- */

/* The oracle's record: its bytes and input position. */
struct orec {
    const unsigned char *p;
    uint64_t pos;
};

static size_t g_rec, g_key = 4;
static int g_rev, g_tagged;

/* Key ascending (descending with g_rev); then, untagged, the whole record the same way; then
 * the position ascending. */
static int cmp_orec(const void *a, const void *b)
{
    const struct orec *x = a, *y = b;
    int r = memcmp(x->p, y->p, g_key);
    if (!r && !g_tagged)
        r = memcmp(x->p, y->p, g_rec);
    if (r)
        return g_rev ? -r : r;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The composite key by hand: key bytes, record bytes unless tagged (each flipped when
 * reversed), the position big-endian. */
static size_t oracle_key(const unsigned char *rec, uint64_t pos, unsigned char *out)
{
    size_t at = 0;
    for (size_t b = 0; b < g_key; b++)
        out[at++] = (unsigned char)(g_rev ? ~rec[b] : rec[b]);
    for (size_t b = 0; !g_tagged && b < g_rec; b++)
        out[at++] = (unsigned char)(g_rev ? ~rec[b] : rec[b]);
    for (int b = 7; b >= 0; b--)
        out[at++] = (unsigned char)(pos >> (8 * b));
    return at;
}

static int sign(int v)
{
    return (v > 0) - (v < 0);
}

static void check_fixed(int stable, int reverse)
{
    const size_t rec = 12, n = 5000, p = 5;
    const uint64_t g0 = 1000003;
    struct dsort_format fmt = {.rec_size = rec, .key_off = 0, .key_len = 4};
    struct dsort_order ord = {.stable = stable, .reverse = reverse};
    struct dsort_cmp cmp;
    dsort_cmp_init(&cmp, &fmt, &ord);
    g_rec = rec, g_rev = reverse, g_tagged = stable;
    const size_t irs = rec + (stable ? 8 : 0), ks = 4 + (stable ? 0 : rec) + 8;
    struct dsort_recfmt_ctx x = {.cmp = &cmp,
                                 .rec = irs,
                                 .fmt = &fmt,
                                 .order = &ord,
                                 .rec_in = rec,
                                 .tagged = stable,
                                 .ks = ks};
    const struct dsort_recfmt *f = &dsort_recfmt_fixed;
    unsigned char *in = malloc(n * rec), *out = malloc(n * irs), *want = malloc(n * irs);
    for (size_t i = 0; i < n * rec; i++) /* few keys; equal whole records too */
        in[i] = (unsigned char)(i % rec < 4 ? rng_next() % 3 : rng_next() % 2);
    struct dsort_sortent *ents = malloc(n * sizeof *ents), *tmp = malloc(n * sizeof *tmp);
    struct dsort_recfmt_chunk c = {.data = in, .n = n, .ents = ents, .scratch = tmp, .g0 = g0};
    struct orec *o = malloc(n * sizeof *o);
    for (size_t i = 0; i < n; i++)
        o[i] = (struct orec){in + i * rec, g0 + i};
    qsort(o, n, sizeof *o, cmp_orec);

    /* sample keys: the bytes, and memcmp's order is the oracle's */
    unsigned char *k1 = malloc(ks), *k2 = malloc(ks);
    for (size_t t = 0; t < 2000; t++) {
        size_t i = rng_next() % n, j = rng_next() % n;
        assert_int_equal(f->sample_key(&x, in + i * rec, rec, g0 + i, k1), ks);
        assert_int_equal(oracle_key(in + i * rec, g0 + i, k2), ks);
        assert_memory_equal(k1, k2, ks);
        f->sample_key(&x, in + j * rec, rec, g0 + j, k2);
        struct orec a = {in + i * rec, g0 + i}, b = {in + j * rec, g0 + j};
        assert_int_equal(sign(f->key_cmp(&x, k1, ks, k2, ks)), sign(cmp_orec(&a, &b)));
    }

    /* sort and frame the whole chunk: the oracle's order, tagged with positions */
    f->sort_chunk(&x, &c);
    assert_int_equal(f->frame_bytes(&x, &c), n * irs);
    assert_int_equal(f->frame(&x, &c, 0, n, out), n * irs);
    for (size_t i = 0; i < n; i++) {
        memcpy(want + i * irs, o[i].p, rec);
        for (int b = 0; stable && b < 8; b++)
            want[i * irs + rec + (size_t)b] = (unsigned char)(o[i].pos >> (56 - 8 * b));
    }
    assert_memory_equal(out, want, n * irs);

    /* cut after p-1 splitters (sample keys of random records, sorted): a linear scan */
    unsigned char *spl = malloc((p - 1) * ks);
    size_t idx[4];
    for (size_t d = 0; d < p - 1; d++)
        idx[d] = rng_next() % n;
    for (size_t d = 0; d < p - 1; d++) /* sorted by the oracle's order */
        for (size_t e = d + 1; e < p - 1; e++) {
            struct orec a = {in + idx[d] * rec, g0 + idx[d]}, b = {in + idx[e] * rec, g0 + idx[e]};
            if (cmp_orec(&a, &b) > 0) {
                size_t t = idx[d];
                idx[d] = idx[e];
                idx[e] = t;
            }
        }
    for (size_t d = 0; d < p - 1; d++)
        oracle_key(in + idx[d] * rec, g0 + idx[d], spl + d * ks);
    const struct dsort_recfmt_splits s = {.n = p - 1, .keys = spl, .ks = ks};
    size_t end[5];
    struct dsort_error err = {0};
    assert_int_equal(f->cut(&x, &c, &s, end, &err), DSORT_OK);
    size_t at = 0;
    for (size_t d = 0; d < p; d++)
        for (; at < n; at++) { /* below splitter d: rank d's (or an earlier's) */
            oracle_key(o[at].p, o[at].pos, k1);
            if (d < p - 1 && memcmp(k1, spl + d * ks, ks) >= 0)
                break;
            assert_true(at < end[d]);
            assert_true(d == 0 || at >= end[d - 1]);
        }
    assert_int_equal(end[p - 1], n);
    free(spl), free(k1), free(k2), free(o), free(ents), free(tmp), free(in), free(out), free(want);
}

static void test_fixed_default(void **state)
{
    (void)state;
    check_fixed(0, 0);
}

static void test_fixed_reverse(void **state)
{
    (void)state;
    check_fixed(0, 1);
}

static void test_fixed_stable(void **state)
{
    (void)state;
    check_fixed(1, 0);
}

static void test_fixed_stable_reverse(void **state)
{
    (void)state;
    check_fixed(1, 1);
}

/* ---- text lines ---- */

struct oline {
    const unsigned char *p;
    size_t len;
    uint64_t pos;
};

/* Byte order (C locale), shorter first on a common prefix; then the position. */
static int cmp_line_only(const struct oline *x, const struct oline *y)
{
    int r = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
    return r ? r : (x->len > y->len) - (x->len < y->len);
}

static int cmp_oline(const void *a, const void *b)
{
    const struct oline *x = a, *y = b;
    int r = cmp_line_only(x, y);
    return r ? r : (x->pos > y->pos) - (x->pos < y->pos);
}

static uint64_t g_lines_g0 = 77;

static uint64_t pos_at(const void *ctx, uint64_t off)
{
    (void)ctx;
    return g_lines_g0 + off;
}

/* Random lines of 0-5 bytes over 'a'..'c' (many equal), split by a simple scan. */
static unsigned char *make_lines(size_t n, size_t *bytes, struct oline *o)
{
    unsigned char *buf = malloc(n * 6 + 1);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = rng_next() % 6;
        for (size_t j = 0; j < len; j++)
            buf[at + j] = (unsigned char)('a' + rng_next() % 3);
        o[i] = (struct oline){buf + at, len, g_lines_g0 + at};
        at += len;
        buf[at++] = '\n';
    }
    *bytes = at;
    return buf;
}

/* What frame writes for oracle lines [lo, hi): [position] line eol; -u: repeats dropped. */
static size_t oracle_frame(const struct oline *o, size_t lo, size_t hi, int with_pos, int unique,
                           unsigned char *out)
{
    size_t at = 0;
    for (size_t i = lo; i < hi; i++) {
        if (unique && i > lo && cmp_line_only(&o[i - 1], &o[i]) == 0)
            continue;
        for (int b = 0; with_pos && b < 8; b++)
            out[at++] = (unsigned char)(o[i].pos >> (56 - 8 * b));
        memcpy(out + at, o[i].p, o[i].len);
        at += o[i].len;
        out[at++] = '\n';
    }
    return at;
}

static void check_lines(int with_pos, int unique, int by_pos)
{
    const size_t n = 4000, p = 4;
    struct dsort_error err = {0};
    struct dsort_keys keys;
    dsort_keys_init(&keys);
    assert_int_equal(dsort_keys_finish(&keys, &err), DSORT_OK);
    struct dsort_lines_order ord;
    dsort_lines_order_init(&ord, &keys, '\n');
    struct dsort_recfmt_ctx x = {
        .ord = &ord, .with_pos = with_pos, .unique = unique, .by_pos = by_pos};
    const struct dsort_recfmt *f = &dsort_recfmt_lines;
    struct oline *o = malloc(n * sizeof *o);
    size_t bytes;
    unsigned char *buf = make_lines(n, &bytes, o);
    struct dsort_line_ent *ents = malloc(n * sizeof *ents), *tmp = malloc(n * sizeof *tmp);
    assert_int_equal(dsort_lines_index(&ord, buf, bytes, ents), n);
    struct dsort_recfmt_chunk c = {
        .data = buf, .n = n, .bytes = bytes, .ents = ents, .scratch = tmp, .pos = pos_at};
    f->sort_chunk(&x, &c);
    qsort(o, n, sizeof *o, cmp_oline);

    /* sample keys: line [position]; key_cmp in the oracle's order */
    unsigned char k1[16], k2[16];
    for (size_t t = 0; t < 2000; t++) {
        const struct oline *a = &o[rng_next() % n], *b = &o[rng_next() % n];
        size_t l1 = f->sample_key(&x, a->p, a->len, a->pos, k1);
        size_t l2 = f->sample_key(&x, b->p, b->len, b->pos, k2);
        assert_int_equal(l1, a->len + (by_pos ? 8 : 0));
        assert_memory_equal(k1, a->p, a->len);
        int want = by_pos ? cmp_oline(a, b) : cmp_line_only(a, b);
        assert_int_equal(sign(f->key_cmp(&x, k1, l1, k2, l2)), sign(want));
    }

    /* cut: splitters from sorted random lines (the last one none: everything below) */
    unsigned char spl[3][16];
    const unsigned char *line[3];
    size_t len[3], si[2] = {rng_next() % n, rng_next() % n};
    if (si[0] > si[1])
        si[0] ^= si[1], si[1] ^= si[0], si[0] ^= si[1];
    for (size_t d = 0; d < 2; d++) {
        len[d] = f->sample_key(&(struct dsort_recfmt_ctx){.ord = &ord, .by_pos = by_pos},
                               o[si[d]].p, o[si[d]].len, o[si[d]].pos, spl[d]);
        line[d] = spl[d];
    }
    line[2] = NULL, len[2] = 0;
    const struct dsort_recfmt_splits s = {.n = p - 1, .line = line, .len = len, .by_pos = by_pos};
    size_t end[4];
    assert_int_equal(f->cut(&x, &c, &s, end, &err), DSORT_OK);
    for (size_t i = 0, d = 0; i < n; i++) { /* at or below splitter d: rank d's at most */
        while (d < 2 &&
               (by_pos ? cmp_oline(&o[i], &o[si[d]]) : cmp_line_only(&o[i], &o[si[d]])) > 0)
            d++;
        assert_true(i < end[d]);
        assert_true(d == 0 || i >= end[d - 1]);
    }
    assert_int_equal(end[2], n);
    assert_int_equal(end[3], n);

    /* frame the pieces: the oracle's lines, positions and -u's drops, piece by piece */
    const uint64_t most = f->frame_bytes(&x, &c);
    assert_int_equal(most, bytes + (with_pos ? 8 * n : 0));
    unsigned char *out = malloc(most), *want = malloc(most);
    for (size_t d = 0, lo = 0; d < p; lo = end[d], d++) {
        uint64_t got = f->frame(&x, &c, lo, end[d], out);
        assert_true(got <= most);
        assert_int_equal(got, oracle_frame(o, lo, end[d], with_pos, unique, want));
        assert_memory_equal(out, want, got);
    }
    free(out), free(want), free(ents), free(tmp), free(buf), free(o);
}

static void test_lines_plain(void **state)
{
    (void)state;
    check_lines(0, 0, 1);
}

static void test_lines_pos(void **state)
{
    (void)state;
    check_lines(1, 0, 1);
}

static void test_lines_unique(void **state)
{
    (void)state;
    check_lines(0, 1, 0);
}

static void test_lines_unique_pos(void **state)
{
    (void)state;
    check_lines(1, 1, 0);
}

int main(void)
{
    rng_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_default), cmocka_unit_test(test_fixed_reverse),
        cmocka_unit_test(test_fixed_stable),  cmocka_unit_test(test_fixed_stable_reverse),
        cmocka_unit_test(test_lines_plain),   cmocka_unit_test(test_lines_pos),
        cmocka_unit_test(test_lines_unique),  cmocka_unit_test(test_lines_unique_pos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
