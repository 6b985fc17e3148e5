/* Fault-injection shim for the fault matrix (tests/faults, issue 9). Built as a shared library
 * and loaded into dsort ranks with LD_PRELOAD (under mpiexec: `mpiexec ... env LD_PRELOAD=...
 * FAULT_...=... dsort`, so that mpiexec itself is not touched). It does two things:
 *
 * 1. I/O faults. read, write, pread, pread64, pwrite, pwrite64, readv, writev, preadv,
 *    preadv64, pwritev, pwritev64, preadv2 and pwritev2 on a descriptor whose file matches
 *    FAULT_PATH fail or fall short as FAULT_MODE says. The file of a descriptor is what
 *    /proc/self/fd/N names at the time of the call: that covers descriptors from open, openat,
 *    open64, mkstemp and dup alike, and a number reused after close is never taken for its old
 *    file. (Only calls that go through the PLT are seen: stdio's own reads and writes are not,
 *    which keeps stderr and /proc/self/io out of it.)
 *
 *      FAULT_MODE   eio     fail with EIO
 *                   enospc  fail writes with ENOSPC
 *                   short   transfer about half of what was asked (a multiple of 4 KiB on an
 *                           O_DIRECT descriptor, where a smaller count would be EINVAL; asks of
 *                           one byte or one 4 KiB page go through whole)
 *                   eintr   the first matching call and every other one after it fails with
 *                           EINTR and transfers nothing
 *      FAULT_PATH   substring of the path, or several separated by ':' (required with
 *                   FAULT_MODE)
 *      FAULT_OP     read, write or any (default any)
 *      FAULT_AFTER  faults start once this many bytes went through matching calls (default 0)
 *      FAULT_COUNT  at most this many faults per process (default: no limit)
 *      FAULT_MINLEN only calls that ask to move at least this many bytes (default 0)
 *                   flip    (reads only) the call goes through and the last byte it delivered
 *                           is flipped: silent corruption, e.g. of MPI traffic on a socket
 *      FAULT_RENAME substring: rename/renameat/renameat2 to a new name containing it fail with EIO
 *      FAULT_RENAME_STOP  N: with FAULT_RENAME, the Nth such rename does not fail but stops as
 *                   FAULT_READY says (marker "PID rename"), then goes through: a kill there
 *                   comes between writing a file and putting it in place (a checkpoint's save)
 *      FAULT_CALLOC_IN  OFF:SIZE,...: calloc called from these ranges of the executable (nm -S)
 *                   returns NULL with ENOMEM (see calloc_fails)
 *      FAULT_RANK   only in this rank (Open MPI's OMPI_COMM_WORLD_RANK, else MPICH's PMI_RANK;
 *                   a singleton is rank 0), default all
 *      FAULT_LOG    each process appends one line for each of its first 20 faults and for the
 *                   first fault on every other file and call, and its totals at exit, so that a
 * test can prove that the fault reached each file
 *
 * 2. A phase hook. dsort calls dsort_cleanup_set_phase(name) and then fopen("/proc/self/io")
 *    at the start of every phase (src/pipeline/job.c): the shim sees that fopen (or an open of it)
 *    and reads dsort's `phase` variable (its offset in the executable is passed as
 *    FAULT_PHASE_SYM, from nm).
 *      FAULT_PHASE      stop in this phase (sample, read, sort, splitters, exchange, merge,
 *                       spill, final_merge, write, commit)
 *      FAULT_PHASE_NTH  the Nth stretch of that phase (default 1; out of core each round has a
 *                       read, sort, exchange and spill stretch)
 *      FAULT_PHASE_IO   0 (default): stop at the phase's start; K: stop in the Kth read or
 *                       write of a regular file after it started (in whichever thread does it)
 *      FAULT_PHASE_SYM  offset of `phase` in the executable (hex or decimal)
 *      FAULT_READY      marker prefix: the stopping thread writes "PID PHASE" to
 *                       FAULT_READY.RANK and waits (sleeping) while that file exists, so a
 *                       test can kill the process there, signal it, or damage files and then
 *                       remove the marker to let it go on. A phase hook that cannot find
 *                       dsort's phase writes FAULT_READY.error instead.
 *      FAULT_SPIN       1: wait spinning (using CPU time) instead of sleeping, so that a CPU
 *                       time limit (RLIMIT_CPU, ulimit -t) runs out there
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINES 20  /* the first faults of a process are all logged */
#define LOG_PATHS 512 /* then the first fault on each path */
#define DIRECT_ALIGN 4096

