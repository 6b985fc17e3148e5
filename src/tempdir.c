#include "tempdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "owner.h"

static void owner_path(const char *dir, char *buf, size_t len)
{
    snprintf(buf, len, "%s/owner", dir);
}

void dsort_tempdirs_destroy(struct dsort_tempdirs *t)
{
    char p[4200];
    for (size_t i = 0; i < t->count; i++) {
        snprintf(p, sizeof p, "%s/checkpoint", t->dirs[i]); /* a resumed job's, done with */
        unlink(p);
        dsort_cleanup_forget(p);
        snprintf(p, sizeof p, "%s/checkpoint.prev", t->dirs[i]); /* and the save before it */
        unlink(p);
        dsort_cleanup_forget(p);
        owner_path(t->dirs[i], p, sizeof p);
        unlink(p);
        dsort_cleanup_forget(p);
        rmdir(t->dirs[i]);
        dsort_cleanup_forget(t->dirs[i]);
        free(t->dirs[i]);
    }
    free(t->dirs);
    free(t->dev_of);
    memset(t, 0, sizeof *t);
}

size_t dsort_tempdirs_group(const uint64_t *devs, size_t n, size_t *dev_of)
{
    size_t ndev = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && devs[j] != devs[i])
            j++;
        dev_of[i] = j < i ? dev_of[j] : ndev++;
    }
    return ndev;
}

/* Number the n directories by the file system they are on (st_dev) into dev_of; returns the
 * number of file systems (-1: no memory). A directory that cannot be stat'ed counts as one of
 * its own: at worst one more read-ahead thread. */
static long group_by_st_dev(char *const *dirs, size_t n, size_t *dev_of)
{
    uint64_t *devs = calloc(n ? n : 1, sizeof *devs);
    if (!devs)
        return -1;
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        devs[i] = stat(dirs[i], &sb) ? UINT64_MAX - i : (uint64_t)sb.st_dev;
    }
    size_t ndev = dsort_tempdirs_group(devs, n, dev_of);
    free(devs);
    return (long)ndev;
}

/* Group t's directories by the device they are on (st_dev; the caller may regroup them). */
static enum dsort_status group_devices(struct dsort_tempdirs *t, struct dsort_error *err)
{
    long ndev = -1;
    if ((t->dev_of = calloc(t->count ? t->count : 1, sizeof *t->dev_of)))
        ndev = group_by_st_dev(t->dirs, t->count, t->dev_of);
    if (ndev < 0)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    t->ndev = (size_t)ndev;
    return DSORT_OK;
}

void dsort_tempdirs_regroup(struct dsort_tempdirs *t, const uint64_t *devs)
{
    if (t->dev_of && devs)
        t->ndev = dsort_tempdirs_group(devs, t->count, t->dev_of);
}

size_t dsort_tempdirs_count_devices(char *const *bases, size_t n)
{
    size_t *of = calloc(n ? n : 1, sizeof *of);
    long ndev = of ? group_by_st_dev(bases, n, of) : -1;
    free(of);
    return ndev > 0 ? (size_t)ndev : 1;
}

size_t dsort_tempdirs_device_of(const struct dsort_tempdirs *t, const char *path)
{
    if (!t || !t->dev_of)
        return 0;
    for (size_t i = 0; i < t->count; i++) {
        size_t n = strlen(t->dirs[i]);
        if (!strncmp(path, t->dirs[i], n) && path[n] == '/')
            return t->dev_of[i];
    }
    return 0;
}

static enum dsort_status write_owner(const char *dir, struct dsort_error *err);
static int read_owner(int fd, struct dsort_owner *o);

