/* Unit tests for keysort.h: the radix run former against a reference comparison sort.
 *
 * Every case builds random records (seeded: the seed is printed, DSORT_TEST_SEED=<seed>
 * replays it), sorts them with dsort_keysort_sort and with qsort on the order that format.h
 * defines - key (descending for -r), then, without -s and -u, the whole record as the last
 * resort (descending for -r), then index ascending - and requires the identical index
 * sequence, tie order included, and identical gathered bytes. Sizes straddle the radix
 * sort's strategy switches (24 entries: insertion sort; 32768: cache-resident LSD passes;
 * above: MSD scatter first). The sort a bucket at a time (dsort_keysort_split, _ready) must
 * give the same entries whatever order its buckets are readied in. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_rng.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "keysort.h"
#include "merge.h"

enum keymode {
    KEY_RANDOM,    /* every key random: few ties */
    KEY_DUPS,      /* five distinct keys: heavy duplicates */
    KEY_EQUAL,     /* one key */
    KEY_PREFIX,    /* keys tie on the first 10 bytes often, and sometimes in full */
    KEY_ALPHABET,  /* every byte from {00, 01, 80, ff}: partial ties at every depth */
    KEY_HIGHBYTE,  /* first byte from two values, rest random: big MSD buckets */
    KEY_IDENTICAL, /* whole records from a pool of three: only the index breaks ties */
    KEY_NMODES
};

static const char *const mode_name[] = {"random",   "dups",     "equal",    "prefix",
                                        "alphabet", "highbyte", "identical"};

/* Build n records of fmt: random payload, keys by mode. */
static void make_records(const struct dsort_format *fmt, enum keymode mode, unsigned char *recs,
                         size_t n)
{
    const size_t rs = fmt->rec_size, kl = fmt->key_len;
    fill_random(recs, n * rs);
    size_t pool_n = mode == KEY_DUPS ? 5 : mode == KEY_EQUAL ? 1 : mode == KEY_PREFIX ? 40 : 0;
    unsigned char *pool = NULL;
    if (pool_n) {
        pool = malloc(pool_n * kl);
        assert_non_null(pool);
        fill_random(pool, pool_n * kl);
        if (mode == KEY_PREFIX) {
            /* Two prefixes of up to 10 bytes; the rest of the key from a tiny alphabet. */
            unsigned char pre[2][DSORT_KEYSORT_PREFIX];
            fill_random(&pre[0][0], sizeof pre);
            for (size_t p = 0; p < pool_n; p++) {
                unsigned char *k = pool + p * kl;
                size_t np = kl < DSORT_KEYSORT_PREFIX ? kl : DSORT_KEYSORT_PREFIX;
                memcpy(k, pre[rng_next() & 1], np);
                for (size_t b = np; b < kl; b++)
                    k[b] = (unsigned char)(rng_next() % 3);
            }
        }
    }
    if (mode == KEY_IDENTICAL) {
        for (size_t i = 3; i < n; i++)
            memcpy(recs + i * rs, recs + (rng_next() % 3) * rs, rs);
        free(pool);
        return;
    }
    static const unsigned char alpha[4] = {0x00, 0x01, 0x80, 0xff};
    for (size_t i = 0; i < n; i++) {
        unsigned char *k = recs + i * rs + fmt->key_off;
        switch (mode) {
        case KEY_RANDOM:
            break;
        case KEY_ALPHABET:
            for (size_t b = 0; b < kl; b++)
                k[b] = alpha[rng_next() & 3];
            break;
        case KEY_HIGHBYTE:
            k[0] = (rng_next() & 1) ? 0xff : 0x00;
            break;
        default:
            memcpy(k, pool + (rng_next() % pool_n) * kl, kl);
            break;
        }
    }
    free(pool);
}

/* Reference: qsort on (key under the order, whole record under the order unless -s or -u,
 * index ascending), written out from format.h rather than with dsort_cmp_records. */
struct ref_ctx {
    const struct dsort_format *fmt;
    const unsigned char *recs;
    int reverse, last_resort;
};
static struct ref_ctx ref;

static int ref_cmp(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const size_t rs = ref.fmt->rec_size;
    int c = memcmp(ref.recs + a * rs + ref.fmt->key_off, ref.recs + b * rs + ref.fmt->key_off,
                   ref.fmt->key_len);
    if (c)
        return ref.reverse ? -c : c;
    if (ref.last_resort) {
        c = memcmp(ref.recs + a * rs, ref.recs + b * rs, rs);
        if (c)
            return ref.reverse ? -c : c;
    }
    return a < b ? -1 : a > b;
}

