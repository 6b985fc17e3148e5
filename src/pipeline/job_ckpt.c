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
#include <sys/stat.h>
#include <unistd.h>

#include "agree.h"
#include "checkpoint.h"
#include "cleanup.h"
#include "job_ckpt.h"

#include "job.h"
#include "job_topo.h"

/* This rank's manifest: in its first directory of job (in the temps) that has one (every one
 * has); the directory into dir. */
static enum dsort_status own_dir(const struct dsort_comm *c, char **temps, size_t n,
                                 const char *job, char *dir, size_t len, struct dsort_error *err)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(dir, len, "%s/dsort-%s-r%d/%s", temps[i], job, c->rank, DSORT_CKPT_FILE);
        if (!access(dir, F_OK)) {
            dir[strlen(dir) - strlen(DSORT_CKPT_FILE) - 1] = '\0';
            return DSORT_OK;
        }
    }
    dir[0] = '\0';
    return DSORT_ERR(err, DSORT_EINVAL, 0,
                     "--resume: the checkpoint of rank %d of job '%s' is missing from the temp "
                     "directories (a signal between the ranks' first saves leaves none: then "
                     "remove the job's directories dsort-%s-r* and sort again without --resume)",
                     c->rank, job, job);
}

/* Every run k lists is there, as long as when it was kept (the blocks' CRC32C are checked as
 * they are read). where names the manifest. */
static enum dsort_status runs_there(const struct dsort_ckpt *k, const char *where,
                                    struct dsort_error *err)
{
    for (size_t i = 0; i < k->runs.n; i++) {
        const char *paths[DSORT_RUN_MAX_STRIPES];
        size_t nf = dsort_run_files(&k->runs.runs[i], paths);
        for (size_t j = 0; j < nf; j++) { /* every file of a striped run */
            struct stat sb;
            const uint64_t kept = k->run_sizes[i * DSORT_RUN_MAX_STRIPES + j];
            if (lstat(paths[j], &sb))
                return DSORT_ERR(err, DSORT_EIO, errno,
                                 "cannot resume: run '%s' of the checkpoint in '%s' is missing",
                                 paths[j], where);
            if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size != kept)
                return DSORT_ERR(err, DSORT_EFORMAT, 0,
                                 "cannot resume: run '%s' of the checkpoint in '%s' is not the "
                                 "file that was kept (%" PRIu64 " bytes then, %" PRIu64 " now)",
                                 paths[j], where, kept, (uint64_t)sb.st_size);
        }
    }
    return DSORT_OK;
}

/* Can this rank go on from k (read from where): its own, of these options and inputs, the
 * input it consumed unchanged, its runs there? */
static enum dsort_status usable(const struct dsort_comm *c, const struct dsort_job_options *o,
                                const struct dsort_inputs *in, const struct dsort_ckpt *k,
                                const char *where, const char *job, struct dsort_error *err)
{
    char why[4600];
    if (k->rank != c->rank || strcmp(k->job, job))
        return DSORT_ERR(err, DSORT_EFORMAT, 0,
                         "the checkpoint in '%s' is not rank %d's of job '%s'", where, c->rank,
                         job);
    if (dsort_ckpt_differs(k, o->shape, c->size, in, why, sizeof why))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "cannot resume from the checkpoint in '%s': %s",
                         where, why);
    /* The input it consumed, where it was sampled, must be what it was (an input rewritten in
     * place with its size and times kept would mix two files' records). */
    int differs = dsort_ckpt_sample_differs(k, in, why, sizeof why, err);
    if (differs < 0)
        return err->status;
    if (differs)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "cannot resume from the checkpoint in '%s': %s",
                         where, why);
    return runs_there(k, where, err);
}

/* Collective. A signal between the ranks' saves of one round (Slurm's SIGTERM reaches them a
 * few ms apart) leaves some manifests a round ahead of the others' (torn): resumed as they
 * are, that round's records would be lost or repeated (the conservation check failed after
 * all the work, for ever). The ranks agree on the newest round every one of them kept (lo);
 * a rank a round ahead goes back to its manifest of the save before (DSORT_CKPT_PREV: between
 * two round saves runs are only added, never merged away, so its runs are still there; usable
 * checks them). st: this rank's status so far. *back: this rank went back. */
