/* Unit tests for devread.h's stream tokens (issue 9, item 9), in a temp dir standing for
 * /dev/shm: the lock name carries the uid; lock files are made 0600; a held token is waited
 * for only up to the bound when its holder shows no sign of life, but as long as a holder with
 * the heartbeat keeps it; a symbolic link, a FIFO or another user's file at the lock name is
 * refused without being followed, opened for long or changed; dsort_devread_run with the
 * token hooks reads everything and marks a group that read without its turn. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "devread.h"
#include "fakesys.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    return fakesys_tmpdir(dir, sizeof dir, "devtoken");
}

static int teardown(void **state)
{
    (void)state;
    return fakesys_remove(dir);
}

static void lock_path(const char *key, unsigned slot, char *buf, size_t n)
{
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_devread_token_path(dir, key, slot, buf, n, &err), DSORT_OK);
}

/* Hold path's flock from a fresh open file description, as another process would. */
static int hold_other(const char *path)
{
    int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
    return fd;
}

static void age_file(const char *path, int seconds)
{
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= seconds;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void test_path_has_uid(void **state)
{
    (void)state;
    char p[PATH_MAX + 64], want[PATH_MAX + 64];
    lock_path("st_dev:0:42", 3, p, sizeof p);
    snprintf(want, sizeof want, "%s/.dsort-%u-device-st_dev_0_42-3.lock", dir, (unsigned)geteuid());
    assert_string_equal(p, want);
    struct dsort_error err;
    char tiny[16];
    assert_int_equal(dsort_devread_token_path(dir, "sda", 0, tiny, sizeof tiny, &err),
                     DSORT_EINVAL);
    /* The default dir: /dev/shm when writable, else /tmp; the uid is there too. */
    assert_int_equal(dsort_devread_token_path(NULL, "sda/x", 0, p, sizeof p, &err), DSORT_OK);
    snprintf(want, sizeof want, "/.dsort-%u-device-sda_x-0.lock", (unsigned)geteuid());
    assert_non_null(strstr(p, want));
}

static void test_take_mode_and_bound(void **state)
{
    (void)state;
    char p[PATH_MAX + 64];
    lock_path("vdz", 0, p, sizeof p);
    mode_t old = umask(0); /* 0600 must not depend on the umask */
    int fd = -1;
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_devread_token_take(p, 200, &fd, &err), DSORT_OK);
    umask(old);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0600);
    assert_int_equal(sb.st_uid, geteuid());
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);

    /* Held (and just touched): another taker waits the bound, then, the holder showing no
     * sign of life for the bound either (no heartbeat here), passes it. */
    int fd2 = -1;
    double t0 = dsort_clock_now();
    enum dsort_status st = dsort_devread_token_take(p, 300, &fd2, &err);
    double took = dsort_clock_now() - t0;
    assert_int_equal(st, DSORT_EINTR);
    assert_int_equal(fd2, -1);
    assert_non_null(strstr(err.msg, "no turn after"));
    assert_true(took >= 0.29 && took < 3.0);

    /* An old lock file (no heartbeat for long): passed after the bound, not before. */
    age_file(p, 3600);
    t0 = dsort_clock_now();
    assert_int_equal(dsort_devread_token_take(p, 200, &fd2, &err), DSORT_EINTR);
    took = dsort_clock_now() - t0;
    assert_true(took >= 0.19 && took < 3.0);

    /* Given back: taken at once. */
    close(fd);
    t0 = dsort_clock_now();
    assert_int_equal(dsort_devread_token_take(p, 5000, &fd2, &err), DSORT_OK);
    assert_true(dsort_clock_now() - t0 < 1.0);
    close(fd2);

    /* Our own file with loose permissions is tightened to 0600. */
    assert_int_equal(chmod(p, 0644), 0);
    assert_int_equal(dsort_devread_token_take(p, 100, &fd2, &err), DSORT_OK);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
    close(fd2);
}

