/* Stop and resume of out-of-core jobs (job.h; the manifest: checkpoint.h).
 *
 * A stop is taken only at the end of a round, where every rank's runs are complete and
 * counted: each rank writes its manifest into its first temp directory and leaves the
 * directories and runs on disk; the job exits DSORT_EXIT_STOPPED with no output (the output's
 * temp is abandoned as after an error). --resume with the same arguments finds the manifests,
 * refuses any that does not match (options, rank count, inputs), reuses the runs, reads only
 * the input not consumed yet, and ends as usual: the final merge, the checks, the commit, and
 * the temp directories removed with the checkpoint. Rank 0 holds a lock on the job's
 * directory from the moment it finds the checkpoint, so that of two resumes of one job the
 * second is refused at once. A job that fails with a checkpoint on disk keeps it (unless its
 * runs are at fault): hours of rounds are not thrown away for a full output disk. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agree.h"
#include "checkpoint.h"
#include "cleanup.h"
#include "job.h"

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
static enum dsort_status find_job(const struct dsort_comm *c, const struct dsort_job_options *o,
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

/* Find the job's checkpoint, read and check this rank's, adopt its temp dirs (agreed). */
static enum dsort_status adopt(const struct dsort_comm *c, const struct dsort_job_options *o,
                               const struct dsort_inputs *in, struct dsort_ckpt *k,
                               struct dsort_tempdirs *td, char *job, size_t joblen,
                               struct dsort_error *err)
{
    memset(k, 0, sizeof *k);
    memset(td, 0, sizeof *td);
    enum dsort_status st = DSORT_OK;
    if (c->rank == 0)
        st = find_job(c, o, in, job, joblen, err);
    if ((st = dsort_comm_agree(c, st, err)))
        return st;
    dsort_agree_bcast(c, job, joblen, "sharing the job's name (MPI_Bcast)");
    /* This rank's manifest: in its first directory of that job that has one (every one has). */
    size_t n = 0;
    char **temps = dsort_job_temp_order(o, &n);
    if (!temps)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    char dir[4200] = "";
    for (size_t i = 0; !st && i < n; i++) {
        snprintf(dir, sizeof dir, "%s/dsort-%s-r%d/%s", temps[i], job, c->rank, DSORT_CKPT_FILE);
        if (!access(dir, F_OK)) {
            dir[strlen(dir) - strlen(DSORT_CKPT_FILE) - 1] = '\0';
            break;
        }
        dir[0] = '\0';
    }
    if (!st && !dir[0])
        st = DSORT_ERR(err, DSORT_EINVAL, 0,
                       "--resume: the checkpoint of rank %d of job '%s' is missing from the temp "
                       "directories",
                       c->rank, job);
    if (!st)
        st = dsort_ckpt_read(dir, k, err);
    char why[4600];
    if (!st && (k->rank != c->rank || strcmp(k->job, job)))
        st = DSORT_ERR(err, DSORT_EFORMAT, 0, "the checkpoint in '%s' is not rank %d's of job '%s'",
                       dir, c->rank, job);
    if (!st && dsort_ckpt_differs(k, o->shape, c->size, in, why, sizeof why))
        st = DSORT_ERR(err, DSORT_EINVAL, 0, "cannot resume from the checkpoint in '%s': %s", dir,
                       why);
    /* The input it consumed, where it was sampled, must be what it was (an input rewritten in
     * place with its size and times kept would mix two files' records). */
    int differs = st ? 0 : dsort_ckpt_sample_differs(k, in, why, sizeof why, err);
    if (differs < 0)
        st = err->status;
    else if (differs)
        st = DSORT_ERR(err, DSORT_EINVAL, 0, "cannot resume from the checkpoint in '%s': %s", dir,
                       why);
    /* Every run it lists must be there, as long as when it was kept (the blocks' CRC32C are
     * checked as they are read). */
    for (size_t i = 0; !st && i < k->runs.n; i++) {
        const char *paths[DSORT_RUN_MAX_STRIPES];
        size_t nf = dsort_run_files(&k->runs.runs[i], paths);
        for (size_t j = 0; !st && j < nf; j++) { /* every file of a striped run */
            struct stat sb;
            const uint64_t kept = k->run_sizes[i * DSORT_RUN_MAX_STRIPES + j];
            if (lstat(paths[j], &sb))
                st = DSORT_ERR(err, DSORT_EIO, errno,
                               "cannot resume: run '%s' of the checkpoint in '%s' is missing",
                               paths[j], dir);
            else if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size != kept)
                st = DSORT_ERR(err, DSORT_EFORMAT, 0,
                               "cannot resume: run '%s' of the checkpoint in '%s' is not the file "
                               "that was kept (%" PRIu64 " bytes then, %" PRIu64 " now)",
                               paths[j], dir, kept, (uint64_t)sb.st_size);
        }
    }
    /* A signal between the ranks' saves of one round (Slurm's SIGTERM reaches them a few ms
     * apart) leaves some manifests a round ahead: resumed, that round's records would be
     * lost or repeated (the conservation check failed after all the work, for ever). */
    const uint64_t lo = dsort_agree_min(c, st ? UINT64_MAX : k->rounds);
    if (!st && k->rounds != lo)
        st = DSORT_ERR(err, DSORT_EINVAL, 0,
                       "cannot resume: the checkpoint is torn (this rank kept round %" PRIu64
                       ", another rank round %" PRIu64 ": a signal came between the ranks' saves "
                       "of a round); remove the job's directories dsort-%s-r* from the -T dirs "
                       "and sort again without --resume",
                       k->rounds, lo, job);
    if (!st) /* (puts them under keep mode first) */
        st = dsort_tempdirs_adopt(td, temps, n, job, c->rank, (unsigned)k->next_run, err);
    if (!st)
        dsort_job_regroup_temps(o, temps, n, td);
    free(temps);
    if ((st = dsort_comm_agree(c, st, err))) {
        dsort_tempdirs_keep(td); /* as it was found */
        dsort_cleanup_keep_dirs(NULL, 0, NULL);
        dsort_ckpt_free(k);
        return st;
    }
    return DSORT_OK;
}

