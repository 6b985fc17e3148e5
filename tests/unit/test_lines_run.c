/* Unit tests for the run files of lines.h: framed lines in runfile.h's checksummed blocks.
 *
 * Seeded random lines (the seed is printed, DSORT_TEST_SEED=<seed> replays it), short ones and
 * some longer than a block, with and without positions, go through a dsort_line_writer into a
 * framed run writer and back through a framed run reader (with and without the read-ahead
 * thread) and a line cursor: the same lines, positions and counts must come out. Then the damage a
 * temp disk can do: every single flipped byte of a small run, every truncation, and an appended
 * block, must each be DSORT_EFORMAT naming the file, never a different stream of lines. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_rng.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"
#include "lines.h"
#include "prefetch.h"
#include "runfile.h"

struct tline {
    unsigned char *b;
    size_t len;
    uint64_t pos;
};

struct fixture {
    struct dsort_keys keys;
    struct dsort_lines_order ord;
    char path[64];
};

static int setup(void **state)
{
    static struct fixture f;
    dsort_keys_init(&f.keys);
    struct dsort_error err;
    assert_int_equal(dsort_keys_finish(&f.keys, &err), DSORT_OK);
    dsort_lines_order_init(&f.ord, &f.keys, '\n');
    snprintf(f.path, sizeof f.path, "/tmp/test_lines_run.XXXXXX");
    int fd = mkstemp(f.path);
    assert_true(fd >= 0);
    close(fd);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    unlink(f->path);
    return 0;
}

/* n random lines (no eol inside); every `big`-th is longer than `block` bytes. */
static struct tline *make_lines(size_t n, size_t big, size_t block)
{
    struct tline *l = calloc(n ? n : 1, sizeof *l);
    assert_non_null(l);
    for (size_t i = 0; i < n; i++) {
        size_t len = big && i % big == big - 1 ? block + rng_next() % (3 * block)
                                               : (size_t)(rng_next() % 200);
        l[i].b = malloc(len ? len : 1);
        assert_non_null(l[i].b);
        for (size_t j = 0; j < len; j++)
            l[i].b[j] = (unsigned char)('a' + rng_next() % 26);
        l[i].len = len;
        l[i].pos = rng_next();
    }
    return l;
}

static void free_lines(struct tline *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i].b);
    free(l);
}

/* Write the lines as a run in blocks of `block` bytes; returns the writer's line bytes and the
 * file size. */
static void write_run(const struct fixture *f, const struct tline *l, size_t n, int with_pos,
                      size_t block, uint64_t *bytes, uint64_t *size)
{
    unlink(f->path); /* the writer creates it (O_EXCL) */
    struct dsort_runwriter rw;
    struct dsort_error err;
    assert_int_equal(dsort_runwriter_open_framed(&rw, f->path, block, &err), DSORT_OK);
    struct dsort_line_writer w = {.run = &rw, .frame_pos = with_pos, .eol = '\n'};
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(dsort_line_writer_emit(&w, l[i].b, l[i].len, l[i].pos, &err), DSORT_OK);
        *bytes += l[i].len + 1;
    }
    assert_int_equal(dsort_runwriter_close(&rw, &err), DSORT_OK);
    assert_int_equal(w.lines, n);
    assert_int_equal(rw.records, n);
    *size = rw.off;
    dsort_runwriter_free(&rw);
}

/* Read the run back (blocks of `block` bytes, oversize ones up to 1 MiB; pf: read-ahead, or
 * NULL): DSORT_OK with every line as written, or the first error (err). */
