/* inmem.h - the in-memory paths' shared steps (inmem.c; internal to src/pipeline/).
 *
 * The mapped path, written once for every record format: every rank of the job is on one node
 * and the job reads one input file (dsort_job_map_usable), so the records stay in the page cache
 * where the mapping shows them. Each rank indexes its bytes of the file into 16-byte entries
 * (a key prefix and where the record lies in the file), sorts them, cuts them for the ranks,
 * exchanges entries instead of records, checks what it received, and merges the entries, copying
 * their records from the mapping into the output's writer. What differs between formats is in a
 * table of steps (struct dsort_inmem_fmt): job_map.c for fixed records, lines_map.c for text
 * lines. The table is the pipeline's, not the engine's (recfmt.h): the fixed records' cut is a
 * collective (the exact splitters, over MPI), and the lines' steps work on the lines pipeline's
 * state (struct lx).
 *
 * Also here: the exact splitters' cut and the entries' exchange, which the copying in-memory
 * path (job_mem.c) shares with the mapped one.
 *
 * Collective where marked; a step of the table is local unless marked.
 */
#ifndef DSORT_INMEM_H
#define DSORT_INMEM_H

#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "job.h"
#include "output.h"
#include "job_end.h"
#include "phase.h"

/* Bytes of an entry, the same for every format (struct dsort_sortent, struct dsort_line_ent). */
#define DSORT_INMEM_ENT 16

struct dsort_inmem;

/* A format's steps of the mapped path. m is the job; a format's own state embeds it first. */
struct dsort_inmem_fmt {
    /* After mapping: can this rank's data take the path (lines: the file ends in an eol)?
     * NULL: always. The ranks agree on the answer; no: nothing is done (not taken). */
    int (*accepts)(struct dsort_inmem *m);
    /* This rank's bytes of the file: m->start, m->end. */
    enum dsort_status (*range)(struct dsort_inmem *m);
    /* How many entries they make (m->n), once they are in memory. */
    void (*count)(struct dsort_inmem *m);
    /* Fill m->ents (n entries; sorted later) if the format indexes before it sorts, and take
     * the input's checksums. Read phase. */
    void (*index)(struct dsort_inmem *m);
    /* Sort m->ents (scratch m->tmp); afterwards the entries name records by their place in
     * the file. */
    void (*sort)(struct dsort_inmem *m);
    /* m->scount[r]: the bytes of sorted entries for rank r, in phase cut_phase. Collective and
     * agreed (the exact splitters), or local where it cannot fail (DSORT_OK). */
    enum dsort_status (*cut)(struct dsort_inmem *m);
    enum dsort_phase cut_phase;
    /* The entries received from rank r are rcount[r] bytes at m->rbuf (in rank order), and must
     * name records in the sender's range [lo[r], hi[r]) (the ranks' [start, end)): check them
     * and find the output's size. Not agreed. */
    enum dsort_status (*received)(struct dsort_inmem *m);
    /* Merge the received entries into the output (m->out), in the format's phases. Not
     * agreed. */
    enum dsort_status (*write)(struct dsort_inmem *m);
    int exchange_step; /* --progress: a step at the exchange (mark[1]) */
    /* --progress: the read's steps say how far they are (dsort_progress_within: the mapping
     * faulted in is the first 0.4 of the read, the watcher's; count and index the rest); 0:
     * the watcher's bytes read measure all of the read. */
    int read_reports;
};

struct dsort_inmem {
    const struct dsort_inmem_fmt *f;
    const struct dsort_comm *c;
    const struct dsort_job_options *o;
    const struct dsort_inputs *in;
    struct dsort_job_stats *stats;
    struct dsort_error *err;
    struct dsort_output *out;
    /* --progress: this rank's work done at the sort, the exchange and the merge steps; the read
     * runs from 0 to mark[0], the sort from mark[0] to the next step's mark (progress.h) */
    uint64_t mark[3];
    /* Set by dsort_inmem_mapped for the steps. */
    struct dsort_input_map map;
    uint64_t start, end; /* this rank's bytes of the file */
    size_t n, cap;       /* entries: indexed, and allocated */
    void *ents, *tmp;    /* cap entries each: the sorted entries and the sort's scratch */
    void *rbuf;          /* the received entries: tmp if they fit, else rcap entries */
    size_t rcap;
    uint64_t *scount, *rcount, *lo, *hi; /* [ranks] each */
    uint64_t out_bytes;                  /* the output's bytes, if the format's received sets it */
};

/* Collective: the whole mapped path for m (f, c, o, in, stats, err, out and mark set, the rest
 * zero), from mapping the input to the output written (not committed: the caller finishes),
 * and everything of the path released. st: the caller's status so far (an allocation that
 * failed; agreed with the read). *taken 0 when the format did not accept the data (nothing was
 * done). Returns the agreed status. */
enum dsort_status dsort_inmem_mapped(struct dsort_inmem *m, enum dsort_status st, int *taken);

/* Collective: the exact splitters' cuts (cuts[0..ranks], dsort_splitters_cut) of this rank's n
 * sorted records, the i-th at rec_at(ctx, i), of a share that starts at g0 in the job's input
 * order; stats->splitter_rounds follows. Agrees (an internal error is blamed on an input that
 * changed: dsort_job_blame_input). */
enum dsort_status dsort_inmem_cut(const struct dsort_comm *c, const struct dsort_job_options *o,
                                  const struct dsort_inputs *in, uint64_t n, uint64_t g0,
                                  const unsigned char *(*rec_at)(const void *ctx, uint64_t i),
                                  const void *ctx, uint64_t *cuts, struct dsort_job_stats *stats,
                                  struct dsort_error *err);

/* Collective: rcount[s] := the bytes rank s sends us (scount[] of every rank), *rbytes their
 * sum. Agrees. */
enum dsort_status dsort_inmem_counts(const struct dsort_comm *c, const uint64_t *scount,
                                     uint64_t *rcount, uint64_t *rbytes, struct dsort_error *err);

/* Collective: send `sent` bytes at send (scount[r] to rank r) and receive rbytes into recv
 * (rcount[s] from rank s, in rank order) by the job's exchange; the stats' exchange figures
 * follow. Agrees. */
enum dsort_status dsort_inmem_move(const struct dsort_comm *c, const struct dsort_job_options *o,
                                   const void *send, const uint64_t *scount, uint64_t sent,
                                   void *recv, const uint64_t *rcount, uint64_t rbytes,
                                   struct dsort_job_stats *stats, struct dsort_error *err);

#endif
