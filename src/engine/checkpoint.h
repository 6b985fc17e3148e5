/* checkpoint.h - what a stopped out-of-core job keeps so that `dsort --resume` can finish it:
 * one manifest a rank, "checkpoint" in the rank's first temp directory, beside its runs.
 *
 * A stop (--stop-after, or SIGUSR1 under --checkpoint) is taken at the end of a round, where
 * every run is complete, closed and counted: the manifest lists them (path, records, bytes;
 * each run's blocks carry their own CRC32C, checked when they are read back), the input this
 * rank has consumed, the splitters, the checksums of what was read, the run block, and what
 * the job was: the rank count and rank, the options that shape the output ("shape", made by
 * the program) and every input's identity (path, size, mtime, ctime, inode, device), and the
 * CRC32C of sampled windows of the input this rank had consumed: an input rewritten in place
 * with its mtime put back (cp -p, rsync -t --inplace, touch -r) has another ctime, and other
 * bytes where it was sampled. Resume refuses a manifest whose job differs, naming the
 * difference.
 *
 * The file is text, one "key value" a line, strings hex-encoded, every key but input, run and
 * sample (at most once; version 1 had none, nor an input's ctime) exactly once (a run line also has
 * each of its files' size and path, several for a run striped over devices, sizes checked on
 * resume); written as checkpoint.tmp, fsynced (when durable), renamed, and the directory fsynced,
 * so that a crash leaves the old one or the new. Local, no MPI. Errors: DSORT_EIO (naming the
 * file), DSORT_EFORMAT (a manifest that does not parse), DSORT_ENOMEM.
 */
#ifndef DSORT_CHECKPOINT_H
#define DSORT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "checksum.h"
#include "error.h"
#include "io.h"
#include "runset.h"

#define DSORT_CKPT_FILE "checkpoint"
/* The manifest of the save before (a hard link to what DSORT_CKPT_FILE was), kept by the
 * pipeline (job_ckpt.c) so that a save torn between the ranks can resume from the one before. */
#define DSORT_CKPT_PREV "checkpoint.prev"

struct dsort_ckpt_input {
    char *path;
    uint64_t size, ino, dev;
    int64_t mtime_s, mtime_ns;
    int64_t ctime_s, ctime_ns;
    int has_ctime; /* 0: a manifest of version 1, which had none */
};

/* Windows of the consumed input sampled for a checkpoint (each DSORT_CKPT_WINDOW bytes, or one
 * record when records are larger). */
#define DSORT_CKPT_SAMPLES 32
#define DSORT_CKPT_WINDOW 4096

struct dsort_ckpt {
    char *job;   /* the temp directories' job name */
    char *shape; /* the options that shape the output */
    int rank, size;
    size_t ninputs;
    struct dsort_ckpt_input *inputs;
    uint64_t rounds;   /* rounds done */
    uint64_t consumed; /* this rank's share consumed (records, or bytes of lines) */
    uint64_t block;    /* the run files' block */
    uint64_t bytes_read, lines_in, longest; /* the figures of what was read */
    struct dsort_sum128 sum_in, con_in;
    uint64_t next_run;   /* the temp directories' run counter */
    unsigned char *blob; /* the splitters (the pipeline's encoding) */
    size_t blob_len;
    struct dsort_runset runs; /* the runs (kept: never unlinked by dsort_ckpt_free) */
    uint64_t *run_sizes;      /* read: each run file's size when it was kept: file j of run i at
                               * [i * DSORT_RUN_MAX_STRIPES + j] */
    /* The input this rank consumed, [sample_from, sample_to) in units of the inputs' rec_size
     * (records, or bytes of lines), and the CRC32C of nsample windows spread over it (0: none,
     * as in a manifest of version 1). */
    uint64_t sample_from, sample_to;
    size_t nsample;
    uint32_t sample[DSORT_CKPT_SAMPLES];
};

/* Fill k's inputs from in (copies). */
enum dsort_status dsort_ckpt_set_inputs(struct dsort_ckpt *k, const struct dsort_inputs *in,
                                        struct dsort_error *err);
/* Write k as dir/checkpoint (atomically, see the top); durable: fsync the file and the
 * directory (else a crash of the machine may lose it; the process's own death does not). */
enum dsort_status dsort_ckpt_write(const char *dir, const struct dsort_ckpt *k, int durable,
                                   struct dsort_error *err);
/* Read dir/checkpoint into k (zeroed first). DSORT_EIO with errno ENOENT when there is none. */
enum dsort_status dsort_ckpt_read(const char *dir, struct dsort_ckpt *k, struct dsort_error *err);
/* Read the manifest file path (e.g. dir/checkpoint.prev) into k, as dsort_ckpt_read does. */
enum dsort_status dsort_ckpt_read_file(const char *path, struct dsort_ckpt *k,
                                       struct dsort_error *err);
/* Does the checkpoint belong to this job? 0 if it does; else 1 with why (of len bytes) naming
 * the first difference: the options, the rank count, an input (added, gone, changed). */
int dsort_ckpt_differs(const struct dsort_ckpt *k, const char *shape, int size,
                       const struct dsort_inputs *in, char *why, size_t len);
/* Sample the input k consumed (k->sample_from, k->sample_to set) into k->sample. DSORT_EIO
 * naming the input that cannot be read. */
enum dsort_status dsort_ckpt_sample(struct dsort_ckpt *k, const struct dsort_inputs *in,
                                    struct dsort_error *err);
/* Is the input k consumed still what was sampled? 0 if it is (or k has no sample); 1 with why
 * naming the input and the offset of the first window that differs; -1 with err on a read
 * error. */
int dsort_ckpt_sample_differs(const struct dsort_ckpt *k, const struct dsort_inputs *in, char *why,
                              size_t len, struct dsort_error *err);
/* Free k (its run list too, leaving the files). */
void dsort_ckpt_free(struct dsort_ckpt *k);

#endif
