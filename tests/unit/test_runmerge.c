/* Unit tests for the engine's shared merge machinery (src/engine/runmerge.h) over both record
 * formats of recfmt.h, without MPI.
 *
 * Seeded random records (the seed is printed; DSORT_TEST_SEED=<seed> replays it) are cut into
 * chunks; each chunk is sorted here (qsort, an order independent of the engine's) and spilled
 * through dsort_runmerge_spill from a memory cursor. The fan-in is then planned with read
 * buffers for 3 runs only, so that dsort_runmerge_reduce must take extra passes; the runs left
 * are merged, and the output must be every input record in order (compared with a qsort of the
 * whole input). Then the damage: a run file with a flipped byte must make the passes fail
 * with DSORT_EFORMAT naming it, and release must leave the temp directory empty. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_rng.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"
#include "lines.h"
#include "merge.h"
#include "fixture.h"
#include "runmerge.h"

#define BLOCK 8192

struct fixture {
    char base[PATH_MAX];
    char *bases[1];
    struct dsort_tempdirs td;
    struct dsort_runset runs;
    struct dsort_error err;
    int damage; /* flip a byte of a run before the passes */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_int_equal(dsort_test_mkdtemp(f->base, sizeof f->base, "runmerge"), 0);
    f->bases[0] = f->base;
    assert_int_equal(dsort_tempdirs_create(&f->td, f->bases, 1, "t", 0, &f->err), DSORT_OK);
    dsort_runset_init(&f->runs);
    *state = f;
    return 0;
}

static int setup_damage(void **state)
{
    setup(state);
    ((struct fixture *)*state)->damage = 1;
    return 0;
}

/* Run files left in the job's directory (beside its owner file). */
static int files_left(struct fixture *f);

/* Free the merge and the runs: nothing may be left on disk. */
static void finish(struct fixture *f, struct dsort_runmerge *m)
{
    dsort_runmerge_release(m);
    dsort_runset_release(&f->runs);
    assert_int_equal(files_left(f), 0);
}

static int files_left(struct fixture *f)
{
    DIR *d = opendir(f->td.dirs[0]);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, "run-", 4) == 0;
    closedir(d);
    return n;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    dsort_runset_release(&f->runs);
    dsort_tempdirs_destroy(&f->td);
    rmdir(f->base);
    free(f);
    return 0;
}

static size_t g_rec;
static int cmp_bytes(const void *a, const void *b)
{
    return memcmp(a, b, g_rec);
}

/* Flip one byte in the middle of a file. */
static void flip(const char *path)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    off_t size = lseek(fd, 0, SEEK_END);
    unsigned char c;
    assert_int_equal(pread(fd, &c, 1, size / 2 > 24 ? 30 : size - 1), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, size / 2 > 24 ? 30 : size - 1), 1);
    close(fd);
}

/* ---- fixed-size records: key = the first 4 bytes, ties by the whole record (so memcmp) ---- */