static enum dsort_status read_run(const struct fixture *f, const struct tline *l, size_t n,
                                  int with_pos, size_t block, struct dsort_prefetch *pf,
                                  uint64_t lines, uint64_t bytes, size_t *got,
                                  struct dsort_error *err)
{
    struct dsort_runreader r;
    size_t blen = dsort_runreader_buf_len(0, block, 1);
    unsigned char *buf = NULL;
    assert_int_equal(posix_memalign((void **)&buf, 4096, blen), 0);
    enum dsort_status st =
        dsort_runreader_open_framed(&r, f->path, block, 1 << 20, buf, pf, lines, err);
    struct dsort_line_cursor c;
    memset(&c, 0, sizeof c);
    if (!st)
        dsort_line_cursor_run(&c, &f->ord, &r, with_pos, bytes);
    *got = 0;
    while (!st) {
        st = dsort_line_cursor_next(&c, err);
        if (st || c.done)
            break;
        /* a line that differs from what was written is a failure, not an error */
        assert_true(*got < n);
        assert_int_equal(c.len, l[*got].len);
        assert_memory_equal(c.line, l[*got].b, c.len ? c.len : 0);
        if (with_pos)
            assert_int_equal(c.pos, l[*got].pos);
        (*got)++;
    }
    if (c.run)
        dsort_line_cursor_close(&c);
    free(buf);
    return st;
}

static void round_trip(void **state)
{
    struct fixture *f = *state;
    const size_t blocks[] = {4096, 65536};
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    for (int with_pos = 0; with_pos < 2; with_pos++)
        for (size_t b = 0; b < 2; b++)
            for (size_t n = 0; n < 3000; n = n * 7 + 1) {
                struct tline *l = make_lines(n, 97, blocks[b]);
                uint64_t bytes, size;
                write_run(f, l, n, with_pos, blocks[b], &bytes, &size);
                for (int k = 0; k < 2; k++) {
                    size_t got;
                    enum dsort_status st =
                        read_run(f, l, n, with_pos, blocks[b], k ? pf : NULL, n, bytes, &got, &err);
                    if (st)
                        fail_msg("seed %" PRIu64 ": %s", rng_seed_value, err.msg);
                    assert_int_equal(got, n);
                }
                free_lines(l, n);
            }
    dsort_prefetch_destroy(pf);
}

static uint64_t align4k(uint64_t n)
{
    return (n + 4095) / 4096 * 4096;
}

/* runfile.h's layout: every block at a multiple of 4 KiB, whole lines, at most the block size
 * unless it holds one line (an oversize block), CRC32C of the payload, zero padding. */
static void block_layout(void **state)
{
    struct fixture *f = *state;
    const size_t n = 2000, block = 4096;
    struct tline *l = make_lines(n, 101, block);
    uint64_t bytes, size;
    write_run(f, l, n, 1, block, &bytes, &size);
    FILE *fp = fopen(f->path, "rb");
    assert_non_null(fp);
    unsigned char *buf = malloc((size_t)size);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, fp), size);
    fclose(fp);
    uint64_t at = 0, lines = 0, big = 0;
    while (at < size) {
        assert_true(at % 4096 == 0);
        assert_true(at + DSORT_RUN_HEADER <= size);
        assert_memory_equal(buf + at, "DSRB", 4);
        uint32_t crc = 0;
        uint64_t payload = 0, nl = 0;
        for (int i = 3; i >= 0; i--)
            crc = crc << 8 | buf[at + 4 + (size_t)i];
        for (int i = 7; i >= 0; i--) {
            payload = payload << 8 | buf[at + 8 + (size_t)i];
            nl = nl << 8 | buf[at + 16 + (size_t)i];
        }
        uint64_t took = align4k(DSORT_RUN_HEADER + payload);
        assert_true(at + took <= size);
        const unsigned char *p = buf + at + DSORT_RUN_HEADER;
        assert_int_equal(dsort_crc32c(0, p, (size_t)payload), crc);
        assert_true(nl >= 1);
        assert_true(DSORT_RUN_HEADER + payload <= block || nl == 1);
        big += DSORT_RUN_HEADER + payload > block;
        assert_int_equal(p[payload - 1], '\n'); /* whole lines */
        for (uint64_t z = DSORT_RUN_HEADER + payload; z < took; z++)
            assert_int_equal(buf[at + z], 0);
        lines += nl;
        at += took;
    }
    assert_int_equal(lines, n);
    assert_true(big >= n / 101); /* the long lines got blocks of their own */
    free(buf);
    free_lines(l, n);
}

