/* Finding a stopped job's checkpoint for --resume (job_ckpt.h): the manifests of rank 0 in the
 * -T dirs, the one of this command's options and inputs (else the nearest, and what differs),
 * and the lock that makes a resume the only one of its job. Split from job_ckpt.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "job.h"
#include "job_ckpt.h"

/* The words of a shape (job_shape in dsort.c: words separated by spaces, a space or backslash
 * inside a word escaped by a backslash), as pointers into a copy in *buf. NULL: no memory. */
static char **shape_words(const char *shape, char **buf, size_t *n)
{
    size_t len = strlen(shape);
    *n = 0;
    *buf = malloc(len + 1);
    char **w = calloc(len / 2 + 2, sizeof *w);
    if (!*buf || !w) {
        free(*buf);
        free(w);
        return NULL;
    }
    char *q = *buf;
    for (const char *p = shape; *p;) {
        w[(*n)++] = q;
        for (; *p && *p != ' '; p++) {
            if (*p == '\\' && p[1])
                p++;
            *q++ = *p;
        }
        *q++ = '\0';
        if (*p == ' ')
            p++;
    }
    return w;
}

/* Do a and b name the same file: the same inode, or (for a file that does not exist, such as
 * an output) the same name in the same directory? */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!stat(a, &sa) && !stat(b, &sb))
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');
    if (strcmp(ba ? ba + 1 : a, bb ? bb + 1 : b))
        return 0;
    char da[4200], db[4200];
    snprintf(da, sizeof da, "%.*s", ba ? (int)(ba - a + 1) : 1, ba ? a : ".");
    snprintf(db, sizeof db, "%.*s", bb ? (int)(bb - b + 1) : 1, bb ? b : ".");
    return !stat(da, &sa) && !stat(db, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* How the options of a checkpoint (then) differ from this command's (now): the words only one
 * of them has, and a pair of them that name the same file spelled differently, into why (len
 * bytes). Returns how many words differ (the smaller, the nearer the checkpoint). */
static size_t shape_diff(const char *then, const char *now, char *why, size_t len)
{
    char *bt, *bn;
    size_t nt, nn, differ = 0;
    char **wt = shape_words(then, &bt, &nt), **wn = shape_words(now, &bn, &nn);
    why[0] = '\0';
    if (!wt || !wn) {
        free(wt), free(bt), free(wn), free(bn);
        snprintf(why, len, "its options were '%s', not '%s'", then, now);
        return (size_t)-1;
    }
    /* pair equal words off (multisets): what is left differs */
    for (size_t i = 0; i < nt; i++)
        for (size_t j = 0; j < nn; j++)
            if (wn[j] && wt[i] && !strcmp(wt[i], wn[j]))
                wt[i] = wn[j] = NULL;
    char gone[1200] = "", added[1200] = "", same[1400] = "";
    for (size_t i = 0; i < nt; i++)
        if (wt[i]) {
            differ++;
            size_t l = strlen(gone);
            snprintf(gone + l, sizeof gone - l, "%s'%s'", l ? " " : "", wt[i]);
        }
    for (size_t j = 0; j < nn; j++)
        if (wn[j]) {
            differ++;
            size_t l = strlen(added);
            snprintf(added + l, sizeof added - l, "%s'%s'", l ? " " : "", wn[j]);
            for (size_t i = 0; i < nt && !same[0]; i++)
                if (wt[i] && same_file(wt[i], wn[j]))
                    snprintf(same, sizeof same,
                             "'%s' then and '%s' now are the same file spelled differently "
                             "(give it as it was given then)",
                             wt[i], wn[j]);
        }
    if (!differ) /* the same words in another order */
        snprintf(why, len, "its options were '%s' (in another order), not '%s'", then, now);
    else if (!added[0])
        snprintf(why, len, "it was made with %s as well, which this command has not", gone);
    else if (!gone[0])
        snprintf(why, len, "this command adds %s", added);
    else if (same[0] && differ == 2) /* the message is cut at DSORT_ERROR_MSG_MAX: this first */
        snprintf(why, len, "%s", same);
    else
        snprintf(why, len, "%s%sit was made with %s where this command has %s", same,
                 same[0] ? "; " : "", gone, added);
    free(wt), free(bt), free(wn), free(bn);
    return differ;
}

/* The lock that makes a resume the only one of its job (the other is refused at once): an
 * flock on rank 0's temp directory of the job, held by rank 0 until it exits. -1: none. */
static int claim_fd = -1;

/* Rank 0: lock job's directories of rank 0 in the -T dirs: the one of them with the lowest
 * (device, inode), so that two resumes that list the -T dirs in other orders contend for the
 * same lock. A file system without locks (ENOLCK, EOPNOTSUPP) leaves only the owner check. */
static enum dsort_status claim_job(const struct dsort_job_options *o, const char *job,
                                   struct dsort_error *err)
{
    int fd = -1;
    struct stat best;
    char path[4200], best_path[4200] = "";
    for (size_t b = 0; b < o->ntemp; b++) {
        snprintf(path, sizeof path, "%s/dsort-%s-r0", o->temp_dirs[b], job);
        int d = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat sb;
        if (d < 0 || fstat(d, &sb) ||
            (fd >= 0 &&
             (sb.st_dev > best.st_dev || (sb.st_dev == best.st_dev && sb.st_ino >= best.st_ino)))) {
            if (d >= 0)
                close(d);
            continue;
        }
        if (fd >= 0)
            close(fd);
        fd = d;
        best = sb;
        snprintf(best_path, sizeof best_path, "%s", path);
    }
    if (fd < 0)
        return DSORT_OK; /* then the checks that follow name what is missing */
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        close(fd);
        if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS)
            return DSORT_OK;
        if (e == EWOULDBLOCK)
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "--resume: job '%s' (its checkpoint in '%s') is being resumed by "
                             "another dsort at this moment: not resuming it twice",
                             job, best_path);
        return DSORT_ERR(err, DSORT_EIO, e, "cannot lock '%s'", best_path);
    }
    claim_fd = fd;
    return DSORT_OK;
}

