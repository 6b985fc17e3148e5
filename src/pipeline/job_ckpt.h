/* job_ckpt.h - stop and resume of an out-of-core job (job_ckpt.c; the manifest itself is
 * checkpoint.h). Collective where marked, else local.
 */
#ifndef DSORT_JOB_CKPT_H
#define DSORT_JOB_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "io.h"
#include "tempdir.h"

struct dsort_job_options;

struct dsort_ckpt;
struct dsort_runset;
/* Collective, --resume: go on from this job's checkpoint. Rank 0 looks in the -T dirs for a
 * stopped job's directory of rank 0 whose checkpoint has the same options (shape) and rank
 * count; every rank then reads its own manifest (its rank's directory of that job), checks it
 * against the inputs as they are now and that its runs are there, and adopts the temp
 * directories (run names go on); take(ctx, k) then gives the pipeline the checkpoint's state
 * (its runs into `runs`). job gets the job's name. Agrees; a refusal (of any rank's, take's
 * included) names what differs and leaves everything on disk as it was found. From success on
 * the manifests go with the temp directories, as every temp file does. */
enum dsort_status dsort_job_resume(const struct dsort_comm *c, const struct dsort_job_options *o,
                                   const struct dsort_inputs *in, struct dsort_tempdirs *td,
                                   struct dsort_runset *runs, char *job, size_t joblen,
                                   enum dsort_status (*take)(void *ctx, struct dsort_ckpt *k),
                                   void *ctx, struct dsort_error *err);
/* Local, rank 0 (job_ckpt_find.c): the job name of a checkpoint of this job (same options and
 * rank count) in the -T dirs, into job, its directory locked (flock, held until
 * dsort_job_ckpt_unclaim or exit) so that a second resume of it is refused at once. An error
 * when there is none, naming the nearest checkpoint found and what differs. */
enum dsort_status dsort_job_ckpt_find(const struct dsort_comm *c, const struct dsort_job_options *o,
                                      const struct dsort_inputs *in, char *job, size_t joblen,
                                      struct dsort_error *err);
/* Local: let go of the lock of dsort_job_ckpt_find (none: nothing). */
void dsort_job_ckpt_unclaim(void);
/* Collective, at the end of a round (after rounds_done of the job's rounds): stop now? On
 * --stop-after=N from round N on, or under --checkpoint when any rank got SIGUSR1. Every rank
 * gets the same answer; without either option 0 at once, with no communication. */
int dsort_job_stop_now(const struct dsort_comm *c, const struct dsort_job_options *o,
                       uint64_t rounds_done);
/* Local: the job under --checkpoint or --stop-after (not --resume) fits in memory, so it will
 * keep no checkpoint: rank 0 says so in one line on standard error, at the start, instead of
 * the job stopping nowhere silently (--out-of-core is the way to have one). */
void dsort_job_ckpt_note_memory(const struct dsort_comm *c, const struct dsort_job_options *o);
/* Checkpoints. Under --checkpoint a job saves one at the end of every round (and rewrites it
 * after every extra merge pass), so that whatever stops it - the stop it asked for, SIGTERM,
 * SIGUSR1 in the final merge, SIGKILL - leaves a checkpoint of its last round on disk.
 *
 * Local: write k (its job, shape, rank, size and inputs are set here the first time; its runs
 * are `runs` less the first skip; its run counter td's) as this rank's manifest into every
 * directory of td, registered as temp files (an error removes them with the runs); durable:
 * fsynced (a stop's; the rounds' and passes' are not: the runs are not either, and a process's
 * death keeps what it wrote). */
enum dsort_status dsort_job_ckpt_write(const struct dsort_comm *c,
                                       const struct dsort_job_options *o,
                                       const struct dsort_inputs *in, const char *job,
                                       struct dsort_ckpt *k, const struct dsort_tempdirs *td,
                                       const struct dsort_runset *runs, size_t skip, int durable,
                                       struct dsort_error *err);
/* Collective: dsort_job_ckpt_write on every rank (agreed), then dsort_job_ckpt_keep. */
enum dsort_status dsort_job_ckpt_save(const struct dsort_comm *c, const struct dsort_job_options *o,
                                      const struct dsort_inputs *in, const char *job,
                                      struct dsort_ckpt *k, const struct dsort_tempdirs *td,
                                      const struct dsort_runset *runs, int durable,
                                      struct dsort_error *err);
/* Collective: from now on a signal leaves td's directories as they are (cleanup.h, keep mode)
 * until dsort_cleanup_keep_dirs(NULL, 0, NULL). */
enum dsort_status dsort_job_ckpt_keep(const struct dsort_comm *c, const struct dsort_tempdirs *td,
                                      struct dsort_error *err);
/* After a save: stop. Rank 0 says what was kept (k's rounds) and how to resume; the runs and
 * the temp directories are left on disk (forgotten by the cleanup registry; runs and td are
 * emptied); keep mode ends. */
void dsort_job_ckpt_stop(const struct dsort_comm *c, const struct dsort_ckpt *k,
                         struct dsort_tempdirs *td, struct dsort_runset *runs);
/* Local, once the output is committed (a job with a checkpoint on disk), or once the final
 * merge is over (one without: the commit's fsync is slower while the runs are there, 0.3 s of
 * 2.4 s at 400 MB on 2 ranks): end keep mode, remove the manifests, then the runs. Without a
 * checkpoint it only drops the runs. */
void dsort_job_ckpt_end(const struct dsort_tempdirs *td, struct dsort_runset *runs);
/* Local, on a failed job (an agreed error) whose checkpoint is on disk and not at fault: keep
 * it, as a stop does: remove the run files it does not list (what the failed stretch wrote),
 * leave the rest on disk (td and runs are emptied), end keep mode, and rank 0 says where it is
 * and to resume once the cause is mended. 1 if kept; 0 if this rank's checkpoint cannot be
 * read (then the caller removes everything, as after any error). */
int dsort_job_ckpt_fail(const struct dsort_comm *c, struct dsort_tempdirs *td,
                        struct dsort_runset *runs);

#endif
