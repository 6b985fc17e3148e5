/* job.h - the pipelines (the library dsort_pipeline, src/pipeline/) and what they share:
 * options, per-rank figures, the job's scaffold (output, job name, the checks before the
 * commit) and the small collective helpers. The dsort program parses options, chooses a
 * pipeline and reports; the pipelines do the rest. Collective unless marked local; every
 * pipeline returns the exit code after agreeing, and prints only through dsort_comm_agree.
 *
 *   in memory (job_mem.c): read share -> radix sort -> exact splitters -> one exchange
 *                          -> merge -> write -> commit
 *   in memory on one node (job_map.c): map the input -> radix sort of entries -> exact
 *                          splitters -> exchange of entries -> merge, copying records from
 *                          the mapping to the writer thread -> commit
 *   out of core (job_ext.c): sample -> splitters; per memory-sized chunk: read -> sort -> cut
 *                          -> exchange -> merge received pieces into a spilled run;
 *                          then merge runs (extra passes only beyond the fan-in) -> write
 *   text lines (job_lines.c): the same rounds over variable-length lines
 * The run set, fan-in and wave planners they share are runset.h (no MPI).
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

enum dsort_phase {
    PH_SAMPLE,
    PH_READ,
    PH_SORT,
    PH_SPLIT,
    PH_EXCHANGE,
    PH_MERGE,
    PH_SPILL,
    PH_FINAL_MERGE,
    PH_WRITE,
    PH_COMMIT,
    PH_COUNT
};
extern const char *const dsort_phase_names[PH_COUNT];

struct dsort_keys;

struct dsort_job_options {
    struct dsort_format fmt; /* --format lines: 1-byte "records" (the inputs as bytes) */
    int lines;               /* --format lines */
    unsigned char eol;       /* lines: '\n', or '\0' with -z */
    struct dsort_keys *keys; /* lines: GNU sort's keys and options */
    struct dsort_order ord;
    const char *output, *output_dir, *stats;
    int check, verbose, verify, no_direct;
    double progress;         /* --progress: seconds between lines in a log; < 0: off */
    const char *memory_text; /* -S as given, or NULL */
    char **temp_dirs;        /* -T, in order; never empty after parsing */
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
};

/* The exit status of a job stopped with a checkpoint (resume it with --resume). */
#define DSORT_EXIT_STOPPED 3

/* Block devices watched per phase (dsort_job_watch_disks): at most this many disks. */
#define DSORT_JOB_DISKS 6
#define DSORT_JOB_DISK_NAME 32
/* One disk in one phase: the block layer's counters (/sys/class/block/DISK/stat), so the
 * node's other I/O on the disk is included; page-cache hits are not device I/O. */
struct dsort_job_disk_phase {
    uint64_t read, written; /* bytes (sectors x 512) */
    uint64_t busy_ms;       /* io_ticks: milliseconds the disk had I/O in flight */
};

/* Per-rank figures, gathered to rank 0 as a flat struct. */
struct dsort_job_stats {
    double t[PH_COUNT];
    uint64_t io_read[PH_COUNT], io_write[PH_COUNT]; /* /proc/self/io rchar, wchar per phase */
    uint64_t faults[PH_COUNT]; /* page faults per phase (getrusage: minor + major, all threads):
                                  the cost of touching fresh memory on these machines */
    uint64_t records_in, records_out, bytes_read, bytes_written, bytes_sent, bytes_received;
    uint64_t budget, needed;
    uint64_t runs, merge_passes, spill_bytes, extra_merge_bytes;
    uint64_t rounds; /* out of core: the rounds done (a resumed job's earlier ones too) */
    int external, splitter_rounds, exchange_rounds, fan_in;
    int mapped; /* in memory, the input read through a mapping (job_map.c) */
    /* peak resident set (VmHWM) and, of what is resident before the commit, the part that is
     * mapped files (RssFile: a mapped input is the page cache, shared by the node's ranks) */
    uint64_t rss_peak_kb, rss_file_kb;
    int exchange_node; /* exchanges that took the node path (of exchange_moves) */
    int exchange_moves;
    char budget_why[200];
    char merge_why[160]; /* why an extra merge pass was needed ("" if none) */
    char host[64];
    /* The watched disks (names, "" past the last) and their counters per phase. */
    char disk[DSORT_JOB_DISKS][DSORT_JOB_DISK_NAME];
    struct dsort_job_disk_phase disk_phase[PH_COUNT][DSORT_JOB_DISKS];
};

/* Phase timing: begin snapshots the clock and the I/O counters (and names the phase for the
 * signal handler's message), end adds the deltas; the watched disks' counters too. */
struct dsort_phase_clock {
    double t;
    uint64_t r, w, faults;
    struct dsort_job_disk_phase disk[DSORT_JOB_DISKS];
};
/* Local, process-wide: watch these disks (sysfs block names, e.g. "sda", "loop3", "md0"; at
 * most DSORT_JOB_DISKS, duplicates dropped) in every phase from now on. The job's topology
 * calls it with the disks under its inputs, temp dirs and output. */
