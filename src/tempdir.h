/* tempdir.h - per-job temp directories for spilled runs, and sweeping dead jobs' leftovers.
 *
 * Each rank makes one directory in every temp dir it is given (-T, default $TMPDIR then
 * /tmp): "dsort-JOB-rRANK", mode 0700, holding an "owner" file with the host name and pid.
 * Runs are spread over the directories round-robin. Everything is registered with the
 * cleanup module, so it goes on success, on error and on SIGTERM/SIGINT.
 * A directory left by a job that was killed (SIGKILL leaves no chance to clean) is found by a
 * later run: dsort_tempdirs_sweep removes those whose owner ran on this host and is no longer
 * alive, and reports those it cannot judge (owned by another host). Local.
 */
#ifndef DSORT_TEMPDIR_H
#define DSORT_TEMPDIR_H

#include <stddef.h>

#include "error.h"

struct dsort_tempdirs {
    size_t count;
    char **dirs;            /* this rank's per-job directories */
    size_t next;            /* round-robin position */
    volatile unsigned runs; /* run files named so far (the cleanup series reads it) */
};

/* Create this rank's directory in each of the n bases. job must be a short file-name-safe
 * string that is the same on every rank of the job. On failure nothing is left behind. */
enum dsort_status dsort_tempdirs_create(struct dsort_tempdirs *t, char *const *bases, size_t n,
                                        const char *job, int rank, struct dsort_error *err);

/* Name a new run file (round-robin over the directories) into buf. */
void dsort_tempdirs_run_path(struct dsort_tempdirs *t, char *buf, size_t len);

/* Remove the owner files and directories (run files must be gone). t may be empty. */
void dsort_tempdirs_destroy(struct dsort_tempdirs *t);

struct dsort_sweep_report {
    unsigned removed; /* dead jobs' directories removed */
    unsigned foreign; /* directories owned by other hosts, left alone */
    unsigned alive;   /* directories of jobs still running here */
};

/* Sweep the bases for dead jobs' directories (see above). Never fails; best effort. */
void dsort_tempdirs_sweep(char *const *bases, size_t n, struct dsort_sweep_report *rep);

/* A job name for the temp directories: Slurm's job and step id when set, else host-pid. */
void dsort_tempdirs_job_name(char *buf, size_t len);

#endif
