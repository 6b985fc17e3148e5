/* Unit tests for io.h: the input set (checks, messages, reading across files), the
 * pread/pwrite loops, directory fsync, dsort_io_split, dsort_inputs_contains and a scan off
 * the end of a mapped input (dsort_inputs_map).
 * Files live in a fresh directory under $TMPDIR (or /tmp) that the test removes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "format.h"
#include "io.h"

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

static void parse(const char *spec, struct dsort_format *fmt)
{
    struct dsort_error err;
    assert_int_equal(dsort_format_parse(spec, fmt, &err), DSORT_OK);
}

static void assert_empty(const struct dsort_inputs *in)
{
    assert_int_equal(in->count, 0);
    assert_null(in->files);
    assert_int_equal(in->total_records, 0);
}

/* ---- dsort_inputs_open ---- */

static void test_open_good(void **state)
{
    (void)state;
    struct dsort_format fmt;
    dsort_format_gensort(&fmt);
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
    dsort_test_path(a, sizeof a, "good-a");
    dsort_test_path(b, sizeof b, "good-b");
    dsort_test_path(c, sizeof c, "good-c");
    unsigned char buf[500];
    memset(buf, 'x', sizeof buf);
    write_file(a, buf, 300);
    write_file(b, buf, 0);
    write_file(c, buf, 500);
    char *paths[] = {a, b, c};
    struct dsort_inputs in;
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_inputs_open(&in, paths, 3, &fmt, &err), DSORT_OK);
    assert_int_equal(in.count, 3);
    assert_int_equal(in.rec_size, 100);
    assert_int_equal(in.total_records, 8);
    assert_string_equal(in.files[0].path, a);
    assert_string_equal(in.files[1].path, b);
    assert_string_equal(in.files[2].path, c);
    assert_int_equal(in.files[0].size, 300);
    assert_int_equal(in.files[0].records, 3);
    assert_int_equal(in.files[0].first, 0);
    assert_int_equal(in.files[1].records, 0);
    assert_int_equal(in.files[1].first, 3);
    assert_int_equal(in.files[2].records, 5);
    assert_int_equal(in.files[2].first, 3);
    dsort_inputs_destroy(&in);
    assert_empty(&in);
    dsort_inputs_destroy(NULL);

    /* no inputs at all */
    assert_int_equal(dsort_inputs_open(&in, NULL, 0, &fmt, &err), DSORT_OK);
    assert_empty(&in);
    assert_int_equal(in.rec_size, 100);
    dsort_inputs_destroy(&in);
}

/* Open fails: status, the exact message, and an empty input set. */
static void expect_open_error(char **paths, size_t n, const struct dsort_format *fmt,
                              enum dsort_status want, const char *msg)
{
    struct dsort_inputs in;
    struct dsort_error err;
    dsort_error_clear(&err);
    memset(&in, 0x5a, sizeof in);
    enum dsort_status st = dsort_inputs_open(&in, paths, n, fmt, &err);
    if (st != want || strcmp(err.msg, msg))
        print_error("status %d message '%s'\n   expected %d '%s'\n", (int)st, err.msg, (int)want,
                    msg);
    assert_int_equal(st, want);
    assert_string_equal(err.msg, msg);
    assert_empty(&in);
    dsort_inputs_destroy(&in);
}