static enum dsort_status make_one(const char *dir, int *created, const volatile unsigned *runs,
                                  struct dsort_error *err)
{
    *created = 0;
    if (mkdir(dir, 0700))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot create temp directory '%s'", dir);
    *created = 1;
    enum dsort_status st = dsort_cleanup_add(dir, DSORT_CLEANUP_DIR, err);
    if (!st)
        st = dsort_cleanup_add_series(dir, "run-", 6, runs, err);
    if (st) {
        rmdir(dir);
        dsort_cleanup_forget(dir);
        return st;
    }
    /* mkdir's mode went through the umask; the sweeper wants exactly 0700. */
    if (chmod(dir, 0700))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot set the mode of '%s'", dir);
    return write_owner(dir, err);
}

/* Write this process's owner file into dir (a new one: an old one is replaced), registered. */
static enum dsort_status write_owner(const char *dir, struct dsort_error *err)
{
    char p[4200], line[DSORT_OWNER_TEXT_MAX];
    owner_path(dir, p, sizeof p);
    unlink(p);
    enum dsort_status st = dsort_cleanup_add(p, DSORT_CLEANUP_MARKER, err);
    if (st)
        return st;
    struct dsort_owner me;
    dsort_owner_self(&me, NULL); /* an incomplete one is written too: never judged dead */
    size_t len = dsort_owner_format(&me, line, sizeof line), done = 0;
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot write '%s'", p);
    while (done < len) {
        ssize_t w = write(fd, line + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            return DSORT_ERR(err, DSORT_EIO, e, "cannot write '%s'", p);
        }
        done += (size_t)w;
    }
    if (close(fd))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot write '%s'", p);
    return DSORT_OK;
}

enum dsort_status dsort_tempdirs_create(struct dsort_tempdirs *t, char *const *bases, size_t n,
                                        const char *job, int rank, struct dsort_error *err)
{
    memset(t, 0, sizeof *t);
    if (n == 0)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "no temp directory");
    if (!(t->dirs = calloc(n, sizeof *t->dirs)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(bases[i]) + strlen(job) + 48;
        char *d = malloc(len);
        if (!d) {
            dsort_tempdirs_destroy(t);
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
        }
        snprintf(d, len, "%s/dsort-%s-r%d", bases[i], job, rank);
        t->dirs[t->count++] = d;
        int created;
        enum dsort_status st = make_one(d, &created, &t->runs, err);
        if (st) {
            if (!created) { /* never remove what may be another job's */
                free(d);
                t->count--;
            }
            dsort_tempdirs_destroy(t);
            return st;
        }
    }
    enum dsort_status st = group_devices(t, err);
    if (st)
        dsort_tempdirs_destroy(t);
    return st;
}

/* Is the owner still running? A stopped job's ranks may still be exiting (zombies until their
 * launcher reaps them) when the resumed job starts: a few seconds are allowed for that. */
