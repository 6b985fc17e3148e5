/* Unit tests for runfile.h: sorted runs spilled to disk in checksummed blocks.
 *
 * Seeded random records (the seed is printed, DSORT_TEST_SEED=<seed> replays it) go through a
 * dsort_runwriter's sink, filled the way the merge fills it, into a fresh temp directory
 * (under $TMPDIR or /tmp; O_DIRECT or not, whatever the file system gives), and back through
 * a dsort_runreader's cursor, read synchronously and through a read-ahead thread, with the
 * record count known or not: the same records in the same order and number, for records of
 * 1 to 5000 bytes, blocks smaller than a record, exactly full and larger, and zero records.
 * The file is checked against the documented layout (24-byte "DSRB" header with CRC32C,
 * payload, zero padding to 4 KiB, equal full blocks), and runs also go through dsort_merge
 * both ways. Then the damage a temp disk can do: a flipped byte in a header or a payload, a
 * file cut at or inside a block, an appended block, a reader with the wrong block size must
 * each be DSORT_EFORMAT naming the file (and the block's offset), after exactly the records
 * of the good blocks before it; a read error is DSORT_EIO naming the file. Writer errors: an
 * existing file or missing directory cannot be created (the existing file is left alone), a
 * full disk (RLIMIT_FSIZE) is DSORT_EIO naming the file, and abort removes the file. Last, a
 * file system without O_DIRECT, simulated by wrapping open at link time (-Wl,--wrap=open): it
 * refuses O_DIRECT with EINVAL after creating the file for O_CREAT, as Linux does on such file
 * systems; runs must be written and read there as well. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_rng.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "fixture.h"
#include "merge.h"
#include "prefetch.h"
#include "runfile.h"

#define ALIGN DSORT_RUN_ALIGN
#define HDR DSORT_RUN_HEADER

static unsigned seq; /* for fresh file names */

/* open, wrapped (see the CMakeLists): with no_direct set it behaves as on a file system without
 * O_DIRECT, where the kernel creates the file (O_CREAT) before it refuses O_DIRECT (an open
 * with O_DIRECT and O_EXCL then retried without O_DIRECT fails with EEXIST: the bug this
 * test found in runfile.c). */
int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);
static int no_direct;
static unsigned direct_refused; /* opens refused for O_DIRECT */

int __wrap_open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (no_direct && (flags & O_DIRECT)) {
        if (flags & O_CREAT) {
            int fd = __real_open(path, flags & ~O_DIRECT, mode);
            if (fd < 0)
                return -1;
            close(fd);
        }
        direct_refused++;
        errno = EINVAL;
        return -1;
    }
    return __real_open(path, flags, mode);
}

/* fcntl, wrapped too: with no_direct set, turning O_DIRECT on (F_SETFL) is refused, as such a
 * file system refuses it. runfile.c opens without O_DIRECT and then asks for it this way. */
int __real_fcntl(int fd, int cmd, ...);
int __wrap_fcntl(int fd, int cmd, ...);
int __wrap_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    if (no_direct && cmd == F_SETFL && (arg & O_DIRECT)) {
        direct_refused++;
        errno = EINVAL;
        return -1;
    }
    return __real_fcntl(fd, cmd, arg);
}

static int teardown(void **state)
{
    no_direct = 0;
    return dsort_test_dir_teardown(state);
}

static int group_setup(void **state)
{
    (void)state;
    rng_seed();
    return 0;
}

/* A new file name in the test's directory. */
static void fresh(char *out, size_t len)
{
    snprintf(out, len, "%s/run.%u", dsort_test_dir, seq++);
}

static int exists(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0;
}

static size_t align_up(size_t n)
{
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

static unsigned char *aligned(size_t len)
{
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, ALIGN, len ? len : ALIGN), 0);
    return p;
}

static unsigned char *random_records(size_t n, size_t rs)
{
    unsigned char *r = malloc(n * rs + 1);
    assert_non_null(r);
    fill_random(r, n * rs);
    return r;
}

/* Bytes of a run of n records as the header documents it. */
static uint64_t run_size(uint64_t n, size_t rs, size_t block)
{
    uint64_t per = dsort_run_payload(rs, block) / rs;
    uint64_t full = n / per, rem = n % per;
    return full * dsort_run_stride(rs, block) + (rem ? align_up(HDR + rem * rs) : 0);
}

/* Append one record to the writer's sink as the merge does (flush when full). */
static enum dsort_status emit(struct dsort_runwriter *w, const unsigned char *rec, size_t rs,
                              struct dsort_error *err)
{
    struct dsort_sink *s = &w->sink;
    if (s->len + rs > s->cap) {
        enum dsort_status st = s->flush(s, err);
        if (st)
            return st;
        assert_int_equal(s->len, 0);
        assert_true(s->cap >= rs);
    }
    memcpy(s->buf + s->len, rec, rs);
    s->len += rs;
    s->records++;
    return DSORT_OK;
}

/* Write n records as a run at path; checks the writer's counts, the file's size and mode. */
static void write_run(const char *p, const unsigned char *recs, size_t n, size_t rs, size_t block)
{
    struct dsort_runwriter w;
    struct dsort_error err;
    assert_int_equal(dsort_runwriter_open(&w, p, rs, block, &err), DSORT_OK);
    assert_int_equal(w.sink.cap, dsort_run_payload(rs, block));
    assert_int_equal(w.sink.len, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(emit(&w, recs + i * rs, rs, &err), DSORT_OK);
    assert_int_equal(dsort_runwriter_close(&w, &err), DSORT_OK);
    assert_int_equal(w.records, n);
    assert_int_equal(w.off, run_size(n, rs, block));
    if (n)
        assert_memory_equal(w.last, recs + (n - 1) * rs, rs);
    dsort_runwriter_free(&w);
    assert_null(w.last);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, run_size(n, rs, block));
    assert_int_equal(sb.st_mode & 077, 0); /* created 0600 */
}

struct readres {
    enum dsort_status st;
    struct dsort_error err;
    uint64_t got;  /* records delivered */
    uint64_t same; /* leading records delivered that equal want's */
    uint64_t records, bytes_read;
    int ahead; /* striped reads: the most blocks in flight beside the one merged */
};

/* Read the run at p through a cursor with the reader's buffer buf, comparing with the n
 * records of want. */
