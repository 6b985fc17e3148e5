#include "io.h"

#include "cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif

enum dsort_status dsort_io_pread_full(int fd, void *buf, size_t len, uint64_t off, const char *path,
                                      struct dsort_error *err)
{
    unsigned char *p = buf;
    while (len > 0) {
        size_t want = len < DSORT_IO_MAX_REQUEST ? len : DSORT_IO_MAX_REQUEST;
        ssize_t got = pread(fd, p, want, (off_t)off);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot read '%s' at offset %" PRIu64, path,
                             off);
        }
        if (got == 0)
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "'%s': unexpected end of file at offset %" PRIu64
                             " (file changed while sorting?)",
                             path, off);
        p += got;
        off += (uint64_t)got;
        len -= (size_t)got;
    }
    return DSORT_OK;
}

enum dsort_status dsort_io_pwrite_full(int fd, const void *buf, size_t len, uint64_t off,
                                       const char *path, struct dsort_error *err)
{
    const unsigned char *p = buf;
    while (len > 0) {
        size_t want = len < DSORT_IO_MAX_REQUEST ? len : DSORT_IO_MAX_REQUEST;
        ssize_t put = pwrite(fd, p, want, (off_t)off);
        if (put < 0) {
            if (errno == EINTR)
                continue;
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot write '%s' at offset %" PRIu64, path,
                             off);
        }
        if (put == 0) /* no progress and no errno: retrying would loop forever */
            return DSORT_ERR(err, DSORT_EIO, EIO,
                             "cannot write '%s' at offset %" PRIu64 " (the write wrote nothing)",
                             path, off);
        p += put;
        off += (uint64_t)put;
        len -= (size_t)put;
    }
    return DSORT_OK;
}

int dsort_io_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len < DSORT_IO_MAX_REQUEST ? len : DSORT_IO_MAX_REQUEST);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

enum dsort_status dsort_io_fsync_dir(const char *dir, struct dsort_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot open directory '%s'", dir);
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    /* Some file systems cannot fsync a directory; that is not a failure of ours. */
    if (rc && e != EINVAL && e != EROFS)
        return DSORT_ERR(err, DSORT_EIO, e, "cannot fsync directory '%s'", dir);
    return DSORT_OK;
}

enum dsort_status dsort_io_reserve(int fd, uint64_t len, const char *name, struct dsort_error *err)
{
    if (len == 0 || fallocate(fd, 0, 0, (off_t)len) == 0)
        return DSORT_OK;
    if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL || errno == ENODEV)
        return DSORT_OK;
    return DSORT_ERR(err, DSORT_EIO, errno, "cannot reserve %" PRIu64 " bytes for '%s'", len, name);
}

enum dsort_status dsort_io_fsync_parent(const char *path, struct dsort_error *err)
{
    char *copy = strdup(path);
    if (!copy)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status st = dsort_io_fsync_dir(dirname(copy), err);
    free(copy);
    return st;
}

void dsort_inputs_destroy(struct dsort_inputs *in)
{
    if (!in)
        return;
    for (size_t i = 0; i < in->count; i++)
        free(in->files[i].path);
    free(in->files);
    memset(in, 0, sizeof *in);
}

int dsort_io_unsized(int fd, const struct stat *sb)
{
    if (!S_ISREG(sb->st_mode))
        return 0;
#ifdef __linux__
    /* The kernel's own file systems make their files' contents when read: stat shows 0 or a
     * nominal page (sysfs's 4096) whatever they hold. */
    static const unsigned long pseudo[] = {
        0x9fa0,     /* proc */
        0x62656572, /* sysfs */
        0x64626720, /* debugfs */
        0x74726163, /* tracefs */
        0x73636673, /* securityfs */
        0x62656570, /* configfs */
        0x27e0eb,   /* cgroup */
        0x63677270, /* cgroup2 */
    };
    struct statfs fs;
    if (!fstatfs(fd, &fs))
        for (size_t i = 0; i < sizeof pseudo / sizeof pseudo[0]; i++)
            if ((unsigned long)fs.f_type == pseudo[i])
                return 1;
#endif
    if (sb->st_size != 0)
        return 0;
    /* Size 0 elsewhere (FUSE, network file systems): empty only if it reads so. */
    unsigned char byte;
    ssize_t got;
    while ((got = read(fd, &byte, 1)) < 0 && errno == EINTR)
        ;
    return got > 0;
}