static const char *order_name(const struct dsort_order *o, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s", o->reverse ? "r" : "", o->unique ? "u" : "",
             o->stable ? "s" : "", !o->reverse && !o->unique && !o->stable ? "-" : "");
    return buf;
}

/* dsort_keysort_merge: the records cut into k contiguous parts (as ranks hold them), each
 * sorted alone and its indices made global, merged: the output must be `want` (the sort of
 * all of them). Then damaged entries: an index outside its part, and a prefix that is not its
 * record's, must be refused. */
static void check_merge(const struct dsort_format *fmt, const struct dsort_order *ord,
                        const unsigned char *recs, size_t n, const unsigned char *want)
{
    const size_t rs = fmt->rec_size;
    struct dsort_sortent *ents = malloc(n * sizeof *ents + 1), *tmp = malloc(n * sizeof *tmp + 1);
    unsigned char *got = malloc(n * rs + 1);
    assert_true(ents && tmp && got);
    for (size_t k = 1; k <= 3; k++) {
        const struct dsort_sortent *runs[3];
        size_t lens[3];
        uint64_t lo[3], hi[3];
        for (size_t p = 0; p < k; p++) {
            size_t a = n * p / k, b = n * (p + 1) / k;
            dsort_keysort_sort(fmt, ord, recs + a * rs, b - a, ents + a, tmp);
            for (size_t i = a; i < b; i++)
                ents[i].k1 += a;
            runs[p] = ents + a;
            lens[p] = b - a;
            lo[p] = a;
            hi[p] = b;
        }
        struct dsort_sink sink;
        struct dsort_error err = {0};
        dsort_sink_memory(&sink, got, n * rs);
        assert_int_equal(dsort_keysort_merge(fmt, ord, recs, runs, lens, lo, hi, k, &sink, &err),
                         DSORT_OK);
        assert_int_equal(sink.records, n);
        if (n && memcmp(got, want, n * rs)) {
            print_error("seed %" PRIu64 ": merge of %zu parts, %s n=%zu: output differs\n",
                        rng_seed_value, k, fmt->name, n);
            fail();
        }
        if (k == 2 && lens[1] > 0) {
            struct dsort_sortent *e = ents + n / 2, keep = *e;
            e->k1 = (e->k1 & ~DSORT_KEYSORT_IDX_MASK) | (uint64_t)n; /* outside its part */
            dsort_sink_memory(&sink, got, n * rs);
            assert_int_equal(
                dsort_keysort_merge(fmt, ord, recs, runs, lens, lo, hi, k, &sink, &err),
                DSORT_EINTERNAL);
            *e = keep;
            e->k0 ^= UINT64_C(1) << 40; /* a prefix byte that is not its record's */
            dsort_sink_memory(&sink, got, n * rs);
            assert_int_equal(
                dsort_keysort_merge(fmt, ord, recs, runs, lens, lo, hi, k, &sink, &err),
                DSORT_EINTERNAL);
            *e = keep;
        }
    }
    free(ents);
    free(tmp);
    free(got);
}

/* The split after the entries were made at once. */
static void split_at_once(struct dsort_keysort_lazy *z, const struct dsort_format *fmt,
                          const struct dsort_order *ord, const unsigned char *recs, size_t n,
                          struct dsort_sortent *ents, struct dsort_sortent *tmp, size_t eager)
{
    size_t cnt[256] = {0};
    dsort_keysort_entries(fmt, ord, recs, 0, n, tmp, cnt);
    dsort_keysort_split(z, fmt, ord, recs, n, ents, tmp, cnt, eager);
}

/* The split after the entries were made as the copying path's read makes them: in pieces
 * (random lengths, some empty) taken in a random order, the counts summed. */