static void test_open_errors(void **state)
{
    (void)state;
    struct dsort_format fmt;
    dsort_format_gensort(&fmt);
    char good[PATH_MAX], odd[PATH_MAX], missing[PATH_MAX], dir[PATH_MAX], msg[3 * PATH_MAX];
    dsort_test_path(good, sizeof good, "err-good");
    dsort_test_path(odd, sizeof odd, "err-odd");
    dsort_test_path(missing, sizeof missing, "err-missing");
    dsort_test_path(dir, sizeof dir, "err-dir");
    unsigned char *buf = calloc(1, 12345);
    assert_non_null(buf);
    write_file(good, buf, 1000);
    write_file(odd, buf, 12345);
    assert_int_equal(mkdir(dir, 0755), 0);
    free(buf);

    char *p1[] = {odd};
    snprintf(msg, sizeof msg,
             "'%s': 12345 bytes is not a whole number of 100-byte records (text lines? give "
             "--format lines)",
             odd);
    expect_open_error(p1, 1, &fmt, DSORT_EFORMAT, msg);

    /* the bad file after a good one: the set is still left empty */
    char *p2[] = {good, good, odd};
    expect_open_error(p2, 3, &fmt, DSORT_EFORMAT, msg);

    /* another record size */
    struct dsort_format f7;
    parse("fixed:7:0:3", &f7);
    char *p3[] = {good};
    snprintf(msg, sizeof msg,
             "'%s': 1000 bytes is not a whole number of 7-byte records (text lines? give "
             "--format lines)",
             good);
    expect_open_error(p3, 1, &f7, DSORT_EFORMAT, msg);

    char *p4[] = {good, missing};
    snprintf(msg, sizeof msg, "cannot open '%s': %s", missing, strerror(ENOENT));
    expect_open_error(p4, 2, &fmt, DSORT_EIO, msg);

    char *p5[] = {dir};
    snprintf(msg, sizeof msg, "'%s' is a directory, not an input file", dir);
    expect_open_error(p5, 1, &fmt, DSORT_EINVAL, msg);

    /* /dev/null is an empty input (as GNU sort takes it); any other device is refused */
    char devnull[] = "/dev/null", devzero[] = "/dev/zero";
    char *p6[] = {devzero};
    expect_open_error(p6, 1, &fmt, DSORT_EINVAL, "'/dev/zero' is not a regular file");
    char *pn[] = {devnull, devnull};
    struct dsort_inputs in;
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_inputs_open(&in, pn, 2, &fmt, &err), DSORT_OK);
    assert_int_equal(in.count, 2);
    assert_int_equal(in.total_records, 0);
    assert_int_equal(in.files[1].size, 0);
    assert_int_equal(dsort_inputs_check_unchanged(&in, &err), DSORT_OK);
    dsort_inputs_destroy(&in);

    /* an unreadable file (root reads everything, so only as another user) */
    if (geteuid() != 0) {
        char locked[PATH_MAX];
        dsort_test_path(locked, sizeof locked, "err-locked");
        write_file(locked, "", 0);
        assert_int_equal(chmod(locked, 0), 0);
        char *p7[] = {locked};
        snprintf(msg, sizeof msg, "cannot open '%s': %s", locked, strerror(EACCES));
        expect_open_error(p7, 1, &fmt, DSORT_EIO, msg);
    }
}

/* A named pipe is not a regular file: the check must say so at once, not block in open(2)
 * waiting for a writer. Run in a child so that a hang fails the test instead of stalling it. */