static enum dsort_status check_one(struct dsort_input *f, const char *path,
                                   const struct dsort_format *fmt, struct dsort_error *err)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot open '%s'", path);
    struct stat sb;
    if (fstat(fd, &sb)) {
        int e = errno;
        close(fd);
        return DSORT_ERR(err, DSORT_EIO, e, "cannot stat '%s'", path);
    }
    int unsized = dsort_io_unsized(fd, &sb);
    close(fd);
    if (S_ISDIR(sb.st_mode))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "'%s' is a directory, not an input file", path);
    /* /dev/null (the null device, 1:3, whatever its name) is an empty input, as GNU sort
     * takes it (coreutils' create-empty case: sort -o FILE /dev/null). */
    const int null_dev = S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(1, 3);
    if (!S_ISREG(sb.st_mode) && !null_dev)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "'%s' is not a regular file", path);
    uint64_t size = null_dev ? 0 : (uint64_t)sb.st_size;
    /* Records are found by the size: a file that holds other than its size says would be
     * sorted as empty or cut short. */
    if (unsized && !null_dev)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "'%s': its size (%" PRIu64 " bytes by stat) is not what it holds (a "
                         "/proc, /sys, FUSE or network file): copy it to a regular file first",
                         path, size);
    if (size % fmt->rec_size)
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "'%s': %" PRIu64 " bytes is not a whole number of %zu-byte records%s",
                         path, size, fmt->rec_size,
                         fmt->rec_size > 1 ? " (text lines? give --format lines)" : "");
    if (!(f->path = strdup(path)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    f->size = size;
    f->records = size / fmt->rec_size;
    f->dev = sb.st_dev;
    f->ino = sb.st_ino;
    f->mtime = sb.st_mtim;
    f->ctime = sb.st_ctim;
    return DSORT_OK;
}

static enum dsort_status add_input(struct dsort_inputs *in, size_t *cap, const char *path,
                                   size_t arg, const struct dsort_format *fmt,
                                   struct dsort_error *err)
{
    if (in->count == *cap) {
        size_t ncap = *cap ? 2 * *cap : 8;
        struct dsort_input *f = realloc(in->files, ncap * sizeof *f);
        if (!f)
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
        in->files = f;
        *cap = ncap;
    }
    struct dsort_input *f = &in->files[in->count];
    memset(f, 0, sizeof *f);
    enum dsort_status st = check_one(f, path, fmt, err);
    if (st)
        return st;
    f->arg = arg;
    f->first = in->total_records;
    in->total_records += f->records;
    in->count++;
    return DSORT_OK;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add a directory's part-* files in name order. */
static enum dsort_status add_dir(struct dsort_inputs *in, size_t *cap, const char *dir, size_t arg,
                                 const struct dsort_format *fmt, struct dsort_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot open directory '%s'", dir);
    char **names = NULL;
    size_t k = 0, kcap = 0;
    enum dsort_status st = DSORT_OK;
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        if (strncmp(e->d_name, "part-", 5))
            continue;
        if (k == kcap) {
            size_t nc = kcap ? 2 * kcap : 16;
            char **v = realloc(names, nc * sizeof *v);
            if (!v) {
                st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
                break;
            }
            names = v;
            kcap = nc;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[k] = malloc(len))) {
            st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
            break;
        }
        snprintf(names[k++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (!st && k) /* names is NULL when there are none: qsort's pointer may not be */
        qsort(names, k, sizeof *names, cmp_name);
    for (size_t i = 0; i < k; i++) {
        if (!st)
            st = add_input(in, cap, names[i], arg, fmt, err);
        free(names[i]);
    }
    free(names);
    return st;
}

enum dsort_status dsort_inputs_open_ex(struct dsort_inputs *in, char *const *paths, size_t n,
                                       const struct dsort_format *fmt, int flags, int *found,
                                       struct dsort_error *err)
{
    memset(in, 0, sizeof *in);
    in->rec_size = fmt->rec_size;
    size_t cap = 0;
    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < n && !st; i++) {
        struct stat sb;
        int exists = stat(paths[i], &sb) == 0;
        if (found)
            found[i] = exists;
        if (!exists && errno == ENOENT && (flags & DSORT_INPUTS_SKIP_MISSING))
            continue;
        if (exists && S_ISDIR(sb.st_mode) && (flags & DSORT_INPUTS_EXPAND_DIRS))
            st = add_dir(in, &cap, paths[i], i, fmt, err);
        else
            st = add_input(in, &cap, paths[i], i, fmt, err);
    }
    if (st)
        dsort_inputs_destroy(in);
    return st;
}

enum dsort_status dsort_inputs_open(struct dsort_inputs *in, char *const *paths, size_t n,
                                    const struct dsort_format *fmt, struct dsort_error *err)
{
    return dsort_inputs_open_ex(in, paths, n, fmt, 0, NULL, err);
}

enum dsort_status
dsort_inputs_segments(const struct dsort_inputs *in, uint64_t first, uint64_t count,
                      enum dsort_status (*fn)(void *ctx, const struct dsort_input_segment *seg),
                      void *ctx)
{
    const size_t rs = in->rec_size;
    for (size_t i = 0; i < in->count && count > 0; i++) {
        const struct dsort_input *f = &in->files[i];
        if (first >= f->first + f->records)
            continue;
        uint64_t skip = first - f->first;
        uint64_t take = f->records - skip < count ? f->records - skip : count;
        struct dsort_input_segment seg = {f, i, skip * rs, take * rs};
        enum dsort_status st = fn(ctx, &seg);
        if (st)
            return st;
        first += take;
        count -= take;
    }
    return count ? DSORT_EINTERNAL : DSORT_OK;
}

struct read_ctx {
    unsigned char *buf;
    struct dsort_error *err;
};

static enum dsort_status read_segment(void *ctx, const struct dsort_input_segment *seg)
{
    struct read_ctx *r = ctx;
    int fd = open(seg->file->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return DSORT_ERR(r->err, DSORT_EIO, errno, "cannot open '%s'", seg->file->path);
    enum dsort_status st =
        dsort_io_pread_full(fd, r->buf, (size_t)seg->length, seg->offset, seg->file->path, r->err);
    close(fd);
    r->buf += seg->length;
    return st;
}

enum dsort_status dsort_inputs_read(const struct dsort_inputs *in, uint64_t first, uint64_t count,
                                    unsigned char *buf, struct dsort_error *err)
{
    struct read_ctx r = {buf, err};
    enum dsort_status st = dsort_inputs_segments(in, first, count, read_segment, &r);
    if (st == DSORT_EINTERNAL)
        return DSORT_ERR(err, DSORT_EINTERNAL, 0, "read past the end of the inputs");
    return st;
}

enum dsort_status dsort_inputs_sniff_text(const struct dsort_inputs *in, size_t i, int *text,
                                          uint64_t *at, struct dsort_error *err)
{
    const struct dsort_input *f = &in->files[i];
    const size_t rs = in->rec_size;
    *text = 0;
    *at = 0;
    if (rs < 2 || !f->records) /* 1-byte records: any byte may be a newline */
        return DSORT_OK;
    uint64_t n = DSORT_INPUTS_SNIFF / rs ? DSORT_INPUTS_SNIFF / rs : 1;
    n = n < f->records ? n : f->records;
    unsigned char *buf = malloc((size_t)n * rs);
    if (!buf)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status st = dsort_inputs_read(in, f->first, n, buf, err);
    size_t len = (size_t)n * rs;
    /* Text holds no control bytes but blanks, line ends and ESC (gensort's binary records have
     * a NUL in each, byte 10; 100 random bytes lack them one time in 17,000), and its newlines
     * end lines, not records (gensort -a's end each record). */
    uint64_t nl = UINT64_MAX;
    for (size_t j = 0; !st && j < len; j++) {
        unsigned char b = buf[j];
        if (b < 0x20 && b != '\t' && b != '\n' && b != '\v' && b != '\f' && b != '\r' &&
            b != 0x1b) {
            nl = UINT64_MAX;
            break;
        }
        if (b == '\n' && j % rs != rs - 1 && nl == UINT64_MAX)
            nl = j;
    }
    if (nl != UINT64_MAX) {
        *text = 1;
        *at = nl;
    }
    free(buf);
    return st;
}

static enum dsort_status advise_segment(void *ctx, const struct dsort_input_segment *seg)
{
    (void)ctx;
    int fd = open(seg->file->path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        posix_fadvise(fd, (off_t)seg->offset, (off_t)seg->length, POSIX_FADV_WILLNEED);
        close(fd);
    }
    return DSORT_OK;
}

void dsort_inputs_advise(const struct dsort_inputs *in, uint64_t first, uint64_t count)
{
    dsort_inputs_segments(in, first, count, advise_segment, NULL);
}

static int same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

enum dsort_status dsort_inputs_check_unchanged(const struct dsort_inputs *in,
                                               struct dsort_error *err)
{
    for (size_t i = 0; i < in->count; i++) {
        const struct dsort_input *f = &in->files[i];
        struct stat sb;
        if (stat(f->path, &sb))
            return DSORT_ERR(err, errno == ENOENT ? DSORT_EFORMAT : DSORT_EIO, errno,
                             "'%s' changed while it was being sorted (it is gone)", f->path);
        if (sb.st_dev != f->dev || sb.st_ino != f->ino)
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "'%s' changed while it was being sorted (another file now has "
                             "its name); nothing written",
                             f->path);
        if ((uint64_t)sb.st_size != f->size)
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "'%s' changed while it was being sorted (%" PRIu64
                             " bytes when opened, %" PRIu64 " now); nothing written",
                             f->path, f->size, (uint64_t)sb.st_size);
        if (!same_time(sb.st_mtim, f->mtime) || !same_time(sb.st_ctim, f->ctime))
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "'%s' changed while it was being sorted (it was modified after "
                             "it was opened); nothing written",
                             f->path);
    }
    return DSORT_OK;
}