static void test_env_bound(void **state)
{
    (void)state;
    char p[PATH_MAX + 64];
    lock_path("envdev", 0, p, sizeof p);
    int other = hold_other(p);
    age_file(p, 3600);
    setenv("DSORT_TOKEN_WAIT_MS", "150", 1);
    int fd = -1;
    struct dsort_error err;
    double t0 = dsort_clock_now();
    assert_int_equal(dsort_devread_token_take(p, -1, &fd, &err), DSORT_EINTR);
    double took = dsort_clock_now() - t0;
    unsetenv("DSORT_TOKEN_WAIT_MS");
    assert_true(took >= 0.14 && took < 3.0);
    close(other);
}

static void test_refuses_links_and_strangers(void **state)
{
    (void)state;
    char p[PATH_MAX + 64], target[PATH_MAX + 16], dangling[PATH_MAX + 16];
    struct dsort_error err;
    int fd = -1;

    /* A symbolic link to an existing file: refused, the file unchanged (mode, size). */
    lock_path("lnk", 0, p, sizeof p);
    snprintf(target, sizeof target, "%s/target", dir);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fputs("keep\n", f);
    fclose(f);
    assert_int_equal(chmod(target, 0644), 0);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(dsort_devread_token_take(p, 100, &fd, &err), DSORT_EIO);
    assert_int_equal(fd, -1);
    assert_non_null(strstr(err.msg, "symbolic link"));
    struct stat sb;
    assert_int_equal(stat(target, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0644);
    assert_int_equal(sb.st_size, 5);
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));

    /* A dangling symbolic link: nothing is created at its target. */
    lock_path("dangle", 0, p, sizeof p);
    snprintf(dangling, sizeof dangling, "%s/made-by-following", dir);
    assert_int_equal(symlink(dangling, p), 0);
    assert_int_equal(dsort_devread_token_take(p, 100, &fd, &err), DSORT_EIO);
    assert_int_equal(access(dangling, F_OK), -1);

    /* A FIFO: refused at once (an open without O_NONBLOCK would hang here). */
    lock_path("fifo", 0, p, sizeof p);
    assert_int_equal(mkfifo(p, 0600), 0);
    double t0 = dsort_clock_now();
    assert_int_equal(dsort_devread_token_take(p, 100, &fd, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, "not a regular file"));
    assert_true(dsort_clock_now() - t0 < 2.0);

    /* Another user's file (only root can make one here): refused, left as it is. */
    if (geteuid() == 0) {
        lock_path("stranger", 0, p, sizeof p);
        int sfd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
        assert_true(sfd >= 0);
        assert_int_equal(fchown(sfd, 4242, 4242), 0);
        close(sfd);
        assert_int_equal(dsort_devread_token_take(p, 100, &fd, &err), DSORT_EIO);
        assert_non_null(strstr(err.msg, "owned by uid 4242"));
        assert_int_equal(stat(p, &sb), 0);
        assert_int_equal(sb.st_uid, 4242);
        assert_int_equal(sb.st_mode & 07777, 0644);
    }
}

/* A holder with the heartbeat keeps its token however long it holds it. */
struct later {
    struct dsort_devread_hooks hk;
    const char *key;
    double after_s;
};

static void *give_back_later(void *arg)
{
    struct later *l = arg;
    struct timespec ts = {(time_t)l->after_s,
                          (long)((l->after_s - (double)(time_t)l->after_s) * 1e9)};
    nanosleep(&ts, NULL);
    l->hk.after(l->key, 1, l->hk.arg);
    return NULL;
}