static void test_fixed(void **state)
{
    struct fixture *f = *state;
    const size_t rec = 12, n = 20000, chunks = 9;
    struct dsort_format fmt = {.rec_size = rec, .key_off = 0, .key_len = 4};
    struct dsort_order ord = {0};
    struct dsort_cmp cmp;
    dsort_cmp_init(&cmp, &fmt, &ord);
    unsigned char *in = malloc(n * rec), *out = malloc(n * rec);
    for (size_t i = 0; i < n * rec; i++)
        in[i] = (unsigned char)(i % rec < 4 ? rng_next() % 7 : rng_next()); /* many equal keys */
    struct dsort_recfmt_ctx fx = {.cmp = &cmp, .rec = rec};
    struct dsort_runmerge m;
    dsort_runmerge_init(&m, &dsort_recfmt_fixed, &fx, &f->runs, &f->td, BLOCK);
    g_rec = rec;
    for (size_t c = 0; c < chunks; c++) {
        size_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
        qsort(in + lo * rec, hi - lo, rec, cmp_bytes);
        struct dsort_cursor cur;
        dsort_recfmt_fixed.cursor_memory(&fx, &cur, in + lo * rec, (hi - lo) * rec);
        assert_int_equal(dsort_runmerge_spill(&m, &cur, 1, &f->err), DSORT_OK);
    }
    assert_int_equal(f->runs.n, chunks);
    assert_int_equal(m.runs_made, chunks);
    assert_int_equal(dsort_runset_records(&f->runs), n);
    char why[256];
    assert_int_equal(
        dsort_runmerge_plan(&m, 3 * m.blen, 0, NULL, NULL, 0, why, sizeof why, &f->err), DSORT_OK);
    assert_int_equal(m.f, 3);
    assert_true(why[0] != '\0'); /* 9 runs, fan-in 3: the reason is given */
    if (f->damage) {
        /* The damaged run fails where it is read: in an extra pass, or in the final merge
         * (the passes take the smallest runs first and may leave it alone). */
        flip(f->runs.runs[0].path);
        enum dsort_status st = dsort_runmerge_reduce(&m, &f->err);
        if (!st) {
            void *cur;
            size_t k = f->runs.n;
            st = dsort_runmerge_open(&m, 0, k, &cur, &f->err); /* reads the first blocks */
            if (!st) {
                struct dsort_sink sink;
                dsort_sink_memory(&sink, out, n * rec);
                st = dsort_merge_cmp(&cmp, rec, rec, 0, cur, k, &sink, &f->err);
                dsort_runmerge_close(&m, k);
            }
        }
        assert_int_equal(st, DSORT_EFORMAT);
        assert_non_null(strstr(f->err.msg, f->td.dirs[0]));
        finish(f, &m);
        free(in);
        free(out);
        return;
    }
    assert_int_equal(dsort_runmerge_reduce(&m, &f->err), DSORT_OK);
    assert_true(f->runs.n <= 3);
    assert_true(m.passes >= 3); /* 9 -> 3 runs, each pass merging at most 3 */
    assert_true(m.pass_bytes >= n * rec);
    assert_int_equal(m.runs_made, chunks);
    assert_int_equal(dsort_runset_records(&f->runs), n);
    void *cur;
    size_t k = f->runs.n;
    assert_int_equal(dsort_runmerge_open(&m, 0, k, &cur, &f->err), DSORT_OK);
    struct dsort_sink sink;
    dsort_sink_memory(&sink, out, n * rec);
    assert_int_equal(dsort_merge_cmp(&cmp, rec, rec, 0, cur, k, &sink, &f->err), DSORT_OK);
    dsort_runmerge_close(&m, k);
    assert_int_equal(sink.len, n * rec);
    qsort(in, n, rec, cmp_bytes);
    assert_memory_equal(in, out, n * rec);
    finish(f, &m);
    free(in);
    free(out);
}

/* ---- text lines: no keys (whole-line order), some longer than a block ---- */

struct tline {
    unsigned char *b;
    size_t len;
};