/* The payload bytes and lines of the block at off (little-endian header fields). */
static void block_at(const char *path, uint64_t off, uint64_t *payload, uint64_t *lines)
{
    unsigned char h[DSORT_RUN_HEADER];
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, h, sizeof h, (off_t)off), (ssize_t)sizeof h);
    close(fd);
    assert_memory_equal(h, "DSRB", 4);
    *payload = *lines = 0;
    for (int i = 7; i >= 0; i--) {
        *payload = *payload << 8 | h[8 + i];
        *lines = *lines << 8 | h[16 + i];
    }
}

static void flip_byte(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0xFF;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

/* Is byte off of the run a header or payload byte (not a block's zero padding, which no
 * reader looks at)? */
static int in_block(const char *path, uint64_t size, uint64_t off)
{
    for (uint64_t at = 0; at < size;) {
        uint64_t payload, lines;
        block_at(path, at, &payload, &lines);
        if (off < at + DSORT_RUN_HEADER + payload)
            return off >= at;
        at += align4k(DSORT_RUN_HEADER + payload);
    }
    return 0;
}

/* Every flipped byte of a run of several blocks (some of them oversize) is caught: every byte
 * of the first 6000 (headers and whole blocks), then every 37th, but for the blocks' zero
 * padding, which the CRC32C does not cover and no reader looks at. */
static void every_flip(void **state)
{
    struct fixture *f = *state;
    const size_t n = 60, block = 4096;
    for (int with_pos = 0; with_pos < 2; with_pos++) {
        struct tline *l = make_lines(n, 29, block);
        uint64_t bytes, size;
        write_run(f, l, n, with_pos, block, &bytes, &size);
        for (uint64_t off = 0; off < size; off += off < 6000 ? 1 : 37) {
            if (!in_block(f->path, size, off))
                continue;
            flip_byte(f->path, off);
            struct dsort_error err;
            size_t got;
            enum dsort_status st = read_run(f, l, n, with_pos, block, NULL, n, bytes, &got, &err);
            if (st != DSORT_EFORMAT)
                fail_msg("seed %" PRIu64 ": byte %" PRIu64 " of %" PRIu64
                         " flipped (pos %d): status %d",
                         rng_seed_value, off, size, with_pos, (int)st);
            assert_non_null(strstr(err.msg, f->path));
            flip_byte(f->path, off); /* back as written (checked below) */
        }
        struct dsort_error err;
        size_t got;
        assert_int_equal(read_run(f, l, n, with_pos, block, NULL, n, bytes, &got, &err), DSORT_OK);
        assert_int_equal(got, n);
        free_lines(l, n);
    }
}

/* A run cut anywhere (inside a block or at a block boundary) or with a block appended. */
static void truncated_or_longer(void **state)
{
    struct fixture *f = *state;
    const size_t n = 300, block = 4096;
    struct tline *l = make_lines(n, 0, block);
    uint64_t bytes, size;
    write_run(f, l, n, 0, block, &bytes, &size);
    uint64_t last = 0; /* the last block's offset, and where its zero padding begins */
    for (uint64_t at = 0, payload, lines; at < size; at += align4k(DSORT_RUN_HEADER + payload)) {
        block_at(f->path, at, &payload, &lines);
        last = at;
    }
    uint64_t last_payload, last_lines;
    block_at(f->path, last, &last_payload, &last_lines);
    const uint64_t padding = last + DSORT_RUN_HEADER + last_payload;
    for (uint64_t cut = 0; cut < size; cut += 1 + cut / 64) {
        write_run(f, l, n, 0, block, &bytes, &size);
        assert_int_equal(truncate(f->path, (off_t)cut), 0);
        struct dsort_error err;
        size_t got;
        enum dsort_status st = read_run(f, l, n, 0, block, NULL, n, bytes, &got, &err);
        if (cut >= padding) { /* only the last block's padding is gone: nothing is lost */
            if (st != DSORT_OK || got != n)
                fail_msg("cut at %" PRIu64 " in the padding: status %d, %zu lines", cut, (int)st,
                         got);
            continue;
        }
        if (st != DSORT_EFORMAT)
            fail_msg("cut at %" PRIu64 " of %" PRIu64 ": status %d", cut, size, (int)st);
        assert_non_null(strstr(err.msg, f->path));
    }
    /* the writer's counts are what catches a cut at a block boundary (here after the first
     * block): unknown counts do not */
    write_run(f, l, n, 0, block, &bytes, &size);
    uint64_t payload, first_lines;
    block_at(f->path, 0, &payload, &first_lines);
    assert_true(align4k(DSORT_RUN_HEADER + payload) < size);
    assert_int_equal(truncate(f->path, (off_t)align4k(DSORT_RUN_HEADER + payload)), 0);
    struct dsort_error err;
    size_t got;
    assert_int_equal(read_run(f, l, n, 0, block, NULL, UINT64_MAX, UINT64_MAX, &got, &err),
                     DSORT_OK);
    assert_int_equal(got, first_lines);
    assert_int_equal(read_run(f, l, n, 0, block, NULL, n, bytes, &got, &err), DSORT_EFORMAT);
    char want[64];
    snprintf(want, sizeof want, "ends after %" PRIu64 " of its %zu records", first_lines, n);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
    /* a run with more lines than the writer wrote */
    write_run(f, l, n, 0, block, &bytes, &size);
    assert_int_equal(read_run(f, l, n, 0, block, NULL, n - 1, bytes, &got, &err), DSORT_EFORMAT);
    snprintf(want, sizeof want, "holds %zu records, but its writer wrote %zu", n, n - 1);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
    free_lines(l, n);
}

/* The message of a flipped payload byte: the file, the block's offset, CRC32C. */
static void crc_message(void **state)
{
    struct fixture *f = *state;
    const size_t n = 500, block = 4096;
    struct tline *l = make_lines(n, 0, block);
    uint64_t bytes, size;
    write_run(f, l, n, 0, block, &bytes, &size);
    /* the second block's offset, from the first block's header */
    uint64_t payload, first_lines;
    block_at(f->path, 0, &payload, &first_lines);
    uint64_t second = align4k(DSORT_RUN_HEADER + payload);
    flip_byte(f->path, second + DSORT_RUN_HEADER + 10);
    struct dsort_error err;
    size_t got;
    assert_int_equal(read_run(f, l, n, 0, block, NULL, n, bytes, &got, &err), DSORT_EFORMAT);
    char want[256];
    snprintf(want, sizeof want,
             "run file '%s': the block at offset %" PRIu64 " fails its CRC32C check", f->path,
             second);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
    /* the first block's lines, and none of the damaged block's */
    assert_int_equal(got, first_lines);
    free_lines(l, n);
}

/* dsort_lines_merge_ents: a buffer of lines cut into k contiguous ranges (as ranks hold them),
 * each range's entries sorted alone, merged: the lines must come out as one sort of all the
 * entries gives them, under the plain order, a numeric key with -s (ties by position: the
 * offsets), and -r. Then damaged entries (an offset outside the run's range, a length that does
 * not end at the eol, a prefix that is not the line's) are DSORT_EINTERNAL. */
struct collect {
    unsigned char *out;
    size_t len;
};

static enum dsort_status collect_emit(void *ctx, const unsigned char *line, size_t len,
                                      uint64_t pos, struct dsort_error *err)
{
    (void)pos;
    (void)err;
    struct collect *c = ctx;
    memcpy(c->out + c->len, line, len);
    c->out[c->len + len] = '\n';
    c->len += len + 1;
    return DSORT_OK;
}

static void merge_ents_case(const char *const *opts, size_t nopts)
{
    struct dsort_keys keys;
    struct dsort_error err = {0};
    dsort_keys_init(&keys);
    for (size_t i = 0; i < nopts; i++) {
        if (opts[i][0] == 'k')
            assert_int_equal(dsort_keys_add(&keys, opts[i] + 1, &err), DSORT_OK);
        else if (opts[i][0] == 's')
            keys.stable = 1;
        else
            assert_int_equal(dsort_keys_set_global(&keys, opts[i][0], &err), DSORT_OK);
    }
    assert_int_equal(dsort_keys_finish(&keys, &err), DSORT_OK);
    struct dsort_lines_order ord;
    dsort_lines_order_init(&ord, &keys, '\n');
    const size_t nl = 3000;
    unsigned char *buf = malloc(nl * 40), *want = malloc(nl * 40), *got = malloc(nl * 40);
    assert_true(buf && want && got);
    size_t size = 0;
    for (size_t i = 0; i < nl; i++) /* few distinct keys: many ties */
        size += (size_t)sprintf((char *)buf + size, "%d %c%u\n", (int)(rng_next() % 50) - 25,
                                (char)('a' + rng_next() % 3), (unsigned)(rng_next() % 1000));
    struct dsort_line_ent *all = calloc(nl, sizeof *all), *ents = calloc(nl, sizeof *ents),
                          *tmp = calloc(nl, sizeof *tmp);
    assert_true(all && ents && tmp);
    assert_int_equal(dsort_lines_index(&ord, buf, size, all), nl);
    memcpy(ents, all, nl * sizeof *all);
    dsort_lines_sort(&ord, buf, all, nl, tmp);
    struct collect cw = {want, 0};
    for (size_t i = 0; i < nl; i++)
        collect_emit(&cw, buf + dsort_line_off(&all[i]), dsort_line_len(&all[i], buf, '\n'), 0,
                     &err);
    for (size_t k = 1; k <= 4; k++) {
        const struct dsort_line_ent *runs[4];
        size_t lens[4];
        uint64_t lo[4], hi[4];
        for (size_t p = 0; p < k; p++) {
            size_t a = nl * p / k, b = nl * (p + 1) / k;
            memcpy(all + a, ents + a, (b - a) * sizeof *all);
            dsort_lines_sort(&ord, buf, all + a, b - a, tmp);
            runs[p] = all + a;
            lens[p] = b - a;
            lo[p] = a < nl ? dsort_line_off(&ents[a]) : size;
            hi[p] = b < nl ? dsort_line_off(&ents[b]) : size;
        }
        struct collect cg = {got, 0};
        struct dsort_line_sink sink = {collect_emit, &cg, 0, 0};
        assert_int_equal(dsort_lines_merge_ents(&ord, buf, runs, lens, lo, hi, k, &sink, &err),
                         DSORT_OK);
        assert_int_equal(cg.len, cw.len);
        assert_memory_equal(got, want, cw.len);
        if (k == 3) {
            struct dsort_line_ent *e = all + nl / 3 + 1, keep = *e;
            const struct dsort_line_ent bad[3] = {
                {keep.prefix, (uint64_t)0 << 24 | (keep.ol & DSORT_LINE_LONG)}, /* outside */
                {keep.prefix, keep.ol + 1},                                     /* length */
                {keep.prefix ^ 1, keep.ol},                                     /* prefix */
            };
            for (int b = 0; b < 3; b++) {
                if (b == 2 && !ord.has_prefix)
                    continue; /* no prefix to check */
                *e = bad[b];
                cg.len = 0;
                sink = (struct dsort_line_sink){collect_emit, &cg, 0, 0};
                assert_int_equal(
                    dsort_lines_merge_ents(&ord, buf, runs, lens, lo, hi, k, &sink, &err),
                    DSORT_EINTERNAL);
                *e = keep;
            }
        }
    }
    free(buf);
    free(want);
    free(got);
    free(all);
    free(ents);
    free(tmp);
}

static void merge_ents(void **state)
{
    (void)state;
    rng_seed();
    static const char *const plain[] = {NULL};
    static const char *const num[] = {"k1,1n", "s"};
    static const char *const rev[] = {"k2,2", "r"};
    merge_ents_case(plain, 0);
    merge_ents_case(num, 2);
    merge_ents_case(rev, 2);
}

int main(void)
{
    rng_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(round_trip, setup, teardown),
        cmocka_unit_test(merge_ents),
        cmocka_unit_test_setup_teardown(block_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(every_flip, setup, teardown),
        cmocka_unit_test_setup_teardown(truncated_or_longer, setup, teardown),
        cmocka_unit_test_setup_teardown(crc_message, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
