/* Unit tests for cleanup.h: the temp-file registry, its atexit hook and signal handlers.
 * The registry is process-wide, so every test leaves it empty (dsort_cleanup_run), and the
 * signal and exit paths run in forked children. Children report through exit codes only. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fixture.h"

static int teardown_dir(void **state)
{
    dsort_cleanup_run();
    return dsort_test_dir_teardown(state);
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(close(fd), 0);
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static void add(const char *path, int is_dir)
{
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_cleanup_add(path, is_dir, &err), DSORT_OK);
}

static void test_run_removes(void **state)
{
    (void)state;
    char d[PATH_MAX], f1[PATH_MAX], f2[PATH_MAX], keep[PATH_MAX];
    dsort_test_path(d, sizeof d, "run-dir");
    snprintf(f1, sizeof f1, "%s/inner", d);
    dsort_test_path(f2, sizeof f2, "run-file");
    dsort_test_path(keep, sizeof keep, "run-keep");
    assert_int_equal(mkdir(d, 0755), 0);
    touch(f1);
    touch(f2);
    touch(keep);
    /* The directory is registered first, but files go first, so that it is empty by then. */
    add(d, 1);
    add(f1, 0);
    add(f2, 0);
    assert_int_equal(dsort_cleanup_signal(), 0);
    dsort_cleanup_run();
    assert_false(exists(f1));
    assert_false(exists(f2));
    assert_false(exists(d));
    assert_true(exists(keep));
    /* Running again is harmless, and files made again under the old names stay: the
     * registry forgot them. */
    touch(f2);
    dsort_cleanup_run();
    assert_true(exists(f2));
    /* Registered paths that do not exist are no error. */
    char ghost[PATH_MAX];
    dsort_test_path(ghost, sizeof ghost, "never-made");
    add(ghost, 0);
    add(ghost, 1);
    dsort_cleanup_run();
}

static void test_forget(void **state)
{
    (void)state;
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
    dsort_test_path(a, sizeof a, "forget-a");
    dsort_test_path(b, sizeof b, "forget-b");
    dsort_test_path(c, sizeof c, "forget-c");
    touch(a);
    touch(b);
    touch(c);
    add(a, 0);
    add(b, 0);
    add(b, 0); /* twice: forget drops every registration */
    add(c, 0);
    dsort_cleanup_forget(b);
    dsort_cleanup_forget("/no/such/registered/path"); /* ignored */
    dsort_cleanup_run();
    assert_false(exists(a));
    assert_true(exists(b));
    assert_false(exists(c));
}

/* A series under a directory too deep for its names is refused as a path too long (the user's
 * deep -O DIR), not as a "bad cleanup series". */
static void test_series_too_deep(void **state)
{
    (void)state;
    static char deep[DSORT_CLEANUP_PATH_MAX];
    memset(deep, 'd', sizeof deep - 20);
    deep[0] = '/';
    static const volatile unsigned count = 0;
    struct dsort_error err = {0};
    assert_int_equal(dsort_cleanup_add_series(deep, "part-", 5, &count, &err), DSORT_EINVAL);
    assert_non_null(strstr(err.msg, "path too long"));
}

static void test_slots(void **state)
{
    (void)state;
    struct dsort_error err;
    char p[PATH_MAX];
    for (int i = 0; i < DSORT_CLEANUP_SLOTS; i++) {
        snprintf(p, sizeof p, "%s/slot-%d", dsort_test_dir, i);
        add(p, 0);
    }
    dsort_error_clear(&err);
    assert_int_equal(dsort_cleanup_add("/one/too/many", 0, &err), DSORT_ENOMEM);
    assert_int_equal(err.status, DSORT_ENOMEM);
    /* forgetting one frees its slot */
    snprintf(p, sizeof p, "%s/slot-%d", dsort_test_dir, 17);
    dsort_cleanup_forget(p);
    char extra[PATH_MAX];
    dsort_test_path(extra, sizeof extra, "slot-extra");
    touch(extra);
    add(extra, 0);
    dsort_cleanup_run();
    assert_false(exists(extra));
    /* all slots are free again */
    for (int i = 0; i < DSORT_CLEANUP_SLOTS; i++) {
        snprintf(p, sizeof p, "%s/slot-%d", dsort_test_dir, i);
        add(p, 0);
    }
    dsort_cleanup_run();

    /* a path that does not fit a slot */
    char *longp = malloc(DSORT_CLEANUP_PATH_MAX + 1);
    assert_non_null(longp);
    memset(longp, 'x', DSORT_CLEANUP_PATH_MAX);
    longp[DSORT_CLEANUP_PATH_MAX] = '\0';
    dsort_error_clear(&err);
    assert_int_equal(dsort_cleanup_add(longp, 0, &err), DSORT_EINVAL);
    longp[DSORT_CLEANUP_PATH_MAX - 1] = '\0'; /* the longest that fits */
    assert_int_equal(dsort_cleanup_add(longp, 0, &err), DSORT_OK);
    dsort_cleanup_forget(longp);
    free(longp);
}