static int cmp_line(const void *a, const void *b)
{
    const struct tline *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->b, y->b, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

struct collect {
    unsigned char *p;
    size_t len, cap;
};

static enum dsort_status collect_emit(void *ctx, const unsigned char *line, size_t len,
                                      uint64_t pos, struct dsort_error *err)
{
    (void)pos, (void)err;
    struct collect *c = ctx;
    assert_true(c->len + len + 1 <= c->cap);
    memcpy(c->p + c->len, line, len);
    c->p[c->len + len] = '\n';
    c->len += len + 1;
    return DSORT_OK;
}

static void test_lines(void **state)
{
    struct fixture *f = *state;
    const size_t n = 3000, chunks = 7;
    struct dsort_keys keys;
    dsort_keys_init(&keys);
    assert_int_equal(dsort_keys_finish(&keys, &f->err), DSORT_OK);
    struct dsort_lines_order ord;
    dsort_lines_order_init(&ord, &keys, '\n');
    struct tline *l = calloc(n, sizeof *l);
    size_t total = 0, longest = 0;
    for (size_t i = 0; i < n; i++) {
        l[i].len = i % 500 == 7 ? 3 * BLOCK + rng_next() % BLOCK : rng_next() % 40;
        l[i].b = malloc(l[i].len + 1);
        for (size_t j = 0; j < l[i].len; j++)
            l[i].b[j] = (unsigned char)('a' + rng_next() % 4);
        total += l[i].len + 1;
        longest = l[i].len + 1 > longest ? l[i].len + 1 : longest;
    }
    struct dsort_recfmt_ctx fx = {.ord = &ord, .max_payload = longest + 64};
    struct dsort_runmerge m;
    dsort_runmerge_init(&m, &dsort_recfmt_lines, &fx, &f->runs, &f->td, BLOCK);
    unsigned char *frame = malloc(total);
    for (size_t c = 0; c < chunks; c++) {
        size_t lo = n * c / chunks, hi = n * (c + 1) / chunks, at = 0;
        qsort(l + lo, hi - lo, sizeof *l, cmp_line);
        for (size_t i = lo; i < hi; i++) {
            memcpy(frame + at, l[i].b, l[i].len);
            frame[at + l[i].len] = '\n';
            at += l[i].len + 1;
        }
        struct dsort_line_cursor cur;
        dsort_recfmt_lines.cursor_memory(&fx, &cur, frame, at);
        assert_int_equal(dsort_runmerge_spill(&m, &cur, 1, &f->err), DSORT_OK);
        assert_int_equal(f->runs.runs[c].bytes, at);
    }
    assert_int_equal(dsort_runset_records(&f->runs), n);
    assert_int_equal(dsort_runset_bytes(&f->runs), total);
    char why[256];
    assert_int_equal(
        dsort_runmerge_plan(&m, 3 * m.blen, 1024, NULL, NULL, 0, why, sizeof why, &f->err),
        DSORT_OK);
    assert_int_equal(m.f, 3);
    if (f->damage) { /* as for fixed records: in a pass or in the final merge */
        flip(f->runs.runs[2].path);
        enum dsort_status st = dsort_runmerge_reduce(&m, &f->err);
        if (!st) {
            void *cur;
            size_t k = f->runs.n;
            st = dsort_runmerge_open(&m, 0, k, &cur, &f->err); /* reads the first blocks */
            if (!st) {
                struct collect col = {malloc(total), 0, total};
                struct dsort_line_sink sink = {collect_emit, &col, 0, 0};
                st = dsort_lines_merge(&ord, cur, k, 0, &sink, &f->err);
                dsort_runmerge_close(&m, k);
                free(col.p);
            }
        }
        assert_int_equal(st, DSORT_EFORMAT);
        assert_non_null(strstr(f->err.msg, f->td.dirs[0]));
    } else {
        assert_int_equal(dsort_runmerge_reduce(&m, &f->err), DSORT_OK);
        assert_true(f->runs.n <= 3 && m.passes >= 2);
        assert_int_equal(dsort_runset_bytes(&f->runs), total);
        void *cur;
        size_t k = f->runs.n;
        assert_int_equal(dsort_runmerge_open(&m, 0, k, &cur, &f->err), DSORT_OK);
        struct collect col = {malloc(total), 0, total};
        struct dsort_line_sink sink = {collect_emit, &col, 0, 0};
        assert_int_equal(dsort_lines_merge(&ord, cur, k, 0, &sink, &f->err), DSORT_OK);
        dsort_runmerge_close(&m, k);
        assert_int_equal(sink.lines, n);
        qsort(l, n, sizeof *l, cmp_line);
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            memcpy(frame + at, l[i].b, l[i].len);
            frame[at + l[i].len] = '\n';
            at += l[i].len + 1;
        }
        assert_int_equal(col.len, total);
        assert_memory_equal(col.p, frame, total);
        free(col.p);
    }
    finish(f, &m);
    for (size_t i = 0; i < n; i++)
        free(l[i].b);
    free(l);
    free(frame);
}

/* Three temp directories taken as three devices (they are on one here: dev_of is set as a
 * multi-disk machine would have it): every spill is striped over them (a file of the same name
 * in each), plan starts one read-ahead thread per device, each file of a run is read through
 * its own device's thread, the merge is still every record in order, and release removes
 * every file. */