static void split_in_pieces(struct dsort_keysort_lazy *z, const struct dsort_format *fmt,
                            const struct dsort_order *ord, const unsigned char *recs, size_t n,
                            struct dsort_sortent *ents, struct dsort_sortent *tmp, size_t eager)
{
    size_t cuts[18], k = 0, cnt[256] = {0};
    cuts[k++] = 0;
    while (k < 17)
        cuts[k++] = n ? (size_t)(rng_next() % (n + 1)) : 0;
    cuts[k++] = n;
    for (size_t i = 1; i < k; i++) /* sorted: pieces [cuts[i - 1], cuts[i]) */
        for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            const size_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    size_t order[17];
    for (size_t i = 0; i < k - 1; i++)
        order[i] = i;
    for (size_t i = k - 2; i > 0; i--) { /* shuffled */
        const size_t j = (size_t)(rng_next() % (i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < k - 1; i++) {
        const size_t a = cuts[order[i]], b = cuts[order[i] + 1];
        dsort_keysort_entries(fmt, ord, recs, a, b - a, tmp, cnt);
    }
    dsort_keysort_split(z, fmt, ord, recs, n, ents, tmp, cnt, eager);
}

/* The sort a bucket at a time (dsort_keysort_entries, _split, _ready) must give exactly
 * ents, the whole sort's: readied in random ranges in a random order, every bucket sorted at
 * once (eager 0), none (eager n) or some (a random threshold), the entries made at once or in
 * pieces; and an entry once readied never moves. */
static void check_lazy(const struct dsort_format *fmt, const struct dsort_order *ord,
                       const unsigned char *recs, size_t n, const struct dsort_sortent *want,
                       enum keymode mode)
{
    struct dsort_sortent *ents = malloc(n * sizeof *ents + 1), *tmp = malloc(n * sizeof *tmp + 1);
    struct dsort_sortent *seen = malloc(n * sizeof *seen + 1);
    unsigned char *ready = calloc(n + 1, 1);
    assert_true(ents && tmp && seen && ready);
    const size_t eagers[3] = {0, n, n ? (size_t)(rng_next() % n) : 0};
    for (int t = 0; t < 3; t++) {
        struct dsort_keysort_lazy z;
        memset(tmp, 0xa5, n * sizeof *tmp);
        if (t == 0)
            split_at_once(&z, fmt, ord, recs, n, ents, tmp, eagers[t]);
        else
            split_in_pieces(&z, fmt, ord, recs, n, ents, tmp, eagers[t]);
        assert_int_equal(z.off[256], n);
        struct dsort_sortent *scratch = malloc(z.lazy_max * sizeof *scratch + 1);
        assert_non_null(scratch);
        memset(ready, 0, n);
        for (size_t left = n, tries = 0; left && tries < 64; tries++) {
            const size_t lo = (size_t)(rng_next() % n),
                         len = 1 + (size_t)(rng_next() % (n / 8 + 2));
            const size_t hi = lo + len < n ? lo + len : n;
            dsort_keysort_ready(&z, lo, hi, scratch);
            for (size_t i = lo; i < hi; i++)
                if (!ready[i]) {
                    ready[i] = 1;
                    seen[i] = ents[i];
                    left--;
                }
        }
        for (size_t i = 0; i < n; i++) /* readied entries were final */
            if (ready[i] && memcmp(&seen[i], &want[i], sizeof *ents)) {
                print_error("seed %" PRIu64 ": lazy %s keys %s n=%zu eager %zu: entry %zu "
                            "moved after it was readied\n",
                            rng_seed_value, fmt->name, mode_name[mode], n, eagers[t], i);
                fail();
            }
        dsort_keysort_ready(&z, 0, n, scratch);
        for (size_t i = 0; i < n; i++)
            if (memcmp(&ents[i], &want[i], sizeof *ents)) {
                print_error("seed %" PRIu64 ": lazy %s keys %s n=%zu eager %zu: position %zu has "
                            "record %zu, the whole sort's %zu\n",
                            rng_seed_value, fmt->name, mode_name[mode], n, eagers[t], i,
                            dsort_sortent_index(&ents[i]), dsort_sortent_index(&want[i]));
                fail();
            }
        free(scratch);
    }
    free(ents);
    free(tmp);
    free(seen);
    free(ready);
}

static void check_case(const struct dsort_format *fmt, const struct dsort_order *ord,
                       enum keymode mode, size_t n)
{
    const size_t rs = fmt->rec_size;
    unsigned char *recs = malloc(n * rs + 1), *out = malloc(n * rs + 1);
    struct dsort_sortent *ents = malloc(n * sizeof *ents + 1), *tmp = malloc(n * sizeof *tmp + 1);
    size_t *idx = malloc(n * sizeof *idx + 1);
    assert_true(recs && out && ents && tmp && idx);
    make_records(fmt, mode, recs, n);
    const unsigned char *recs_copy = NULL;
    unsigned char *copy = malloc(n * rs + 1);
    assert_non_null(copy);
    memcpy(copy, recs, n * rs);
    recs_copy = copy;

    dsort_keysort_sort(fmt, ord, recs, n, ents, tmp);

    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    /* The last resort applies without -s and -u (format.h). */
    ref = (struct ref_ctx){fmt, recs, ord->reverse, !ord->stable && !ord->unique};
    qsort(idx, n, sizeof *idx, ref_cmp);

    char oname[8];
    for (size_t i = 0; i < n; i++) {
        size_t got = dsort_sortent_index(&ents[i]);
        if (got != idx[i]) {
            print_error("seed %" PRIu64 ": format %s order %s keys %s n=%zu: position %zu has "
                        "record %zu, expected %zu\n",
                        rng_seed_value, fmt->name, order_name(ord, oname, sizeof oname),
                        mode_name[mode], n, i, got, idx[i]);
            fail();
        }
    }
    /* Sorting does not touch the records. */
    assert_memory_equal(recs, recs_copy, n * rs);
    check_lazy(fmt, ord, recs, n, ents, mode);

    memset(out, 0x5a, n * rs);
    dsort_keysort_gather(fmt, recs, ents, n, out);
    for (size_t i = 0; i < n; i++)
        if (memcmp(out + i * rs, recs + idx[i] * rs, rs)) {
            print_error("seed %" PRIu64 ": gather %s n=%zu: output record %zu differs\n",
                        rng_seed_value, fmt->name, n, i);
            fail();
        }
    check_merge(fmt, ord, recs, n, out);
    free(copy);
    free(recs);
    free(out);
    free(ents);
    free(tmp);
    free(idx);
}

static const char *const formats[] = {
    "gensort",       /* 100/0/10 */
    "fixed:8:0:3",   /* short key */
    "fixed:12:11:1", /* one-byte key at the end */
    "fixed:20:7:10", /* key at an offset, exactly the prefix */
    "fixed:17:3:9",  /* key one byte short of the prefix, odd record size */
    "fixed:40:2:30", /* long key: ties on the prefix compared in full */
    "fixed:16:0:11", /* one byte beyond the prefix */
};
#define NFORMATS (sizeof formats / sizeof formats[0])

static const struct dsort_order orders[] = {
    {0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1},
};
#define NORDERS (sizeof orders / sizeof orders[0])

static void parse(const char *spec, struct dsort_format *fmt)
{
    struct dsort_error err;
    assert_int_equal(dsort_format_parse(spec, fmt, &err), DSORT_OK);
}

static void test_small_sizes(void **state)
{
    (void)state;
    rng_seed();
    static const size_t sizes[] = {0, 1, 2, 3, 5, 8, 23, 24, 25, 26, 47, 100, 257, 1000};
    for (size_t f = 0; f < NFORMATS; f++) {
        struct dsort_format fmt;
        parse(formats[f], &fmt);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int m = 0; m < KEY_NMODES; m++)
                for (size_t o = 0; o < NORDERS; o++)
                    check_case(&fmt, &orders[o], (enum keymode)m, sizes[s]);
    }
}

static void test_large_sizes(void **state)
{
    (void)state;
    rng_seed();
    /* Around the LSD/MSD switch at 32768 entries, and well above it. */
    static const size_t sizes[] = {32768, 32769, 50001};
    size_t turn = 0;
    for (size_t f = 0; f < NFORMATS; f++) {
        struct dsort_format fmt;
        parse(formats[f], &fmt);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int m = 0; m < KEY_NMODES; m++) {
                /* Forward and reverse (both with the last resort) in turn, and one of the others.
                 */
                check_case(&fmt, &orders[turn % 2], (enum keymode)m, sizes[s]);
                check_case(&fmt, &orders[2 + turn % (NORDERS - 2)], (enum keymode)m, sizes[s]);
                turn++;
            }
    }
}