static int owner_running(const struct dsort_owner *o)
{
    for (int i = 0; i < 100; i++) {
        if (dsort_owner_judge(o) != DSORT_OWNER_ALIVE)
            return 0;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

enum dsort_status dsort_tempdirs_adopt(struct dsort_tempdirs *t, char *const *bases, size_t n,
                                       const char *job, int rank, unsigned runs,
                                       struct dsort_error *err)
{
    memset(t, 0, sizeof *t);
    if (n == 0)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "no temp directory");
    if (!(t->dirs = calloc(n, sizeof *t->dirs)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    t->runs = runs;
    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < n && !st; i++) {
        size_t len = strlen(bases[i]) + strlen(job) + 48;
        char *d = malloc(len);
        if (!d) {
            st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
            break;
        }
        snprintf(d, len, "%s/dsort-%s-r%d", bases[i], job, rank);
        /* opened without following a link, then judged by what was opened */
        int fd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat sb;
        struct dsort_owner o;
        if (fd < 0)
            st = DSORT_ERR(err, DSORT_EIO, errno,
                           "the checkpoint's temp directory '%s' cannot be opened", d);
        else if (fstat(fd, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
                 (sb.st_mode & 07777) != 0700)
            st = DSORT_ERR(err, DSORT_EINVAL, 0,
                           "'%s' is not a temp directory of ours (a directory of this user, "
                           "mode 0700, not a link): not resuming from it",
                           d);
        else if (read_owner(fd, &o) > 0 && owner_running(&o))
            st = DSORT_ERR(err, DSORT_EINVAL, 0,
                           "the job that owns '%s' (pid %ld on %s) is still running: not "
                           "resuming it twice",
                           d, o.pid, o.host);
        if (fd >= 0)
            close(fd);
        if (st) {
            free(d);
            break;
        }
        t->dirs[t->count++] = d;
    }
    /* A signal from here on leaves them as they are (keep mode), before the registry has them. */
    if (!st)
        st = dsort_cleanup_keep_dirs(t->dirs, t->count, err);
    for (size_t i = 0; i < t->count && !st; i++) {
        st = dsort_cleanup_add(t->dirs[i], DSORT_CLEANUP_DIR, err);
        if (!st)
            st = dsort_cleanup_add_series(t->dirs[i], "run-", 6, &t->runs, err);
    }
    if (!st)
        st = group_devices(t, err);
    if (st)
        dsort_tempdirs_keep(t); /* what was adopted stays as it was found */
    return st;
}

enum dsort_status dsort_tempdirs_claim(struct dsort_tempdirs *t, struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < t->count && !st; i++)
        st = write_owner(t->dirs[i], err);
    return st;
}

void dsort_tempdirs_keep(struct dsort_tempdirs *t)
{
    char p[4200];
    for (size_t i = 0; i < t->count; i++) {
        owner_path(t->dirs[i], p, sizeof p);
        dsort_cleanup_forget(p);
        dsort_cleanup_forget(t->dirs[i]);
        free(t->dirs[i]);
    }
    free(t->dirs);
    free(t->dev_of);
    memset(t, 0, sizeof *t);
}

void dsort_tempdirs_run_path(struct dsort_tempdirs *t, char *buf, size_t len)
{
    const char *dir = t->dirs[t->next];
    t->next = (t->next + 1) % t->count;
    snprintf(buf, len, "%s/run-%06u", dir, t->runs++);
}

size_t dsort_tempdirs_run_stripes(struct dsort_tempdirs *t, char *buf, size_t len, size_t max)
{
    if (t->ndev <= 1 || max <= 1) {
        dsort_tempdirs_run_path(t, buf, len);
        return 1;
    }
    const unsigned n = t->runs++;
    size_t k = 0;
    for (size_t d = 0; d < t->ndev && k < max; d++)
        for (size_t i = 0; i < t->count; i++)
            if (t->dev_of[i] == d) { /* the device's first directory */
                snprintf(buf + k++ * len, len, "%s/run-%06u", t->dirs[i], n);
                break;
            }
    return k;
}

void dsort_tempdirs_job_name(char *buf, size_t len)
{
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    char host[128] = "host";
    gethostname(host, sizeof host - 1);
    if (job && *job)
        snprintf(buf, len, "slurm%s.%s-%s-%ld", job, step && *step ? step : "batch", host,
                 (long)getpid());
    else
        snprintf(buf, len, "%s-%ld", host, (long)getpid());
    for (char *p = buf; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
}

/* Decimal digits only, at most 10 of them, > 0. */
static int parse_pid(const char *s, size_t n, long *pid)
{
    if (n == 0 || n > 10 || strspn(s, "0123456789") < n)
        return 0;
    long v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    *pid = v;
    return v > 0 && v <= 0x7fffffffL;
}

/* "dsort-REST-PID-rN" -> REST (the job name without its pid: it ends with the host of the
 * job's rank 0) and PID. 0 if the name is not of that form. */
static int name_owner(const char *name, const char **rest, size_t *rest_len, long *pid)
{
    if (strncmp(name, "dsort-", 6))
        return 0;
    const char *r = strrchr(name, '-');
    if (!r || r[1] != 'r' || !r[2] || strspn(r + 2, "0123456789") != strlen(r + 2))
        return 0;
    const char *q = r - 1;
    while (q > name + 6 && *q != '-')
        q--;
    if (q <= name + 6 || !parse_pid(q + 1, (size_t)(r - q - 1), pid))
        return 0;
    *rest = name + 6;
    *rest_len = (size_t)(q - *rest);
    return 1;
}

/* Does a job name's REST end with this host, as dsort_tempdirs_job_name writes it? */
static int named_here(const char *rest, size_t n)
{
    char host[128] = "host";
    gethostname(host, sizeof host - 1);
    for (char *p = host; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
    size_t h = strlen(host);
    if (n < h || memcmp(rest + n - h, host, h))
        return 0;
    return n == h || rest[n - h - 1] == '-';
}

/* The owner file in directory fd: 1 if it is a regular file that parses into *o, 0 if there
 * is none, -1 if it is anything else. */
static int read_owner(int fd, struct dsort_owner *o)
{
    int ofd = openat(fd, "owner", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (ofd < 0)
        return errno == ENOENT ? 0 : -1;
    char text[DSORT_OWNER_TEXT_MAX];
    size_t got = 0;
    struct stat sb;
    int ok = !fstat(ofd, &sb) && S_ISREG(sb.st_mode);
    while (ok && got + 1 < sizeof text) {
        ssize_t n = read(ofd, text + got, sizeof text - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        got += (size_t)n;
    }
    close(ofd);
    text[got] = '\0';
    return ok && !dsort_owner_parse(text, o, NULL) ? 1 : -1;
}

/* Open name in directory bfd as a directory of ours, never through a symlink. -1 if not. */
static int open_own_dir(int bfd, const char *name, int exact_0700)
{
    int fd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
        (exact_0700 && (sb.st_mode & 07777) != 0700)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Unlink the entries of directory fd that keep() accepts, relative to fd; closes fd. */
static void remove_entries(int fd, int (*keep)(const char *name))
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (keep(e->d_name))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

/* What a job leaves in its directory besides the owner file: runs and a checkpoint. */
static int is_job_file(const char *name)
{
    return !strncmp(name, "run-", 4) || !strcmp(name, "checkpoint") ||
           !strcmp(name, "checkpoint.tmp") || !strcmp(name, "checkpoint.prev");
}

static void sweep_one(int bfd, const char *name, const struct dsort_owner *self, uint64_t keep,
                      struct dsort_sweep_report *rep)
{
    const char *rest;
    size_t rest_len;
    long name_pid;
    struct stat sb;
    if (!name_owner(name, &rest, &rest_len, &name_pid) ||
        fstatat(bfd, name, &sb, AT_SYMLINK_NOFOLLOW))
        return; /* not a job directory's name, or gone */
    int fd = S_ISDIR(sb.st_mode) ? open_own_dir(bfd, name, 1) : -1;
    if (fd < 0) {
        rep->unsafe++;
        return;
    }
    struct dsort_owner o;
    int have = read_owner(fd, &o);
    if (have == 0) {
        /* Killed while cleaning up (the owner file goes last but one): only an empty
         * directory named on this host after a pid that does not exist is removed. */
        close(fd);
        if (!named_here(rest, rest_len))
            rep->foreign++;
        else if (!kill((pid_t)name_pid, 0) || errno != ESRCH)
            rep->alive++;
        else if (!unlinkat(bfd, name, AT_REMOVEDIR))
            rep->removed++;
        else
            rep->unknown++;
        return;
    }
    enum dsort_owner_state state = have > 0 ? dsort_owner_judge(&o) : DSORT_OWNER_UNKNOWN;
    if (state != DSORT_OWNER_DEAD) {
        close(fd);
        if (state == DSORT_OWNER_ALIVE)
            rep->alive++;
        else if (have > 0 && strcmp(o.host, self->host))
            rep->foreign++;
        else
            rep->unknown++;
        return;
    }
    /* A stopped job's checkpoint (--resume) is kept for `keep` seconds after it was written. */
    struct stat cb;
    if (!fstatat(fd, "checkpoint", &cb, AT_SYMLINK_NOFOLLOW) &&
        (time(NULL) < cb.st_mtime || (uint64_t)(time(NULL) - cb.st_mtime) < keep)) {
        close(fd);
        rep->kept++;
        return;
    }
    /* Runs first, the owner file last: a sweep interrupted here is finished by the next. */
    int again = dup(fd);
    remove_entries(fd, is_job_file);
    if (again >= 0) {
        unlinkat(again, "owner", 0);
        close(again);
    }
    if (!unlinkat(bfd, name, AT_REMOVEDIR))
        rep->removed++;
    else
        rep->unknown++;
}

void dsort_tempdirs_sweep(char *const *bases, size_t n, uint64_t keep,
                          struct dsort_sweep_report *rep)
{
    memset(rep, 0, sizeof *rep);
    struct dsort_owner self;
    dsort_owner_self(&self, NULL);
    for (size_t i = 0; i < n; i++) {
        int bfd = open(bases[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = bfd < 0 ? NULL : fdopendir(bfd);
        if (!d) {
            if (bfd >= 0)
                close(bfd);
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d)))
            sweep_one(dirfd(d), e->d_name, &self, keep, rep);
        closedir(d);
    }
}

/* What dsort puts in an -O staging directory: part-NNNNN, _SUCCESS, ._SUCCESS.tmp. */
static int is_stage_entry(const char *name)
{
    if (!strcmp(name, "_SUCCESS") || !strcmp(name, "._SUCCESS.tmp"))
        return 1;
    return !strncmp(name, "part-", 5) && name[5] &&
           strspn(name + 5, "0123456789") == strlen(name + 5);
}

/* Inside a dead job's output temp directory: its parts and marker, and output temps. */
static int is_dead_dir_entry(const char *name)
{
    enum dsort_owner_state state;
    return is_stage_entry(name) || dsort_owner_temp_judge(name, &state);
}

static void sweep_outtemp(int bfd, const char *name, enum dsort_owner_state state,
                          struct dsort_sweep_report *rep)
{
    struct stat sb;
    if (fstatat(bfd, name, &sb, AT_SYMLINK_NOFOLLOW))
        return;
    if (!(S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)) || sb.st_uid != geteuid()) {
        rep->unsafe++;
        return;
    }
    if (state != DSORT_OWNER_DEAD) {
        if (state == DSORT_OWNER_ALIVE)
            rep->alive++;
        else
            rep->unknown++;
        return;
    }
    if (S_ISREG(sb.st_mode)) {
        /* unlink never follows a symlink: a name swapped since the fstatat is harmless. */
        if (!unlinkat(bfd, name, 0))
            rep->removed++;
        return;
    }
    int fd = open_own_dir(bfd, name, 0);
    if (fd < 0) {
        rep->unsafe++;
        return;
    }
    remove_entries(fd, is_dead_dir_entry);
    if (!unlinkat(bfd, name, AT_REMOVEDIR))
        rep->removed++;
    else
        rep->unknown++;
}

void dsort_outtemps_sweep(const char *dir, struct dsort_sweep_report *rep)
{
    memset(rep, 0, sizeof *rep);
    int bfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = bfd < 0 ? NULL : fdopendir(bfd);
    if (!d) {
        if (bfd >= 0)
            close(bfd);
        return;
    }
    struct dirent *e;
    enum dsort_owner_state state;
    while ((e = readdir(d)))
        if (dsort_owner_temp_judge(e->d_name, &state))
            sweep_outtemp(dirfd(d), e->d_name, state, rep);
    closedir(d);
}
