/* tempdir.h - per-job temp directories for spilled runs, and sweeping dead jobs' leftovers.
 *
 * Each rank makes one directory in every temp dir it is given (-T, default $TMPDIR then
 * /tmp): "dsort-JOB-rRANK", mode 0700, holding an "owner" file (mode 0600) that describes
 * the process (owner.h: host, boot, pid namespace, pid, start time). The directories are
 * grouped by device (st_dev): on one device, runs are spread over them round-robin; on
 * several, each run is striped over the devices (dsort_tempdirs_run_stripes). Everything is
 * registered with the cleanup module, so it goes on success, on error and on SIGTERM/SIGINT.
 *
 * What a job killed by SIGKILL leaves is found by a later run. dsort_tempdirs_sweep removes a
 * directory only when all of this holds, and touches nothing else:
 *   - it is a real directory (no symlink is followed: each level is opened with O_NOFOLLOW
 *     and everything below is removed with unlinkat relative to the opened directory),
 *     owned by our effective uid, with permission bits exactly 0700;
 *   - its owner file parses (the old "HOST PID" form does not) and its owner is provably
 *     dead (dsort_owner_judge).
 * Only the run files ("run-*") and the owner file are removed, then the directory; anything
 * else inside makes the final rmdir fail and the directory stays. A directory with no owner
 * file (a job killed while cleaning up) is only rmdir'ed, when it is empty, was named on this
 * host and its name's pid does not exist. dsort_outtemps_sweep does the same for output temps
 * (owner.h), judged from their names. Local; best effort, never fails.
 */
#ifndef DSORT_TEMPDIR_H
#define DSORT_TEMPDIR_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct dsort_tempdirs {
    size_t count;
    char **dirs;            /* this rank's per-job directories */
    size_t next;            /* round-robin position */
    volatile unsigned runs; /* run files named so far (the cleanup series reads it) */
    /* The devices under the directories (st_dev of each per-job directory): two directories
     * on one file system are one device, so one read-ahead stream serves both. */
    size_t ndev;    /* distinct devices (>= 1 once created or adopted) */
    size_t *dev_of; /* dev_of[i]: the device of dirs[i], numbered in order of first appearance */
};

/* Create this rank's directory in each of the n bases. job must be a short file-name-safe
 * string that is the same on every rank of the job. On failure nothing is left behind. */
enum dsort_status dsort_tempdirs_create(struct dsort_tempdirs *t, char *const *bases, size_t n,
                                        const char *job, int rank, struct dsort_error *err);

/* Take over the directories of a stopped job (--resume) named like create's: each must exist
 * and be ours (this uid, mode 0700, not a symlink) and its owner must not be running; they
 * are put under keep mode (cleanup.h: a signal leaves them whole), then registered for cleanup
 * as create's are, and run names go on from `runs`. Nothing on disk
 * is changed (dsort_tempdirs_keep gives them up again); dsort_tempdirs_claim then writes this
 * process's owner files. */
enum dsort_status dsort_tempdirs_adopt(struct dsort_tempdirs *t, char *const *bases, size_t n,
                                       const char *job, int rank, unsigned runs,
                                       struct dsort_error *err);
enum dsort_status dsort_tempdirs_claim(struct dsort_tempdirs *t, struct dsort_error *err);
/* Leave the directories as they are (a stop that keeps a checkpoint): forget them and their
 * owner files in the cleanup registry and free t. The run series is the caller's to forget. */
void dsort_tempdirs_keep(struct dsort_tempdirs *t);

/* A directory with a "checkpoint" file (a stopped job, see --resume) younger than this is
 * kept by the sweep even when its owner is dead: a week, by default (--keep-checkpoint). */
#define DSORT_CHECKPOINT_KEEP (7 * 24 * 3600)

/* Name a new run file (round-robin over the directories) into buf. */
void dsort_tempdirs_run_path(struct dsort_tempdirs *t, char *buf, size_t len);

/* Name a new run's files into buf (max names of len bytes each, at buf + i * len): with the
 * directories on one device, one file named as run_path does; with them on several, one file
 * per device (at most max), each in that device's first directory and all of the same name
 * ("run-N": the cleanup series and the sweep cover them). Returns the number of files. */
size_t dsort_tempdirs_run_stripes(struct dsort_tempdirs *t, char *buf, size_t len, size_t max);

/* The device (in [0, ndev)) of a path inside one of t's directories ("DIR/NAME"); 0 for any
 * other path, and when t is NULL or empty. Pure. */
size_t dsort_tempdirs_device_of(const struct dsort_tempdirs *t, const char *path);

/* Group the directories again by the caller's device ids (devs[i] for dirs[i], in the order
 * of the bases given to create or adopt): the topology knows the physical disk behind a file
 * system (two partitions of one disk are one disk, and striping over them would only make its
 * head seek between them). Local; cannot fail. */
void dsort_tempdirs_regroup(struct dsort_tempdirs *t, const uint64_t *devs);

/* The devices under n directories (as create would group their per-job directories, which
 * are inside them): at least 1. For planning memory before the directories are made. */
size_t dsort_tempdirs_count_devices(char *const *bases, size_t n);

/* Pure: number n device ids in order of first appearance: dev_of[i] gets the number of
 * devs[i]. Returns the number of distinct ids (0 when n is 0). */
size_t dsort_tempdirs_group(const uint64_t *devs, size_t n, size_t *dev_of);

/* Remove the owner files (and a resumed job's checkpoint) and the directories (run files must
 * be gone). t may be empty. */
void dsort_tempdirs_destroy(struct dsort_tempdirs *t);

struct dsort_sweep_report {
    unsigned removed; /* dead jobs' directories (or output temps) removed */
    unsigned foreign; /* directories of jobs of other hosts, left alone */
    unsigned alive;   /* directories (output temps) of processes still running here */
    unsigned unknown; /* left alone, owner not provably dead: no owner file or an old or bad
                       * one, another boot or pid namespace, or (output temps) another place */
    unsigned kept;    /* dead jobs' directories with a checkpoint, kept for --resume */
    unsigned unsafe;  /* left alone, not ours to judge: a symlink or other non-directory (not
                       * a regular file, for -o temps), another uid, a mode other than 0700 */
};

/* Sweep the bases for dead jobs' directories named "dsort-*-PID-rN" (see above), keeping those
 * whose checkpoint is younger than keep seconds. Never fails; best effort. */
void dsort_tempdirs_sweep(char *const *bases, size_t n, uint64_t keep,
                          struct dsort_sweep_report *rep);

/* Sweep dir (the directory of an -o file or of an -O directory) for output temps of dead
 * processes: entries ".BASE.dsort-HASH-PID-START-XXXXXX" (owner.h) owned by our effective
 * uid whose owner is provably dead. A regular file (an -o temp) is unlinked; a directory (an
 * -O staging directory) is opened without following symlinks, its "part-NNNNN", "_SUCCESS"
 * and "._SUCCESS.tmp" are unlinked relative to it, then it is rmdir'ed (which fails, leaving
 * it, if anything else is inside). Other names, symlinks and other types are left alone.
 * Never fails; best effort. */
void dsort_outtemps_sweep(const char *dir, struct dsort_sweep_report *rep);

/* A job name for the temp directories: Slurm's job and step id when set, else host-pid. */
void dsort_tempdirs_job_name(char *buf, size_t len);

#endif