static void test_devices(void **state)
{
    (void)state;
    char base[3][PATH_MAX];
    char *bases[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(dsort_test_mkdtemp(base[i], sizeof base[i], "runmerge-dev"), 0);
        bases[i] = base[i];
    }
    struct dsort_tempdirs td;
    struct dsort_error err;
    assert_int_equal(dsort_tempdirs_create(&td, bases, 3, "t", 0, &err), DSORT_OK);
    assert_int_equal(td.ndev, 1); /* one file system */
    for (size_t i = 0; i < 3; i++)
        td.dev_of[i] = i;
    td.ndev = 3;
    struct dsort_runset runs;
    dsort_runset_init(&runs);
    const size_t rec = 16, n = 9000, chunks = 6;
    struct dsort_format fmt = {.rec_size = rec, .key_off = 0, .key_len = 4};
    struct dsort_order ord = {0};
    struct dsort_cmp cmp;
    dsort_cmp_init(&cmp, &fmt, &ord);
    unsigned char *in = malloc(n * rec), *out = malloc(n * rec);
    for (size_t i = 0; i < n * rec; i++)
        in[i] = (unsigned char)rng_next();
    struct dsort_recfmt_ctx fx = {.cmp = &cmp, .rec = rec};
    struct dsort_runmerge m;
    dsort_runmerge_init(&m, &dsort_recfmt_fixed, &fx, &runs, &td, BLOCK);
    g_rec = rec;
    for (size_t c = 0; c < chunks; c++) {
        size_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
        qsort(in + lo * rec, hi - lo, rec, cmp_bytes);
        struct dsort_cursor cur;
        dsort_recfmt_fixed.cursor_memory(&fx, &cur, in + lo * rec, (hi - lo) * rec);
        assert_int_equal(dsort_runmerge_spill(&m, &cur, 1, &err), DSORT_OK);
    }
    char why[256];
    assert_int_equal(dsort_runmerge_plan(&m, chunks * dsort_runreader_buf_len(rec, BLOCK, 3), 0,
                                         NULL, NULL, 0, why, sizeof why, &err),
                     DSORT_OK);
    assert_int_equal(m.npf, 3);
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < i; j++)
            assert_ptr_not_equal(m.pf[i], m.pf[j]);
    for (size_t c = 0; c < chunks; c++) { /* file i of run c is in directory i, device i */
        const char *paths[DSORT_RUN_MAX_STRIPES];
        assert_int_equal(dsort_run_files(&runs.runs[c], paths), 3);
        for (size_t i = 0; i < 3; i++) {
            assert_true(!strncmp(paths[i], td.dirs[i], strlen(td.dirs[i])));
            assert_string_equal(strrchr(paths[i], '/'), strrchr(paths[0], '/'));
            assert_int_equal(access(paths[i], F_OK), 0);
            assert_ptr_equal(dsort_runmerge_prefetch(&m, paths[i]), m.pf[i]);
        }
    }
    void *cur;
    assert_int_equal(dsort_runmerge_open(&m, 0, chunks, &cur, &err), DSORT_OK);
    for (size_t c = 0; c < chunks; c++) {
        assert_int_equal(m.rd[c].k, 3);
        for (size_t i = 0; i < 3; i++)
            assert_ptr_equal(m.rd[c].pf[i], m.pf[i]);
    }
    struct dsort_sink sink;
    dsort_sink_memory(&sink, out, n * rec);
    assert_int_equal(dsort_merge_cmp(&cmp, rec, rec, 0, cur, chunks, &sink, &err), DSORT_OK);
    dsort_runmerge_close(&m, chunks);
    assert_int_equal(sink.len, n * rec);
    qsort(in, n, rec, cmp_bytes);
    assert_memory_equal(in, out, n * rec);
    dsort_runmerge_release(&m);
    assert_null(m.pf);
    dsort_runset_release(&runs);
    dsort_tempdirs_destroy(&td); /* its rmdir fails if a file is left: base[i] is not empty */
    for (int i = 0; i < 3; i++)
        assert_int_equal(rmdir(base[i]), 0);
    free(in);
    free(out);
}

int main(void)
{
    rng_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fixed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixed, setup_damage, teardown),
        cmocka_unit_test_setup_teardown(test_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lines, setup_damage, teardown),
        cmocka_unit_test(test_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