static enum dsort_status pick_round(const struct dsort_comm *c, const char *dir,
                                    struct dsort_ckpt *k, int *back, enum dsort_status st,
                                    struct dsort_error *err)
{
    const uint64_t lo = dsort_agree_min(c, st ? UINT64_MAX : k->rounds);
    *back = 0;
    if (st || k->rounds == lo)
        return st;
    char path[4300], why[700];
    snprintf(path, sizeof path, "%s/%s", dir, DSORT_CKPT_PREV);
    struct dsort_ckpt prev;
    struct dsort_error e2;
    if (dsort_ckpt_read_file(path, &prev, &e2)) {
        snprintf(why, sizeof why, "%s", e2.msg);
    } else if (prev.rounds != lo) {
        snprintf(why, sizeof why, "'%s', the save before, is of round %" PRIu64, path, prev.rounds);
        dsort_ckpt_free(&prev);
    } else {
        dsort_ckpt_free(k);
        *k = prev;
        *back = 1;
        return DSORT_OK;
    }
    return DSORT_ERR(err, DSORT_EINVAL, 0,
                     "cannot resume: the checkpoint is torn (this rank kept round %" PRIu64
                     ", another rank round %" PRIu64 ": a signal came between the ranks' saves "
                     "of a round) and this rank has not kept round %" PRIu64 " (%s); remove "
                     "the job's directories dsort-%s-r* from the -T dirs and sort again "
                     "without --resume",
                     k->rounds, lo, lo, why, k->job);
}

/* A rank that went back (pick_round) makes the manifest it went back to its current one in
 * every directory, durably: the round ahead is of no use to a job whose other ranks lack it,
 * and the next save keeps this one as the save before. */
static enum dsort_status go_back(const struct dsort_tempdirs *td, const struct dsort_ckpt *k,
                                 struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < td->count && !st; i++)
        st = dsort_ckpt_write(td->dirs[i], k, 1, err);
    return st;
}

/* Find the job's checkpoint, read and check this rank's (of the round every rank kept), adopt
 * its temp dirs (agreed). */
static enum dsort_status adopt(const struct dsort_comm *c, const struct dsort_job_options *o,
                               const struct dsort_inputs *in, struct dsort_ckpt *k,
                               struct dsort_tempdirs *td, char *job, size_t joblen,
                               struct dsort_error *err)
{
    memset(k, 0, sizeof *k);
    memset(td, 0, sizeof *td);
    enum dsort_status st = DSORT_OK;
    if (c->rank == 0)
        st = dsort_job_ckpt_find(c, o, in, job, joblen, err);
    if ((st = dsort_comm_agree(c, st, err)))
        return st;
    dsort_agree_bcast(c, job, joblen, "sharing the job's name (MPI_Bcast)");
    size_t n = 0;
    char **temps = dsort_job_temp_order(o, &n);
    char dir[4200] = "";
    if (!temps)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    st = st ? st : own_dir(c, temps, n, job, dir, sizeof dir, err);
    st = st ? st : dsort_ckpt_read(dir, k, err);
    int back = 0;
    st = pick_round(c, dir, k, &back, st, err); /* collective */
    char where[4300];
    snprintf(where, sizeof where, "%s%s%s", dir, back ? "/" : "", back ? DSORT_CKPT_PREV : "");
    st = st ? st : usable(c, o, in, k, where, job, err);
    if (!st) /* (puts them under keep mode first) */
        st = dsort_tempdirs_adopt(td, temps, n, job, c->rank, (unsigned)k->next_run, err);
    if (!st && back)
        st = go_back(td, k, err);
    if (!st)
        dsort_job_regroup_temps(o, temps, n, td);
    free(temps);
    if ((st = dsort_comm_agree(c, st, err))) {
        dsort_tempdirs_keep(td); /* as it was found */
        dsort_cleanup_keep_dirs(NULL, 0, NULL);
        dsort_ckpt_free(k);
        return st;
    }
    if (!dsort_comm_all_ok(c, !back) && c->rank == 0)
        fprintf(stderr,
                "dsort: rank 0/%d (%s): note: the checkpoint was torn (a signal came between the "
                "ranks' saves of round %" PRIu64 "): resuming from round %" PRIu64
                ", the newest every rank kept\n",
                c->size, c->host, k->rounds + 1, k->rounds);
    return DSORT_OK;
}

/* The manifests a rank keeps in each of its directories: this save's and the one before. */
static const char *const manifests[] = {DSORT_CKPT_FILE, DSORT_CKPT_PREV};
#define NMANIFESTS (sizeof manifests / sizeof manifests[0])