static struct readres read_run_buf(const char *p, size_t rs, size_t block, unsigned char *buf,
                                   struct dsort_prefetch *pf, uint64_t expected,
                                   const unsigned char *want, uint64_t n)
{
    struct readres res;
    memset(&res, 0, sizeof res);
    struct dsort_runreader r;
    res.st = dsort_runreader_open(&r, p, rs, block, buf, pf, expected, &res.err);
    if (res.st == DSORT_OK) {
        assert_ptr_equal(r.cur.ctx, &r);
        assert_non_null(r.cur.refill);
        const size_t payload = dsort_run_payload(rs, block);
        int same = 1;
        while (r.cur.cur != r.cur.end) {
            size_t blk = (size_t)(r.cur.end - r.cur.cur);
            assert_true(r.cur.cur < r.cur.end);
            assert_int_equal(blk % rs, 0);
            assert_true(blk <= payload);
            for (; r.cur.cur < r.cur.end; r.cur.cur += rs, res.got++) {
                if (same && res.got < n && !memcmp(r.cur.cur, want + res.got * rs, rs))
                    res.same++;
                else
                    same = 0;
            }
            assert_true(res.got <= n + 1000000); /* no endless run */
            res.st = r.cur.refill(&r.cur, &res.err);
            if (res.st)
                break;
        }
        res.records = r.records;
        res.bytes_read = r.bytes_read;
        dsort_runreader_close(&r);
        assert_int_equal(r.fd[0], -1);
    }
    return res;
}

/* read_run_buf with a new buffer full of junk. */
static struct readres read_run(const char *p, size_t rs, size_t block, struct dsort_prefetch *pf,
                               uint64_t expected, const unsigned char *want, uint64_t n)
{
    size_t len = dsort_runreader_buf_len(rs, block, 1);
    unsigned char *buf = aligned(len);
    memset(buf, 0xE5, len);
    struct readres res = read_run_buf(p, rs, block, buf, pf, expected, want, n);
    free(buf);
    return res;
}

/* The run must read back as exactly the n records. */
static void expect_all(const struct readres *res, uint64_t n, uint64_t size)
{
    if (res->st)
        fail_msg("read failed: %s (seed %" PRIu64 ")", res->err.msg, rng_seed_value);
    assert_int_equal(res->got, n);
    assert_int_equal(res->same, n);
    assert_int_equal(res->records, n);
    assert_int_equal(res->bytes_read, size);
}

/* The run must be DSORT_EFORMAT naming p (and "offset <at>" unless at is UINT64_MAX), after
 * exactly the first `before` records. */
static void expect_format_error(const struct readres *res, const char *p, uint64_t at,
                                uint64_t before)
{
    if (res->st != DSORT_EFORMAT)
        fail_msg("expected a format error, got status %d after %" PRIu64 " records (seed %" PRIu64
                 ")",
                 (int)res->st, res->got, rng_seed_value);
    assert_int_equal(res->err.status, DSORT_EFORMAT);
    assert_non_null(strstr(res->err.msg, p));
    if (at != UINT64_MAX) {
        char want[64];
        snprintf(want, sizeof want, "offset %" PRIu64, at);
        if (!strstr(res->err.msg, want))
            fail_msg("'%s' does not say '%s'", res->err.msg, want);
    }
    assert_int_equal(res->got, before);
    assert_int_equal(res->same, before);
}

/* Bytes of the file at p (malloc'd). */
static unsigned char *load(const char *p, size_t *len)
{
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    *len = (size_t)sb.st_size;
    unsigned char *b = malloc(*len ? *len : 1);
    assert_non_null(b);
    for (size_t got = 0; got < *len;) {
        ssize_t n = pread(fd, b + got, *len - got, (off_t)got);
        assert_true(n > 0);
        got += (size_t)n;
    }
    close(fd);
    return b;
}

/* Open for writing with O_DIRECT where the file system has it, so that the run reader's
 * O_DIRECT reads see the bytes without a page-cache writeback each time. */
static int open_write(const char *p, int flags)
{
    int fd = open(p, O_WRONLY | O_CLOEXEC | O_DIRECT | flags, 0600);
    if (fd < 0 && errno == EINVAL)
        fd = open(p, O_WRONLY | O_CLOEXEC | flags, 0600);
    assert_true(fd >= 0);
    return fd;
}

/* Make p a file of the len bytes of img. */
static void put_file(const char *p, const unsigned char *img, size_t len)
{
    unlink(p);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
    fd = open_write(p, 0);
    size_t al = align_up(len);
    unsigned char *b = aligned(al);
    memcpy(b, img, len);
    memset(b + len, 0, al - len);
    if (al)
        assert_int_equal(pwrite(fd, b, al, 0), (ssize_t)al);
    assert_int_equal(ftruncate(fd, (off_t)len), 0);
    assert_int_equal(close(fd), 0);
    free(b);
}

/* Overwrite the 4 KiB page of p at page_off with the same page of img. */
static void put_page(const char *p, const unsigned char *img, size_t page_off)
{
    int fd = open_write(p, 0);
    unsigned char *b = aligned(ALIGN);
    memcpy(b, img + page_off, ALIGN);
    assert_int_equal(pwrite(fd, b, ALIGN, (off_t)page_off), ALIGN);
    assert_int_equal(close(fd), 0);
    free(b);
}

/* ---------------------------------------------------------------------------------------- */

/* Block sizes: whole records per block, at least one; padded to 4 KiB. */
static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(dsort_run_payload(100, 4096), 4000);
    assert_int_equal(dsort_run_stride(100, 4096), 4096);
    assert_int_equal(dsort_runreader_buf_len(100, 4096, 1), 8192);
    assert_int_equal(dsort_runreader_buf_len(100, 4096, 2), 3 * 4096); /* striped: two ahead */
    assert_int_equal(dsort_runreader_buf_len(100, 4096, 8), 3 * 4096);
    /* a block smaller than a record still holds one */
    assert_int_equal(dsort_run_payload(100, 50), 100);
    assert_int_equal(dsort_run_stride(100, 50), 4096);
    assert_int_equal(dsort_run_payload(5000, 4096), 5000);
    assert_int_equal(dsort_run_stride(5000, 4096), 8192);
    assert_int_equal(dsort_runreader_buf_len(5000, 4096, 1), 16384);
    /* header + payload exactly 4 KiB, and one byte more */
    assert_int_equal(dsort_run_payload(8, 4072), 4072);
    assert_int_equal(dsort_run_stride(8, 4072), 4096);
    assert_int_equal(dsort_run_payload(8, 4079), 4072);
    assert_int_equal(dsort_run_payload(1, 4073), 4073);
    assert_int_equal(dsort_run_stride(1, 4073), 8192);
    assert_int_equal(dsort_run_payload(100, 1 << 20), 1048500);
    assert_int_equal(dsort_run_stride(100, 1 << 20), 1 << 20);
    assert_int_equal(dsort_run_payload(1, 1 << 20), 1 << 20);
    assert_int_equal(dsort_run_stride(1, 1 << 20), (1 << 20) + 4096);
}