static void test_heartbeat_keeps_turn(void **state)
{
    (void)state;
    struct dsort_devread_tokens *tok = NULL;
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_devread_tokens_create(dir, 200, NULL, NULL, &tok, &err), DSORT_OK);
    struct dsort_devread_hooks hk = dsort_devread_tokens_hooks(tok);
    assert_int_equal(hk.before("beat", hk.arg, &err), DSORT_OK);
    assert_int_equal(err.status, DSORT_OK); /* took it: no note */
    assert_string_equal(err.msg, "");

    /* The holder reads for 1.2 s, six times the bound: the waiter waits for it. */
    struct later l = {hk, "beat", 1.2};
    pthread_t tid;
    assert_int_equal(pthread_create(&tid, NULL, give_back_later, &l), 0);
    char p[PATH_MAX + 64];
    lock_path("beat", 0, p, sizeof p);
    int fd = -1;
    double t0 = dsort_clock_now();
    enum dsort_status st = dsort_devread_token_take(p, 200, &fd, &err);
    double took = dsort_clock_now() - t0;
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, DSORT_OK);
    assert_true(took >= 1.0);
    pthread_join(tid, NULL);
    close(fd);
    dsort_devread_tokens_destroy(tok);
    dsort_devread_tokens_destroy(NULL);
}

static unsigned slot_two(const char *key, void *arg)
{
    (void)key;
    (void)arg;
    return 2;
}

static void test_run_marks_no_turn(void **state)
{
    (void)state;
    char data_path[PATH_MAX + 16];
    snprintf(data_path, sizeof data_path, "%s/data", dir);
    size_t n = (3u << 20) + 17;
    unsigned char *want = malloc(n), *got = malloc(n);
    assert_true(want && got);
    for (size_t i = 0; i < n; i++)
        want[i] = (unsigned char)(i * 131u + 7u);
    FILE *f = fopen(data_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(want, 1, n, f), n);
    fclose(f);

    char held[PATH_MAX + 64], freep[PATH_MAX + 64];
    lock_path("busy", 2, held, sizeof held);
    lock_path("idle", 2, freep, sizeof freep);
    int other = hold_other(held);
    age_file(held, 3600); /* a holder without the heartbeat: stopped, or a stranger tool */

    struct dsort_devread_tokens *tok = NULL;
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_devread_tokens_create(dir, 300, slot_two, NULL, &tok, &err), DSORT_OK);
    struct dsort_devread_hooks hk = dsort_devread_tokens_hooks(tok);
    size_t half = n / 2;
    struct dsort_devread_req reqs[2] = {
        {data_path, -1, 0, half, got, "busy"},
        {data_path, -1, half, n - half, got + half, "idle"},
    };
    struct dsort_devread_stat *stats = NULL;
    size_t nstats = 0;
    double t0 = dsort_clock_now();
    enum dsort_status st = dsort_devread_run(reqs, 2, 0, &hk, &stats, &nstats, &err);
    double took = dsort_clock_now() - t0;
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, DSORT_OK);
    assert_memory_equal(got, want, n);
    assert_true(took < 5.0);
    assert_int_equal(nstats, 2);
    assert_string_equal(stats[0].key, "busy");
    assert_int_equal(stats[0].no_turn, 1);
    assert_non_null(strstr(stats[0].note, "device busy: no turn after"));
    assert_true(stats[0].wait_seconds >= 0.29);
    assert_int_equal(stats[1].no_turn, 0);
    assert_string_equal(stats[1].note, "");
    /* The free device's token was given back after its group. */
    int fd = -1;
    assert_int_equal(dsort_devread_token_take(freep, 0, &fd, &err), DSORT_OK);
    close(fd);
    struct stat sb;
    assert_int_equal(stat(freep, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
    free(stats);
    dsort_devread_tokens_destroy(tok);
    close(other);
    free(want);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_has_uid),
        cmocka_unit_test(test_take_mode_and_bound),
        cmocka_unit_test(test_env_bound),
        cmocka_unit_test(test_refuses_links_and_strangers),
        cmocka_unit_test(test_heartbeat_keeps_turn),
        cmocka_unit_test(test_run_marks_no_turn),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
