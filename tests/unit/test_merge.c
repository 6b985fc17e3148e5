/* Unit tests for merge.h: the loser-tree k-way merge, cursors and sinks.
 *
 * Random runs (seeded: the seed is printed, DSORT_TEST_SEED=<seed> replays it), each sorted
 * under the order that format.h defines, are merged and compared byte for byte with a
 * reference: all records sorted by (key under the order; the whole record under the order
 * unless -s or -u; cursor index; position in the run), and for -u only the first record of
 * each key kept. Payloads are random, so a record with an equal key in the wrong place shows. */
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

#include "format.h"
#include "merge.h"

static void parse(const char *spec, struct dsort_format *fmt)
{
    struct dsort_error err;
    assert_int_equal(dsort_format_parse(spec, fmt, &err), DSORT_OK);
}

/* ---- reference ---- */

/* The order of format.h written out: key, then (without -s and -u) the whole record, both
 * descending for -r. */
struct ref_ctx {
    const struct dsort_format *fmt;
    int reverse, last_resort;
};
static struct ref_ctx ref;

static int full_cmp(const unsigned char *a, const unsigned char *b)
{
    int c = dsort_format_key_cmp(ref.fmt, a, b);
    if (!c && ref.last_resort)
        c = memcmp(a, b, ref.fmt->rec_size);
    return ref.reverse ? -c : c;
}

static int run_cmp(const void *a, const void *b)
{
    return full_cmp(a, b);
}

struct ref_rec {
    const unsigned char *rec;
    size_t cursor, pos;
};