/* Records of several sizes, blocks smaller than, equal to a multiple of, and larger than a
 * record, 0, 1, a block, a block and one, and a few blocks of records: every way of reading
 * gives them back in order and number. */
static void test_round_trip(void **state)
{
    (void)state;
    const size_t sizes[] = {1, 8, 100, 5000};
    const size_t blocks[] = {64, 4072, 65536};
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++) {
            const size_t rs = sizes[si], block = blocks[bi];
            const size_t per = dsort_run_payload(rs, block) / rs;
            size_t counts[] = {0, 1, per, per + 1, 2 * per + 1 + (size_t)(rng_next() % per)};
            for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
                size_t n = counts[ci];
                if (n * rs > (size_t)4 << 20)
                    n = ((size_t)4 << 20) / rs; /* keep it quick */
                unsigned char *recs = random_records(n, rs);
                char p[PATH_MAX];
                fresh(p, sizeof p);
                write_run(p, recs, n, rs, block);
                uint64_t size = run_size(n, rs, block);
                for (int k = 0; k < 4; k++) {
                    struct readres res =
                        read_run(p, rs, block, k & 1 ? pf : NULL, k & 2 ? n : UINT64_MAX, recs, n);
                    expect_all(&res, n, size);
                }
                unlink(p);
                free(recs);
            }
        }
    }
    dsort_prefetch_destroy(pf);
}

/* The bytes on disk: each block a 24-byte header ("DSRB", CRC32C of the payload, payload
 * bytes, records), the records in order, zero padding to 4 KiB; all but the last full. */
static void test_layout(void **state)
{
    (void)state;
    const size_t rs = 100, block = 10000;
    const size_t n = 3 * 100 + 37; /* 100 records a block */
    const size_t stride = dsort_run_stride(rs, block);
    assert_int_equal(stride, 12288);
    unsigned char *recs = random_records(n, rs);
    char p[PATH_MAX];
    fresh(p, sizeof p);
    write_run(p, recs, n, rs, block);
    size_t len;
    unsigned char *img = load(p, &len);
    assert_int_equal(len, 3 * stride + align_up(HDR + 37 * rs));
    size_t rec = 0;
    for (size_t off = 0; off < len; off += stride) {
        const unsigned char *b = img + off;
        uint32_t crc;
        uint64_t payload, records;
        memcpy(&crc, b + 4, 4);
        memcpy(&payload, b + 8, 8);
        memcpy(&records, b + 16, 8);
        assert_memory_equal(b, "DSRB", 4);
        uint64_t want = off + stride < len ? 100 : 37;
        assert_int_equal(records, want);
        assert_int_equal(payload, want * rs);
        assert_int_equal(crc, dsort_crc32c(0, b + HDR, (size_t)payload));
        assert_memory_equal(b + HDR, recs + rec * rs, (size_t)payload);
        rec += (size_t)records;
        size_t end = off + stride < len ? stride : len - off;
        for (size_t i = HDR + (size_t)payload; i < end; i++)
            assert_int_equal(b[i], 0);
    }
    assert_int_equal(rec, n);
    free(img);
    free(recs);
}

/* Zero records: an empty file, and a reader that is exhausted at once; a reader told to
 * expect records reports the run as cut short. */
static void test_zero_records(void **state)
{
    (void)state;
    char p[PATH_MAX];
    fresh(p, sizeof p);
    struct dsort_runwriter w;
    struct dsort_error err;
    assert_int_equal(dsort_runwriter_open(&w, p, 100, 4096, &err), DSORT_OK);
    assert_int_equal(dsort_runwriter_close(&w, &err), DSORT_OK);
    assert_int_equal(w.records, 0);
    assert_int_equal(w.off, 0);
    dsort_runwriter_free(&w);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, 0);

    struct dsort_prefetch *pf;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    for (int k = 0; k < 2; k++) {
        struct dsort_prefetch *use = k ? pf : NULL;
        unsigned char *buf = aligned(dsort_runreader_buf_len(100, 4096, 1));
        struct dsort_runreader r;
        assert_int_equal(dsort_runreader_open(&r, p, 100, 4096, buf, use, 0, &err), DSORT_OK);
        assert_ptr_equal(r.cur.cur, r.cur.end);
        assert_int_equal(r.records, 0);
        dsort_runreader_close(&r);
        free(buf);

        struct readres res = read_run(p, 100, 4096, use, UINT64_MAX, NULL, 0);
        expect_all(&res, 0, 0);
        res = read_run(p, 100, 4096, use, 3, NULL, 0);
        expect_format_error(&res, p, UINT64_MAX, 0);
    }
    dsort_prefetch_destroy(pf);
}