/* The bytes mapped for a file of len bytes: its pages and one more, wholly beyond its end. A
 * scan for a line's end that runs off the file (its last eol overwritten while it is sorted)
 * then reads that page and gets SIGBUS inside the watched mapping, which ends the job as a
 * truncation does (naming the file), where it would otherwise run into unmapped memory
 * (SIGSEGV) or into another mapping. */
static size_t map_span(size_t len)
{
    long ps = sysconf(_SC_PAGESIZE);
    const size_t page = ps > 0 ? (size_t)ps : 4096;
    return (len + page - 1) / page * page + page;
}

enum dsort_status dsort_inputs_map(struct dsort_input_map *m, const struct dsort_input *f,
                                   struct dsort_error *err)
{
    *m = (struct dsort_input_map){NULL, 0, f};
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return DSORT_ERR(err, errno == ENOENT ? DSORT_EFORMAT : DSORT_EIO, errno,
                         "cannot open '%s'", f->path);
    struct stat sb;
    enum dsort_status st = DSORT_OK;
    if (fstat(fd, &sb))
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot examine '%s'", f->path);
    else if (sb.st_dev != f->dev || sb.st_ino != f->ino || (uint64_t)sb.st_size != f->size)
        st = DSORT_ERR(err, DSORT_EFORMAT, 0,
                       "'%s' changed while it was being sorted (it is not the file that was "
                       "opened, or its size changed); nothing written",
                       f->path);
    else if (f->size > SIZE_MAX / 2)
        st = DSORT_ERR(err, DSORT_EIO, EFBIG, "cannot map '%s'", f->path);
    if (!st && f->size) {
        const size_t span = map_span((size_t)f->size);
        void *p = mmap(NULL, span, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot map '%s'", f->path);
        } else {
            m->base = p;
            m->len = (size_t)f->size;
            if ((st = dsort_cleanup_watch_map(p, span, f->path, err))) {
                munmap(p, span);
                m->base = NULL;
                m->len = 0;
            }
        }
    }
    close(fd);
    return st;
}