/* Hand-made cases whose answers are written out, so a wrong reference cannot hide a bug. */
static void test_known_order(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("fixed:3:0:1", &fmt);
    /* keys b a b a c b; byte 1 rises with the record number, byte 2 falls, so the last
     * resort (the whole record) orders equal keys like the index; in the second table
     * byte 1 is constant and byte 2 decides, against the index. */
    const unsigned char up[18] = {'b', 0, 9, 'a', 1, 8, 'b', 2, 7, 'a', 3, 6, 'c', 4, 5, 'b', 5, 4};
    const unsigned char down[18] = {'b', 0, 9, 'a', 0, 8, 'b', 0, 7,
                                    'a', 0, 6, 'c', 0, 5, 'b', 0, 4};
    struct dsort_sortent ents[6], tmp[6];
    static const struct {
        struct dsort_order ord;
        size_t want_up[6], want_down[6];
    } cases[] = {
        /* default: whole record as last resort */
        {{0, 0, 0}, {1, 3, 0, 2, 5, 4}, {3, 1, 5, 2, 0, 4}},
        /* -s, -u: index */
        {{0, 0, 1}, {1, 3, 0, 2, 5, 4}, {1, 3, 0, 2, 5, 4}},
        {{0, 1, 0}, {1, 3, 0, 2, 5, 4}, {1, 3, 0, 2, 5, 4}},
        /* -r: keys and last resort descending */
        {{1, 0, 0}, {4, 5, 2, 0, 3, 1}, {4, 0, 2, 5, 1, 3}},
        /* -r -s, -r -u: keys descending, index ascending */
        {{1, 0, 1}, {4, 0, 2, 5, 1, 3}, {4, 0, 2, 5, 1, 3}},
        {{1, 1, 0}, {4, 0, 2, 5, 1, 3}, {4, 0, 2, 5, 1, 3}},
        {{1, 1, 1}, {4, 0, 2, 5, 1, 3}, {4, 0, 2, 5, 1, 3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int t = 0; t < 2; t++) {
            const unsigned char *recs = t ? down : up;
            const size_t *want = t ? cases[c].want_down : cases[c].want_up;
            dsort_keysort_sort(&fmt, &cases[c].ord, recs, 6, ents, tmp);
            for (size_t i = 0; i < 6; i++) {
                if (dsort_sortent_index(&ents[i]) != want[i])
                    print_error("case %zu table %d: position %zu has %zu, expected %zu\n", c, t, i,
                                dsort_sortent_index(&ents[i]), want[i]);
                assert_int_equal(dsort_sortent_index(&ents[i]), want[i]);
            }
            unsigned char out[18];
            dsort_keysort_gather(&fmt, recs, ents, 6, out);
            for (size_t i = 0; i < 6; i++)
                assert_memory_equal(out + 3 * i, recs + 3 * want[i], 3);
        }
}

/* dsort_keysort_ready on three threads at once, each with its own scratch, over random ranges
 * that overlap (so threads want the same buckets at the same time): the entries must be the
 * whole sort's. Random keys (small buckets) and two first bytes (two big buckets, wanted by
 * every thread at once). */
struct lazy_thread {
    struct dsort_keysort_lazy *z;
    struct dsort_sortent *scratch;
    const struct dsort_sortent *want;
    uint64_t seed;
    size_t bad; /* 1 + the first entry not final when its ready call returned; 0: none */
};

/* ready(lo, hi), then ents[lo..end) must be the whole sort's at once (not after a join: a
 * ready that returned while another thread still sorted the bucket fails here). */
static void lazy_thread_ready(struct lazy_thread *t, size_t lo, size_t hi)
{
    const size_t end = dsort_keysort_ready(t->z, lo, hi, t->scratch);
    for (size_t i = lo; i < end && !t->bad; i++)
        if (memcmp(&t->z->ents[i], &t->want[i], sizeof t->want[i]))
            t->bad = i + 1;
}

static void *lazy_thread_main(void *arg)
{
    struct lazy_thread *t = arg;
    const size_t n = t->z->n;
    for (int i = 0; i < 200; i++) {
        t->seed = t->seed * 6364136223846793005u + 1442695040888963407u;
        const size_t lo = (size_t)(t->seed >> 33) % n, len = (size_t)(t->seed >> 13) % 4096;
        lazy_thread_ready(t, lo, lo + len < n ? lo + len : n);
    }
    lazy_thread_ready(t, 0, n);
    return NULL;
}

static void test_lazy_threads(void **state)
{
    (void)state;
    rng_seed();
    struct dsort_format fmt;
    parse("gensort", &fmt);
    const struct dsort_order ord = {0, 0, 0};
    const size_t n = 200000;
    unsigned char *recs = malloc(n * 100);
    struct dsort_sortent *want = malloc(n * sizeof *want), *ents = malloc(n * sizeof *ents),
                         *tmp = malloc(n * sizeof *tmp);
    assert_true(recs && want && ents && tmp);
    for (int mode = 0; mode < 2; mode++) {
        make_records(&fmt, mode ? KEY_HIGHBYTE : KEY_RANDOM, recs, n);
        dsort_keysort_sort(&fmt, &ord, recs, n, want, tmp);
        struct dsort_keysort_lazy z;
        split_at_once(&z, &fmt, &ord, recs, n, ents, tmp, n);
        struct lazy_thread t[3];
        pthread_t tid[3];
        for (int i = 0; i < 3; i++) {
            t[i] = (struct lazy_thread){&z, malloc(z.lazy_max * sizeof *ents + 1), want,
                                        rng_next() | 1, 0};
            assert_non_null(t[i].scratch);
            assert_int_equal(pthread_create(&tid[i], NULL, lazy_thread_main, &t[i]), 0);
        }
        for (int i = 0; i < 3; i++) {
            pthread_join(tid[i], NULL);
            free(t[i].scratch);
            if (t[i].bad) {
                print_error("seed %" PRIu64 ": lazy on three threads, keys %s: entry %zu was "
                            "not final when a ready call that covered it returned\n",
                            rng_seed_value, mode ? "highbyte" : "random", t[i].bad - 1);
                fail();
            }
        }
        for (size_t i = 0; i < n; i++)
            if (memcmp(&ents[i], &want[i], sizeof *ents)) {
                print_error("seed %" PRIu64 ": lazy on three threads, keys %s: position %zu has "
                            "record %zu, the whole sort's %zu\n",
                            rng_seed_value, mode ? "highbyte" : "random", i,
                            dsort_sortent_index(&ents[i]), dsort_sortent_index(&want[i]));
                fail();
            }
    }
    free(recs);
    free(want);
    free(ents);
    free(tmp);
}

/* Keys longer than the prefix that differ only after byte 10, and only in the last byte. */
static void test_long_key_suffix(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("fixed:40:2:30", &fmt);
    enum { N = 600 };
    unsigned char *recs = calloc(N, 40);
    struct dsort_sortent *ents = malloc(N * sizeof *ents), *tmp = malloc(N * sizeof *tmp);
    assert_true(recs && ents && tmp);
    for (size_t i = 0; i < N; i++) {
        unsigned char *r = recs + i * 40;
        memset(r + 2, 0x77, 30);
        r[31] = (unsigned char)((N - 1 - i) % 7); /* the key's last byte */
        r[0] = (unsigned char)i;
        r[1] = (unsigned char)(i >> 8);
    }
    /* Bytes 0-1 (outside the key) hold the index little-endian: under the last resort, equal
     * keys go by byte 0 first, which is not the index order. */
    const struct dsort_order fwd = {0, 0, 1}, rev = {1, 0, 1}, fwd_lr = {0, 0, 0},
                             rev_lr = {1, 0, 0};
    dsort_keysort_sort(&fmt, &fwd, recs, N, ents, tmp);
    for (size_t i = 1; i < N; i++) {
        size_t a = dsort_sortent_index(&ents[i - 1]), b = dsort_sortent_index(&ents[i]);
        int c = memcmp(recs + a * 40 + 2, recs + b * 40 + 2, 30);
        assert_true(c < 0 || (c == 0 && a < b));
    }
    dsort_keysort_sort(&fmt, &rev, recs, N, ents, tmp);
    for (size_t i = 1; i < N; i++) {
        size_t a = dsort_sortent_index(&ents[i - 1]), b = dsort_sortent_index(&ents[i]);
        int c = memcmp(recs + a * 40 + 2, recs + b * 40 + 2, 30);
        assert_true(c > 0 || (c == 0 && a < b));
    }
    dsort_keysort_sort(&fmt, &fwd_lr, recs, N, ents, tmp);
    for (size_t i = 1; i < N; i++) {
        size_t a = dsort_sortent_index(&ents[i - 1]), b = dsort_sortent_index(&ents[i]);
        int c = memcmp(recs + a * 40 + 2, recs + b * 40 + 2, 30);
        assert_true(c < 0 || (c == 0 && memcmp(recs + a * 40, recs + b * 40, 40) < 0));
    }
    dsort_keysort_sort(&fmt, &rev_lr, recs, N, ents, tmp);
    for (size_t i = 1; i < N; i++) {
        size_t a = dsort_sortent_index(&ents[i - 1]), b = dsort_sortent_index(&ents[i]);
        int c = memcmp(recs + a * 40 + 2, recs + b * 40 + 2, 30);
        assert_true(c > 0 || (c == 0 && memcmp(recs + a * 40, recs + b * 40, 40) > 0));
    }
    free(recs);
    free(ents);
    free(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_order),  cmocka_unit_test(test_long_key_suffix),
        cmocka_unit_test(test_small_sizes),  cmocka_unit_test(test_large_sizes),
        cmocka_unit_test(test_lazy_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