static int cmp16(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

/* Runs as the engine uses them: sorted memory runs merged into run writers, the run files
 * merged back through readers sharing one read-ahead thread: the sorted union comes out. */
static void test_merge_through_runs(void **state)
{
    (void)state;
    enum { RS = 16, RUNS = 3, IN = 4 };
    const size_t block = 1000; /* 62 records, blocks of 4 KiB */
    const struct dsort_cmp cmp = {.key_off = 0, .key_len = RS};
    struct dsort_error err;
    size_t total = 0, counts[RUNS];
    unsigned char *all = malloc((size_t)RUNS * IN * 2000 * RS);
    assert_non_null(all);
    char paths[RUNS][PATH_MAX];
    for (size_t r = 0; r < RUNS; r++) {
        /* IN sorted memory runs of up to 2000 records each, merged into run r */
        struct dsort_cursor cur[IN];
        unsigned char *in[IN];
        size_t sum = 0;
        for (size_t i = 0; i < IN; i++) {
            size_t n = r == 1 && i == 2 ? 0 : (size_t)(rng_next() % 2000);
            in[i] = random_records(n, RS);
            qsort(in[i], n, RS, cmp16);
            memcpy(all + (total + sum) * RS, in[i], n * RS);
            dsort_cursor_memory(&cur[i], in[i], n, RS);
            sum += n;
        }
        fresh(paths[r], sizeof paths[r]);
        struct dsort_runwriter w;
        assert_int_equal(dsort_runwriter_open(&w, paths[r], RS, block, &err), DSORT_OK);
        assert_int_equal(dsort_merge_cmp(&cmp, RS, RS, 0, cur, IN, &w.sink, &err), DSORT_OK);
        assert_int_equal(dsort_runwriter_close(&w, &err), DSORT_OK);
        assert_int_equal(w.records, sum);
        dsort_runwriter_free(&w);
        counts[r] = sum;
        total += sum;
        for (size_t i = 0; i < IN; i++)
            free(in[i]);
    }
    qsort(all, total, RS, cmp16);

    struct dsort_prefetch *pf;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    const size_t blen = dsort_runreader_buf_len(RS, block, 1);
    unsigned char *bufs = aligned(RUNS * blen);
    struct dsort_runreader rd[RUNS];
    struct dsort_cursor cur[RUNS];
    for (size_t r = 0; r < RUNS; r++) {
        assert_int_equal(
            dsort_runreader_open(&rd[r], paths[r], RS, block, bufs + r * blen, pf, counts[r], &err),
            DSORT_OK);
        cur[r] = rd[r].cur;
        cur[r].ctx = &rd[r]; /* the merge refills its own copies */
    }
    unsigned char *out = malloc(total * RS + 1);
    assert_non_null(out);
    struct dsort_sink sink;
    dsort_sink_memory(&sink, out, total * RS);
    assert_int_equal(dsort_merge_cmp(&cmp, RS, RS, 0, cur, RUNS, &sink, &err), DSORT_OK);
    assert_int_equal(sink.records, total);
    assert_int_equal(sink.len, total * RS);
    assert_memory_equal(out, all, total * RS);
    for (size_t r = 0; r < RUNS; r++) {
        assert_int_equal(rd[r].records, counts[r]);
        dsort_runreader_close(&rd[r]);
    }
    dsort_prefetch_destroy(pf);
    free(out);
    free(bufs);
    free(all);
}

/* A run of two full 4 KiB blocks and a short one (8-byte records, 509 a block). */
#define D_RS 8
#define D_BLOCK 4072
#define D_PER 509
#define D_N (2 * D_PER + 100)
#define D_SIZE (3 * ALIGN)

/* Every byte of every block header and bytes across every payload, flipped one at a time:
 * DSORT_EFORMAT naming the file and the block's offset, after exactly the records of the
 * blocks before it, whether the count is known or not. A flip in the zero padding of the
 * last block changes no record: the records must come back exactly, or be refused. */
static void test_flipped_byte(void **state)
{
    (void)state;
    unsigned char *recs = random_records(D_N, D_RS);
    char p[PATH_MAX];
    fresh(p, sizeof p);
    write_run(p, recs, D_N, D_RS, D_BLOCK);
    size_t len;
    unsigned char *img = load(p, &len);
    assert_int_equal(len, D_SIZE);
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);

    size_t pos[3 * (HDR + 2 + 16) + 4], npos = 0;
    for (size_t b = 0; b < 3; b++) {
        size_t pl = b < 2 ? D_PER * D_RS : 100 * D_RS;
        for (size_t i = 0; i < HDR; i++)
            pos[npos++] = b * ALIGN + i;
        pos[npos++] = b * ALIGN + HDR;
        pos[npos++] = b * ALIGN + HDR + pl - 1;
        for (size_t i = 0; i < 16; i++)
            pos[npos++] = b * ALIGN + HDR + (size_t)(rng_next() % pl);
    }
    const size_t used_last = HDR + 100 * D_RS; /* the last block's padding starts here */
    const size_t pad[] = {used_last, used_last + 1, 2000, ALIGN - 1};
    for (size_t i = 0; i < 4; i++)
        pos[npos++] = 2 * ALIGN + pad[i];

    for (size_t i = 0; i < npos; i++) {
        size_t at = pos[i], page = at / ALIGN * ALIGN;
        unsigned char x = (unsigned char)(1 + rng_next() % 255);
        img[at] ^= x;
        put_page(p, img, page);
        struct readres res =
            read_run(p, D_RS, D_BLOCK, i & 1 ? pf : NULL, i & 2 ? D_N : UINT64_MAX, recs, D_N);
        if (at >= 2 * ALIGN + used_last) {
            if (res.st)
                expect_format_error(&res, p, UINT64_MAX, res.got);
            else
                expect_all(&res, D_N, D_SIZE);
        } else {
            if (res.st != DSORT_EFORMAT)
                print_error("byte %zu flipped (^0x%02x) not detected\n", at, x);
            expect_format_error(&res, p, page, page / ALIGN * D_PER);
        }
        img[at] ^= x;
        put_page(p, img, page);
    }
    /* and the file as it was still reads */
    struct readres res = read_run(p, D_RS, D_BLOCK, pf, D_N, recs, D_N);
    expect_all(&res, D_N, D_SIZE);
    dsort_prefetch_destroy(pf);
    free(img);
    free(recs);
}

/* The run cut short: at a block boundary it is DSORT_EFORMAT when the count is known (and,
 * as documented, silently the whole blocks before the cut when it is not); inside a header or
 * a payload it is always DSORT_EFORMAT naming the block's offset, also when the reader's
 * buffer still holds the bytes cut off; inside the last block's padding no record is lost. */
