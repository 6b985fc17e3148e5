#include "cleanup.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct slot {
    volatile sig_atomic_t used;
    int is_dir;
    char path[DSORT_CLEANUP_PATH_MAX];
    /* DSORT_CLEANUP_SERIES: path/<name><N> for N in [0, *count), N with `digits` digits */
    char name[16];
    int digits;
    const volatile unsigned *count;
};

static struct slot slots[DSORT_CLEANUP_SLOTS];
static volatile sig_atomic_t caught;
static char prefix[256];
static const char *volatile phase = "start-up";
/* SIGXCPU and SIGXFSZ are what batch systems' limits send (ulimit -t, ulimit -f): their
 * default action kills without a word and leaves every temp file behind. */
static const int handled[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ};
static volatile sig_atomic_t stop_mode, stop_requested;
/* SIGUSR1 with no checkpoint to write: whether this process says so (usr1_speaker), once */
static volatile sig_atomic_t usr1_speaker, usr1_said;
/* keep mode: the directories a signal leaves as they are (nkeep 0: none) */
static char keep[DSORT_CLEANUP_KEEP_MAX][DSORT_CLEANUP_PATH_MAX];
static volatile sig_atomic_t nkeep;
static volatile sig_atomic_t committed; /* the output is published (set_committed) */

static void block(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
        sigaddset(&set, handled[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

/* Unlink path/<name><i> for every i of a series. Async-signal-safe. */
static void unlink_series(const struct slot *s)
{
    char p[DSORT_CLEANUP_PATH_MAX + 32];
    size_t n = strlen(s->path);
    memcpy(p, s->path, n);
    p[n++] = '/';
    size_t k = strlen(s->name);
    memcpy(p + n, s->name, k);
    n += k;
    unsigned count = *s->count;
    for (unsigned i = 0; i < count; i++) {
        unsigned v = i;
        for (int d = s->digits - 1; d >= 0; d--) {
            p[n + (size_t)d] = (char)('0' + v % 10);
            v /= 10;
        }
        p[n + (size_t)s->digits] = '\0';
        unlink(p);
    }
}

/* Is path one of the kept directories or inside one? Async-signal-safe. */
static int kept(const char *path)
{
    for (sig_atomic_t k = 0; k < nkeep; k++) {
        const char *d = keep[k];
        size_t i = 0;
        while (d[i] && d[i] == path[i])
            i++;
        if (!d[i] && (!path[i] || path[i] == '/'))
            return 1;
    }
    return 0;
}

/* Remove what is registered; with keeping, not what is in the kept directories. */
static void run_cleanup(int keeping)
{
    for (size_t i = 0; i < DSORT_CLEANUP_SLOTS; i++)
        if (slots[i].used && slots[i].is_dir == DSORT_CLEANUP_SERIES &&
            !(keeping && kept(slots[i].path))) {
            unlink_series(&slots[i]);
            slots[i].used = 0;
        }
    /* Files, then marker files (so that a directory that lost its files to a SIGKILL midway
     * still says whose it was), then directories. */
    static const int order[] = {DSORT_CLEANUP_FILE, DSORT_CLEANUP_MARKER, DSORT_CLEANUP_DIR};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < DSORT_CLEANUP_SLOTS; i++) {
            if (!slots[i].used || slots[i].is_dir != order[k] || (keeping && kept(slots[i].path)))
                continue;
            if (order[k] == DSORT_CLEANUP_DIR)
                rmdir(slots[i].path);
            else
                unlink(slots[i].path);
            slots[i].used = 0;
        }
}

void dsort_cleanup_run(void)
{
    run_cleanup(0);
}

static const char *signame(int sig)
{
    switch (sig) {
    case SIGTERM:
        return "SIGTERM";
    case SIGINT:
        return "SIGINT";
    case SIGHUP:
        return "SIGHUP";
    case SIGUSR1:
        return "SIGUSR1";
    case SIGUSR2:
        return "SIGUSR2";
    case SIGXCPU:
        return "SIGXCPU";
    case SIGXFSZ:
        return "SIGXFSZ";
    }
    return "a signal";
}

/* Append s to buf (of size len, holding *n bytes), truncating. Async-signal-safe. */
static void append(char *buf, size_t len, size_t *n, const char *s)
{
    while (*s && *n + 1 < len)
        buf[(*n)++] = *s++;
}

/* Append the decimal v. Async-signal-safe. */
static void append_u64(char *buf, size_t len, size_t *n, uint64_t v)
{
    char d[24];
    size_t k = sizeof d;
    d[--k] = 0;
    do
        d[--k] = (char)('0' + v % 10);
    while ((v /= 10) && k);
    append(buf, len, n, d + k);
}

/* " (the CPU time limit, ulimit -t, was reached: 60.0 s of CPU time used)" for the limit
 * signals: which limit ended the job, since nothing else will say it. (The CPU time, not the
 * limit: Linux raises the soft limit by a second as it sends SIGXCPU.) clock_gettime is
 * async-signal-safe, getrlimit a plain system call. */
static void append_limit(char *buf, size_t len, size_t *n, int sig)
{
    struct rlimit rl;
    struct timespec ts;
    if (sig == SIGXCPU) {
        append(buf, len, n, " (the CPU time limit, ulimit -t, was reached");
        if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0) {
            uint64_t tenths = (uint64_t)ts.tv_sec * 10 + (uint64_t)ts.tv_nsec / 100000000;
            append(buf, len, n, ": ");
            append_u64(buf, len, n, tenths / 10);
            append(buf, len, n, ".");
            append_u64(buf, len, n, tenths % 10);
            append(buf, len, n, " s of CPU time used");
        }
        append(buf, len, n, ")");
    } else if (sig == SIGXFSZ) {
        append(buf, len, n, " (the file size limit, ulimit -f");
        if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
            append(buf, len, n, ", is ");
            append_u64(buf, len, n, (uint64_t)rl.rlim_cur);
            append(buf, len, n, " bytes");
        }
        append(buf, len, n, ")");
    }
}