static void test_open_fifo(void **state)
{
    (void)state;
    char fifo[PATH_MAX];
    dsort_test_path(fifo, sizeof fifo, "err-fifo");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct dsort_format fmt;
        dsort_format_gensort(&fmt);
        char *p[] = {fifo};
        struct dsort_inputs in;
        struct dsort_error err;
        enum dsort_status st = dsort_inputs_open(&in, p, 1, &fmt, &err);
        _exit(st == DSORT_EINVAL && strstr(err.msg, "not a regular file") ? 0 : 1);
    }
    int status = 0, waited = 0;
    for (; waited < 300; waited++) { /* up to 3 s */
        pid_t r = waitpid(pid, &status, WNOHANG);
        assert_true(r >= 0);
        if (r == pid)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (waited == 300) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        print_error("dsort_inputs_open blocks on a FIFO ('%s') instead of rejecting it\n", fifo);
        fail();
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- dsort_inputs_read ---- */

static void test_read_ranges(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("fixed:8:0:8", &fmt);
    /* Records per file, empty files first, last and in between. */
    static const size_t counts[] = {0, 3, 0, 0, 5, 1, 0, 7, 0};
    enum { NF = sizeof counts / sizeof counts[0] };
    char names[NF][PATH_MAX];
    char *paths[NF];
    uint64_t total = 0;
    for (size_t f = 0; f < NF; f++) {
        char name[32];
        snprintf(name, sizeof name, "range-%zu", f);
        dsort_test_path(names[f], sizeof names[f], name);
        paths[f] = names[f];
        uint64_t recs[16];
        for (size_t i = 0; i < counts[f]; i++)
            recs[i] = total + i + UINT64_C(0x1000);
        write_file(names[f], recs, counts[f] * 8);
        total += counts[f];
    }
    struct dsort_inputs in;
    struct dsort_error err;
    assert_int_equal(dsort_inputs_open(&in, paths, NF, &fmt, &err), DSORT_OK);
    assert_int_equal(in.total_records, total);
    uint64_t buf[32];
    for (uint64_t first = 0; first <= total; first++)
        for (uint64_t count = 0; first + count <= total; count++) {
            memset(buf, 0xab, sizeof buf);
            dsort_error_clear(&err);
            enum dsort_status st = dsort_inputs_read(&in, first, count, (unsigned char *)buf, &err);
            if (st)
                print_error("read [%" PRIu64 ", +%" PRIu64 "): %s\n", first, count, err.msg);
            assert_int_equal(st, DSORT_OK);
            for (uint64_t i = 0; i < count; i++)
                assert_int_equal(buf[i], first + i + 0x1000);
            /* nothing written past the range */
            assert_int_equal(buf[count], UINT64_C(0xabababababababab));
        }
    /* read-ahead advice is best effort: any range, past the end included, changes nothing */
    for (uint64_t first = 0; first <= total + 2; first++)
        for (uint64_t count = 0; count <= total + 2; count++)
            dsort_inputs_advise(&in, first, count);
    dsort_inputs_advise(&in, UINT64_MAX - 1, 5);
    assert_int_equal(dsort_inputs_read(&in, 0, total, (unsigned char *)buf, &err), DSORT_OK);
    for (uint64_t i = 0; i < total; i++)
        assert_int_equal(buf[i], i + 0x1000);
    /* past the end */
    dsort_error_clear(&err);
    assert_int_not_equal(dsort_inputs_read(&in, total - 2, 3, (unsigned char *)buf, &err),
                         DSORT_OK);
    assert_int_not_equal(dsort_inputs_read(&in, total + 1, 1, (unsigned char *)buf, &err),
                         DSORT_OK);
    dsort_inputs_destroy(&in);

    /* a file that shrinks after the check: the read reports the end of file, naming it */
    assert_int_equal(dsort_inputs_open(&in, paths, NF, &fmt, &err), DSORT_OK);
    assert_int_equal(truncate(names[7], 8), 0);
    dsort_error_clear(&err);
    assert_int_equal(dsort_inputs_read(&in, 0, total, (unsigned char *)buf, &err), DSORT_EFORMAT);
    assert_non_null(strstr(err.msg, names[7]));
    assert_non_null(strstr(err.msg, "unexpected end of file"));
    dsort_inputs_destroy(&in);
}

/* ---- pread/pwrite loops and fsync ---- */

static void test_pread_pwrite(void **state)
{
    (void)state;
    char p[PATH_MAX];
    dsort_test_path(p, sizeof p, "rw");
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    enum { LEN = 100000 };
    unsigned char *w = malloc(LEN), *r = malloc(LEN);
    assert_true(w && r);
    for (size_t i = 0; i < LEN; i++)
        w[i] = (unsigned char)(i * 31 + 7);
    struct dsort_error err;
    assert_int_equal(dsort_io_pwrite_full(fd, w, LEN, 0, p, &err), DSORT_OK);
    /* writing at an offset past the end leaves a hole */
    assert_int_equal(dsort_io_pwrite_full(fd, w, 10, LEN + 90, p, &err), DSORT_OK);
    assert_int_equal(dsort_io_pread_full(fd, r, LEN, 0, p, &err), DSORT_OK);
    assert_memory_equal(r, w, LEN);
    assert_int_equal(dsort_io_pread_full(fd, r, 100, LEN, p, &err), DSORT_OK);
    for (size_t i = 0; i < 90; i++)
        assert_int_equal(r[i], 0);
    assert_memory_equal(r + 90, w, 10);
    assert_int_equal(dsort_io_pread_full(fd, r, 0, 5 * LEN, p, &err), DSORT_OK);

    /* reading past the end */
    dsort_error_clear(&err);
    assert_int_equal(dsort_io_pread_full(fd, r, 11, LEN + 90, p, &err), DSORT_EFORMAT);
    assert_non_null(strstr(err.msg, p));
    assert_non_null(strstr(err.msg, "unexpected end of file"));
    assert_int_equal(close(fd), 0);

    /* a bad descriptor */
    dsort_error_clear(&err);
    assert_int_equal(dsort_io_pread_full(fd, r, 10, 0, p, &err), DSORT_EIO);
    assert_int_equal(err.errnum, EBADF);
    assert_non_null(strstr(err.msg, p));
    dsort_error_clear(&err);
    assert_int_equal(dsort_io_pwrite_full(fd, w, 10, 0, p, &err), DSORT_EIO);
    assert_int_equal(err.errnum, EBADF);
    /* a descriptor open for reading only */
    fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(dsort_io_pwrite_full(fd, w, 10, 0, p, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, "cannot write"));
    close(fd);
    free(w);
    free(r);
}

static void test_fsync_dir(void **state)
{
    (void)state;
    struct dsort_error err;
    char p[PATH_MAX], missing[PATH_MAX];
    dsort_test_path(p, sizeof p, "some-file");
    dsort_test_path(missing, sizeof missing, "no-such-dir/x");
    assert_int_equal(dsort_io_fsync_dir(dsort_test_dir, &err), DSORT_OK);
    assert_int_equal(dsort_io_fsync_parent(p, &err), DSORT_OK); /* the file need not exist */
    dsort_error_clear(&err);
    assert_int_equal(dsort_io_fsync_parent(missing, &err), DSORT_EIO);
    assert_int_equal(err.errnum, ENOENT);
    /* a bare name: its directory is "." */
    assert_int_equal(dsort_io_fsync_parent("bare-name", &err), DSORT_OK);
}

/* ---- dsort_io_split ---- */

static void check_split(uint64_t total, int parts)
{
    uint64_t next = 0, minc = UINT64_MAX, maxc = 0;
    for (int part = 0; part < parts; part++) {
        uint64_t first = 12345, count = 12345;
        dsort_io_split(total, part, parts, &first, &count);
        if (first != next)
            print_error("split(%" PRIu64 ", %d, %d): first %" PRIu64 ", expected %" PRIu64 "\n",
                        total, part, parts, first, next);
        assert_int_equal(first, next);
        next = first + count;
        minc = count < minc ? count : minc;
        maxc = count > maxc ? count : maxc;
    }
    assert_int_equal(next, total);
    assert_true(maxc - minc <= 1);
}

static void test_split(void **state)
{
    (void)state;
    for (uint64_t total = 0; total <= 300; total++)
        for (int parts = 1; parts <= 40; parts++)
            check_split(total, parts);
    static const uint64_t big[] = {
        UINT64_C(1) << 32, (UINT64_C(1) << 40) + 3, UINT64_C(10000000000000),
        UINT64_MAX / 2,    UINT64_MAX - 1,          UINT64_MAX,
    };
    static const int many[] = {1, 2, 3, 7, 1000, 65537, 1 << 20};
    for (size_t t = 0; t < sizeof big / sizeof big[0]; t++)
        for (size_t p = 0; p < sizeof many / sizeof many[0]; p++)
            check_split(big[t], many[p]);
    /* total < parts: parts of one and of zero */
    check_split(3, 1 << 20);
    uint64_t first, count;
    dsort_io_split(1, 0, 2, &first, &count);
    assert_true(first + count <= 1);
    /* a large part count near INT_MAX */
    dsort_io_split(UINT64_MAX, INT_MAX - 1, INT_MAX, &first, &count);
    assert_int_equal(first + count, UINT64_MAX);
    dsort_io_split(5, INT_MAX - 1, INT_MAX, &first, &count);
    assert_int_equal(first + count, 5);
}

/* ---- dsort_inputs_contains ---- */

static void test_contains(void **state)
{
    (void)state;
    struct dsort_format fmt;
    dsort_format_gensort(&fmt);
    char a[PATH_MAX], b[PATH_MAX], other[PATH_MAX], hard[PATH_MAX], sym[PATH_MAX],
        missing[PATH_MAX], dotted[PATH_MAX + 8];
    dsort_test_path(a, sizeof a, "in-a");
    dsort_test_path(b, sizeof b, "in-b");
    dsort_test_path(other, sizeof other, "not-an-input");
    dsort_test_path(hard, sizeof hard, "in-a-hardlink");
    dsort_test_path(sym, sizeof sym, "in-b-symlink");
    dsort_test_path(missing, sizeof missing, "missing");
    snprintf(dotted, sizeof dotted, "%s/./in-a", dsort_test_dir);
    write_file(a, "", 0);
    write_file(b, "", 0);
    write_file(other, "", 0);
    assert_int_equal(link(a, hard), 0);
    assert_int_equal(symlink(b, sym), 0);
    char *paths[] = {a, b};
    struct dsort_inputs in;
    struct dsort_error err;
    assert_int_equal(dsort_inputs_open(&in, paths, 2, &fmt, &err), DSORT_OK);
    assert_true(dsort_inputs_contains(&in, a));
    assert_true(dsort_inputs_contains(&in, b));
    assert_true(dsort_inputs_contains(&in, hard));
    assert_true(dsort_inputs_contains(&in, sym));
    assert_true(dsort_inputs_contains(&in, dotted));
    assert_false(dsort_inputs_contains(&in, other));
    assert_false(dsort_inputs_contains(&in, missing));
    assert_false(dsort_inputs_contains(&in, dsort_test_dir));
    dsort_inputs_destroy(&in);
    /* an empty set contains nothing */
    assert_false(dsort_inputs_contains(&in, a));
}

/* ---- dsort_inputs_map: a scan that runs off the file's end ---- */

/* A mapped text input whose last eol is overwritten while it is sorted: a scan for that line's
 * end (a line of 16 MiB or more is measured by looking for its eol) runs off the file. It must
 * end as a truncation does (the watch: exit 2, a line naming the file), not die of SIGSEGV in
 * unmapped memory (issue 25). A child scans; its stderr goes to a file. */
static void scan_off_end(size_t size)
{
    char path[PATH_MAX], errpath[PATH_MAX];
    dsort_test_path(path, sizeof path, "no-eol");
    dsort_test_path(errpath, sizeof errpath, "no-eol.stderr");
    unsigned char *data = malloc(size);
    assert_non_null(data);
    memset(data, 'z', size); /* no eol anywhere */
    write_file(path, data, size);
    free(data);
    struct dsort_format fmt;
    parse("fixed:1:0:1", &fmt);
    char *paths[] = {path};
    struct dsort_inputs in;
    struct dsort_error err;
    assert_int_equal(dsort_inputs_open(&in, paths, 1, &fmt, &err), DSORT_OK);
    struct dsort_input_map m;
    assert_int_equal(dsort_inputs_map(&m, &in.files[0], &err), DSORT_OK);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(10);
        const volatile unsigned char *q = m.base;
        while (*q != '\n')
            q++;
        _exit(11); /* found an eol that is not in the file */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    dsort_inputs_unmap(&m);
    dsort_inputs_destroy(&in);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 2)
        print_error("a scan off the end of a %zu-byte mapping: %s %d, expected exit 2\n", size,
                    WIFSIGNALED(status) ? "signal" : "exit",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    char line[PATH_MAX + 512] = "";
    FILE *f = fopen(errpath, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_non_null(strstr(line, path));
    assert_non_null(strstr(line, "changed while it was being sorted"));
}

static void test_map_scan_off_end(void **state)
{
    (void)state;
    long ps = sysconf(_SC_PAGESIZE);
    const size_t page = ps > 0 ? (size_t)ps : 4096;
    scan_off_end(3 * page);       /* the file ends at a page's end */
    scan_off_end(3 * page - 100); /* in a page, whose tail reads as zeros */
}

/* ---- files whose size is not what they hold; text under a record format ---- */

static void test_unsized(void **state)
{
    (void)state;
    struct dsort_format fmt;
    parse("fixed:1:0:1", &fmt);
    /* /proc files have size 0 and content; /sys files a nominal 4096 */
    const char *special[] = {"/proc/version", "/sys/devices/system/cpu/online"};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        int fd = open(special[i], O_RDONLY);
        if (fd < 0)
            continue; /* not mounted here */
        struct stat sb;
        assert_int_equal(fstat(fd, &sb), 0);
        assert_int_equal(dsort_io_unsized(fd, &sb), 1);
        close(fd);
        char *p[] = {(char *)special[i]};
        struct dsort_inputs in;
        struct dsort_error err;
        assert_int_equal(dsort_inputs_open(&in, p, 1, &fmt, &err), DSORT_EINVAL);
        assert_non_null(strstr(err.msg, "is not what it holds"));
        assert_empty(&in);
    }
    /* an empty regular file is empty */
    char empty[PATH_MAX];
    dsort_test_path(empty, sizeof empty, "unsized-empty");
    write_file(empty, "", 0);
    int fd = open(empty, O_RDONLY);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    assert_int_equal(dsort_io_unsized(fd, &sb), 0);
    close(fd);
}

/* sniff_one DATA LEN: open a file of those bytes as gensort records, and sniff it. */
static int sniff_one(const void *data, size_t len, uint64_t *at)
{
    char path[PATH_MAX];
    dsort_test_path(path, sizeof path, "sniff");
    write_file(path, data, len);
    struct dsort_format fmt;
    dsort_format_gensort(&fmt);
    char *p[] = {path};
    struct dsort_inputs in;
    struct dsort_error err;
    assert_int_equal(dsort_inputs_open(&in, p, 1, &fmt, &err), DSORT_OK);
    int text = -1;
    assert_int_equal(dsort_inputs_sniff_text(&in, 0, &text, at, &err), DSORT_OK);
    dsort_inputs_destroy(&in);
    return text;
}

static void test_sniff_text(void **state)
{
    (void)state;
    enum { RECS = 1000 };
    unsigned char *buf = malloc(RECS * 100);
    assert_non_null(buf);
    uint64_t at;
    /* text lines of 1 to 40 characters */
    unsigned seed = 7;
    for (size_t i = 0; i < RECS * 100; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = (seed >> 16) % 41 == 0 ? '\n' : (unsigned char)('a' + (seed >> 16) % 26);
    }
    buf[3] = '\n';
    assert_int_equal(sniff_one(buf, RECS * 100, &at), 1);
    assert_int_equal(at, 3);
    /* gensort -a: 98 printable bytes and "\r\n" a record */
    for (size_t r = 0; r < RECS; r++) {
        memset(buf + r * 100, 'A' + (int)(r % 26), 98);
        buf[r * 100 + 98] = '\r';
        buf[r * 100 + 99] = '\n';
    }
    assert_int_equal(sniff_one(buf, RECS * 100, &at), 0);
    /* a newline inside a record, but a control byte too: not plainly text */
    buf[150] = '\n';
    assert_int_equal(sniff_one(buf, RECS * 100, &at), 1);
    buf[170] = 0x01;
    assert_int_equal(sniff_one(buf, RECS * 100, &at), 0);
    /* past the first 64 KiB: not looked at */
    buf[150] = 'x';
    buf[170] = 'x';
    buf[70000] = '\n';
    assert_int_equal(sniff_one(buf, RECS * 100, &at), 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_good),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_open_fifo),
        cmocka_unit_test(test_read_ranges),
        cmocka_unit_test(test_pread_pwrite),
        cmocka_unit_test(test_fsync_dir),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_contains),
        cmocka_unit_test(test_map_scan_off_end),
        cmocka_unit_test(test_unsized),
        cmocka_unit_test(test_sniff_text),
    };
    return cmocka_run_group_tests(tests, dsort_test_dir_setup, dsort_test_dir_teardown);
}