/* Rank 0: the job name of a checkpoint of this job (same shape and rank count) in the -T dirs,
 * claimed (claim_job); "" when there is none. A checkpoint of the same options whose inputs
 * changed is an error; so is none at all, naming the nearest checkpoint found and what
 * differs. */
enum dsort_status dsort_job_ckpt_find(const struct dsort_comm *c, const struct dsort_job_options *o,
                                      const struct dsort_inputs *in, char *job, size_t joblen,
                                      struct dsort_error *err)
{
    job[0] = '\0';
    enum dsort_status st = DSORT_OK;
    char first_why[4800] = ""; /* a checkpoint of the same options that does not match */
    char near_why[4800] = "";  /* the checkpoint of other options nearest to these */
    size_t near = (size_t)-1;
    for (size_t b = 0; b < o->ntemp && !job[0]; b++) {
        DIR *d = opendir(o->temp_dirs[b]);
        if (!d)
            continue;
        for (struct dirent *e; !job[0] && (e = readdir(d));) {
            size_t len = strlen(e->d_name);
            if (strncmp(e->d_name, "dsort-", 6) || len < 9 || strcmp(e->d_name + len - 3, "-r0"))
                continue;
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/%s", o->temp_dirs[b], e->d_name);
            struct stat sb;
            if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid())
                continue;
            struct dsort_ckpt k;
            struct dsort_error e2;
            if (dsort_ckpt_read(dir, &k, &e2))
                continue; /* not a checkpoint (or not readable): not this job's */
            char why[4096];
            if (strcmp(k.shape, o->shape)) {
                size_t n = shape_diff(k.shape, o->shape, why, sizeof why);
                if (n < near || near == (size_t)-1) {
                    near = n;
                    snprintf(near_why, sizeof near_why, "the nearest, in '%s', is not: %s", dir,
                             why);
                }
                dsort_ckpt_free(&k);
                continue;
            }
            if (!dsort_ckpt_differs(&k, o->shape, c->size, in, why, sizeof why))
                snprintf(job, joblen, "%s", k.job);
            else if (!first_why[0]) /* another may match: said only if none does */
                snprintf(first_why, sizeof first_why, "the checkpoint in '%s': %s", dir, why);
            dsort_ckpt_free(&k);
        }
        closedir(d);
    }
    if (job[0])
        st = claim_job(o, job, err);
    else if (first_why[0])
        st = DSORT_ERR(err, DSORT_EINVAL, 0, "cannot resume from %s", first_why);
    else if (near_why[0])
        st = DSORT_ERR(err, DSORT_EINVAL, 0,
                       "--resume: no checkpoint of this job (the same options and inputs) in "
                       "the temp directories (-T); %s",
                       near_why);
    else
        st = DSORT_ERR(err, DSORT_EINVAL, 0,
                       "--resume: no checkpoint of this job (the same options and inputs) in "
                       "the temp directories (-T)%s",
                       o->ntemp > 1 ? "" : "; was it stopped with other -T dirs?");
    return st;
}

void dsort_job_ckpt_unclaim(void)
{
    if (claim_fd >= 0) {
        close(claim_fd);
        claim_fd = -1;
    }
}