void dsort_job_watch_disks(const char *const *names, size_t n);
void dsort_job_phase_begin(struct dsort_phase_clock *pc, enum dsort_phase ph);
void dsort_job_phase_end(struct dsort_job_stats *s, enum dsort_phase ph,
                         const struct dsort_phase_clock *pc);

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
 * limit (ulimit -v or -d), that limit and its use, and that a smaller -S (or none: the default
 * fits the limit) would do. Returns DSORT_ENOMEM. Local. */
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
int dsort_job_sort_external(const struct dsort_comm *c, const struct dsort_job_options *o,
                            const struct dsort_inputs *in, const struct dsort_share *sh,
                            struct dsort_job_stats *stats);

/* Text lines (job_lines.c): sample, then rounds of read, sort, exchange and spill; merge.
 * Collective; returns the exit code. */
int dsort_job_sort_lines(const struct dsort_comm *c, const struct dsort_job_options *o,
                         const struct dsort_inputs *in, const struct dsort_share *sh,
                         struct dsort_job_stats *stats);

/* -u across ranks: drop our first record (of n in out, rec_size bytes each) if its key
 * equals the last key of the nearest non-empty rank before us. Collective; agrees. */
enum dsort_status dsort_job_unique_boundary(const struct dsort_comm *c,
                                            const struct dsort_format *fmt,
                                            const unsigned char *first, const unsigned char *last,
                                            uint64_t n, int *drop_first, struct dsort_error *err);

/* Collective: the sum of every rank's checksum (on every rank). */
struct dsort_sum128 dsort_job_sum_all(const struct dsort_comm *c, const struct dsort_sum128 *mine);

/* Collective: conservation, always on: the records handed to the writer are the records read
 * (count, and the sum of per-record CRC32C over all ranks; with -u, only that no more were
 * written than read). A mismatch is DSORT_EINTERNAL naming both figures: the caller commits
 * nothing. Agrees. */
enum dsort_status dsort_job_conserve(const struct dsort_comm *c, const struct dsort_job_options *o,
                                     const struct dsort_sum128 *in_sum, uint64_t n_in,
                                     const struct dsort_sum128 *out_sum, uint64_t n_out,
                                     struct dsort_error *err);

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
/* What a pipeline read and handed to the writer, for the checks before the commit. */
struct dsort_job_sums {
    struct dsort_sum128 sum_in, sum_out; /* valsort's CRC-32 sums (--verify, -O manifests) */
    struct dsort_sum128 con_in, con_out; /* conservation, always: CRC32C sums */
    uint64_t n_in, n_out;                /* records (lines) read and written */
    uint64_t bytes_out;                  /* bytes of this rank's output */
};
/* Local: the mapped pipelines read the input through its mapping to the end, so an input
 * rewritten meanwhile shows up as data that contradicts what was read before (splitters that do
 * not settle, an entry that no longer matches its record or line: DSORT_EINTERNAL). When st is
 * DSORT_EINTERNAL and an input changed since it was opened (dsort_inputs_check_unchanged), err
 * gets that finding instead, which names the file and says that it changed, and its status is
 * returned; else st, err unchanged. Call before agreeing, so that the line printed is this one. */
enum dsort_status dsort_job_blame_input(const struct dsort_inputs *in, enum dsort_status st,
                                        struct dsort_error *err);

/* Local: note the resident set in stats (rss_peak_kb, and the largest rss_file_kb seen). */
void dsort_job_note_rss(struct dsort_job_stats *stats);

/* Collective: the end of every pipeline. The inputs unchanged since they were opened (first:
 * a changed input is why the checks after it would fail), conservation, --verify, then the
 * commit; on any failure the output is abandoned (nothing committed). Returns the exit code:
 * 0, or 2 after an agreed error. */
int dsort_job_finish(const struct dsort_comm *c, const struct dsort_job_options *o,
                     const struct dsort_inputs *in, struct dsort_output *out,
                     const struct dsort_job_sums *s, struct dsort_job_stats *stats,
                     struct dsort_error *err);

/* Collective: check the input and output checksums and counts (--verify). Agrees. */
enum dsort_status dsort_job_verify(const struct dsort_comm *c, const struct dsort_job_options *o,
                                   const struct dsort_sum128 *in_sum, uint64_t n_in,
                                   const struct dsort_sum128 *out_sum, uint64_t n_out,
                                   struct dsort_error *err);

/* Local: this rank's per-job temp directories for spilled runs, under the -T dirs that the
 * node's plan prefers (devices the rank does not read first). job: the same on every rank. */
enum dsort_status dsort_job_tempdirs(const struct dsort_job_options *o, const char *job, int rank,
                                     struct dsort_tempdirs *td, struct dsort_error *err);
