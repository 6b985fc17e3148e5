/* runmerge.h - the out-of-core merge machinery that every record format shares (recfmt.h):
 *   spill:  merge k sorted cursors into a new run of the rank's run set (one file, or striped
 *           over the temp devices: one file on each, written at once);
 *   plan:   the fan-in (open-file limit, read buffers in the memory given), readers, cursors,
 *           the read-ahead threads (one per temp device, so that runs on different disks are
 *           read at once) and the read buffers (carved from memory the caller lends, or
 *           allocated);
 *   reduce: the extra merge passes, smallest runs first, while there are more runs than the
 *           fan-in (each pass as small as the fewest passes allow: dsort_fan_in_step);
 *   open:   cursors over runs [from, from + k) for the caller's final merge, and close.
 * The counters say what was done (the pipelines copy them into --stats).
 *
 * Local, no MPI: a pipeline agrees on the statuses itself. Not thread-safe. Errors: the
 * status, with err filled; a run file that fails its checks is DSORT_EFORMAT naming it. On
 * any error the run set still owns every file (release removes them).
 */
#ifndef DSORT_RUNMERGE_H
#define DSORT_RUNMERGE_H

#include <stddef.h>
#include <stdint.h>

#include "prefetch.h"
#include "recfmt.h"
#include "runfile.h"
#include "runset.h"
#include "tempdir.h"

struct dsort_runmerge {
    const struct dsort_recfmt *fmt;
    const struct dsort_recfmt_ctx *fx;
    struct dsort_runset *runs; /* not owned */
    struct dsort_tempdirs *td; /* where new runs go (not owned) */
    size_t block;              /* run files' block (runfile.h) */
    size_t blen; /* bytes of one reader's buffers: for runs of one file until the plan, then
                  * for the most files a run has (runfile.h's dsort_runreader_buf_len) */
    size_t f;    /* the fan-in (after plan) */
    struct dsort_fan_in fi;
    size_t slots;               /* readers, cursors and buffers there are (<= f) */
    struct dsort_runreader *rd; /* slots */
    void *cur;                  /* slots cursors of fmt->cur_size */
    unsigned char **buf;        /* slots buffers of blen */
    unsigned char *own;         /* the buffers, when allocated here */
    size_t own_len;
    struct dsort_prefetch **pf; /* npf read-ahead threads: pf[d] reads device d's runs */
    size_t npf;
    /* Called by an extra pass once its new run is in the set and before its k input runs (the
     * first k of the set) are removed: a checkpoint that lists the set may be rewritten then
     * (the set less those k runs). NULL: none. Set after init. */
    enum dsort_status (*on_pass)(void *ctx, const struct dsort_runset *runs, size_t k,
                                 struct dsort_error *err);
    void *on_pass_ctx;
    /* counters */
    uint64_t runs_made;  /* runs written (spills and extra passes) */
    uint64_t run_bytes;  /* their file bytes */
    uint64_t passes;     /* extra merge passes */
    uint64_t pass_bytes; /* file bytes written by them */
};

/* Set up (no allocation): runs and td are the caller's, block the run files' block. */
void dsort_runmerge_init(struct dsort_runmerge *m, const struct dsort_recfmt *fmt,
                         const struct dsort_recfmt_ctx *fx, struct dsort_runset *runs,
                         struct dsort_tempdirs *td, size_t block);
/* Merge k cursors (fmt's, in input order) into a new run of the set. */
enum dsort_status dsort_runmerge_spill(struct dsort_runmerge *m, void *cur, size_t k,
                                       struct dsort_error *err);
/* Plan the fan-in: read buffers within mem bytes, at most cap runs (0: no cap), and the
 * open-file limit; why (of whylen bytes) says why the runs there are now need an extra pass
 * ("" when they do not). Buffers come from the nregions regions (each carved into whole
 * buffers; mem is then their sum, rounded down to buffers), or, with nregions 0, are allocated
 * for as many runs as a merge will open. Starts one read-ahead thread per device of td (one
 * when td is NULL or all its directories are on one device). */
enum dsort_status dsort_runmerge_plan(struct dsort_runmerge *m, uint64_t mem, size_t cap,
                                      unsigned char *const *region, const size_t *region_len,
                                      int nregions, char *why, size_t whylen,
                                      struct dsort_error *err);
/* Usable read-buffer bytes of regions for runs of at most k files in blocks of block bytes of
 * rec-byte records (rec 0: framed): whole buffers only. */
uint64_t dsort_runmerge_region_mem(size_t rec, size_t block, size_t k, const size_t *region_len,
                                   int nregions);
/* Files of a run written now: one per device of td's directories (striped: runfile.h), at
 * most DSORT_RUN_MAX_STRIPES; 1 when td is NULL or on one device. Writing one takes
 * dsort_runwriter_buf_len(rec, block, this) bytes of buffers. */
size_t dsort_runmerge_stripes(const struct dsort_tempdirs *td);
/* The read-ahead thread for a run file at path (after plan): its device's. */
struct dsort_prefetch *dsort_runmerge_prefetch(const struct dsort_runmerge *m, const char *path);
/* Extra passes until at most f runs are left. */
enum dsort_status dsort_runmerge_reduce(struct dsort_runmerge *m, struct dsort_error *err);
/* Cursors over runs [from, from + k) (k <= slots): *cur gets the array. On an error none is
 * left open. */
enum dsort_status dsort_runmerge_open(struct dsort_runmerge *m, size_t from, size_t k, void **cur,
                                      struct dsort_error *err);
/* Close the k cursors open (their readers too). */
void dsort_runmerge_close(struct dsort_runmerge *m, size_t k);
/* Free what plan made (any state; idempotent). The run set is the caller's. */
void dsort_runmerge_release(struct dsort_runmerge *m);

#endif
