/* job.h - the pipelines (the library dsort_pipeline, src/pipeline/): the job's options, this
 * rank's share of the input, the pipelines' entry points and the small helpers they share
 * (composite keys, checksums, the output, the job's name). The program parses options, chooses
 * a pipeline and reports; the pipelines do the rest. Collective unless marked local; every
 * pipeline returns the exit code after agreeing, and prints only through dsort_comm_agree.
 * Pipelines: job_mem.c (in memory), job_map.c (in memory over a mapped input), ooc_sort.c (out
 * of core, the formats' parts in ooc_fixed.c and ooc_lines.c). Beside this header: phase.h (the
 * phase clock and the per-rank figures), job_end.h (the checks before the commit and the commit),
 * job_ckpt.h (stop and resume), job_topo.h (the node's plan and the temp dirs), runset.h (no MPI).
 */
#ifndef DSORT_JOB_H
#define DSORT_JOB_H

#include <stdint.h>
#include <stdio.h>

#include "budget.h"
#include "checksum.h"
#include "comm.h"
#include "exchange.h"
#include "format.h"
#include "io.h"
#include "tempdir.h"

struct dsort_keys;
struct dsort_recfmt;
struct dsort_job_stats;
struct dsort_job_topo;

struct dsort_job_options {
    struct dsort_format fmt; /* --format lines: 1-byte "records" (the inputs as bytes) */
    int lines;               /* --format lines */
    /* the format's table (recfmt.h), chosen once with fmt and lines by the options */
    const struct dsort_recfmt *recfmt;
    unsigned char eol;       /* lines: '\n', or '\0' with -z */
    struct dsort_keys *keys; /* lines: GNU sort's keys and options */
    struct dsort_order ord;
    const char *output, *output_dir, *stats;
    int check, verbose, verify, no_direct;
    double progress;  /* --progress: seconds between lines in a log; < 0: off */
    char **temp_dirs; /* -T, in order; never empty after parsing */
    size_t ntemp;
    uint64_t chunk;                         /* exchange message limit */
    enum dsort_exchange_kind exchange_kind; /* --exchange */
    struct dsort_exchange *exchange;        /* opened for it by the program before sorting */
    uint64_t block;                         /* I/O block bytes */
    int force_external;
    /* Stop and resume (job_ckpt.c): an out-of-core job stopped at the end of a round keeps
     * its runs and a checkpoint, and exits DSORT_EXIT_STOPPED. */
    int checkpoint;           /* --checkpoint: SIGUSR1 during the rounds stops with a checkpoint */
    uint64_t stop_after;      /* --stop-after=N: stop with a checkpoint after round N (0: never) */
    uint64_t keep_checkpoint; /* --keep-checkpoint: the sweep keeps dead jobs' checkpoints
                               * this many seconds (DSORT_CHECKPOINT_KEEP) */
    int resume;               /* --resume: go on from this job's checkpoint */
    const char *shape;        /* the options that shape the output, as text (made by the program) */
    int local_inputs;         /* each node reads the paths it has (node-local disks) */
    int local_output;         /* -O DIR is node-local: each node has its own DIR */
    int plan, plan_json, bind;
    int one_stream; /* read each share with one stream, ignoring devices (for comparison) */
    int no_map;     /* in memory: copy the input, never map it (for comparison) */
    uint32_t streams_per_device; /* for SSD/NVMe; rotational disks get 1 */
    struct dsort_job_topo *topo; /* the node's plan (set by the program before sorting) */
    char **inputs;
    size_t ninputs;
    int stdin_rank0; /* rank 0 alone opens and reads the inputs (copies of standard input or
                        of /proc files among them; the other ranks' inputs are empty): see
                        dsort_job_share */
    /* Typed keys (job_typed.h): the records in flight are widened to normkey || record, and
     * fmt is their format; NULL without typed keys. */
    const struct dsort_typedkey *typed;
};

/* The exit status of a job stopped with a checkpoint (resume it with --resume). */
#define DSORT_EXIT_STOPPED 3

/* This rank's share of the input: records [first, first + n) of the inputs it opened, which
 * are records [g0, g0 + n) of the job's input order. Shared inputs: the job's records cut
 * evenly over the ranks. Node-local inputs: each node's records cut over the node's ranks;
 * the job's order is node order (by lowest rank), then path order, then offset. */
struct dsort_share {
    uint64_t first, n, g0;
};
/* Collective; agrees. */
enum dsort_status dsort_job_share(const struct dsort_comm *c, const struct dsort_job_options *o,
                                  const struct dsort_inputs *in, struct dsort_share *sh,
                                  struct dsort_error *err);

/* Composite keys (memcmp order = output order): copy len bytes, complemented when flip
 * (a descending order); and a big-endian 64-bit number. */
void dsort_job_put_bytes(unsigned char *out, const unsigned char *in, size_t len, int flip);
void dsort_job_put_be64(unsigned char *out, uint64_t v);
/* The number dsort_job_put_be64 wrote at p. */
uint64_t dsort_job_get_be64(const unsigned char *p);

/* A failed allocation of bytes for what (e.g. "the sort buffers") into err (errnum: the
 * allocation's errno): "cannot allocate N bytes of WHAT", and when the process has a memory
 * limit (ulimit -v or -d), that limit, its use, and "raise the limit, or give a smaller -S".
 * Returns DSORT_ENOMEM. Local. */