static void test_truncated(void **state)
{
    (void)state;
    unsigned char *recs = random_records(D_N, D_RS);
    char p[PATH_MAX], q[PATH_MAX];
    fresh(p, sizeof p);
    write_run(p, recs, D_N, D_RS, D_BLOCK);
    size_t len;
    unsigned char *img = load(p, &len);
    assert_int_equal(len, D_SIZE);
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    const size_t used_last = HDR + 100 * D_RS;

    /* at block boundaries */
    for (size_t cut = 0; cut < D_SIZE; cut += ALIGN) {
        fresh(q, sizeof q);
        put_file(q, img, cut);
        uint64_t before = cut / ALIGN * D_PER;
        for (int k = 0; k < 2; k++) {
            struct readres res = read_run(q, D_RS, D_BLOCK, k ? pf : NULL, D_N, recs, D_N);
            expect_format_error(&res, q, UINT64_MAX, before);
            assert_non_null(strstr(res.err.msg, "truncated"));
            res = read_run(q, D_RS, D_BLOCK, k ? pf : NULL, UINT64_MAX, recs, D_N);
            assert_int_equal(res.st, DSORT_OK);
            assert_int_equal(res.got, before);
            assert_int_equal(res.same, before);
        }
        unlink(q);
    }
    /* inside a block's header or payload */
    const size_t inside[] = {1,
                             HDR - 1,
                             HDR,
                             HDR + 7,
                             2000,
                             ALIGN - 1,
                             ALIGN + 10,
                             2 * ALIGN - 100,
                             2 * ALIGN + 23,
                             2 * ALIGN + HDR + 400,
                             2 * ALIGN + used_last - 1};
    for (size_t i = 0; i < sizeof inside / sizeof *inside; i++) {
        size_t cut = inside[i], blk = cut / ALIGN * ALIGN;
        fresh(q, sizeof q);
        put_file(q, img, cut);
        for (int k = 0; k < 4; k++) {
            struct readres res =
                read_run(q, D_RS, D_BLOCK, k & 1 ? pf : NULL, k & 2 ? D_N : UINT64_MAX, recs, D_N);
            expect_format_error(&res, q, blk, blk / ALIGN * D_PER);
        }
        unlink(q);
    }
    /* cut inside the only block (two pages) of a run, read with the buffer that just held the
     * whole block (readers reuse their buffers): the bytes past the cut that are still in the
     * buffer must not pass for the block */
    {
        const size_t n1 = 1000, b1 = 8000; /* 8024 bytes used of 8192 */
        fresh(q, sizeof q);
        write_run(q, recs, n1, D_RS, b1);
        size_t len1;
        unsigned char *img1 = load(q, &len1);
        assert_int_equal(len1, 2 * ALIGN);
        const size_t blen = dsort_runreader_buf_len(D_RS, b1, 1);
        unsigned char *buf = aligned(blen);
        const size_t cuts[] = {ALIGN, ALIGN + 1000, HDR + 100 * D_RS + 3};
        for (int k = 0; k < 12; k++) {
            struct dsort_prefetch *use = k & 1 ? pf : NULL;
            uint64_t expected = k & 2 ? n1 : UINT64_MAX;
            put_file(q, img1, len1);
            struct readres res = read_run_buf(q, D_RS, b1, buf, use, expected, recs, n1);
            expect_all(&res, n1, len1);
            put_file(q, img1, cuts[k / 4]);
            res = read_run_buf(q, D_RS, b1, buf, use, expected, recs, n1);
            expect_format_error(&res, q, 0, 0);
        }
        free(buf);
        free(img1);
        unlink(q);
    }
    /* inside the last block's padding: nothing lost */
    const size_t padding[] = {2 * ALIGN + used_last, 2 * ALIGN + 3000};
    for (size_t i = 0; i < 2; i++) {
        fresh(q, sizeof q);
        put_file(q, img, padding[i]);
        for (int k = 0; k < 4; k++) {
            struct readres res =
                read_run(q, D_RS, D_BLOCK, k & 1 ? pf : NULL, k & 2 ? D_N : UINT64_MAX, recs, D_N);
            expect_all(&res, D_N, padding[i]);
        }
        unlink(q);
    }
    dsort_prefetch_destroy(pf);
    free(img);
    free(recs);
}

/* Blocks appended: a page of zeros is a bad header (whether the count is known or not); a
 * copy of the first block is caught by the count. */
static void test_appended(void **state)
{
    (void)state;
    unsigned char *recs = random_records(D_N, D_RS);
    char p[PATH_MAX], q[PATH_MAX];
    fresh(p, sizeof p);
    write_run(p, recs, D_N, D_RS, D_BLOCK);
    size_t len;
    unsigned char *img = load(p, &len);
    unsigned char *big = calloc(1, len + ALIGN);
    assert_non_null(big);
    memcpy(big, img, len);

    fresh(q, sizeof q);
    put_file(q, big, len + ALIGN);
    for (int k = 0; k < 2; k++) {
        struct readres res = read_run(q, D_RS, D_BLOCK, NULL, k ? D_N : UINT64_MAX, recs, D_N);
        expect_format_error(&res, q, len, D_N);
    }
    unlink(q);

    memcpy(big + len, img, ALIGN);
    fresh(q, sizeof q);
    put_file(q, big, len + ALIGN);
    struct readres res = read_run(q, D_RS, D_BLOCK, NULL, D_N, recs, D_N);
    assert_int_equal(res.st, DSORT_EFORMAT);
    assert_non_null(strstr(res.err.msg, q));
    assert_int_equal(res.same, D_N);
    unlink(q);
    free(big);
    free(img);
    free(recs);
}

/* A reader opened with a smaller block than the writer's sees an oversized payload; one with
 * a larger block finds every block from the headers (each block says where the next begins),
 * so it reads the run whole. */
static void test_wrong_block(void **state)
{
    (void)state;
    unsigned char *recs = random_records(D_N, D_RS);
    char p[PATH_MAX];
    fresh(p, sizeof p);
    write_run(p, recs, D_N, D_RS, D_BLOCK);
    struct readres res = read_run(p, D_RS, 400, NULL, UINT64_MAX, recs, D_N);
    expect_format_error(&res, p, 0, 0);
    res = read_run(p, D_RS, 65536, NULL, D_N, recs, D_N);
    assert_int_equal(res.st, DSORT_OK);
    assert_int_equal(res.same, D_N);
    free(recs);
}

/* Write the file img of nblk blocks of 4 KiB: empty ones, and block `data` holding recs. */
static void put_empty_blocks(const char *p, size_t nblk, size_t data, const unsigned char *recs,
                             size_t n)
{
    unsigned char *img = calloc(nblk, ALIGN);
    assert_non_null(img);
    for (size_t b = 0; b < nblk; b++) {
        unsigned char *h = img + b * ALIGN;
        uint64_t payload = b == data ? n * D_RS : 0, records = b == data ? n : 0;
        uint32_t crc = dsort_crc32c(0, recs, (size_t)payload);
        memcpy(h, "DSRB", 4);
        memcpy(h + 4, &crc, 4);
        memcpy(h + 8, &payload, 8);
        memcpy(h + 16, &records, 8);
        if (payload)
            memcpy(h + HDR, recs, (size_t)payload);
    }
    put_file(p, img, nblk * ALIGN);
    free(img);
}

/* Empty blocks (the writer makes none, the reader skips them): many before and after a block
 * of records, and a file of nothing else. */