/* The resumed job accepted the checkpoint: its owner files, and the manifests go with the temp
 * directories from now on. Agreed; on failure nothing is registered. */
static enum dsort_status own(const struct dsort_comm *c, struct dsort_tempdirs *td,
                             struct dsort_error *err)
{
    /* this process owns the directories now (the sweep judges it alive) */
    enum dsort_status st = dsort_tempdirs_claim(td, err);
    for (size_t i = 0; i < td->count && !st; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", td->dirs[i], DSORT_CKPT_FILE);
        if (!access(path, F_OK))
            st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, err);
    }
    if ((st = dsort_comm_agree(c, st, err)))
        for (size_t i = 0; i < td->count; i++) { /* the caller keeps what was found */
            char path[4300];
            snprintf(path, sizeof path, "%s/%s", td->dirs[i], DSORT_CKPT_FILE);
            dsort_cleanup_forget(path);
        }
    return st;
}

/* Remove the run files in td's directories that the checkpoint does not list (runs): those of
 * a round or an extra pass that a signal cut short. Their numbers may be taken again. */
static void drop_strays(const struct dsort_tempdirs *td, const struct dsort_runset *runs)
{
    /* judged by the files' identity, not by how the paths are spelled */
    size_t nlisted = 0;
    struct stat *listed = calloc(runs->n * DSORT_RUN_MAX_STRIPES + 1, sizeof *listed);
    if (!listed)
        return; /* then an O_EXCL run of this job may fail, naming the file */
    for (size_t r = 0; r < runs->n; r++) { /* every file of a striped run */
        const char *paths[DSORT_RUN_MAX_STRIPES];
        size_t nf = dsort_run_files(&runs->runs[r], paths);
        for (size_t j = 0; j < nf; j++)
            if (!stat(paths[j], &listed[nlisted]))
                nlisted++;
    }
    for (size_t i = 0; i < td->count; i++) {
        DIR *d = opendir(td->dirs[i]);
        if (!d)
            continue;
        for (struct dirent *e; (e = readdir(d));) {
            struct stat sb;
            if ((strncmp(e->d_name, "run-", 4) && strcmp(e->d_name, "checkpoint.tmp")) ||
                fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW))
                continue;
            int known = 0;
            for (size_t r = 0; r < nlisted && !known; r++)
                known = listed[r].st_ino == sb.st_ino && listed[r].st_dev == sb.st_dev;
            if (!known)
                unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    free(listed);
}

enum dsort_status dsort_job_resume(const struct dsort_comm *c, const struct dsort_job_options *o,
                                   const struct dsort_inputs *in, struct dsort_tempdirs *td,
                                   struct dsort_runset *runs, char *job, size_t joblen,
                                   enum dsort_status (*take)(void *ctx, struct dsort_ckpt *k),
                                   void *ctx, struct dsort_error *err)
{
    struct dsort_ckpt k;
    enum dsort_status st = adopt(c, o, in, &k, td, job, joblen, err);
    if (st)
        return st;
    st = dsort_comm_agree(c, take(ctx, &k), err);
    dsort_ckpt_free(&k);
    if (!st)
        st = own(c, td, err);
    if (!st)
        drop_strays(td, runs);
    if (!st && o->checkpoint) /* the checkpoint found stays valid: keep it on a signal */
        st = dsort_job_ckpt_keep(c, td, err);
    if (st) { /* leave the checkpoint as it was found */
        dsort_runset_keep(runs);
        dsort_tempdirs_keep(td);
        dsort_cleanup_keep_dirs(NULL, 0, NULL);
    }
    return st;
}

int dsort_job_stop_now(const struct dsort_comm *c, const struct dsort_job_options *o,
                       uint64_t rounds_done)
{
    if (!o->checkpoint && !o->stop_after)
        return 0;
    int mine = (o->stop_after && rounds_done >= o->stop_after) ||
               (o->checkpoint && dsort_cleanup_stop_requested());
    return !dsort_comm_all_ok(c, !mine);
}

void dsort_job_ckpt_note_memory(const struct dsort_comm *c, const struct dsort_job_options *o)
{
    if ((!o->checkpoint && !o->stop_after) || o->resume || c->rank != 0)
        return;
    fprintf(stderr,
            "dsort: rank 0/%d (%s): note: the sort fits in memory, so it has no rounds to keep: "
            "%s writes no checkpoint, SIGUSR1 does not stop it and a later --resume finds "
            "nothing (add --out-of-core to have one)\n",
            c->size, c->host, o->stop_after ? "--stop-after" : "--checkpoint");
}

enum dsort_status dsort_job_ckpt_write(const struct dsort_comm *c,
                                       const struct dsort_job_options *o,
                                       const struct dsort_inputs *in, const char *job,
                                       struct dsort_ckpt *k, const struct dsort_tempdirs *td,
                                       const struct dsort_runset *runs, size_t skip, int durable,
                                       struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    if (!k->job) {
        k->rank = c->rank;
        k->size = c->size;
        if (!(k->job = strdup(job)) || !(k->shape = strdup(o->shape)))
            st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
        if (!st)
            st = dsort_ckpt_set_inputs(k, in, err);
        if (st)
            return st;
    }
    /* the consumed input's sample (the same after an extra pass: taken once) */
    if (!st && !k->nsample && k->sample_to > k->sample_from)
        st = dsort_ckpt_sample(k, in, err);
    if (st)
        return st;
    k->next_run = td->runs;
    k->runs = *runs; /* borrowed for the write, less the first skip runs */
    k->runs.runs += skip;
    k->runs.n -= skip;
    /* In every directory of the rank (its runs are spread over them): the sweep keeps a dead
     * job's directory only when it holds a checkpoint. Registered as temp files: an error
     * removes them with the runs; a signal in keep mode, or a stop, leaves them. */
    char path[4300];
    for (size_t i = 0; i < td->count && !st; i++) {
        st = dsort_ckpt_write(td->dirs[i], k, durable, err);
        snprintf(path, sizeof path, "%s/%s", td->dirs[i], DSORT_CKPT_FILE);
        dsort_cleanup_forget(path);
        if (!st)
            st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, err);
    }
    memset(&k->runs, 0, sizeof k->runs);
    return st;
}