enum dsort_status dsort_job_alloc_error(struct dsort_error *err, int errnum, const char *what,
                                        uint64_t bytes);

/* The checksums of n records of rec_size bytes: the conservation sum (CRC32C) into con, and
 * with `valsort` (--verify on inputs; --verify or -O on outputs) valsort's CRC-32 into sum. */
void dsort_job_sum_records(int valsort, const unsigned char *recs, uint64_t n, size_t rec_size,
                           struct dsort_sum128 *sum, struct dsort_sum128 *con);
/* The exact splitters' composite key of rec, the i-th record of a rank's sorted run whose share
 * starts at g0 in the job's input order: normalised key, normalised tie bytes (the whole record
 * for the default order), g0, i (c->key_len + c->tie_len + 16 bytes). Unique across the job,
 * and memcmp order is the output order. */
void dsort_job_run_key(const struct dsort_cmp *c, const unsigned char *rec, uint64_t g0, uint64_t i,
                       unsigned char *out);

/* Local: ns <= n sample positions in [0, n) of the share that starts at job-wide position g0,
 * in increasing order: all of them when ns = n (exact splitters), else one drawn uniformly
 * from each of ns equal stretches of n/ns records (a hash of g0 and k: the same on every run;
 * every record has the same chance). Evenly spaced
 * positions weigh the phases of a periodic input unevenly (8 keys repeating every 8 records: a
 * rank got 1.5x the average at 3 ranks); drawn ones are unbiased, and drawn a stretch each they
 * err less than drawn from the whole share (CI once found a rank of 7 at 1.052x on 20,000
 * equal keys, a share of 2,857 sampled 2,857 times with repeats). */
void dsort_job_sample_positions(uint64_t g0, uint64_t n, uint64_t ns, uint64_t *at);

/* Local: the composite keys (dsort_recfmt_fixed's sample_key under fx) of the fixed records at
 * positions at[0 .. ns) (increasing) of the share that starts at input record first and at
 * job-wide position g0, into keys (ns * fx->ks bytes): every record's page asked for first, so
 * that a disk has them all queued (4096 one after another took 0.42 s from a cold cache here,
 * docs/performance.md), then each read. Errors name the input. */
struct dsort_recfmt_ctx;
enum dsort_status dsort_job_sample_keys(const struct dsort_job_options *o,
                                        const struct dsort_inputs *in, uint64_t first, uint64_t g0,
                                        const uint64_t *at, uint64_t ns,
                                        const struct dsort_recfmt_ctx *fx, unsigned char *keys,
                                        struct dsort_error *err);

/* Bytes of memory the in-memory pipeline needs for n records at p ranks. */
uint64_t dsort_job_mem_needed(const struct dsort_format *fmt, uint64_t n, int p);

/* The pipelines, over this rank's share sh (dsort_job_share). Collective; return the exit
 * code (0, or 2 after an agreed error). */
int dsort_job_sort_memory(const struct dsort_comm *c, const struct dsort_job_options *o,
                          const struct dsort_inputs *in, const struct dsort_share *sh,
                          struct dsort_job_stats *stats);
/* In memory over a mapped input (job_map.c): when every rank is on one node and reads one
 * input file (dsort_job_map_usable, collective, every rank the same answer), the records stay
 * in the page cache and only 16-byte entries are sorted and exchanged. */
int dsort_job_map_usable(const struct dsort_comm *c, const struct dsort_job_options *o,
                         const struct dsort_inputs *in);
int dsort_job_sort_mapped(const struct dsort_comm *c, const struct dsort_job_options *o,
                          const struct dsort_inputs *in, const struct dsort_share *sh,
                          struct dsort_job_stats *stats);
/* Out of core (ooc_sort.c): one skeleton for every record format, the pipeline chosen by the
 * format's table (o->recfmt): sample, then rounds of read, sort, exchange and spill; merge.
 * Text lines choose between memory and spilling themselves (one round, no spill, when every
 * share fits). Collective; returns the exit code. */
int dsort_job_sort_ooc(const struct dsort_comm *c, const struct dsort_job_options *o,
                       const struct dsort_inputs *in, const struct dsort_share *sh,
                       struct dsort_job_stats *stats);

/* The job's scaffold, the same for every pipeline. */
struct dsort_output;
/* Collective: open the output that o names (-o FILE, -O DIR, node-local -O DIR) with this
 * rank's share of bytes (0 when not known yet, see dsort_output_set_share). On failure the
 * error has been agreed and printed; return 2. */
enum dsort_status dsort_job_output_open(const struct dsort_comm *c,
                                        const struct dsort_job_options *o, uint64_t share,
                                        struct dsort_output *out, struct dsort_error *err);
/* Collective: rank 0 names the job (its temp directories); every rank gets the name. */
void dsort_job_name(const struct dsort_comm *c, char *job, size_t len);

/* Local: an on/off setting from the environment (the comparison aids DSORT_READAHEAD and
 * DSORT_COPY_TWO_BUFFERS): on when set to anything but empty or "0". */
int dsort_job_env_flag(const char *name);

#endif