static void test_empty_blocks(void **state)
{
    (void)state;
    unsigned char *recs = random_records(3, D_RS);
    char p[PATH_MAX];
    fresh(p, sizeof p);
    put_empty_blocks(p, 1300, 1000, recs, 3);
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    for (int k = 0; k < 2; k++) {
        struct readres res = read_run(p, D_RS, D_BLOCK, k ? pf : NULL, 3, recs, 3);
        expect_all(&res, 3, 1300 * ALIGN);
        res = read_run(p, D_RS, D_BLOCK, k ? pf : NULL, 4, recs, 3);
        expect_format_error(&res, p, UINT64_MAX, 3);
    }
    fresh(p, sizeof p);
    put_empty_blocks(p, 50, SIZE_MAX, recs, 0);
    for (int k = 0; k < 2; k++) {
        struct readres res = read_run(p, D_RS, D_BLOCK, k ? pf : NULL, 0, recs, 0);
        expect_all(&res, 0, 50 * ALIGN);
        res = read_run(p, D_RS, D_BLOCK, k ? pf : NULL, 1, recs, 0);
        expect_format_error(&res, p, UINT64_MAX, 0);
    }
    dsort_prefetch_destroy(pf);
    free(recs);
}

/* A read error (the reader's descriptor swapped for a write-only one) is DSORT_EIO naming the
 * file, after the records read before it. */
static void test_read_error(void **state)
{
    (void)state;
    unsigned char *recs = random_records(D_N, D_RS);
    char p[PATH_MAX];
    fresh(p, sizeof p);
    write_run(p, recs, D_N, D_RS, D_BLOCK);
    struct dsort_prefetch *pf;
    struct dsort_error err;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    for (int k = 0; k < 2; k++) {
        unsigned char *buf = aligned(dsort_runreader_buf_len(D_RS, D_BLOCK, 1));
        struct dsort_runreader r;
        assert_int_equal(dsort_runreader_open(&r, p, D_RS, D_BLOCK, buf, k ? pf : NULL, D_N, &err),
                         DSORT_OK);
        int wfd = open(p, O_WRONLY | O_CLOEXEC);
        assert_true(wfd >= 0);
        assert_int_equal(dup2(wfd, r.fd[0]), r.fd[0]);
        close(wfd);
        uint64_t got = 0;
        enum dsort_status st = DSORT_OK;
        while (r.cur.cur != r.cur.end) {
            got += (uint64_t)(r.cur.end - r.cur.cur) / D_RS;
            r.cur.cur = r.cur.end;
            if ((st = r.cur.refill(&r.cur, &err)))
                break;
        }
        assert_int_equal(st, DSORT_EIO);
        assert_int_equal(err.status, DSORT_EIO);
        assert_int_equal(err.errnum, EBADF);
        assert_non_null(strstr(err.msg, p));
        /* synchronously the second block was read at open; with read-ahead it may have been */
        if (k)
            assert_true(got == D_PER || got == 2 * D_PER);
        else
            assert_int_equal(got, 2 * D_PER);
        dsort_runreader_close(&r);
        free(buf);
    }
    dsort_prefetch_destroy(pf);
    free(recs);
}

/* Creating: an existing file is refused and left as it was; a missing directory is refused;
 * a missing run cannot be opened. All DSORT_EIO naming the path. */
static void test_open_errors(void **state)
{
    (void)state;
    char p[PATH_MAX];
    fresh(p, sizeof p);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "precious", 8), 8);
    close(fd);
    struct dsort_runwriter w;
    struct dsort_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_runwriter_open(&w, p, 100, 4096, &err), DSORT_EIO);
    assert_int_equal(err.errnum, EEXIST);
    assert_non_null(strstr(err.msg, p));
    size_t len;
    unsigned char *b = load(p, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(b, "precious", 8);
    free(b);

    char q[PATH_MAX + 16];
    snprintf(q, sizeof q, "%s/no-such-dir/run", dsort_test_dir);
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_runwriter_open(&w, q, 100, 4096, &err), DSORT_EIO);
    assert_int_equal(err.errnum, ENOENT);
    assert_non_null(strstr(err.msg, q));
    assert_false(exists(q));

    unsigned char *buf = aligned(dsort_runreader_buf_len(100, 4096, 1));
    struct dsort_runreader r;
    snprintf(q, sizeof q, "%s/no-such-run", dsort_test_dir);
    memset(&err, 0, sizeof err);
    assert_int_equal(dsort_runreader_open(&r, q, 100, 4096, buf, NULL, UINT64_MAX, &err),
                     DSORT_EIO);
    assert_int_equal(err.errnum, ENOENT);
    assert_non_null(strstr(err.msg, q));
    free(buf);
}

/* abort removes the file: right after open, and after some blocks went out. */
static void test_abort(void **state)
{
    (void)state;
    char p[PATH_MAX];
    struct dsort_runwriter w;
    struct dsort_error err;
    fresh(p, sizeof p);
    assert_int_equal(dsort_runwriter_open(&w, p, 100, 4096, &err), DSORT_OK);
    assert_true(exists(p));
    dsort_runwriter_abort(&w);
    assert_false(exists(p));

    unsigned char *recs = random_records(1000, 100);
    fresh(p, sizeof p);
    assert_int_equal(dsort_runwriter_open(&w, p, 100, 4096, &err), DSORT_OK);
    for (size_t i = 0; i < 1000; i++)
        assert_int_equal(emit(&w, recs + i * 100, 100, &err), DSORT_OK);
    assert_true(w.records > 0);
    dsort_runwriter_abort(&w);
    assert_false(exists(p));
    free(recs);
}

/* A full disk (a file size limit of two blocks; SIGXFSZ ignored): the failed write of the
 * third block is DSORT_EIO naming the file and its offset, reported by a later flush when
 * more blocks follow, or by close when it is the last; abort then removes the file. */
static void test_disk_full(void **state)
{
    (void)state;
    unsigned char *recs = random_records(10 * D_PER, D_RS);
    const size_t counts[] = {10 * D_PER, D_N};
    for (int k = 0; k < 2; k++) {
        char p[PATH_MAX];
        fresh(p, sizeof p);
        struct dsort_runwriter w;
        struct dsort_error err;
        memset(&err, 0, sizeof err);
        assert_int_equal(dsort_runwriter_open(&w, p, D_RS, D_BLOCK, &err), DSORT_OK);

        struct rlimit old, lim;
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
        void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN);
        lim = old;
        lim.rlim_cur = 2 * ALIGN;
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
        enum dsort_status st = DSORT_OK;
        size_t i = 0;
        for (; i < counts[k] && !st; i++)
            st = emit(&w, recs + i * D_RS, D_RS, &err);
        int in_close = !st;
        if (!st)
            st = dsort_runwriter_close(&w, &err);
        setrlimit(RLIMIT_FSIZE, &old);
        signal(SIGXFSZ, old_sig);

        assert_int_equal(st, DSORT_EIO);
        assert_int_equal(in_close, k); /* the short run's error can only come from close */
        assert_int_equal(err.status, DSORT_EIO);
        assert_int_equal(err.errnum, EFBIG);
        assert_non_null(strstr(err.msg, p));
        assert_non_null(strstr(err.msg, "offset 8192"));
        dsort_runwriter_abort(&w);
        assert_false(exists(p));
    }
    free(recs);
}