enum mode { M_NONE, M_EIO, M_ENOSPC, M_SHORT, M_EINTR, M_FLIP };
enum op { OP_READ = 1, OP_WRITE = 2 };

static struct {
    int ready;  /* configuration read */
    int active; /* this process injects faults */
    enum mode mode;
    int ops;
    const char *path;
    unsigned long long after, count;
    size_t minlen;
    const char *log;
    int rank;
    /* phase hook */
    const char *phase;
    unsigned long nth;
    unsigned long phase_io;
    uintptr_t sym;
    const char *marker;
    int spin; /* FAULT_SPIN */
} cfg;

static unsigned long long bytes_seen, faults, calls;
static unsigned long stretches, io_after_entry;
static int in_target; /* inside the chosen stretch of the phase */
static int stopped;   /* the stop happened (once per process) */
static char last_phase[64];

typedef FILE *(*fopen_fn)(const char *, const char *);

static void *next_sym(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static unsigned long long env_ull(const char *name, unsigned long long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : dflt;
}

static void configure(void)
{
    if (__atomic_load_n(&cfg.ready, __ATOMIC_ACQUIRE))
        return;
    /* The rank from the launcher's environment: Open MPI's, else MPICH's (hydra), else 0. */
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r || !*r)
        r = getenv("PMI_RANK");
    cfg.rank = r && *r ? atoi(r) : 0;
    const char *want = getenv("FAULT_RANK");
    int mine = !want || !*want || !strcmp(want, "all") || atoi(want) == cfg.rank;
    const char *m = getenv("FAULT_MODE");
    cfg.mode = !m || !*m              ? M_NONE
               : !strcmp(m, "eio")    ? M_EIO
               : !strcmp(m, "enospc") ? M_ENOSPC
               : !strcmp(m, "short")  ? M_SHORT
               : !strcmp(m, "eintr")  ? M_EINTR
               : !strcmp(m, "flip")   ? M_FLIP
                                      : M_NONE;
    const char *o = getenv("FAULT_OP");
    cfg.ops = !o || !*o || !strcmp(o, "any") ? OP_READ | OP_WRITE
              : !strcmp(o, "read")           ? OP_READ
                                             : OP_WRITE;
    if (cfg.mode == M_ENOSPC)
        cfg.ops &= OP_WRITE;
    if (cfg.mode == M_FLIP)
        cfg.ops &= OP_READ;
    cfg.path = getenv("FAULT_PATH");
    cfg.after = env_ull("FAULT_AFTER", 0);
    cfg.count = env_ull("FAULT_COUNT", ~0ULL);
    cfg.minlen = (size_t)env_ull("FAULT_MINLEN", 0);
    cfg.log = getenv("FAULT_LOG");
    cfg.active = mine && cfg.mode != M_NONE && cfg.path && *cfg.path;
    cfg.phase = getenv("FAULT_PHASE");
    if (cfg.phase && !*cfg.phase)
        cfg.phase = NULL;
    if (!mine)
        cfg.phase = NULL;
    cfg.nth = (unsigned long)env_ull("FAULT_PHASE_NTH", 1);
    cfg.phase_io = (unsigned long)env_ull("FAULT_PHASE_IO", 0);
    cfg.sym = (uintptr_t)env_ull("FAULT_PHASE_SYM", 0);
    cfg.marker = getenv("FAULT_READY");
    cfg.spin = env_ull("FAULT_SPIN", 0) != 0;
    __atomic_store_n(&cfg.ready, 1, __ATOMIC_RELEASE);
}