static pthread_t main_thread; /* the thread that installed the handlers (main) */

/* SIGUSR1 is Slurm's time-limit warning (--signal=B:USR1@N): a job that has no checkpoint to
 * write (no --checkpoint, or not yet anything to keep) goes on, as it may still finish in the
 * time left; ending it would throw its work away. The speaker (rank 0) says so once, in one
 * write(2). Nothing else changes, so the ranks still agree on everything. */
static void usr1_go_on(void)
{
    if (!usr1_speaker || usr1_said || !prefix[0])
        return;
    usr1_said = 1;
    char line[512];
    size_t n = 0;
    append(line, sizeof line, &n, prefix);
    append(line, sizeof line, &n, "SIGUSR1 (the time-limit warning) in the ");
    append(line, sizeof line, &n, phase);
    append(line, sizeof line, &n,
           " phase: there is no checkpoint to write (see --checkpoint), so the sort goes on\n");
    ssize_t w = write(2, line, n);
    (void)w;
}

static void on_signal(int sig)
{
    /* Only the main thread stops the job: in another thread (one of MPI's, which do not block
     * these signals) the main thread would go on working meanwhile. Pass it on; it waits
     * there, pending, while the main thread blocks it. */
    if (!pthread_equal(pthread_self(), main_thread)) {
        int saved = errno;
        pthread_kill(main_thread, sig);
        errno = saved;
        return;
    }
    if (sig == SIGUSR1 && stop_mode) { /* a stop that keeps a checkpoint: the job's to take */
        stop_requested = 1;
        return;
    }
    int saved = errno;
    if (sig == SIGUSR1 && nkeep == 0) {
        usr1_go_on();
        errno = saved;
        return;
    }
    caught = sig;
    const int keeping = nkeep > 0 && !committed; /* a committed job has nothing to resume */
    run_cleanup(keeping);
    if (prefix[0]) {
        /* One write(2) of the whole line, so that lines of ranks sharing a terminal or a
         * pipe do not interleave; nothing else here is async-signal-safe. */
        char line[512];
        size_t n = 0;
        append(line, sizeof line, &n, prefix);
        append(line, sizeof line, &n, "stopped by ");
        append(line, sizeof line, &n, signame(sig));
        append_limit(line, sizeof line, &n, sig);
        if (committed) {
            append(line, sizeof line, &n,
                   " after the output was committed; the output is complete (temp files "
                   "removed; --stats may be missing)\n");
        } else {
            append(line, sizeof line, &n, " in the ");
            append(line, sizeof line, &n, phase);
            append(line, sizeof line, &n,
                   keeping ? " phase; the checkpoint is kept (run the same command with --resume "
                             "to finish), no output written\n"
                           : " phase; temp files removed, no output written\n");
        }
        ssize_t w = write(2, line, n);
        (void)w;
        /* mpirun SIGKILLs every rank as soon as the first one dies: give the other ranks a
         * moment to finish removing their files too (mpirun allows a second in all). */
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    errno = saved;
    /* A stop that kept its checkpoint is resumable: exit status 3 (DSORT_EXIT_STOPPED), as an
     * orderly stop. SIGINT and SIGHUP (a terminal) still end the process by the signal, so
     * that a shell running dsort stops too. */
    if (keeping &&
        (sig == SIGUSR1 || sig == SIGTERM || sig == SIGUSR2 || sig == SIGXCPU || sig == SIGXFSZ))
        _exit(3);
    if (sig == SIGXCPU || sig == SIGXFSZ) {
        /* Their default action dumps core: a limit is no crash, and a sort's core may be as
         * big as its memory. */
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* SIGXFSZ comes from the kernel to the thread whose write went past RLIMIT_FSIZE (a kill
 * from the process itself looks the same); that write then fails with EFBIG, and the error
 * path names the file and the limit (error.c), which is more than the handler could say.
 * So such a SIGXFSZ is let pass. One sent by another process stops the job as SIGTERM does. */
static void on_xfsz(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (si && si->si_code == SI_USER && si->si_pid == getpid())
        return;
    on_signal(sig);
}

static void at_exit(void)
{
    dsort_cleanup_run();
}

/* The handled signals that were ignored when the program started (before MPI_Init, which
 * may install handlers of its own: Open MPI's singleton start-up does for SIGHUP). */
static volatile sig_atomic_t ignored_at_start[sizeof handled / sizeof handled[0]];
static int remembered;

void dsort_cleanup_remember_ignored(void)
{
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++) {
        struct sigaction old;
        ignored_at_start[i] = sigaction(handled[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN;
    }
    remembered = 1;
}

void dsort_cleanup_install(void)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    main_thread = pthread_self();
    atexit(at_exit);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
        sigaddset(&sa.sa_mask, handled[i]);
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++) {
        /* A signal the user ignored (nohup, trap '' HUP) stays ignored: the handler would
         * otherwise turn it into a stop the user asked not to have. */
        struct sigaction old;
        if ((remembered && ignored_at_start[i]) ||
            (sigaction(handled[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)) {
            signal(handled[i], SIG_IGN); /* again, in case MPI_Init replaced it */
            continue;
        }
        struct sigaction x = sa;
        if (handled[i] == SIGUSR1)
            x.sa_flags = SA_RESTART; /* the job goes on after it (usr1_go_on, stop mode) */
        if (handled[i] == SIGXFSZ) {
            x.sa_flags = SA_SIGINFO;
            x.sa_sigaction = on_xfsz;
        }
        sigaction(handled[i], &x, NULL);
    }
}

int dsort_cleanup_thread_create(pthread_t *tid, void *(*fn)(void *), void *arg, const char *name)
{
    /* The new thread inherits the creator's mask: block the handled signals around the
     * create, so that only the threads that never block them (main) run the handler. */
    sigset_t old;
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc)
        return rc;
    /* The default stack is RLIMIT_STACK's soft limit (8 MiB, or unlimited: then 2 MiB+) of
     * address space a thread; under ulimit -v that alone can refuse the thread. The helper
     * threads keep a few KiB on their stacks. */
    size_t stack = DSORT_CLEANUP_THREAD_STACK;
    if (stack < (size_t)PTHREAD_STACK_MIN)
        stack = (size_t)PTHREAD_STACK_MIN;
    pthread_attr_setstacksize(&attr, stack);
    block(&old);
    rc = pthread_create(tid, &attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (!rc && name)
        pthread_setname_np(*tid, name); /* shows in /proc/PID/task/TID/comm, top -H, gdb */
    return rc;
}

enum dsort_status dsort_cleanup_thread_error(struct dsort_error *err, int rc, const char *what)
{
    if (rc != EAGAIN && rc != ENOMEM)
        return DSORT_ERR(err, DSORT_ENOMEM, rc, "cannot start %s", what);
    /* strerror(EAGAIN) says "Resource temporarily unavailable": name the limits it means. */
    char as[64] = "unlimited", np[64] = "unlimited";
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(as, sizeof as, "%llu KiB", (unsigned long long)rl.rlim_cur / 1024);
    if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(np, sizeof np, "%llu", (unsigned long long)rl.rlim_cur);
    DSORT_ERR(err, DSORT_ENOMEM, 0,
              "cannot start %s: %s (a thread needs %d KiB of address space: the likely cause is "
              "this process's address-space limit, ulimit -v, now %s, or the user's limit of "
              "processes and threads, ulimit -u, now %s)",
              what, strerror(rc), DSORT_CLEANUP_THREAD_STACK / 1024, as, np);
    if (err)
        err->errnum = rc;
    return DSORT_ENOMEM;
}

/* Fill a free slot (signals blocked meanwhile, so the handler never sees half a slot). */
static enum dsort_status add_slot(const char *path, int kind, const char *name, int digits,
                                  const volatile unsigned *count, struct dsort_error *err)
{
    sigset_t old;
    block(&old);
    enum dsort_status st = DSORT_ENOMEM;
    for (size_t i = 0; i < DSORT_CLEANUP_SLOTS; i++) {
        if (slots[i].used)
            continue;
        strcpy(slots[i].path, path);
        snprintf(slots[i].name, sizeof slots[i].name, "%s", name);
        slots[i].digits = digits;
        slots[i].count = count;
        slots[i].is_dir = kind;
        slots[i].used = 1;
        st = DSORT_OK;
        break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (st)
        return DSORT_ERR(err, st, 0, "too many temporary files registered");
    return DSORT_OK;
}

enum dsort_status dsort_cleanup_add(const char *path, int is_dir, struct dsort_error *err)
{
    if (strlen(path) >= DSORT_CLEANUP_PATH_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "path too long: '%s'", path);
    return add_slot(path, is_dir, "", 0, NULL, err);
}

enum dsort_status dsort_cleanup_add_series(const char *dir, const char *name, int digits,
                                           const volatile unsigned *count, struct dsort_error *err)
{
    /* A user's deep directory is the likely cause: say so in the user's words. */
    if (strlen(dir) >= DSORT_CLEANUP_PATH_MAX - 32)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "path too long: '%s' (%zu bytes; its temporary files need at most %d)",
                         dir, strlen(dir), DSORT_CLEANUP_PATH_MAX - 33);
    if (strlen(name) >= 16 || digits < 1 || digits > 9)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "bad cleanup series '%s/%s'", dir, name);
    return add_slot(dir, DSORT_CLEANUP_SERIES, name, digits, count, err);
}

void dsort_cleanup_forget(const char *path)
{
    sigset_t old;
    block(&old);
    for (size_t i = 0; i < DSORT_CLEANUP_SLOTS; i++)
        if (slots[i].used && !strcmp(slots[i].path, path))
            slots[i].used = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Watched mappings: base, length, the file's path. A slot is filled before `used` is set and
 * emptied by clearing `used`, so that the handler never reads half a slot. */
static struct {
    volatile sig_atomic_t used;
    const unsigned char *base;
    size_t len;
    char path[DSORT_CLEANUP_PATH_MAX];
} maps[DSORT_CLEANUP_MAPS];

static struct sigaction old_sigbus; /* the handler before ours (MPI's, a sanitizer's) */

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    /* A fault (not a kill -BUS, whose si_addr means nothing) inside a watched mapping. */
    const unsigned char *a = si->si_code > 0 ? si->si_addr : NULL;
    for (size_t i = 0; a && i < DSORT_CLEANUP_MAPS; i++) {
        if (!maps[i].used || a < maps[i].base || a >= maps[i].base + maps[i].len)
            continue;
        caught = sig;
        run_cleanup(0);
        char line[DSORT_CLEANUP_PATH_MAX + 512];
        size_t n = 0;
        append(line, sizeof line, &n, prefix[0] ? prefix : "dsort: ");
        append(line, sizeof line, &n, "'");
        append(line, sizeof line, &n, maps[i].path);
        append(line, sizeof line, &n,
               "' changed while it was being sorted (reading it through its mapping failed: it "
               "was truncated, or its disk failed); temp files removed, no output written\n");
        ssize_t w = write(2, line, n);
        (void)w;
        _exit(2);
    }
    /* Not ours: the handler before ours, or the default action (a core dump), as if we had
     * never been here. */
    if ((old_sigbus.sa_flags & SA_SIGINFO) && old_sigbus.sa_sigaction) {
        old_sigbus.sa_sigaction(sig, si, uc);
        return;
    }
    if (old_sigbus.sa_handler != SIG_DFL && old_sigbus.sa_handler != SIG_IGN &&
        old_sigbus.sa_handler) {
        old_sigbus.sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);
    if (si->si_code <= 0) /* sent: it would not come again by returning */
        raise(sig);
}

enum dsort_status dsort_cleanup_watch_map(const void *base, size_t len, const char *path,
                                          struct dsort_error *err)
{
    static int installed;
    if (strlen(path) >= DSORT_CLEANUP_PATH_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "path too long: %.64s...", path);
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask); /* the other handlers' signals wait until it is done */
        for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
            sigaddset(&sa.sa_mask, handled[i]);
        sigaction(SIGBUS, &sa, &old_sigbus);
        installed = 1;
    }
    for (size_t i = 0; i < DSORT_CLEANUP_MAPS; i++) {
        if (maps[i].used)
            continue;
        maps[i].base = base;
        maps[i].len = len;
        strcpy(maps[i].path, path);
        __atomic_store_n(&maps[i].used, 1, __ATOMIC_RELEASE);
        return DSORT_OK;
    }
    return DSORT_ERR(err, DSORT_ENOMEM, 0, "too many mapped files watched");
}

void dsort_cleanup_unwatch_map(const void *base)
{
    for (size_t i = 0; i < DSORT_CLEANUP_MAPS; i++)
        if (maps[i].used && maps[i].base == base)
            __atomic_store_n(&maps[i].used, 0, __ATOMIC_RELEASE);
}

int dsort_cleanup_signal(void)
{
    return caught;
}

void dsort_cleanup_set_prefix(const char *p)
{
    sigset_t old;
    block(&old);
    snprintf(prefix, sizeof prefix, "%s", p ? p : "");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void dsort_cleanup_set_committed(void)
{
    committed = 1;
}

void dsort_cleanup_set_phase(const char *p)
{
    phase = p;
}

void dsort_cleanup_stop_mode(int on)
{
    stop_mode = on;
}

int dsort_cleanup_stop_requested(void)
{
    return stop_requested;
}

void dsort_cleanup_usr1_speaker(int on)
{
    usr1_speaker = on;
}

enum dsort_status dsort_cleanup_keep_dirs(char *const *dirs, size_t n, struct dsort_error *err)
{
    if (n > DSORT_CLEANUP_KEEP_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "more than %d directories to keep",
                         DSORT_CLEANUP_KEEP_MAX);
    for (size_t i = 0; i < n; i++)
        if (strlen(dirs[i]) >= DSORT_CLEANUP_PATH_MAX)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "path too long: '%s'", dirs[i]);
    sigset_t old;
    block(&old);
    for (size_t i = 0; i < n; i++)
        strcpy(keep[i], dirs[i]);
    nkeep = (sig_atomic_t)n;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return DSORT_OK;
}
