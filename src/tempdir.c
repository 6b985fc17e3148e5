#include "tempdir.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

static void owner_path(const char *dir, char *buf, size_t len)
{
    snprintf(buf, len, "%s/owner", dir);
}

void dsort_tempdirs_destroy(struct dsort_tempdirs *t)
{
    char p[4200];
    for (size_t i = 0; i < t->count; i++) {
        owner_path(t->dirs[i], p, sizeof p);
        unlink(p);
        dsort_cleanup_forget(p);
        rmdir(t->dirs[i]);
        dsort_cleanup_forget(t->dirs[i]);
        free(t->dirs[i]);
    }
    free(t->dirs);
    memset(t, 0, sizeof *t);
}

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
    char p[4200], host[256] = "unknown";
    owner_path(dir, p, sizeof p);
    gethostname(host, sizeof host - 1);
    if ((st = dsort_cleanup_add(p, DSORT_CLEANUP_MARKER, err)))
        return st;
    FILE *f = fopen(p, "w");
    if (!f)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot write '%s'", p);
    fprintf(f, "%s %ld\n", host, (long)getpid());
    if (fclose(f))
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
    return DSORT_OK;
}

void dsort_tempdirs_run_path(struct dsort_tempdirs *t, char *buf, size_t len)
{
    const char *dir = t->dirs[t->next];
    t->next = (t->next + 1) % t->count;
    snprintf(buf, len, "%s/run-%06u", dir, t->runs++);
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

/* Remove a dead job's directory: its run files, the owner file, the directory. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[4400];
        while ((e = readdir(d)))
            if (!strncmp(e->d_name, "run-", 4) || !strcmp(e->d_name, "owner")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(dir);
}

/* "dsort-HOST-PID-rR" (or "dsort-slurmJ.S-HOST-PID-rR") -> HOST, PID. 0 if not that form. */
static int name_owner(const char *name, char *host, size_t len, long *pid)
{
    const char *r = strrchr(name, '-');
    if (!r || r[1] != 'r')
        return 0;
    const char *p = r - 1;
    while (p > name && *p != '-')
        p--;
    if (p <= name + 6)
        return 0;
    char *end;
    *pid = strtol(p + 1, &end, 10);
    if (end != r || *pid <= 0)
        return 0;
    const char *h = p - 1;
    while (h > name + 5 && *h != '-')
        h--;
    size_t n = (size_t)(p - h - 1);
    if (*h != '-' || n == 0 || n >= len)
        return 0;
    memcpy(host, h + 1, n);
    host[n] = '\0';
    return 1;
}

void dsort_tempdirs_sweep(char *const *bases, size_t n, struct dsort_sweep_report *rep)
{
    memset(rep, 0, sizeof *rep);
    char myhost[256] = "unknown";
    gethostname(myhost, sizeof myhost - 1);
    for (size_t i = 0; i < n; i++) {
        DIR *d = opendir(bases[i]);
        if (!d)
            continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "dsort-", 6))
                continue;
            char dir[4400], own[4500], host[256];
            long pid = 0;
            snprintf(dir, sizeof dir, "%s/%s", bases[i], e->d_name);
            owner_path(dir, own, sizeof own);
            FILE *f = fopen(own, "r");
            int ok = 0;
            if (f) {
                ok = fscanf(f, "%255s %ld", host, &pid) == 2;
                fclose(f);
            } else {
                /* A dir whose owner file went (killed while cleaning up): its name has the
                 * job's host and the pid of its rank 0, "dsort-HOST-PID-rR". */
                ok = name_owner(e->d_name, host, sizeof host, &pid);
            }
            if (!ok)
                continue;
            if (strcmp(host, myhost)) {
                rep->foreign++;
            } else if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
                rep->alive++;
            } else {
                remove_dir(dir);
                rep->removed++;
            }
        }
        closedir(d);
    }
}