/* Write a whole small file without going through our own hooks. */
static void put_file(const char *path, const char *text, int append)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path,
                          O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
    if (fd < 0)
        return;
    size_t n = strlen(text);
    while (n) {
        long w = syscall(SYS_write, fd, text, n);
        if (w <= 0)
            break;
        text += w;
        n -= (size_t)w;
    }
    syscall(SYS_close, fd);
}

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
    if (!cfg.log)
        return;
    char buf[1024];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int n = snprintf(buf, sizeof buf, "t=%lld.%09ld pid=%ld rank=%d ", (long long)now.tv_sec,
                     now.tv_nsec, (long)getpid(), cfg.rank);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    put_file(cfg.log, buf, 1);
}

static void fd_path(int fd, char *buf, size_t len)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    long n = syscall(SYS_readlinkat, AT_FDCWD, link, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
}

static int is_regular(int fd)
{
    struct stat sb;
    return fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ---- the phase hook ---- */

static uintptr_t exe_base;

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    exe_base = (uintptr_t)info->dlpi_addr;
    return 1; /* the first object is the program itself */
}

/* Read len bytes of our own memory at addr without faulting on a bad address. */
static int peek(uintptr_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)addr, len};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int read_phase(char *out, size_t len)
{
    if (!exe_base)
        dl_iterate_phdr(first_object, NULL);
    uintptr_t p = 0;
    if (!cfg.sym || peek(exe_base + cfg.sym, &p, sizeof p) || !p)
        return -1;
    memset(out, 0, len);
    for (size_t i = 0; i + 1 < len; i++) {
        if (peek(p + i, out + i, 1))
            return -1;
        if (!out[i])
            return 0;
    }
    return -1;
}

static int known_phase(const char *p)
{
    static const char *const names[] = {"start-up",    "sample",   "read",  "sort",
                                        "splitters",   "exchange", "merge", "spill",
                                        "final_merge", "write",    "commit"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(p, names[i]))
            return 1;
    return 0;
}

/* Stop the calling thread until the test removes the marker. The marker names the phase that
 * dsort's main thread is in now (for a stop in I/O, perhaps another thread's). */
static void stop_here(const char *target)
{
    if (__atomic_exchange_n(&stopped, 1, __ATOMIC_ACQ_REL))
        return;
    char now[64];
    const char *phase = read_phase(now, sizeof now) ? target : now;
    char path[4096], text[128];
    snprintf(path, sizeof path, "%s.%d", cfg.marker ? cfg.marker : "/tmp/fault-ready", cfg.rank);
    snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), phase);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    put_file(tmp, text, 0);
    rename(tmp, path);
    log_line("stopped in phase %s\n", phase);
    struct timespec ts = {0, 5 * 1000 * 1000};
    struct stat sb;
    while (stat(path, &sb) == 0)
        if (cfg.spin) {
            for (volatile unsigned long i = 0; i < 10000000; i++)
                ;
        } else {
            nanosleep(&ts, NULL);
        }
}

static void phase_hook(void)
{
    char now[64];
    if (read_phase(now, sizeof now) || !known_phase(now)) {
        char path[4096];
        snprintf(path, sizeof path, "%s.error", cfg.marker ? cfg.marker : "/tmp/fault-ready");
        put_file(path, "FAULT_PHASE_SYM does not point at dsort's phase variable\n", 0);
        cfg.phase = NULL;
        return;
    }
    if (!strcmp(now, last_phase))
        return; /* the end of the stretch, or the same phase begun again at once */
    snprintf(last_phase, sizeof last_phase, "%s", now);
    __atomic_store_n(&in_target, 0, __ATOMIC_RELEASE);
    if (strcmp(now, cfg.phase))
        return;
    if (++stretches != cfg.nth)
        return;
    if (cfg.phase_io == 0)
        stop_here(now);
    else
        __atomic_store_n(&in_target, 1, __ATOMIC_RELEASE);
}