/* Where O_DIRECT is refused (simulated, see __wrap_open), runs are written and read without
 * it: created (nothing left behind on abort), read back whole, zero records, a flipped byte
 * still caught. */
static void test_no_odirect(void **state)
{
    (void)state;
    unsigned char *recs = random_records(D_N, D_RS);
    char p[PATH_MAX];
    fresh(p, sizeof p);
    struct dsort_runwriter w;
    struct dsort_error err;
    memset(&err, 0, sizeof err);
    no_direct = 1;
    direct_refused = 0;
    if (dsort_runwriter_open(&w, p, D_RS, D_BLOCK, &err))
        fail_msg("cannot create a run where O_DIRECT is refused: %s", err.msg);
    assert_true(direct_refused > 0); /* the wrap took effect */
    dsort_runwriter_abort(&w);
    assert_false(exists(p));

    write_run(p, recs, D_N, D_RS, D_BLOCK);
    struct dsort_prefetch *pf;
    assert_int_equal(dsort_prefetch_create(&pf, &err), DSORT_OK);
    unsigned before = direct_refused;
    for (int k = 0; k < 2; k++) {
        struct readres res = read_run(p, D_RS, D_BLOCK, k ? pf : NULL, D_N, recs, D_N);
        expect_all(&res, D_N, D_SIZE);
    }
    assert_true(direct_refused > before); /* the reader asked for O_DIRECT too */

    size_t len;
    unsigned char *img = load(p, &len);
    img[ALIGN + HDR + 100] ^= 0x40;
    put_page(p, img, ALIGN);
    struct readres res = read_run(p, D_RS, D_BLOCK, pf, UINT64_MAX, recs, D_N);
    expect_format_error(&res, p, ALIGN, D_PER);

    fresh(p, sizeof p);
    write_run(p, recs, 0, D_RS, D_BLOCK);
    res = read_run(p, D_RS, D_BLOCK, NULL, 0, recs, 0);
    expect_all(&res, 0, 0);
    no_direct = 0;
    dsort_prefetch_destroy(pf);
    free(img);
    free(recs);
}

/* ---- striped runs: k files, block b in file b % k ---- */

/* k file names in k subdirectories of the test's directory (as a run over k temp disks). */
static void stripe_names(char names[][PATH_MAX], const char **paths, size_t k)
{
    unsigned n = seq++;
    for (size_t i = 0; i < k; i++) {
        char d[PATH_MAX];
        snprintf(d, sizeof d, "%s/disk%zu", dsort_test_dir, i);
        mkdir(d, 0700);
        snprintf(names[i], PATH_MAX, "%s/run-%06u", d, n);
        paths[i] = names[i];
    }
}

static void write_striped(const char *const *paths, size_t k, const unsigned char *recs, size_t n,
                          size_t rs, size_t block)
{
    struct dsort_runwriter w;
    struct dsort_error err;
    assert_int_equal(dsort_runwriter_open_striped(&w, paths, k, rs, block, &err), DSORT_OK);
    assert_int_equal(w.k, k);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(emit(&w, recs + i * rs, rs, &err), DSORT_OK);
    assert_int_equal(dsort_runwriter_close(&w, &err), DSORT_OK);
    assert_int_equal(w.records, n);
    assert_int_equal(w.off, run_size(n, rs, block)); /* all the files together */
    assert_string_equal(dsort_runwriter_path(&w, k - 1), paths[k - 1]);
    dsort_runwriter_free(&w);
}

static struct readres read_striped(const char *const *paths, size_t k, size_t rs, size_t block,
                                   struct dsort_prefetch *const *pf, uint64_t expected,
                                   const unsigned char *want, uint64_t n)
{
    struct readres res;
    memset(&res, 0, sizeof res);
    size_t len = dsort_runreader_buf_len(rs, block, k);
    unsigned char *buf = aligned(len);
    struct dsort_runreader r;
    res.st = dsort_runreader_open_striped(&r, paths, k, rs, block, 0, buf, pf, expected, &res.err);
    if (!res.st) {
        int same = 1;
        while (r.cur.cur != r.cur.end) {
            for (; r.cur.cur < r.cur.end; r.cur.cur += rs, res.got++) {
                if (same && res.got < n && !memcmp(r.cur.cur, want + res.got * rs, rs))
                    res.same++;
                else
                    same = 0;
            }
            if (r.npend > res.ahead)
                res.ahead = r.npend;
            if ((res.st = r.cur.refill(&r.cur, &res.err)))
                break;
        }
        res.records = r.records;
        res.bytes_read = r.bytes_read;
        dsort_runreader_close(&r);
    }
    free(buf);
    return res;
}

static uint64_t file_size(const char *p)
{
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    return (uint64_t)sb.st_size;
}

/* Fixed records over 1, 2 and 3 files: each file holds blocks i, i + k, ..., the run reads
 * back whole (synchronously and with a read-ahead thread per file), one file is byte for byte
 * the plain format; then a flipped byte in one file's block, a file cut at a block boundary
 * or emptied, are DSORT_EFORMAT naming that file, after exactly the records before. */
