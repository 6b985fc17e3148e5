/* runset.h - the engine's plan for spilled runs: the set of one rank's run files, the merge
 * fan-in, and the waves in which a round's pieces are received. Shared by every out-of-core
 * pipeline (fixed records and text lines). No MPI: the planners are pure functions of counts
 * and limits, unit-tested on their own (tests/unit/test_runset.c).
 *
 * Local, not thread-safe. Errors: dsort_runset_add returns DSORT_ENOMEM; the rest cannot fail.
 */
#ifndef DSORT_RUNSET_H
#define DSORT_RUNSET_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "runfile.h"

/* One run: its file's path (a striped run's first file), and what its writer wrote (records or
 * lines; bytes of payload, the measure of "smallest"). A striped run (runfile.h) has k files:
 * the others' names are in `more`. */
struct dsort_run {
    char path[4096];
    uint64_t records, bytes;
    size_t k;   /* files: 1, or the stripes (0 is taken as 1) */
    char *more; /* files 1..k-1: their names one after another, each with its NUL (owned) */
};

/* The runs of a rank. Zero-initialise (or dsort_runset_init). The set owns the files: drop
 * and release unlink them and forget them in the cleanup registry. */
struct dsort_runset {
    struct dsort_run *runs;
    size_t n, cap;
};

void dsort_runset_init(struct dsort_runset *s);
enum dsort_status dsort_runset_add(struct dsort_runset *s, const char *path, uint64_t records,
                                   uint64_t bytes, struct dsort_error *err);
/* A striped run of the k files paths[0..k) (1 <= k <= DSORT_RUN_MAX_STRIPES). */
enum dsort_status dsort_runset_add_striped(struct dsort_runset *s, const char *const *paths,
                                           size_t k, uint64_t records, uint64_t bytes,
                                           struct dsort_error *err);
/* A copy of run r (of another set), with all its files. */
enum dsort_status dsort_runset_add_run(struct dsort_runset *s, const struct dsort_run *r,
                                       struct dsort_error *err);
/* The names of r's files into paths (DSORT_RUN_MAX_STRIPES entries; they point into r).
 * Returns their number, k. */
size_t dsort_run_files(const struct dsort_run *r, const char **paths);
/* Remove runs [from, from + k): unlink their files (all stripes), forget them; later runs move
 * down. */
void dsort_runset_drop(struct dsort_runset *s, size_t from, size_t k);
/* Order the runs smallest first (by bytes, then records; stable for equal sizes). */
void dsort_runset_sort_smallest(struct dsort_runset *s);
/* Sums over the runs. */
uint64_t dsort_runset_records(const struct dsort_runset *s);
uint64_t dsort_runset_bytes(const struct dsort_runset *s);
/* Free the set but leave its files (a stop that keeps a checkpoint). */
void dsort_runset_keep(struct dsort_runset *s);
/* Drop every run and free the set (any state; idempotent). */
void dsort_runset_release(struct dsort_runset *s);

/* The fan-in of a merge: how many runs it may read at once. */
struct dsort_fan_in {
    size_t f;             /* the fan-in: at least 2 */
    size_t by_files;      /* the open-file limit less what is open and a margin */
    size_t by_mem;        /* read buffers of buf_len that fit in mem */
    uint64_t files_limit; /* RLIMIT_NOFILE (0: none) */
    uint64_t open_now;    /* descriptors open when it was planned */
    uint64_t buf_len;
};
/* Pure: the fan-in from the open-file limit (0: unlimited), the descriptors open now, the
 * memory for read buffers and one buffer's bytes, at most cap (0: no cap). A margin of 8
 * descriptors is kept for the output, a new run and directories. */
void dsort_fan_in_plan(uint64_t files_limit, uint64_t open_now, uint64_t mem, uint64_t buf_len,
                       size_t cap, struct dsort_fan_in *out);
/* Pure: runs of k files each (striped, runfile.h) take k descriptors apiece, and a new run
 * written by an extra pass k more: the fan-in by files shrinks to (by_files - k) / k (k <= 1:
 * nothing changes), and f is chosen again, at most cap (0: no cap), at least 2. */
void dsort_fan_in_per_run(struct dsort_fan_in *fi, size_t k, size_t cap);
/* The same with this process's limit and open descriptors (/proc/self/fd). */
void dsort_fan_in_now(uint64_t mem, uint64_t buf_len, size_t cap, struct dsort_fan_in *out);
/* Why nruns runs need an extra pass under fi (for --stats and -v): "" when they do not. */
void dsort_fan_in_explain(const struct dsort_fan_in *fi, size_t nruns, char *out, size_t len);
/* Pure: with n runs and fan-in f (n > f), how many of the smallest to merge in the next extra
 * pass so that as few passes as possible are taken: min(n - f + 1, f). */
size_t dsort_fan_in_step(size_t n, size_t f);

/* Waves of a round's exchange, planned by the receiver. Pure. */
/* Pieces that may be split (fixed records): take from the sources in rank order, up to cap
 * items in all: allot[s] <= left[s]. Returns the items still pending before this wave. */
uint64_t dsort_waves_allot(const uint64_t *left, int p, uint64_t cap, uint64_t *allot);
/* Whole pieces (lines): sources in rank order, a new wave when the next piece would take the
 * wave past cap bytes (a piece larger than cap gets a wave of its own). wave_of[s] is source
 * s's wave; *most is the largest wave's bytes. Returns the number of waves (at least 1). */
int dsort_waves_assign(const uint64_t *counts, int p, uint64_t cap, int *wave_of, uint64_t *most);

#endif