static void phase_io_hook(int fd)
{
    if (!__atomic_load_n(&in_target, __ATOMIC_ACQUIRE) || !is_regular(fd))
        return;
    if (__atomic_add_fetch(&io_after_entry, 1, __ATOMIC_ACQ_REL) == cfg.phase_io)
        stop_here(cfg.phase);
}

static FILE *hooked_fopen(const char *sym, const char *path, const char *mode)
{
    static fopen_fn real[2];
    int k = !strcmp(sym, "fopen64");
    if (!real[k])
        real[k] = (fopen_fn)next_sym(sym);
    configure();
    if (cfg.phase && path && !strcmp(path, "/proc/self/io"))
        phase_hook();
    return real[k](path, mode);
}

/* The same seen through open(2), should dsort read its I/O counters that way one day. */
static void open_seen(const char *path)
{
    configure();
    if (cfg.phase && path && !strcmp(path, "/proc/self/io"))
        phase_hook();
}

/* open's third argument, present only when the flags create a file. */
#define OPEN_MODE(flags, mode)                                                                     \
    do {                                                                                           \
        if ((flags) & (O_CREAT | O_TMPFILE)) {                                                     \
            va_list ap;                                                                            \
            va_start(ap, flags);                                                                   \
            mode = (mode_t)va_arg(ap, int);                                                        \
            va_end(ap);                                                                            \
        }                                                                                          \
    } while (0)