/* A child that installs the handlers, registers a file and a directory, tells the parent and
 * waits for the signal. */
static pid_t spawn_waiting_child(const char *file, const char *dir)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dsort_cleanup_install();
        dsort_cleanup_install(); /* idempotent */
        struct dsort_error err;
        if (mkdir(dir, 0755) || dsort_cleanup_add(dir, 1, &err))
            _exit(10);
        int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || close(fd) || dsort_cleanup_add(file, 0, &err))
            _exit(11);
        if (write(fds[1], "r", 1) != 1)
            _exit(12);
        /* The handler must not return: if it does, say so; if no signal comes, SIGALRM. */
        alarm(20);
        pause();
        _exit(20);
    }
    close(fds[1]);
    char c;
    ssize_t r;
    while ((r = read(fds[0], &c, 1)) < 0 && errno == EINTR)
        ;
    close(fds[0]);
    if (r != 1) {
        int status;
        waitpid(pid, &status, 0);
        print_error("child failed to set up (exit %d)\n",
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        fail();
    }
    return pid;
}

static void test_signals(void **state)
{
    (void)state;
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        char d[PATH_MAX], f[PATH_MAX];
        char name[32];
        snprintf(name, sizeof name, "sig-%d", sigs[i]);
        dsort_test_path(d, sizeof d, name);
        snprintf(f, sizeof f, "%s/partial.tmp", d);
        pid_t pid = spawn_waiting_child(f, d);
        assert_true(exists(f));
        assert_int_equal(kill(pid, sigs[i]), 0);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != sigs[i])
            print_error("signal %d: child status 0x%x (signalled %d, signal %d, exit %d; exit 20 "
                        "means the handler returned)\n",
                        sigs[i], status, WIFSIGNALED(status),
                        WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sigs[i]);
        assert_false(exists(f));
        assert_false(exists(d));
    }
}

/* SIGUSR1 with no checkpoint to write (no stop or keep mode) is Slurm's time-limit warning:
 * the handler returns (the child's pause() ends: exit 20) and removes nothing. */
static void test_usr1_goes_on(void **state)
{
    (void)state;
    char d[PATH_MAX], f[PATH_MAX];
    dsort_test_path(d, sizeof d, "usr1");
    snprintf(f, sizeof f, "%s/partial.tmp", d);
    pid_t pid = spawn_waiting_child(f, d);
    /* The child may not be in pause() yet when the first one comes: send it until it ends. */
    int status = 0;
    pid_t got = 0;
    for (int i = 0; i < 1000 && got == 0; i++) {
        assert_int_equal(kill(pid, SIGUSR1), 0);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        got = waitpid(pid, &status, WNOHANG);
    }
    if (got == 0)
        got = waitpid(pid, &status, 0);
    assert_int_equal(got, pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 20);
    assert_true(exists(f));
    assert_int_equal(unlink(f), 0);
    assert_int_equal(rmdir(d), 0);
}

/* Without a handler installed, SIGTERM kills at once and nothing is removed (the handler is
 * what removes files, not some side effect). */