/* Local: the -T dirs in the order this rank uses them (as dsort_job_tempdirs does): a new
 * array of *n borrowed strings, to free(); NULL when out of memory. */
char **dsort_job_temp_order(const struct dsort_job_options *o, size_t *n);
/* Local: after create or adopt of td over temps (dsort_job_temp_order's), group its directories
 * by physical disk where the topology knows them (dsort_tempdirs_regroup). */
void dsort_job_regroup_temps(const struct dsort_job_options *o, char *const *temps, size_t n,
                             struct dsort_tempdirs *td);

/* Stop and resume (job_ckpt.c; the manifest is checkpoint.h). */
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
/* Collective: dsort_job_ckpt_save, then dsort_job_ckpt_stop. On any rank's failure nothing is
 * kept and the caller cleans up as after any error. */
enum dsort_status dsort_job_checkpoint(const struct dsort_comm *c,
                                       const struct dsort_job_options *o,
                                       const struct dsort_inputs *in, const char *job,
                                       struct dsort_ckpt *k, struct dsort_tempdirs *td,
                                       struct dsort_runset *runs, struct dsort_error *err);

/* The topology: the node's plan (job_topo.c). Collective over the node. */
struct dsort_job_topo;
enum dsort_status dsort_job_topo_create(const struct dsort_comm *c,
                                        const struct dsort_job_options *o,
                                        const struct dsort_inputs *in, struct dsort_job_topo **t,
                                        struct dsort_error *err);
void dsort_job_topo_destroy(struct dsort_job_topo *t);
/* What discovery could not tell (for -v), or NULL. */
const char *dsort_job_topo_note(const struct dsort_job_topo *t);
/* The first time this rank read a device without its turn (a token holder passed after the
 * bound, a lock file refused), for -v; NULL if it never did. */
const char *dsort_job_topo_token_note(const struct dsort_job_topo *t);
/* Read records [first, first + count) of the inputs into dest, one thread per device, within
 * the devices' stream limits; adds to this rank's per-device figures. Local. */
enum dsort_status dsort_job_topo_read(struct dsort_job_topo *t, const struct dsort_inputs *in,
                                      uint64_t first, uint64_t count, unsigned char *dest,
                                      struct dsort_error *err);
/* dsort_job_topo_read, but a piece that ends at the end of input file i is followed in dest by
 * pad[i] bytes that are left as they are (text lines: room for the eol that a file's last line
 * lacks, so that several files are read at once). pad NULL: none. Local. */
enum dsort_status dsort_job_topo_read_padded(struct dsort_job_topo *t,
                                             const struct dsort_inputs *in, uint64_t first,
                                             uint64_t count, unsigned char *dest,
                                             const unsigned char *pad, struct dsort_error *err);
/* The mapped input file i: fault in bytes [off, off + len) of map (dsort_inputs_populate),
 * taking the turn on the file's device that a read would take, so that ranks mapping one
 * disk do not read it with more streams than its limit when the page cache lacks the data.
 * Local. */
enum dsort_status dsort_job_topo_populate(struct dsort_job_topo *t, size_t i,
                                          const struct dsort_input_map *map, uint64_t off,
                                          uint64_t len, struct dsort_error *err);
/* The physical disk of each of the n temp dirs (as dsort_job_topo_temp_dirs gives them), as a
 * number per disk (the plan's device index), into devs. Returns 0 (devs untouched) when t is
 * NULL or has no plan for this rank: then the file systems' st_dev decide (tempdir.h). */
int dsort_job_topo_temp_devices(const struct dsort_job_topo *t, char *const *dirs, size_t n,
                                uint64_t *devs);
/* The number of disks under the job's temp dirs (at least 1), by the topology where there is
 * one, else by st_dev, at most DSORT_RUN_MAX_STRIPES: the files of a run striped over them
 * (runfile.h), for planning memory. */
size_t dsort_job_temp_disks(const struct dsort_job_options *o);
/* This rank's temp dirs, preferred first, avoiding the devices it reads when possible. out
 * needs o->ntemp entries. t may be NULL (then: o's order). */
void dsort_job_topo_temp_dirs(const struct dsort_job_topo *t, const struct dsort_job_options *o,
                              char **out, size_t *n);
/* --bind: bind near the NUMA node of the rank's devices, unless the launcher bound it. */
void dsort_job_topo_bind(const struct dsort_job_topo *t, const struct dsort_comm *c, int verbose);
/* --plan: rank 0 prints every node's plan (text or JSON). Collective; returns the exit code. */
int dsort_job_topo_print_plan(const struct dsort_comm *c, struct dsort_job_topo *t, int json);
/* --stats: rank 0 writes every node's plan with measured bytes and seconds per device to f
 * (NULL elsewhere). Collective. */
void dsort_job_topo_write_stats(const struct dsort_comm *c, struct dsort_job_topo *t, FILE *f);

#endif