#define OPEN(name)                                                                                 \
    int name(const char *path, int flags, ...)                                                     \
    {                                                                                              \
        static int (*real)(const char *, int, ...);                                                \
        if (!real)                                                                                 \
            real = (int (*)(const char *, int, ...))next_sym(#name);                               \
        mode_t mode = 0;                                                                           \
        OPEN_MODE(flags, mode);                                                                    \
        open_seen(path);                                                                           \
        return real(path, flags, mode);                                                            \
    }

#define OPENAT(name)                                                                               \
    int name(int dirfd, const char *path, int flags, ...)                                          \
    {                                                                                              \
        static int (*real)(int, const char *, int, ...);                                           \
        if (!real)                                                                                 \
            real = (int (*)(int, const char *, int, ...))next_sym(#name);                          \
        mode_t mode = 0;                                                                           \
        OPEN_MODE(flags, mode);                                                                    \
        open_seen(path);                                                                           \
        return real(dirfd, path, flags, mode);                                                     \
    }

OPEN(open)
OPEN(open64)
OPENAT(openat)
OPENAT(openat64)

FILE *fopen(const char *path, const char *mode)
{
    return hooked_fopen("fopen", path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
    return hooked_fopen("fopen64", path, mode);
}

/* ---- I/O faults ---- */

/* Does path contain one of the ':'-separated substrings of FAULT_PATH? */
static int path_matches(const char *path)
{
    const char *p = cfg.path;
    while (*p) {
        size_t n = strcspn(p, ":");
        if (n && memmem(path, strlen(path), p, n))
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

/* Is this the first fault on this path through this function? (Each is logged once, so that a
 * test can check that the fault reached each kind of file, in reads and in writes.) */
static int first_fault_on(const char *path, const char *fn)
{
    static uint64_t seen[LOG_PATHS];
    static unsigned nseen;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = path; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    for (const char *c = fn; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    int first = 1;
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < nseen && first; i++)
        first = seen[i] != h;
    if (first && nseen < LOG_PATHS)
        seen[nseen++] = h;
    else if (first)
        first = 0;
    pthread_mutex_unlock(&mu);
    return first;
}

static __thread int flip_pending; /* M_FLIP chose this thread's current read */

/* What to do with a call of len bytes: 0 go through with *len, -1 fail with *err. */
static int decide(int fd, int op, size_t *len, int *err, const char *fn)
{
    configure();
    if (cfg.phase && cfg.phase_io)
        phase_io_hook(fd);
    if (!cfg.active || !(cfg.ops & op))
        return 0;
    char path[4096];
    fd_path(fd, path, sizeof path);
    if (!path_matches(path))
        return 0;
    if (*len < cfg.minlen) /* FAULT_MINLEN: only calls that move this many bytes or more */
        return 0;
    unsigned long long c = __atomic_add_fetch(&calls, 1, __ATOMIC_ACQ_REL);
    if (__atomic_load_n(&bytes_seen, __ATOMIC_ACQUIRE) < cfg.after)
        return 0;
    if (__atomic_load_n(&faults, __ATOMIC_ACQUIRE) >= cfg.count)
        return 0;
    size_t want = *len;
    switch (cfg.mode) {
    case M_EIO:
        *err = EIO;
        break;
    case M_ENOSPC:
        *err = ENOSPC;
        break;
    case M_EINTR:
        if (c % 2 == 0)
            return 0; /* calls 1, 3, 5...: EINTR; their retries go through */
        *err = EINTR;
        break;
    case M_SHORT: {
        int direct = (fcntl(fd, F_GETFL) & O_DIRECT) != 0;
        size_t half = want / 2;
        if (direct)
            half = half / DIRECT_ALIGN * DIRECT_ALIGN;
        if (half == 0)
            return 0;
        *len = half;
        break;
    }
    case M_FLIP:
        flip_pending = 1; /* the call goes through; its last byte is flipped afterwards */
        break;
    case M_NONE:
        return 0;
    }
    unsigned long long n = __atomic_add_fetch(&faults, 1, __ATOMIC_ACQ_REL);
    if (n <= LOG_LINES || first_fault_on(path, fn))
        log_line("fault %s %s(%s, %zu bytes) -> %s\n",
                 cfg.mode == M_SHORT  ? "short"
                 : cfg.mode == M_FLIP ? "flip"
                                      : strerror(*err),
                 fn, path, want,
                 cfg.mode == M_SHORT  ? "fewer bytes"
                 : cfg.mode == M_FLIP ? "its last byte flipped"
                                      : "-1");
    return cfg.mode == M_SHORT || cfg.mode == M_FLIP ? 0 : -1;
}

/* M_FLIP: flip the last byte a read delivered (into buf, or across iov). */
static ssize_t flip_buf(ssize_t got, const void *buf)
{
    if (flip_pending && got > 0)
        ((unsigned char *)(uintptr_t)buf)[got - 1] ^= 0x5a;
    flip_pending = 0;
    return got;
}

static ssize_t flip_iov(ssize_t got, const struct iovec *iov, int cnt)
{
    if (flip_pending && got > 0) {
        size_t at = (size_t)got - 1;
        for (int i = 0; i < cnt; i++) {
            if (at < iov[i].iov_len) {
                ((unsigned char *)iov[i].iov_base)[at] ^= 0x5a;
                break;
            }
            at -= iov[i].iov_len;
        }
    }
    flip_pending = 0;
    return got;
}

static ssize_t account(ssize_t got)
{
    if (got > 0 && cfg.active)
        __atomic_add_fetch(&bytes_seen, (unsigned long long)got, __ATOMIC_ACQ_REL);
    return got;
}

/* The next definition of name (libc's), typed as libc declares it. */
#define REAL(name)                                                                                 \
    static __typeof__(&name) real_##name;                                                          \
    if (!real_##name)                                                                              \
    real_##name = (__typeof__(&name))next_sym(#name)

#define PLAIN(name, op, bufq)                                                                      \
    ssize_t name(int fd, bufq void *buf, size_t len)                                               \
    {                                                                                              \
        REAL(name);                                                                                \
        int err = 0;                                                                               \
        if (decide(fd, op, &len, &err, #name))                                                     \
            return errno = err, -1;                                                                \
        return flip_buf(account(real_##name(fd, buf, len)), buf);                                  \
    }

#define POS(name, op, bufq, offt)                                                                  \
    ssize_t name(int fd, bufq void *buf, size_t len, offt off)                                     \
    {                                                                                              \
        REAL(name);                                                                                \
        int err = 0;                                                                               \
        if (decide(fd, op, &len, &err, #name))                                                     \
            return errno = err, -1;                                                                \
        return flip_buf(account(real_##name(fd, buf, len, off)), buf);                             \
    }

/* Vectored calls: a short transfer is cut to the first buffer (or half of a single one). */
static int vec_decide(int fd, int op, const struct iovec *iov, int *cnt, struct iovec *one,
                      int *err, const char *fn)
{
    size_t total = 0;
    for (int i = 0; i < *cnt; i++)
        total += iov[i].iov_len;
    size_t len = total;
    if (decide(fd, op, &len, err, fn))
        return -1;
    if (len<total && * cnt> 0) {
        *one = iov[0];
        if (one->iov_len > len)
            one->iov_len = len;
        *cnt = 1;
        return 1;
    }
    return 0;
}

#define VEC(name, op)                                                                              \
    ssize_t name(int fd, const struct iovec *iov, int cnt)                                         \
    {                                                                                              \
        REAL(name);                                                                                \
        int err = 0;                                                                               \
        struct iovec one;                                                                          \
        int r = vec_decide(fd, op, iov, &cnt, &one, &err, #name);                                  \
        if (r < 0)                                                                                 \
            return errno = err, -1;                                                                \
        return flip_iov(account(real_##name(fd, r ? &one : iov, cnt)), r ? &one : iov, cnt);       \
    }

#define PVEC(name, op, offt)                                                                       \
    ssize_t name(int fd, const struct iovec *iov, int cnt, offt off)                               \
    {                                                                                              \
        REAL(name);                                                                                \
        int err = 0;                                                                               \
        struct iovec one;                                                                          \
        int r = vec_decide(fd, op, iov, &cnt, &one, &err, #name);                                  \
        if (r < 0)                                                                                 \
            return errno = err, -1;                                                                \
        return flip_iov(account(real_##name(fd, r ? &one : iov, cnt, off)), r ? &one : iov, cnt);  \
    }

#define PVEC2(name, op)                                                                            \
    ssize_t name(int fd, const struct iovec *iov, int cnt, off_t off, int flags)                   \
    {                                                                                              \
        REAL(name);                                                                                \
        int err = 0;                                                                               \
        struct iovec one;                                                                          \
        int r = vec_decide(fd, op, iov, &cnt, &one, &err, #name);                                  \
        if (r < 0)                                                                                 \
            return errno = err, -1;                                                                \
        return flip_iov(account(real_##name(fd, r ? &one : iov, cnt, off, flags)), r ? &one : iov, \
                        cnt);                                                                      \
    }

#define NOQ
PLAIN(read, OP_READ, NOQ)
PLAIN(write, OP_WRITE, const)
POS(pread, OP_READ, NOQ, off_t)
POS(pread64, OP_READ, NOQ, off64_t)
POS(pwrite, OP_WRITE, const, off_t)
POS(pwrite64, OP_WRITE, const, off64_t)
VEC(readv, OP_READ)
VEC(writev, OP_WRITE)
PVEC(preadv, OP_READ, off_t)
PVEC(preadv64, OP_READ, off64_t)
PVEC(pwritev, OP_WRITE, off_t)
PVEC(pwritev64, OP_WRITE, off64_t)
PVEC2(preadv2, OP_READ)
PVEC2(pwritev2, OP_WRITE)

/* ---- rename faults ----
 * FAULT_RENAME=SUBSTRING: rename/renameat/renameat2 whose new name contains SUBSTRING fail with
 * EIO (in FAULT_RANK only, FAULT_COUNT times at most; independent of FAULT_MODE), or with
 * FAULT_RENAME_STOP=N the Nth of them stops (stop_here) and then goes through. */
static int rename_fails(const char *newpath)
{
    configure();
    const char *want = getenv("FAULT_RENAME");
    const char *rk = getenv("FAULT_RANK");
    if (!want || !*want || !newpath || !strstr(newpath, want))
        return 0;
    if (rk && *rk && strcmp(rk, "all") && atoi(rk) != cfg.rank)
        return 0;
    static unsigned long long n;
    const unsigned long long nth = __atomic_add_fetch(&n, 1, __ATOMIC_ACQ_REL);
    const unsigned long long stop = env_ull("FAULT_RENAME_STOP", 0);
    if (stop) { /* stop before the stop'th such rename, then let it go through */
        if (nth == stop)
            stop_here("rename");
        return 0;
    }
    if (nth > cfg.count)
        return 0;
    log_line("fault EIO rename(-> %s) -> -1\n", newpath);
    return 1;
}

int rename(const char *from, const char *to)
{
    static int (*real)(const char *, const char *);
    if (!real)
        real = (int (*)(const char *, const char *))next_sym("rename");
    if (rename_fails(to))
        return errno = EIO, -1;
    return real(from, to);
}

int renameat(int fd1, const char *from, int fd2, const char *to)
{
    static int (*real)(int, const char *, int, const char *);
    if (!real)
        real = (int (*)(int, const char *, int, const char *))next_sym("renameat");
    if (rename_fails(to))
        return errno = EIO, -1;
    return real(fd1, from, fd2, to);
}

/* The commit of -o (src/replace.c) renames with renameat2's flags. */
int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned int flags)
{
    static int (*real)(int, const char *, int, const char *, unsigned int);
    if (!real)
        real = (int (*)(int, const char *, int, const char *, unsigned int))next_sym("renameat2");
    if (rename_fails(to))
        return errno = EIO, -1;
    return real(fd1, from, fd2, to, flags);
}

/* ---- allocation faults ----
 * FAULT_CALLOC_IN=OFF:SIZE[,OFF:SIZE...]: calloc called from code in one of these ranges of the
 * executable (offsets and sizes of functions, from nm -S) returns NULL with ENOMEM (in
 * FAULT_RANK only, FAULT_COUNT times at most; independent of FAULT_MODE). A function that may
 * be inlined is given with the functions it may be inlined into. */
static int calloc_fails(uintptr_t from)
{
    const char *in = getenv("FAULT_CALLOC_IN");
    const char *rk = getenv("FAULT_RANK");
    if (!in || !*in)
        return 0;
    configure();
    if (rk && *rk && strcmp(rk, "all") && atoi(rk) != cfg.rank)
        return 0;
    if (!exe_base)
        dl_iterate_phdr(first_object, NULL);
    int hit = 0;
    for (const char *p = in; *p && !hit;) {
        char *end;
        unsigned long long off = strtoull(p, &end, 0), size = 0;
        if (*end == ':')
            size = strtoull(end + 1, &end, 0);
        hit = from >= exe_base + off && from < exe_base + off + size;
        p = *end == ',' ? end + 1 : end + strlen(end);
    }
    static unsigned long long n;
    if (!hit || __atomic_add_fetch(&n, 1, __ATOMIC_ACQ_REL) > cfg.count)
        return 0;
    log_line("fault ENOMEM calloc from exe+0x%llx -> NULL\n",
             (unsigned long long)(from - exe_base));
    return 1;
}

void *calloc(size_t nmemb, size_t size)
{
    static void *(*real)(size_t, size_t);
    static __thread int resolving; /* dlsym may allocate: it gets nothing, not a loop */
    if (!real) {
        if (resolving)
            return errno = ENOMEM, NULL;
        resolving = 1;
        real = (void *(*)(size_t, size_t))next_sym("calloc");
        resolving = 0;
    }
    if (calloc_fails((uintptr_t)__builtin_return_address(0)))
        return errno = ENOMEM, NULL;
    return real(nmemb, size);
}

__attribute__((destructor)) static void report(void)
{
    if (cfg.active && cfg.log)
        log_line("total faults=%llu matching calls=%llu bytes=%llu\n", faults, calls, bytes_seen);
}