enum dsort_status dsort_inputs_populate(const struct dsort_input_map *m, uint64_t off, uint64_t len,
                                        struct dsort_error *err)
{
    if (!m->base || !len)
        return DSORT_OK;
    long ps = sysconf(_SC_PAGESIZE);
    const uint64_t page = ps > 0 ? (uint64_t)ps : 4096;
    uint64_t from = off / page * page, to = off + len;
    if (to > m->len)
        to = m->len;
    if (from >= to)
        return DSORT_OK;
#ifdef MADV_POPULATE_READ
    /* In pieces of 64 MiB: a signal's handler runs between them (a populate of a cold share
     * on a slow disk would otherwise hold off SIGTERM until the whole share is read). */
    const uint64_t piece = (uint64_t)64 << 20;
    int r = 0;
    for (uint64_t at = from; at < to && !r; at += piece) {
        size_t n = (size_t)(to - at < piece ? to - at : piece);
        while ((r = madvise((void *)(m->base + at), n, MADV_POPULATE_READ)) && errno == EINTR)
            ;
    }
    if (!r)
        return DSORT_OK;
    if (errno == EFAULT)
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "'%s' changed while it was being sorted (it is shorter than when it was "
                         "opened); nothing written",
                         m->file->path);
    if (errno != EINVAL) /* EINVAL: a kernel before 5.14; fault the pages in as they come */
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot read '%s'", m->file->path);
#endif
    madvise((void *)(m->base + from), (size_t)(to - from), MADV_WILLNEED);
    return DSORT_OK;
}