enum dsort_status dsort_job_ckpt_save(const struct dsort_comm *c, const struct dsort_job_options *o,
                                      const struct dsort_inputs *in, const char *job,
                                      struct dsort_ckpt *k, const struct dsort_tempdirs *td,
                                      const struct dsort_runset *runs, int durable,
                                      struct dsort_error *err)
{
    enum dsort_status st = dsort_job_ckpt_write(c, o, in, job, k, td, runs, 0, durable, err);
    if ((st = dsort_comm_agree(c, st, err)))
        return st; /* the caller fails; the cleanup removes the manifests with the runs */
    return dsort_job_ckpt_keep(c, td, err);
}

enum dsort_status dsort_job_ckpt_keep(const struct dsort_comm *c, const struct dsort_tempdirs *td,
                                      struct dsort_error *err)
{
    return dsort_comm_agree(c, dsort_cleanup_keep_dirs(td->dirs, td->count, err), err);
}

void dsort_job_ckpt_stop(const struct dsort_comm *c, const struct dsort_ckpt *k,
                         struct dsort_tempdirs *td, struct dsort_runset *runs)
{
    char path[4300];
    for (size_t i = 0; i < td->count; i++) {
        snprintf(path, sizeof path, "%s/%s", td->dirs[i], DSORT_CKPT_FILE);
        dsort_cleanup_forget(path); /* kept now */
    }
    uint64_t nruns = runs->n, bytes = dsort_runset_bytes(runs);
    if (c->rank == 0)
        fprintf(stderr,
                "dsort: stopped after round %" PRIu64 " with a checkpoint: rank 0 keeps %" PRIu64
                " runs (%" PRIu64 " bytes) in '%s' (and every rank its own); run the same "
                "command with --resume to finish\n",
                k->rounds, nruns, bytes, td->count ? td->dirs[0] : "?");
    dsort_runset_keep(runs);
    dsort_tempdirs_keep(td);
    dsort_cleanup_keep_dirs(NULL, 0, NULL);
}