static void test_no_handler(void **state)
{
    (void)state;
    char f[PATH_MAX];
    dsort_test_path(f, sizeof f, "no-handler");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        signal(SIGTERM, SIG_DFL);
        struct dsort_error err;
        int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || close(fd) || dsort_cleanup_add(f, 0, &err))
            _exit(11);
        if (write(fds[1], "r", 1) != 1)
            _exit(12);
        alarm(20);
        for (;;)
            pause();
    }
    close(fds[1]);
    char c;
    assert_int_equal(read(fds[0], &c, 1), 1);
    close(fds[0]);
    assert_int_equal(kill(pid, SIGTERM), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    assert_true(exists(f));
    unlink(f);
}

/* The atexit hook removes what is still registered on a normal exit. */
static void test_atexit(void **state)
{
    (void)state;
    char gone[PATH_MAX], kept[PATH_MAX];
    dsort_test_path(gone, sizeof gone, "atexit-gone");
    dsort_test_path(kept, sizeof kept, "atexit-kept");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dsort_cleanup_install();
        struct dsort_error err;
        int fd1 = open(gone, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fd2 = open(kept, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd1 < 0 || fd2 < 0 || dsort_cleanup_add(gone, 0, &err) ||
            dsort_cleanup_add(kept, 0, &err))
            _exit(11);
        close(fd1);
        close(fd2);
        dsort_cleanup_forget(kept); /* committed */
        exit(dsort_cleanup_signal() == 0 ? 0 : 13);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_false(exists(gone));
    assert_true(exists(kept));
}

static void *stack_size_of(void *arg)
{
    pthread_attr_t a;
    size_t *size = arg;
    *size = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstacksize(&a, size);
        pthread_attr_destroy(&a);
    }
    return NULL;
}

/* KiB of address space in use (VmSize), or 0. */
static unsigned long vm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %lu", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* The helper threads get a small stack, so that they fit under a tight ulimit -v where the
 * default 8 MiB stack does not; when even that fails, the message names the limit. All in a
 * child (it lowers its own RLIMIT_AS), which starts with no stack cached by glibc. */
static void test_thread_stack(void **state)
{
    (void)state;
    pthread_t t;
    size_t size = 0;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsigned long use = vm_kib();
        /* room for a stack and half a MiB: not for glibc's default, 8 MiB (2 MiB with an
         * unlimited ulimit -s) */
        rlim_t lim = (use + DSORT_CLEANUP_THREAD_STACK / 1024 + 512) * 1024;
        struct rlimit rl = {lim, lim};
        if (!use || setrlimit(RLIMIT_AS, &rl))
            _exit(11);
        pthread_t d;
        if (pthread_create(&d, NULL, stack_size_of, &size) == 0)
            _exit(12); /* the default stack fits: the limit tests nothing */
        if (dsort_cleanup_thread_create(&t, stack_size_of, &size, "dsort-test"))
            _exit(13);
        pthread_join(t, NULL);
        if (size == 0 || size > 2 * DSORT_CLEANUP_THREAD_STACK)
            _exit(17);
        rl.rlim_cur = rl.rlim_max = (vm_kib() + 256) * 1024; /* less than a stack */
        if (setrlimit(RLIMIT_AS, &rl))
            _exit(14);
        /* glibc keeps the joined thread's stack for reuse: threads not joined need new ones */
        int rc = 0;
        static size_t sizes[64];
        for (int i = 0; i < 64 && !rc; i++)
            rc = dsort_cleanup_thread_create(&t, stack_size_of, &sizes[i], "dsort-test");
        if (rc != EAGAIN && rc != ENOMEM)
            _exit(15);
        struct dsort_error err;
        dsort_error_clear(&err);
        if (dsort_cleanup_thread_error(&err, rc, "a test thread") != DSORT_ENOMEM ||
            !strstr(err.msg, "cannot start a test thread: ") ||
            !strstr(err.msg, "ulimit -v, now ") || !strstr(err.msg, "ulimit -u") ||
            err.errnum != rc)
            _exit(16);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_removes),  cmocka_unit_test(test_forget),
        cmocka_unit_test(test_slots),        cmocka_unit_test(test_signals),
        cmocka_unit_test(test_usr1_goes_on), cmocka_unit_test(test_no_handler),
        cmocka_unit_test(test_atexit),       cmocka_unit_test(test_series_too_deep),
        cmocka_unit_test(test_thread_stack),
    };
    return cmocka_run_group_tests(tests, dsort_test_dir_setup, teardown_dir);
}