void dsort_inputs_unmap(struct dsort_input_map *m)
{
    if (m->base) {
        dsort_cleanup_unwatch_map(m->base);
        munmap((void *)m->base, map_span(m->len));
    }
    m->base = NULL;
    m->len = 0;
}

int dsort_inputs_contains(const struct dsort_inputs *in, const char *path)
{
    struct stat sb;
    if (stat(path, &sb))
        return 0;
    for (size_t i = 0; i < in->count; i++)
        if (in->files[i].dev == sb.st_dev && in->files[i].ino == sb.st_ino)
            return 1;
    return 0;
}

void dsort_io_split(uint64_t total, int part, int parts, uint64_t *first, uint64_t *count)
{
    /* 128-bit products: total * part must not overflow for any realistic total. */
    unsigned __int128 t = total;
    uint64_t a = (uint64_t)(t * (unsigned)part / (unsigned)parts);
    uint64_t b = (uint64_t)(t * (unsigned)(part + 1) / (unsigned)parts);
    *first = a;
    *count = b - a;
}

static int descriptor_name(const char *p)
{
    return !strcmp(p, "/dev/stdout") || !strcmp(p, "/dev/stderr") || !strcmp(p, "/dev/stdin") ||
           !strncmp(p, "/dev/fd/", 8) || (!strncmp(p, "/proc/", 6) && strstr(p + 6, "/fd/"));
}

int dsort_io_names_descriptor(const char *path)
{
    char cur[4096], link[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hop = 0; hop < 40; hop++) {
        if (descriptor_name(cur))
            return 1;
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0)
            return 0;
        link[n] = '\0';
        if (link[0] == '/') {
            snprintf(cur, sizeof cur, "%s", link);
        } else { /* relative to the link's directory */
            char *slash = strrchr(cur, '/');
            size_t dl = slash ? (size_t)(slash - cur) + 1 : 0;
            if (dl + (size_t)n >= sizeof cur)
                return 0;
            memmove(cur + dl, link, (size_t)n + 1);
        }
    }
    return 0;
}