/* Forget td's manifests in the cleanup registry (they are kept on disk, or were removed). */
static void forget_manifests(const struct dsort_tempdirs *td)
{
    char path[4300];
    for (size_t i = 0; i < td->count; i++)
        for (size_t m = 0; m < NMANIFESTS; m++) {
            snprintf(path, sizeof path, "%s/%s", td->dirs[i], manifests[m]);
            dsort_cleanup_forget(path);
        }
}

/* The resumed job accepted the checkpoint: its owner files, and the manifests go with the temp
 * directories from now on. Agreed; on failure nothing is registered. */
static enum dsort_status own(const struct dsort_comm *c, struct dsort_tempdirs *td,
                             struct dsort_error *err)
{
    /* this process owns the directories now (the sweep judges it alive) */
    enum dsort_status st = dsort_tempdirs_claim(td, err);
    for (size_t i = 0; i < td->count && !st; i++)
        for (size_t m = 0; m < NMANIFESTS && !st; m++) {
            char path[4300];
            snprintf(path, sizeof path, "%s/%s", td->dirs[i], manifests[m]);
            if (!access(path, F_OK))
                st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, err);
        }
    if ((st = dsort_comm_agree(c, st, err)))
        forget_manifests(td); /* the caller keeps what was found */
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
        /* the file written before it is renamed in place: a signal in between (outside keep
         * mode: the first save) must not leave it, and with it the directory, behind */
        snprintf(path, sizeof path, "%s/%s.tmp", td->dirs[i], DSORT_CKPT_FILE);
        dsort_cleanup_forget(path);
        st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, err);
        if (!st)
            st = dsort_ckpt_write(td->dirs[i], k, durable, err);
        snprintf(path, sizeof path, "%s/%s", td->dirs[i], DSORT_CKPT_FILE);
        dsort_cleanup_forget(path);
        if (!st)
            st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, err);
    }
    memset(&k->runs, 0, sizeof k->runs);
    return st;
}

/* Before a round's save: this rank's manifest so far becomes the save before (a hard link
 * DSORT_CKPT_PREV), in every directory, registered as a temp file as the manifest is. None yet
 * (the first save) is fine; so is a file system without hard links (then a torn save is
 * refused, as it was before there was a save before). */
static enum dsort_status keep_prev(const struct dsort_tempdirs *td, struct dsort_error *err)
{
    char cur[4300], prev[4300];
    for (size_t i = 0; i < td->count; i++) {
        snprintf(cur, sizeof cur, "%s/%s", td->dirs[i], DSORT_CKPT_FILE);
        snprintf(prev, sizeof prev, "%s/%s", td->dirs[i], DSORT_CKPT_PREV);
        if (unlink(prev) && errno != ENOENT)
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot remove '%s'", prev);
        if (link(cur, prev)) {
            if (errno == ENOENT || errno == EPERM || errno == EOPNOTSUPP || errno == EMLINK ||
                errno == EXDEV || errno == ENOSYS)
                continue;
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot keep the checkpoint '%s' as '%s'", cur,
                             prev);
        }
        dsort_cleanup_forget(prev);
        enum dsort_status st = dsort_cleanup_add(prev, DSORT_CLEANUP_FILE, err);
        if (st)
            return st;
    }
    return DSORT_OK;
}

enum dsort_status dsort_job_ckpt_save(const struct dsort_comm *c, const struct dsort_job_options *o,
                                      const struct dsort_inputs *in, const char *job,
                                      struct dsort_ckpt *k, const struct dsort_tempdirs *td,
                                      const struct dsort_runset *runs, int durable,
                                      struct dsort_error *err)
{
    enum dsort_status st = keep_prev(td, err);
    if (!st)
        st = dsort_job_ckpt_write(c, o, in, job, k, td, runs, 0, durable, err);
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
    forget_manifests(td); /* kept now */
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
    forget_manifests(td);
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
    dsort_job_ckpt_unclaim(); /* a resume's lock: the checkpoint goes now */
    dsort_cleanup_keep_dirs(NULL, 0, NULL);
    char path[4300];
    for (size_t i = 0; i < td->count; i++)
        for (size_t m = 0; m < NMANIFESTS; m++) {
            snprintf(path, sizeof path, "%s/%s", td->dirs[i], manifests[m]);
            if (!unlink(path) || errno == ENOENT)
                dsort_cleanup_forget(path);
        }
    dsort_runset_drop(runs, 0, runs->n);
}