int dsort_job_ckpt_fail(const struct dsort_comm *c, struct dsort_tempdirs *td,
                        struct dsort_runset *runs)
{
    struct dsort_ckpt k;
    struct dsort_error e2;
    if (!td->count || dsort_ckpt_read(td->dirs[0], &k, &e2))
        return 0;
    dsort_cleanup_keep_dirs(NULL, 0, NULL);
    drop_strays(td, &k.runs); /* what the failed stretch wrote after the checkpoint */
    char path[4300];
    for (size_t i = 0; i < td->count; i++) {
        snprintf(path, sizeof path, "%s/%s", td->dirs[i], DSORT_CKPT_FILE);
        dsort_cleanup_forget(path);
    }
    if (c->rank == 0)
        fprintf(stderr,
                "dsort: the checkpoint of round %" PRIu64 " is kept in '%s' (and every rank's "
                "own): once the cause is mended, run the same command with --resume\n",
                k.rounds, td->dirs[0]);
    dsort_ckpt_free(&k);
    dsort_runset_keep(runs);
    dsort_tempdirs_keep(td);
    return 1;
}

void dsort_job_ckpt_end(const struct dsort_tempdirs *td, struct dsort_runset *runs)
{
    if (claim_fd >= 0) { /* a resume's lock: the checkpoint goes now */
        close(claim_fd);
        claim_fd = -1;
    }
    dsort_cleanup_keep_dirs(NULL, 0, NULL);
    char path[4300];
    for (size_t i = 0; i < td->count; i++) {
        snprintf(path, sizeof path, "%s/%s", td->dirs[i], DSORT_CKPT_FILE);
        if (!unlink(path) || errno == ENOENT)
            dsort_cleanup_forget(path);
    }
    dsort_runset_drop(runs, 0, runs->n);
}
