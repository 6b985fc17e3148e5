/* job_copy_impl.h - the copying path's state and steps, shared by its files: job_copy.c (the
 * flows, the parts' order and the job), job_copy_read.c (the read with its entries, the sampled
 * splitters and the cut), job_copy_merge.c (the merge into the output). Internal to the
 * pipeline library; the design is job_copy.c's head. Local unless a function says it agrees.
 */
#ifndef DSORT_JOB_COPY_IMPL_H
#define DSORT_JOB_COPY_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"
#include "job.h"
#include "job_end.h"
#include "keysort.h"
#include "merge.h"
#include "output.h"
#include "phase.h"
#include "recfmt.h"

#define COPY_STAGE ((size_t)16 << 20)  /* the sends' stage */
#define COPY_OUT_BUF ((size_t)8 << 20) /* each of the output writer's two buffers */
#define COPY_OWN_BUF ((size_t)1 << 20) /* the kept records, gathered for the merge */
#define COPY_EARLY_DIV 4               /* E: the share's first quarter (at several ranks) */
#define COPY_SAMPLES 4096              /* sample keys a rank */
#define COPY_SAMPLE_BYTES ((uint64_t)4 << 20)
#define COPY_SAMPLE_TOL 0.002 /* the splitters within this much of a bucket's samples */

struct copy;

/* A part of the share (E or R): its records in A, its entries sorted a bucket at a time as
 * they are wanted (dsort_keysort_ready: each thread with its own scratch), cut by the
 * splitters, sent in a flow of its own; where the other ranks' pieces of it land. */
struct part {
    struct copy *x;
    unsigned char *recs; /* in A */
    uint64_t first, n;   /* the share's records [first, first + n) */
    struct dsort_keysort_lazy lazy;
    struct dsort_sortent *ents;
    uint64_t *cuts; /* [p + 1]: sorted entries [cuts[r], cuts[r + 1]) go to rank r */
    uint64_t *scount, *rcount, *rdispl; /* [p] each, bytes: sent, received, where it lands */
    unsigned char *rbuf;                /* the received pieces (rdispl into it) */
    unsigned char *rown; /* rbuf when it did not fit in X (its own mapping), else NULL */
    uint64_t rown_len;
    unsigned char *stage; /* the sends' stage, while its flow runs */
    size_t stage_len;
    uint64_t *ahead; /* [p]: the sorter has sorted piece r up to entry ahead[r] */
};

struct copy {
    const struct dsort_comm *c;
    const struct dsort_job_options *o;
    const struct dsort_inputs *in;
    size_t rs;
    uint64_t n, g0;   /* the share */
    unsigned char *a; /* the share, in input order */
    unsigned char *w; /* W: X (cap bytes), then R's entries */
    size_t wlen, cap;
    struct dsort_sortent *ents_e; /* E's entries (their own allocation) */
    size_t ents_e_len;
    struct part part[2];
    int nparts;
    /* The sampled splitters (several ranks): p - 1 composite keys of ks bytes */
    struct dsort_cmp cmp;
    struct dsort_recfmt_ctx fx;
    size_t ks;
    unsigned char *splitters;
    struct dsort_sortent *tmp_main, *tmp_merge, *tmp_sorter; /* bucket scratches, one block */
    uint64_t summed; /* A's records [0, summed) are in sums.sum_in, con_in (the sorter's, then
                      * the main thread's once it is joined) */
    atomic_int stop; /* the sorter: stop (the job failed) */
    struct dsort_job_sums sums;
    uint64_t written;
    uint64_t mark; /* --progress: where the write starts */
    /* The exchange flow being driven by the main thread (E's, then R's while the merge thread
     * writes what has arrived; NULL at one rank): */
    struct dsort_exchange_flow *flow;
    struct dsort_job_stats *stats;
    struct dsort_output *out;
    pthread_t sorter;
    int sorting; /* the sorter thread runs */
    struct dsort_phase_clock pc;
    int exchanging; /* the phase clock runs PH_EXCHANGE (else PH_WRITE) */
    /* What has arrived of R's pieces, as the merge thread sees it (under mu; published by the
     * main thread): bytes of each piece, the exchange over, its error. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t *have;
    int over;
    enum dsort_status xst;
    struct dsort_error xerr;
};

/* A part's kept records as a run: gathered from A through their entries, a block at a time. */
struct own_run {
    struct part *pt;
    const struct dsort_sortent *next, *end;
    unsigned char *buf;
    size_t cap; /* records */
};

/* A received piece as a run: what has arrived of it, up to a slice at a time (the merge
 * thread's; for R it waits for the main thread to publish more, E's are in before the merge
 * starts). */
#define COPY_RECV_SLICE ((size_t)1 << 20)
struct recv_run {
    struct copy *x;
    int from, arrived; /* arrived: the piece is all in (E's) */
    const unsigned char *base;
    uint64_t len, got; /* bytes: the piece, and what the merge has been given of it */
};

/* The merge's sources, in the input order of their records (a stable merge): by rank in the
 * job's input order, each rank's parts in order; this rank's kept records through their
 * entries, the received pieces as they arrive. */
struct merge_src {
    struct dsort_cursor *cur;
    struct recv_run *recv; /* [nparts * p] */
    struct own_run own[2];
};

/* job_copy_read.c */
/* Buckets above this many entries are sorted at a part's split (DSORT_COPY_EAGER). */
size_t dsort_copy_eager(void);
/* Read part pt and split it (stats NULL: on the reader thread, no phases; else the read and
 * sort phases, agreeing after the read). */
enum dsort_status dsort_copy_read_and_split(struct part *pt, struct dsort_job_stats *stats,
                                            struct dsort_error *err);
/* Collective: the sampled splitters into x->splitters. */
enum dsort_status dsort_copy_choose_splitters(struct copy *x, struct dsort_error *err);
/* Cut part pt by the splitters into pt->cuts. */
enum dsort_status dsort_copy_cut_part(struct copy *x, struct part *pt, struct dsort_error *err);

/* job_copy_merge.c */
/* Agrees: the merge's sources (nparts * p cursors). */
enum dsort_status dsort_copy_merge_prepare(struct copy *x, struct merge_src *m,
                                           struct dsort_error *err);
void dsort_copy_merge_free(struct merge_src *m);
/* Agrees: the merge into out, on a merge thread while this one drives R's exchange. */
enum dsort_status dsort_copy_merge_out(struct copy *x, struct merge_src *m,
                                       struct dsort_output *out, struct dsort_job_stats *stats,
                                       struct dsort_error *err);

/* job_copy.c: R's exchange driven to its end, publishing what arrives to the merge. */
enum dsort_status dsort_copy_exchange_drive(struct copy *x, struct dsort_error *err);

#endif
