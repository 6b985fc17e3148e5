/* Unit tests for owner.h and the sweepers of tempdir.h (issue 9, items 2 and 12): a temp
 * directory or output temp is removed only when it is a real directory (regular file) of our
 * uid, never through a symlink, and its owner is provably dead (same host, boot and pid
 * namespace; pid gone or reused). Each test works in a fresh directory under $TMPDIR. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "owner.h"
#include "tempdir.h"

static char base[PATH_MAX]; /* the -T directory swept: dsort_test_dir/T */

static int setup(void **state)
{
    if (dsort_test_dir_setup(state) != 0)
        return -1;
    dsort_test_path(base, sizeof base, "T");
    return mkdir(base, 0755);
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    assert_int_equal(close(fd), 0);
}

static void join(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* A pid that provably does not exist now: a child that exited and was reaped. */
static long dead_pid(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return (long)pid;
}

static struct dsort_owner self(void)
{
    struct dsort_owner o;
    struct dsort_error err;
    assert_int_equal(dsort_owner_self(&o, &err), DSORT_OK);
    return o;
}

/* Our owner description with a dead pid (same host, boot, namespace). */
static struct dsort_owner dead_owner(void)
{
    struct dsort_owner o = self();
    o.pid = dead_pid();
    return o;
}

/* The host part of a job name, as dsort_tempdirs_job_name writes it. */
static void job_host(char *buf, size_t len)
{
    char h[128] = "host";
    gethostname(h, sizeof h - 1);
    for (char *p = h; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
    snprintf(buf, len, "%s", h);
}

/* Make dir with exactly `mode`, holding run-000000, run-000001 and, unless owner_text is
 * NULL, an owner file with that text. */
static void make_job_dir(const char *dir, mode_t mode, const char *owner_text)
{
    char p[PATH_MAX + 32];
    assert_int_equal(mkdir(dir, 0700), 0);
    join(p, sizeof p, dir, "run-000000");
    write_file(p, "records");
    join(p, sizeof p, dir, "run-000001");
    write_file(p, "records");
    if (owner_text) {
        join(p, sizeof p, dir, "owner");
        write_file(p, owner_text);
    }
    assert_int_equal(chmod(dir, mode), 0);
}

static void owner_text(const struct dsort_owner *o, char *buf, size_t len)
{
    assert_true(dsort_owner_format(o, buf, len) < len);
}

/* A job directory named dsort-HOST-PID-r0 in base for owner o (NULL: no owner file). */
static void job_dir(char *dir, size_t len, mode_t mode, const struct dsort_owner *o)
{
    char host[128], text[DSORT_OWNER_TEXT_MAX];
    job_host(host, sizeof host);
    snprintf(dir, len, "%s/dsort-%s-%ld-r0", base, host, o ? o->pid : dead_pid());
    if (o)
        owner_text(o, text, sizeof text);
    make_job_dir(dir, mode, o ? text : NULL);
}

static void sweep(struct dsort_sweep_report *rep)
{
    char *bases[] = {base};
    dsort_tempdirs_sweep(bases, 1, DSORT_CHECKPOINT_KEEP, rep);
}

static void assert_runs_left(const char *dir)
{
    char p[PATH_MAX + 32];
    join(p, sizeof p, dir, "run-000000");
    assert_true(exists(p));
    join(p, sizeof p, dir, "run-000001");
    assert_true(exists(p));
}

static void test_owner_text(void **state)
{
    (void)state;
    struct dsort_owner me = self(), back;
    assert_true(me.boot_id[0] && me.pidns && me.start);
    assert_int_equal(me.pid, (long)getpid());
    char text[DSORT_OWNER_TEXT_MAX];
    owner_text(&me, text, sizeof text);
    assert_non_null(strchr(text, '\n'));
    assert_int_equal(dsort_owner_parse(text, &back, NULL), DSORT_OK);
    assert_string_equal(back.host, me.host);
    assert_string_equal(back.boot_id, me.boot_id);
    assert_true(back.pidns == me.pidns && back.pid == me.pid && back.start == me.start);
    assert_int_equal(dsort_owner_judge(&me), DSORT_OWNER_ALIVE);

    struct dsort_error err;
    assert_int_equal(dsort_owner_parse("node07 1234\n", &back, &err), DSORT_EFORMAT);
    assert_int_equal(dsort_owner_parse("", &back, NULL), DSORT_EFORMAT);
    text[strlen(text) - 1] = 'x'; /* trailing junk */
    assert_int_equal(dsort_owner_parse(text, &back, NULL), DSORT_EFORMAT);
    assert_int_equal(
        dsort_owner_parse("dsort-owner/1 host=h boot=b pidns=1 pid=0 start=1", &back, NULL),
        DSORT_EFORMAT);
}

static void test_owner_judge(void **state)
{
    (void)state;
    struct dsort_owner o = dead_owner();
    assert_int_equal(dsort_owner_judge(&o), DSORT_OWNER_DEAD);
    o = self();
    o.start++; /* our pid, reused by someone else */
    assert_int_equal(dsort_owner_judge(&o), DSORT_OWNER_DEAD);
    o = self();
    o.pid = 1; /* alive, but started at boot: not at our start time */
    assert_int_equal(dsort_owner_judge(&o), DSORT_OWNER_DEAD);
    o = dead_owner();
    o.boot_id[0] = o.boot_id[0] == '0' ? '1' : '0';
    assert_int_equal(dsort_owner_judge(&o), DSORT_OWNER_UNKNOWN);
    o = dead_owner();
    o.pidns++;
    assert_int_equal(dsort_owner_judge(&o), DSORT_OWNER_UNKNOWN);
    o = dead_owner();
    snprintf(o.host, sizeof o.host, "elsewhere.example");
    assert_int_equal(dsort_owner_judge(&o), DSORT_OWNER_UNKNOWN);
    o = dead_owner();
    o.boot_id[0] = '\0'; /* an incomplete description */
    assert_int_equal(dsort_owner_judge(&o), DSORT_OWNER_UNKNOWN);
}

/* The reproduced bug: a symlink named like a dead job's directory, with no owner file,
 * pointing at a directory whose run files must survive; the same pointing at a directory
 * whose owner file names a dead owner. */
static void test_symlink_not_followed(void **state)
{
    (void)state;
    char v1[PATH_MAX], v2[PATH_MAX], l1[PATH_MAX + 64], l2[PATH_MAX + 64], host[128];
    char text[DSORT_OWNER_TEXT_MAX], p[PATH_MAX + 32];
    job_host(host, sizeof host);
    join(v1, sizeof v1, dsort_test_dir, "victim1");
    make_job_dir(v1, 0700, NULL);
    join(v2, sizeof v2, dsort_test_dir, "victim2");
    struct dsort_owner o = dead_owner();
    owner_text(&o, text, sizeof text);
    make_job_dir(v2, 0700, text);
    snprintf(l1, sizeof l1, "%s/dsort-%s-%ld-r0", base, host, dead_pid());
    assert_int_equal(symlink(v1, l1), 0);
    snprintf(l2, sizeof l2, "%s/dsort-%s-%ld-r1", base, host, o.pid);
    assert_int_equal(symlink(v2, l2), 0);
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_runs_left(v1);
    assert_runs_left(v2);
    join(p, sizeof p, v2, "owner");
    assert_true(exists(p));
    assert_true(exists(l1) && exists(l2));
    assert_int_equal(rep.removed, 0);
    assert_int_equal(rep.unsafe, 2);
}

static void test_dead_removed(void **state)
{
    (void)state;
    char a[PATH_MAX], b[PATH_MAX];
    struct dsort_owner o = dead_owner();
    job_dir(a, sizeof a, 0700, &o);
    /* A live pid that is not the process that made the directory (pid reused). */
    o = self();
    o.start += 1000;
    snprintf(b, sizeof b, "%s/dsort-slurm7.0-x-%ld-r3", base, o.pid);
    char text[DSORT_OWNER_TEXT_MAX];
    owner_text(&o, text, sizeof text);
    make_job_dir(b, 0700, text);
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_false(exists(a));
    assert_false(exists(b));
    assert_int_equal(rep.removed, 2);
    assert_int_equal(rep.alive + rep.foreign + rep.unknown + rep.unsafe, 0);
}

static void test_alive_kept(void **state)
{
    (void)state;
    char a[PATH_MAX];
    struct dsort_owner o = self();
    job_dir(a, sizeof a, 0700, &o);
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_runs_left(a);
    assert_int_equal(rep.alive, 1);
    assert_int_equal(rep.removed, 0);
}

/* Another boot, another pid namespace (a container sharing /tmp and the host name), another
 * host: the pid means nothing here. */
static void test_elsewhere_kept(void **state)
{
    (void)state;
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
    struct dsort_owner o = dead_owner();
    o.boot_id[0] = o.boot_id[0] == 'f' ? 'e' : 'f';
    job_dir(a, sizeof a, 0700, &o);
    o = dead_owner();
    o.pidns ^= 1;
    job_dir(b, sizeof b, 0700, &o);
    o = dead_owner();
    snprintf(o.host, sizeof o.host, "elsewhere.example");
    snprintf(c, sizeof c, "%s/dsort-elsewhere.example-%ld-r1", base, o.pid);
    char text[DSORT_OWNER_TEXT_MAX];
    owner_text(&o, text, sizeof text);
    make_job_dir(c, 0700, text);
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_runs_left(a);
    assert_runs_left(b);
    assert_runs_left(c);
    assert_int_equal(rep.removed, 0);
    assert_int_equal(rep.unknown, 2);
    assert_int_equal(rep.foreign, 1);
}

/* Not 0700, or not ours: left alone whoever the owner, with an owner file or without. */
static void test_wrong_mode_kept(void **state)
{
    (void)state;
    char a[PATH_MAX], b[PATH_MAX];
    struct dsort_owner o = dead_owner();
    job_dir(a, sizeof a, 0755, &o);
    job_dir(b, sizeof b, 0755, NULL);
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_runs_left(a);
    assert_runs_left(b);
    assert_int_equal(rep.removed, 0);
    assert_int_equal(rep.unsafe, 2);
}

static void test_other_uid_kept(void **state)
{
    (void)state;
    char a[PATH_MAX], b[PATH_MAX];
    struct dsort_owner o = dead_owner();
    job_dir(a, sizeof a, 0700, &o);
    job_dir(b, sizeof b, 0700, NULL);
    if (chown(a, 65534, 65534) || chown(b, 65534, 65534)) {
        skip(); /* not root */
        return;
    }
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_runs_left(a);
    assert_runs_left(b);
    assert_int_equal(rep.removed, 0);
    assert_int_equal(rep.unsafe, 2);
}

static void test_old_format_kept(void **state)
{
    (void)state;
    char a[PATH_MAX], host[128], text[256];
    job_host(host, sizeof host);
    long pid = dead_pid();
    snprintf(a, sizeof a, "%s/dsort-%s-%ld-r0", base, host, pid);
    snprintf(text, sizeof text, "%s %ld\n", host, pid);
    make_job_dir(a, 0700, text);
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_runs_left(a);
    assert_int_equal(rep.removed, 0);
    assert_int_equal(rep.unknown, 1);
}

/* No owner file: nothing inside is removed; an empty directory of a dead pid here goes. */
static void test_no_owner(void **state)
{
    (void)state;
    char a[PATH_MAX], b[PATH_MAX], host[128];
    job_dir(a, sizeof a, 0700, NULL);
    job_host(host, sizeof host);
    snprintf(b, sizeof b, "%s/dsort-%s-%ld-r1", base, host, dead_pid());
    assert_int_equal(mkdir(b, 0700), 0);
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_runs_left(a);
    assert_false(exists(b));
    assert_int_equal(rep.removed, 1);
    assert_int_equal(rep.unknown, 1);
}

/* What dsort_tempdirs_create makes is judged alive, and swept once its owner is gone. */
static void test_create(void **state)
{
    (void)state;
    struct dsort_tempdirs t;
    struct dsort_error err;
    char *bases[] = {base};
    assert_int_equal(dsort_tempdirs_create(&t, bases, 1, "job-1", 0, &err), DSORT_OK);
    struct stat sb;
    assert_int_equal(stat(t.dirs[0], &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0700);
    char p[PATH_MAX + 32];
    join(p, sizeof p, t.dirs[0], "owner");
    assert_int_equal(lstat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
    struct dsort_sweep_report rep;
    sweep(&rep);
    assert_int_equal(rep.alive, 1);
    assert_true(exists(t.dirs[0]));
    dsort_tempdirs_destroy(&t);

    /* The same, made by a child that is then killed without cleaning up. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct dsort_tempdirs c;
        if (dsort_tempdirs_create(&c, bases, 1, "job-2", 0, NULL))
            _exit(1);
        char run[PATH_MAX];
        dsort_tempdirs_run_path(&c, run, sizeof run);
        int fd = open(run, O_WRONLY | O_CREAT | O_EXCL, 0600);
        _exit(fd < 0 ? 1 : 0); /* _exit: no atexit hook, nothing cleaned */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sweep(&rep);
    assert_int_equal(rep.removed, 1);
    assert_int_equal(rep.alive, 0);
    char left[PATH_MAX + 32];
    snprintf(left, sizeof left, "%s/dsort-job-2-r0", base);
    assert_false(exists(left));
}

/* A temp name for DIR/f of owner o, made as a file or directory. */
static void out_temp(char *path, size_t len, const char *dir, const char *name,
                     const struct dsort_owner *o, int is_dir)
{
    assert_int_equal(dsort_owner_temp_name(path, len, dir, name, o, NULL), DSORT_OK);
    if (is_dir) {
        assert_non_null(mkdtemp(path));
        assert_int_equal(chmod(path, 0755), 0); /* what -O staging does */
    } else {
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
    }
}

static void stage_files(const char *stage, const char *extra)
{
    static const char *names[] = {"part-00000", "part-00001", "_SUCCESS", "._SUCCESS.tmp"};
    char p[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        join(p, sizeof p, stage, names[i]);
        write_file(p, "x");
    }
    if (extra) {
        join(p, sizeof p, stage, extra);
        write_file(p, "x");
    }
}

static void test_outtemps(void **state)
{
    (void)state;
    struct dsort_owner dead = dead_owner(), elsewhere = dead_owner();
    elsewhere.pidns ^= 1;
    char dead_file[PATH_MAX], dead_stage[PATH_MAX], odd_stage[PATH_MAX], live_file[PATH_MAX];
    char live_stage[PATH_MAX], other[PATH_MAX], foreign_uid[PATH_MAX], p[PATH_MAX + 32];
    out_temp(dead_file, sizeof dead_file, base, "sorted.dat", &dead, 0);
    out_temp(dead_stage, sizeof dead_stage, base, "parts", &dead, 1);
    stage_files(dead_stage, NULL);
    out_temp(odd_stage, sizeof odd_stage, base, "a.dsort-b", &dead, 1);
    stage_files(odd_stage, "not-ours");
    out_temp(other, sizeof other, base, "x", &elsewhere, 0);
    out_temp(foreign_uid, sizeof foreign_uid, base, "y", &dead, 0);
    int chowned = chown(foreign_uid, 65534, 65534) == 0;
    struct dsort_error err;
    int fd;
    assert_int_equal(
        dsort_owner_temp_file(live_file, sizeof live_file, base, "sorted.dat", &fd, &err),
        DSORT_OK);
    assert_true(fd >= 0);
    close(fd);
    struct stat sb;
    assert_int_equal(lstat(live_file, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
    assert_int_equal(dsort_owner_temp_dir(live_stage, sizeof live_stage, base, "parts", &err),
                     DSORT_OK);
    /* Symlinks with dead owners' names: to a file and to a directory with parts. */
    char vfile[PATH_MAX], vdir[PATH_MAX], l1[PATH_MAX], l2[PATH_MAX];
    join(vfile, sizeof vfile, dsort_test_dir, "victim.dat");
    write_file(vfile, "precious");
    join(vdir, sizeof vdir, dsort_test_dir, "victim-dir");
    assert_int_equal(mkdir(vdir, 0700), 0);
    stage_files(vdir, NULL);
    assert_int_equal(dsort_owner_temp_name(l1, sizeof l1, base, "l1", &dead, NULL), DSORT_OK);
    assert_int_equal(symlink(vfile, l1), 0);
    assert_int_equal(dsort_owner_temp_name(l2, sizeof l2, base, "l2", &dead, NULL), DSORT_OK);
    assert_int_equal(symlink(vdir, l2), 0);
    /* Names of the old form (a dead job's, or not) are left alone. */
    char old[PATH_MAX];
    join(old, sizeof old, base, ".sorted.dat.dsort-AbC123");
    write_file(old, "x");

    struct dsort_sweep_report rep;
    dsort_outtemps_sweep(base, &rep);
    assert_false(exists(dead_file));
    assert_false(exists(dead_stage));
    join(p, sizeof p, odd_stage, "not-ours");
    assert_true(exists(p));
    join(p, sizeof p, odd_stage, "part-00000");
    assert_false(exists(p));
    assert_true(exists(other));
    assert_true(exists(foreign_uid));
    assert_true(exists(live_file));
    assert_true(exists(live_stage));
    assert_true(exists(l1) && exists(vfile));
    assert_true(exists(l2));
    join(p, sizeof p, vdir, "part-00000");
    assert_true(exists(p));
    join(p, sizeof p, vdir, "_SUCCESS");
    assert_true(exists(p));
    assert_true(exists(old));
    assert_int_equal(rep.removed, 2 + (chowned ? 0 : 1));
    assert_int_equal(rep.alive, 2);
    assert_int_equal(rep.unknown, 2); /* elsewhere, and the stage with a stranger inside */
    assert_int_equal(rep.unsafe, 2 + (chowned ? 1 : 0));
}

/* Hashes agree between creator and judge; names that only look similar are not temps. */
static void test_temp_names(void **state)
{
    (void)state;
    struct dsort_owner me = self();
    char path[PATH_MAX];
    enum dsort_owner_state st;
    assert_int_equal(dsort_owner_temp_name(path, sizeof path, "", "f.dsort-x", &me, NULL),
                     DSORT_OK);
    assert_int_equal(path[0], '.');
    memcpy(path + strlen(path) - 6, "Ab3dE9", 6);
    assert_int_equal(dsort_owner_temp_judge(path, &st), 1);
    assert_int_equal(st, DSORT_OWNER_ALIVE);
    struct dsort_owner d = me;
    d.pid = dead_pid();
    assert_int_equal(dsort_owner_temp_name(path, sizeof path, "", "f", &d, NULL), DSORT_OK);
    memcpy(path + strlen(path) - 6, "zzzzzz", 6);
    assert_int_equal(dsort_owner_temp_judge(path, &st), 1);
    assert_int_equal(st, DSORT_OWNER_DEAD);
    path[strlen(path) - 1] = '\0'; /* 5 random characters */
    assert_int_equal(dsort_owner_temp_judge(path, &st), 0);
    assert_int_equal(dsort_owner_temp_judge(".f.dsort-AbC123", &st), 0);
    assert_int_equal(dsort_owner_temp_judge("f.dsort-0123456789abcdef-1-1-AbC123", &st), 0);
    assert_int_equal(dsort_owner_temp_judge(".f.dsort-0123456789abcdef-1-1-AbC123", &st), 1);
    assert_int_equal(st, DSORT_OWNER_UNKNOWN); /* another place's hash (all but surely) */
    /* A legal name of 255 bytes (of 2-byte UTF-8 characters, and one ASCII byte): the temp name
     * is cut to NAME_MAX at a character boundary and is still a temp. */
    char longname[256];
    memset(longname, 'x', 255);
    for (int i = 1; i + 1 < 255; i += 2)
        memcpy(longname + i, "\xc3\xa9", 2);
    longname[255] = '\0';
    assert_int_equal(dsort_owner_temp_name(path, sizeof path, "", longname, &me, NULL), DSORT_OK);
    assert_true(strlen(path) <= NAME_MAX);
    assert_true(strlen(path) >= NAME_MAX - 1);
    assert_int_equal(memcmp(path + 1, longname, 20), 0);
    const char *mark = strstr(path, ".dsort-");
    assert_non_null(mark);
    assert_int_equal((mark - path - 1) % 2, 1); /* "x" then whole "é"s */
    memcpy(path + strlen(path) - 6, "Ab3dE9", 6);
    assert_int_equal(dsort_owner_temp_judge(path, &st), 1);
    assert_int_equal(st, DSORT_OWNER_ALIVE);
    assert_int_equal(dsort_owner_temp_name(path, 16, "dir", "f", &me, NULL), DSORT_EINVAL);
    assert_int_equal(dsort_owner_temp_name(path, sizeof path, "dir", "a/b", &me, NULL),
                     DSORT_EINVAL);
}

/* Directories are grouped by device: equal ids share a number, numbered as first seen. */
static void test_devices(void **state)
{
    (void)state;
    const uint64_t devs[] = {5, 7, 5, 9, 7};
    size_t of[5];
    assert_int_equal(dsort_tempdirs_group(devs, 5, of), 3);
    assert_int_equal(of[0], 0);
    assert_int_equal(of[1], 1);
    assert_int_equal(of[2], 0);
    assert_int_equal(of[3], 2);
    assert_int_equal(of[4], 1);
    assert_int_equal(dsort_tempdirs_group(devs, 0, of), 0);

    /* Two -T directories on one file system are one device. */
    char b2[PATH_MAX + 8];
    snprintf(b2, sizeof b2, "%s2", base); /* a prefix of neither's per-job directory */
    assert_int_equal(mkdir(b2, 0755), 0);
    char *bases[] = {base, b2};
    struct dsort_tempdirs t;
    struct dsort_error err;
    assert_int_equal(dsort_tempdirs_create(&t, bases, 2, "job-d", 0, &err), DSORT_OK);
    assert_int_equal(t.ndev, 1);
    char run[PATH_MAX];
    dsort_tempdirs_run_path(&t, run, sizeof run);
    assert_int_equal(dsort_tempdirs_device_of(&t, run), 0);
    /* As if on two devices: a run's device is its directory's; a name only sharing a prefix
     * with a directory (dirX-other/...) is not inside it. */
    t.dev_of[1] = 1;
    t.ndev = 2;
    dsort_tempdirs_run_path(&t, run, sizeof run);
    assert_int_equal(dsort_tempdirs_device_of(&t, run), 1);
    char other[PATH_MAX + 16];
    snprintf(other, sizeof other, "%s-other/run-000001", t.dirs[1]);
    assert_int_equal(dsort_tempdirs_device_of(&t, other), 0);
    assert_int_equal(dsort_tempdirs_device_of(NULL, run), 0);
    /* A striped run: one file per device, of one name (the next number), in each device's
     * directory; at most max files. */
    char names[2][PATH_MAX];
    unsigned next = t.runs;
    assert_int_equal(dsort_tempdirs_run_stripes(&t, names[0], PATH_MAX, 8), 2);
    assert_int_equal(t.runs, next + 1);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(dsort_tempdirs_device_of(&t, names[i]), i);
        assert_true(!strncmp(names[i], t.dirs[i], strlen(t.dirs[i])));
        char want[32];
        snprintf(want, sizeof want, "/run-%06u", next);
        assert_string_equal(strrchr(names[i], '/'), want);
    }
    assert_int_equal(dsort_tempdirs_run_stripes(&t, names[0], PATH_MAX, 1), 1);
    dsort_tempdirs_destroy(&t);
    assert_int_equal(rmdir(b2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_text),
        cmocka_unit_test(test_owner_judge),
        cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_dead_removed, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_alive_kept, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_elsewhere_kept, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_wrong_mode_kept, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_other_uid_kept, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_old_format_kept, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_no_owner, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_create, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_outtemps, setup, dsort_test_dir_teardown),
        cmocka_unit_test(test_temp_names),
        cmocka_unit_test_setup_teardown(test_devices, setup, dsort_test_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