static int ref_cmp(const void *pa, const void *pb)
{
    const struct ref_rec *a = pa, *b = pb;
    int c = full_cmp(a->rec, b->rec);
    if (c)
        return c;
    if (a->cursor != b->cursor)
        return a->cursor < b->cursor ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static void set_ref(const struct dsort_format *fmt, const struct dsort_order *ord)
{
    ref = (struct ref_ctx){fmt, ord->reverse, !ord->stable && !ord->unique};
}

/* ---- runs ---- */

struct runs {
    size_t k;
    size_t *n;            /* records per run */
    unsigned char **data; /* run i: n[i] records */
    size_t total;
};

/* k runs of random length (some empty), keys from a pool of `distinct` keys, each sorted.
 * With `same_payload`, records with equal keys are equal in full. */
/* The merge compares a key's first 8 bytes as a number first: keys that share them (or more)
 * must still come out in memcmp order, by the bytes after them. */
static size_t shared_prefix;

static void make_runs(struct runs *R, const struct dsort_format *fmt, const struct dsort_order *ord,
                      size_t k, size_t maxlen, size_t distinct, int same_payload)
{
    const size_t rs = fmt->rec_size, kl = fmt->key_len;
    R->k = k;
    R->n = calloc(k ? k : 1, sizeof *R->n);
    R->data = calloc(k ? k : 1, sizeof *R->data);
    R->total = 0;
    assert_true(R->n && R->data);
    unsigned char *pool = malloc(distinct * kl);
    assert_non_null(pool);
    fill_random(pool, distinct * kl);
    for (size_t d = 0; d < distinct; d++) /* keys alike in their first shared_prefix bytes */
        memset(pool + d * kl, 0xa5, shared_prefix < kl ? shared_prefix : kl);
    set_ref(fmt, ord);
    for (size_t i = 0; i < k; i++) {
        size_t n = (rng_next() % 4 == 0) ? 0 : (size_t)(rng_next() % (maxlen + 1));
        R->n[i] = n;
        R->data[i] = malloc(n * rs + 1);
        assert_non_null(R->data[i]);
        if (same_payload)
            memset(R->data[i], 0x33, n * rs);
        else
            fill_random(R->data[i], n * rs);
        for (size_t j = 0; j < n; j++)
            memcpy(R->data[i] + j * rs + fmt->key_off, pool + (rng_next() % distinct) * kl, kl);
        qsort(R->data[i], n, rs, run_cmp);
        R->total += n;
    }
    free(pool);
}

static void free_runs(struct runs *R)
{
    for (size_t i = 0; i < R->k; i++)
        free(R->data[i]);
    free(R->data);
    free(R->n);
}

/* The expected output; returns the number of records. */
static size_t expected(const struct runs *R, const struct dsort_format *fmt,
                       const struct dsort_order *ord, unsigned char **out)
{
    const size_t rs = fmt->rec_size;
    struct ref_rec *all = malloc(R->total * sizeof *all + 1);
    unsigned char *o = malloc(R->total * rs + 1);
    assert_true(all && o);
    size_t at = 0;
    for (size_t i = 0; i < R->k; i++)
        for (size_t j = 0; j < R->n[i]; j++)
            all[at++] = (struct ref_rec){R->data[i] + j * rs, i, j};
    set_ref(fmt, ord);
    qsort(all, R->total, sizeof *all, ref_cmp);
    size_t n = 0;
    for (size_t i = 0; i < R->total; i++) {
        if (ord->unique && n > 0 && !dsort_format_key_cmp(fmt, o + (n - 1) * rs, all[i].rec))
            continue;
        memcpy(o + n++ * rs, all[i].rec, rs);
    }
    free(all);
    *out = o;
    return n;
}

/* ---- a cursor that delivers a run in small blocks through refill ---- */

struct block_src {
    const unsigned char *data;
    size_t n, pos, rs;
    size_t maxblock;
    unsigned char *block; /* reused for every block, poisoned before each refill */
    int refills;
    int fail_after; /* refill number that fails with DSORT_EIO, or -1 */
};

static enum dsort_status block_refill(struct dsort_cursor *c, struct dsort_error *err)
{
    struct block_src *b = c->ctx;
    assert_true(c->cur == c->end); /* only called when the block is used up */
    if (b->fail_after >= 0 && b->refills == b->fail_after)
        return DSORT_ERR(err, DSORT_EIO, 0, "injected refill failure");
    b->refills++;
    memset(b->block, 0xEE, b->maxblock * b->rs);
    size_t take = 1 + (size_t)(rng_next() % b->maxblock);
    if (take > b->n - b->pos)
        take = b->n - b->pos;
    memcpy(b->block, b->data + b->pos * b->rs, take * b->rs);
    b->pos += take;
    c->cur = b->block;
    c->end = b->block + take * b->rs;
    return DSORT_OK;
}

/* ---- a sink that flushes into a growing buffer ---- */

struct collect {
    unsigned char *buf;
    size_t len, cap;
    int flushes;
    int fail_at; /* flush number that fails, or -1 */
};

static enum dsort_status collect_flush(struct dsort_sink *s, struct dsort_error *err)
{
    struct collect *c = s->ctx;
    if (c->fail_at >= 0 && c->flushes == c->fail_at)
        return DSORT_ERR(err, DSORT_EIO, 0, "injected flush failure");
    c->flushes++;
    assert_true(s->len <= s->cap);
    assert_true(c->len + s->len <= c->cap);
    memcpy(c->buf + c->len, s->buf, s->len);
    c->len += s->len;
    memset(s->buf, 0xDD, s->cap);
    s->len = 0;
    return DSORT_OK;
}

static const struct dsort_order orders[] = {
    {0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1},
};
#define NORDERS (sizeof orders / sizeof orders[0])

static void report(const char *what, const struct dsort_format *fmt, const struct dsort_order *ord,
                   size_t k, const struct runs *R)
{
    print_error("seed %" PRIu64 ": %s: format %s order r%d u%d s%d k=%zu total=%zu\n",
                rng_seed_value, what, fmt->name, ord->reverse, ord->unique, ord->stable, k,
                R->total);
}

static void check_output(const char *what, const struct dsort_format *fmt,
                         const struct dsort_order *ord, const struct runs *R,
                         const unsigned char *got, size_t got_n, const unsigned char *want,
                         size_t want_n)
{
    const size_t rs = fmt->rec_size;
    if (got_n != want_n) {
        report(what, fmt, ord, R->k, R);
        print_error("  %zu records out, expected %zu\n", got_n, want_n);
        fail();
    }
    for (size_t i = 0; i < want_n; i++)
        if (memcmp(got + i * rs, want + i * rs, rs)) {
            report(what, fmt, ord, R->k, R);
            print_error("  output record %zu differs\n", i);
            fail();
        }
}

/* Memory cursors into a memory sink of exactly the right size. */
static void merge_memory(const struct dsort_format *fmt, const struct dsort_order *ord,
                         const struct runs *R, const unsigned char *want, size_t want_n)
{
    const size_t rs = fmt->rec_size;
    struct dsort_cursor *cs = calloc(R->k + 1, sizeof *cs);
    unsigned char *out = malloc(want_n * rs + 1);
    assert_true(cs && out);
    for (size_t i = 0; i < R->k; i++)
        dsort_cursor_memory(&cs[i], R->data[i], R->n[i], rs);
    struct dsort_sink sink;
    dsort_sink_memory(&sink, out, want_n * rs);
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_merge(fmt, ord, cs, R->k, &sink, &err);
    if (st) {
        report("memory merge failed", fmt, ord, R->k, R);
        print_error("  %s\n", err.msg);
    }
    assert_int_equal(st, DSORT_OK);
    assert_int_equal(sink.len, want_n * rs);
    assert_int_equal(sink.records, want_n);
    check_output("memory merge", fmt, ord, R, out, sink.len / rs, want, want_n);
    /* Every cursor was read to its end. */
    for (size_t i = 0; i < R->k; i++)
        assert_ptr_equal(cs[i].cur, cs[i].end);
    free(cs);
    free(out);
}

/* Block cursors (a mix: some start empty and are filled by the merge's first refill, some
 * start with their first block in place) into a flushing sink with a small buffer. */
static void merge_blocks(const struct dsort_format *fmt, const struct dsort_order *ord,
                         const struct runs *R, const unsigned char *want, size_t want_n)
{
    const size_t rs = fmt->rec_size;
    struct dsort_cursor *cs = calloc(R->k + 1, sizeof *cs);
    struct block_src *bs = calloc(R->k + 1, sizeof *bs);
    assert_true(cs && bs);
    for (size_t i = 0; i < R->k; i++) {
        bs[i] = (struct block_src){R->data[i], R->n[i], 0, rs, 1 + (size_t)(rng_next() % 4),
                                   NULL,       0,       -1};
        bs[i].block = malloc(bs[i].maxblock * rs);
        assert_non_null(bs[i].block);
        cs[i].ctx = &bs[i];
        cs[i].refill = block_refill;
        cs[i].cur = cs[i].end = bs[i].block;
        if (rng_next() & 1) {
            struct dsort_error e;
            assert_int_equal(block_refill(&cs[i], &e), DSORT_OK);
        }
    }
    /* Sink capacity: 1 to 4 records, sometimes not a whole number of records. */
    size_t cap = rs * (1 + (size_t)(rng_next() % 4)) + ((rng_next() & 1) ? rs / 2 : 0);
    unsigned char *sbuf = malloc(cap);
    struct collect col = {malloc(want_n * rs + 1), 0, want_n * rs, 0, -1};
    assert_true(sbuf && col.buf);
    struct dsort_sink sink;
    dsort_sink_memory(&sink, sbuf, cap);
    sink.flush = collect_flush;
    sink.ctx = &col;
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_merge(fmt, ord, cs, R->k, &sink, &err);
    if (st) {
        report("block merge failed", fmt, ord, R->k, R);
        print_error("  %s\n", err.msg);
    }
    assert_int_equal(st, DSORT_OK);
    assert_int_equal(sink.len, 0); /* the final flush was done */
    assert_int_equal(sink.records, want_n);
    if (want_n)
        assert_true(col.flushes > 0);
    check_output("block merge", fmt, ord, R, col.buf, col.len / rs, want, want_n);
    assert_int_equal(col.len % rs, 0);
    for (size_t i = 0; i < R->k; i++) {
        assert_int_equal(bs[i].pos, bs[i].n); /* every run delivered in full */
        free(bs[i].block);
    }
    free(col.buf);
    free(sbuf);
    free(cs);
    free(bs);
}

static void run_matrix(const char *spec, size_t distinct, size_t maxlen, int same_payload)
{
    struct dsort_format fmt;
    parse(spec, &fmt);
    static const size_t ks[] = {1, 2, 3, 4, 5, 8, 16, 17, 31};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
        for (size_t o = 0; o < NORDERS; o++)
            for (int rep = 0; rep < 6; rep++) {
                struct runs R;
                make_runs(&R, &fmt, &orders[o], ks[ki], maxlen, distinct, same_payload);
                unsigned char *want;
                size_t want_n = expected(&R, &fmt, &orders[o], &want);
                merge_memory(&fmt, &orders[o], &R, want, want_n);
                merge_blocks(&fmt, &orders[o], &R, want, want_n);
                free(want);
                free_runs(&R);
            }
}

static void test_merge_few_keys(void **state)
{
    (void)state;
    rng_seed();
    run_matrix("fixed:16:3:4", 3, 40, 0); /* heavy ties across cursors */
    run_matrix("fixed:16:3:4", 3, 40, 1); /* equal keys are equal records */
}

static void test_merge_many_keys(void **state)
{
    (void)state;
    rng_seed();
    run_matrix("gensort", 1000, 60, 0);
    run_matrix("fixed:16:3:4", 1, 20, 0); /* all keys equal */
    run_matrix("fixed:5:4:1", 2, 30, 0);  /* one-byte key at the end */
}

static void test_merge_shared_prefix(void **state)
{
    (void)state;
    rng_seed();
    for (shared_prefix = 7; shared_prefix <= 9; shared_prefix++) {
        run_matrix("fixed:24:2:12", 50, 40, 0); /* the keys differ after byte 7, 8 or 9 */
        run_matrix("gensort", 300, 40, 0);
    }
    shared_prefix = 0;
}

static void test_merge_zero_cursors(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("gensort", &fmt);
    const struct dsort_order ord = {0, 1, 0};
    unsigned char buf[1];
    struct dsort_sink sink;
    dsort_sink_memory(&sink, buf, 0);
    struct dsort_error err;
    assert_int_equal(dsort_merge(&fmt, &ord, NULL, 0, &sink, &err), DSORT_OK);
    assert_int_equal(sink.len, 0);
    assert_int_equal(sink.records, 0);
}

/* Hand-made cases. Records are (key, payload, id); byte 1 makes the last resort (the whole
 * record) disagree with cursor order. Each case lists its runs, sorted under its order. */
static void test_merge_known(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("fixed:3:0:1", &fmt);
    static const unsigned char a9[3] = {'a', 9, 0}, b1[3] = {'b', 1, 1}, a2[3] = {'a', 2, 2},
                               a3[3] = {'a', 3, 3}, c4[3] = {'c', 4, 4}, b0[3] = {'b', 0, 5};
    static const struct {
        struct dsort_order ord;
        const unsigned char *run[3][3];
        size_t len[3];
        const char *want; /* ids */
    } cases[] = {
        {{0, 0, 0}, {{a9, b1}, {a2, a3, c4}, {b0}}, {2, 3, 1}, "\2\3\0\5\1\4"},
        {{0, 0, 1}, {{a9, b1}, {a2, a3, c4}, {b0}}, {2, 3, 1}, "\0\2\3\1\5\4"},
        {{0, 1, 0}, {{a9, b1}, {a2, a3, c4}, {b0}}, {2, 3, 1}, "\0\1\4"},
        {{1, 0, 0}, {{b1, a9}, {c4, a3, a2}, {b0}}, {2, 3, 1}, "\4\1\5\0\3\2"},
        {{1, 0, 1}, {{b1, a9}, {c4, a2, a3}, {b0}}, {2, 3, 1}, "\4\1\5\0\2\3"},
        {{1, 1, 0}, {{b1, a9}, {c4, a2, a3}, {b0}}, {2, 3, 1}, "\4\1\0"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const struct dsort_order *o = &cases[c].ord;
        unsigned char runs[3][9];
        struct dsort_cursor cs[3];
        for (size_t r = 0; r < 3; r++) {
            for (size_t i = 0; i < cases[c].len[r]; i++)
                memcpy(runs[r] + 3 * i, cases[c].run[r][i], 3);
            dsort_cursor_memory(&cs[r], runs[r], cases[c].len[r], 3);
        }
        unsigned char out[18];
        struct dsort_sink sink;
        dsort_sink_memory(&sink, out, sizeof out);
        struct dsort_error err;
        assert_int_equal(dsort_merge(&fmt, o, cs, 3, &sink, &err), DSORT_OK);
        const size_t n = o->unique ? 3 : 6;
        assert_int_equal(sink.len, 3 * n);
        assert_int_equal(sink.records, n);
        for (size_t i = 0; i < n; i++) {
            if (out[3 * i + 2] != (unsigned char)cases[c].want[i])
                print_error("case %zu: output %zu has id %u, expected %u\n", c, i, out[3 * i + 2],
                            (unsigned char)cases[c].want[i]);
            assert_int_equal(out[3 * i + 2], (unsigned char)cases[c].want[i]);
        }
    }
}

/* dsort_merge_cmp over records that carry an 8-byte big-endian position suffix (as spilled
 * runs do): the suffix breaks ties and is dropped from the output (out_size < rec_size). */
static void put_be64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static void test_merge_suffix(void **state)
{
    (void)state;
    rng_seed();
    struct dsort_format fmt;
    parse("fixed:12:1:2", &fmt);
    const size_t rs = fmt.rec_size, ts = rs + 8;
    for (int rep = 0; rep < 50; rep++) {
        const int reverse = rep & 1;
        const size_t k = 1 + (size_t)(rng_next() % 9), total = (size_t)(rng_next() % 400);
        /* input records in input order, positions 0..total-1, keys from a tiny pool */
        unsigned char *in = malloc(total * ts + 1);
        assert_non_null(in);
        fill_random(in, total * ts);
        for (size_t i = 0; i < total; i++) {
            in[i * ts + 1] = (unsigned char)(rng_next() % 3);
            in[i * ts + 2] = 7;
            put_be64(in + i * ts + rs, i);
        }
        /* deal them out to k runs at random, each sorted by (key, position) */
        struct dsort_cmp cmp = {.key_off = 1,
                                .key_len = 2,
                                .tie_off = rs,
                                .tie_len = 8,
                                .reverse = reverse,
                                .tie_reverse = 0};
        unsigned char **run = calloc(k, sizeof *run);
        size_t *len = calloc(k, sizeof *len);
        assert_true(run && len);
        for (size_t r = 0; r < k; r++) {
            run[r] = malloc(total * ts + 1);
            assert_non_null(run[r]);
        }
        for (size_t i = 0; i < total; i++) {
            size_t r = (size_t)(rng_next() % k);
            memcpy(run[r] + len[r]++ * ts, in + i * ts, ts);
        }
        /* in input order already, so only the key needs sorting: a stable insertion sort */
        for (size_t r = 0; r < k; r++)
            for (size_t i = 1; i < len[r]; i++)
                for (size_t j = i;
                     j > 0 && dsort_cmp_records(&cmp, run[r] + (j - 1) * ts, run[r] + j * ts) > 0;
                     j--) {
                    unsigned char t[20];
                    memcpy(t, run[r] + j * ts, ts);
                    memcpy(run[r] + j * ts, run[r] + (j - 1) * ts, ts);
                    memcpy(run[r] + (j - 1) * ts, t, ts);
                }
        struct dsort_cursor *cs = calloc(k, sizeof *cs);
        unsigned char *out = malloc(total * rs + 1), *want = malloc(total * rs + 1);
        assert_true(cs && out && want);
        for (size_t r = 0; r < k; r++)
            dsort_cursor_memory(&cs[r], run[r], len[r], ts);
        /* expected: the input stably sorted by key, suffix dropped */
        size_t w = 0;
        for (int pass = 0; pass < 3; pass++) {
            int key = reverse ? 2 - pass : pass;
            for (size_t i = 0; i < total; i++)
                if (in[i * ts + 1] == key)
                    memcpy(want + w++ * rs, in + i * ts, rs);
        }
        assert_int_equal(w, total);
        for (int unique = 0; unique < 2; unique++) {
            struct dsort_sink sink;
            dsort_sink_memory(&sink, out, total * rs);
            struct dsort_error err;
            dsort_error_clear(&err);
            assert_int_equal(dsort_merge_cmp(&cmp, ts, rs, unique, cs, k, &sink, &err), DSORT_OK);
            if (!unique) {
                assert_int_equal(sink.len, total * rs);
                assert_int_equal(sink.records, total);
                assert_memory_equal(out, want, total * rs);
            } else {
                /* the first record of each key in input order */
                size_t n = 0;
                for (size_t i = 0; i < total; i++)
                    if (i == 0 || memcmp(want + i * rs + 1, want + (i - 1) * rs + 1, 2))
                        assert_memory_equal(out + n++ * rs, want + i * rs, rs);
                assert_int_equal(sink.len, n * rs);
                assert_int_equal(sink.records, n);
            }
            for (size_t r = 0; r < k; r++)
                dsort_cursor_memory(&cs[r], run[r], len[r], ts);
        }
        for (size_t r = 0; r < k; r++)
            free(run[r]);
        free(run);
        free(len);
        free(cs);
        free(out);
        free(want);
        free(in);
    }
}

/* A memory sink one record (or one byte) too small: DSORT_ENOMEM, and a prefix of the output. */
static void test_merge_sink_too_small(void **state)
{
    (void)state;
    rng_seed();
    struct dsort_format fmt;
    parse("fixed:16:3:4", &fmt);
    const size_t rs = fmt.rec_size;
    for (int rep = 0; rep < 20; rep++) {
        const struct dsort_order *ord = &orders[rep % 3];
        struct runs R;
        do {
            make_runs(&R, &fmt, ord, 5, 30, 4, 0);
            if (R.total > 0)
                break;
            free_runs(&R);
        } while (1);
        unsigned char *want;
        size_t want_n = expected(&R, &fmt, ord, &want);
        struct dsort_cursor cs[5];
        for (size_t i = 0; i < 5; i++)
            dsort_cursor_memory(&cs[i], R.data[i], R.n[i], rs);
        size_t cap = want_n * rs - ((rep & 1) ? 1 : rs);
        unsigned char *out = malloc(cap + 1);
        assert_non_null(out);
        struct dsort_sink sink;
        dsort_sink_memory(&sink, out, cap);
        struct dsort_error err;
        dsort_error_clear(&err);
        assert_int_equal(dsort_merge(&fmt, ord, cs, 5, &sink, &err), DSORT_ENOMEM);
        assert_int_equal(err.status, DSORT_ENOMEM);
        assert_true(sink.len <= cap);
        assert_int_equal(sink.len, (want_n - 1) * rs);
        assert_memory_equal(out, want, sink.len);
        free(out);
        free(want);
        free_runs(&R);
    }
}

/* Errors from refill and flush stop the merge and come back unchanged. */
static void test_merge_errors(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("fixed:16:3:4", &fmt);
    const size_t rs = fmt.rec_size;
    const struct dsort_order ord = {0, 0, 0};
    unsigned char data[10 * 16];
    memset(data, 0, sizeof data);
    for (size_t i = 0; i < 10; i++)
        data[i * rs + 3] = (unsigned char)i;

    /* refill fails on its third call */
    unsigned char block[16 * 4];
    struct block_src b = {data, 10, 0, rs, 1, block, 0, 2};
    struct dsort_cursor c = {block, block, block_refill, &b};
    unsigned char out[10 * 16];
    struct dsort_sink sink;
    dsort_sink_memory(&sink, out, sizeof out);
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_merge(&fmt, &ord, &c, 1, &sink, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, "injected refill failure"));
    assert_int_equal(sink.len, 2 * rs);

    /* a failing first refill (the merge's own initial refill) */
    b = (struct block_src){data, 10, 0, rs, 1, block, 0, 0};
    c = (struct dsort_cursor){block, block, block_refill, &b};
    dsort_sink_memory(&sink, out, sizeof out);
    assert_int_equal(dsort_merge(&fmt, &ord, &c, 1, &sink, &err), DSORT_EIO);
    assert_int_equal(sink.len, 0);

    /* flush fails on its second call */
    struct dsort_cursor m[2];
    dsort_cursor_memory(&m[0], data, 5, rs);
    dsort_cursor_memory(&m[1], data + 5 * rs, 5, rs);
    unsigned char sbuf[3 * 16];
    unsigned char got[10 * 16];
    struct collect col = {got, 0, sizeof got, 0, 1};
    dsort_sink_memory(&sink, sbuf, sizeof sbuf);
    sink.flush = collect_flush;
    sink.ctx = &col;
    dsort_error_clear(&err);
    assert_int_equal(dsort_merge(&fmt, &ord, m, 2, &sink, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, "injected flush failure"));
    assert_int_equal(col.len, 3 * rs);
    assert_memory_equal(got, data, 3 * rs);

    /* the final flush fails */
    dsort_cursor_memory(&m[0], data, 1, rs);
    dsort_cursor_memory(&m[1], data + rs, 1, rs);
    col = (struct collect){got, 0, sizeof got, 0, 0};
    dsort_sink_memory(&sink, sbuf, sizeof sbuf);
    sink.flush = collect_flush;
    sink.ctx = &col;
    assert_int_equal(dsort_merge(&fmt, &ord, m, 2, &sink, &err), DSORT_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_known),        cmocka_unit_test(test_merge_suffix),
        cmocka_unit_test(test_merge_zero_cursors), cmocka_unit_test(test_merge_few_keys),
        cmocka_unit_test(test_merge_many_keys),    cmocka_unit_test(test_merge_sink_too_small),
        cmocka_unit_test(test_merge_errors),       cmocka_unit_test(test_merge_shared_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