static void test_striped(void **state)
{
    (void)state;
    const size_t rs = 100, block = 8192, n = 1000;
    const size_t per = dsort_run_payload(rs, block) / rs, stride = dsort_run_stride(rs, block);
    const size_t nblk = (n + per - 1) / per;
    unsigned char *recs = random_records(n, rs);
    struct dsort_prefetch *pf[3];
    struct dsort_error err;
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(dsort_prefetch_create(&pf[i], &err), DSORT_OK);
    for (size_t k = 1; k <= 3; k++) {
        char names[3][PATH_MAX];
        const char *paths[3];
        stripe_names(names, paths, k);
        write_striped(paths, k, recs, n, rs, block);
        uint64_t total = 0;
        for (size_t i = 0; i < k; i++) {
            size_t mine = nblk / k + (i < nblk % k); /* blocks i, i + k, ... */
            uint64_t last =
                (nblk - 1) % k == i ? align_up(HDR + (n - (nblk - 1) * per) * rs) : stride;
            assert_int_equal(file_size(paths[i]), (mine - 1) * stride + last);
            total += file_size(paths[i]);
        }
        assert_int_equal(total, run_size(n, rs, block));
        struct readres res = read_striped(paths, k, rs, block, NULL, n, recs, n);
        expect_all(&res, n, total);
        res = read_striped(paths, k, rs, block, pf, UINT64_MAX, recs, n);
        expect_all(&res, n, total);
        /* one block ahead for one file; two for a striped run (the next two, two files) */
        assert_int_equal(res.ahead, k == 1 ? 1 : 2);
        if (k == 1) { /* the plain format, byte for byte */
            char plain[PATH_MAX];
            fresh(plain, sizeof plain);
            write_run(plain, recs, n, rs, block);
            size_t la, lb;
            unsigned char *a = load(plain, &la), *b = load(paths[0], &lb);
            assert_int_equal(la, lb);
            assert_memory_equal(a, b, la);
            free(a);
            free(b);
            continue;
        }
        /* A flipped payload byte in the second block of file 1 (block k + 1 of the run). */
        unsigned char c;
        int fd = open(paths[1], O_RDWR);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, &c, 1, stride + HDR + 7), 1);
        c ^= 0x40;
        assert_int_equal(pwrite(fd, &c, 1, stride + HDR + 7), 1);
        res = read_striped(paths, k, rs, block, pf, n, recs, n);
        expect_format_error(&res, paths[1], stride, (k + 1) * per);
        c ^= 0x40;
        assert_int_equal(pwrite(fd, &c, 1, stride + HDR + 7), 1);
        /* File 1 cut after its first block: the run ends at block k + 1, file 1's second. */
        size_t len;
        unsigned char *img = load(paths[1], &len);
        assert_int_equal(ftruncate(fd, (off_t)stride), 0);
        res = read_striped(paths, k, rs, block, pf, n, recs, n);
        expect_format_error(&res, paths[1], UINT64_MAX, (k + 1) * per);
        /* The same with the record count unknown: the other files' blocks past the end. */
        res = read_striped(paths, k, rs, block, NULL, UINT64_MAX, recs, n);
        expect_format_error(&res, paths[1], UINT64_MAX, (k + 1) * per);
        /* File 1 emptied: the run ends after block 0. */
        assert_int_equal(ftruncate(fd, 0), 0);
        res = read_striped(paths, k, rs, block, pf, n, recs, n);
        expect_format_error(&res, paths[1], UINT64_MAX, per);
        put_file(paths[1], img, len);
        res = read_striped(paths, k, rs, block, pf, n, recs, n);
        expect_all(&res, n, total);
        free(img);
        close(fd);
        /* A file missing is an error naming it. */
        assert_int_equal(unlink(paths[k - 1]), 0);
        res = read_striped(paths, k, rs, block, pf, n, recs, n);
        assert_int_equal(res.st, DSORT_EIO);
        assert_non_null(strstr(res.err.msg, paths[k - 1]));
    }
    for (size_t i = 0; i < 3; i++)
        dsort_prefetch_destroy(pf[i]);
    free(recs);
}

/* Framed records (a 4-byte length, then the bytes), some longer than a block (oversize blocks,
 * written and read synchronously), striped over 3 files: each file keeps its own offsets, and
 * the records come back in order; abort removes every file. */
static void test_striped_framed(void **state)
{
    (void)state;
    const size_t block = 8192, n = 600, k = 3;
    char names[3][PATH_MAX];
    const char *paths[3];
    stripe_names(names, paths, k);
    struct dsort_runwriter w;
    struct dsort_error err;
    assert_int_equal(dsort_runwriter_open_striped(&w, paths, k, 0, block, &err), DSORT_OK);
    unsigned char *want = malloc(n * 4 * block);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t len = (uint32_t)(i % 97 == 5 ? 2 * block + rng_next() % block : rng_next() % 300);
        unsigned char *p = dsort_runwriter_reserve(&w, 4 + len, &err);
        assert_non_null(p);
        memcpy(p, &len, 4);
        fill_random(p + 4, len);
        memcpy(want + at, p, 4 + len);
        at += 4 + len;
        assert_int_equal(dsort_runwriter_commit(&w, &err), DSORT_OK);
    }
    assert_int_equal(dsort_runwriter_close(&w, &err), DSORT_OK);
    assert_int_equal(w.records, n);
    uint64_t total = 0;
    for (size_t i = 0; i < k; i++) {
        assert_true(file_size(paths[i]) > 0);
        total += file_size(paths[i]);
    }
    assert_int_equal(total, w.off);
    dsort_runwriter_free(&w);
    struct dsort_prefetch *pf[3];
    for (size_t i = 0; i < k; i++)
        assert_int_equal(dsort_prefetch_create(&pf[i], &err), DSORT_OK);
    unsigned char *buf = aligned(dsort_runreader_buf_len(0, block, k));
    struct dsort_runreader r;
    assert_int_equal(
        dsort_runreader_open_striped(&r, paths, k, 0, block, 4 * block, buf, pf, n, &err),
        DSORT_OK);
    size_t got = 0, pos = 0;
    enum dsort_status st = DSORT_OK;
    while (r.cur.cur != r.cur.end) {
        uint64_t in_blk = 0;
        while (r.cur.cur < r.cur.end) {
            uint32_t len;
            memcpy(&len, r.cur.cur, 4);
            assert_true(pos + 4 + len <= at);
            assert_memory_equal(r.cur.cur, want + pos, 4 + len);
            r.cur.cur += 4 + len;
            pos += 4 + len;
            got++;
            in_blk++;
        }
        assert_int_equal(in_blk, r.blk_records);
        if ((st = r.cur.refill(&r.cur, &err)))
            break;
    }
    assert_int_equal(st, DSORT_OK);
    assert_int_equal(got, n);
    assert_int_equal(pos, at);
    dsort_runreader_close(&r);
    /* abort removes every file it made */
    stripe_names(names, paths, k);
    assert_int_equal(dsort_runwriter_open_striped(&w, paths, k, 0, block, &err), DSORT_OK);
    for (size_t i = 0; i < k; i++)
        assert_true(exists(paths[i]));
    dsort_runwriter_abort(&w);
    for (size_t i = 0; i < k; i++)
        assert_false(exists(paths[i]));
    for (size_t i = 0; i < k; i++)
        dsort_prefetch_destroy(pf[i]);
    free(buf);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test_setup_teardown(test_round_trip, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_records, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_through_runs, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_byte, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_appended, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_block, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_blocks, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_error, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_errors, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_odirect, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_striped, dsort_test_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_striped_framed, dsort_test_dir_setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
