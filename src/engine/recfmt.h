/* recfmt.h - the engine's record formats: one table of operations a format, through which the
 * out-of-core machinery that is the same for every format (spilling a merge into a run file,
 * the extra merge passes, opening the final merge's cursors over the runs: runmerge.h) handles
 * records without knowing their shape, and through which the one memory plan (memplan.h)
 * learns a format's memory need. Two implementations, a file each:
 *   dsort_recfmt_fixed  (fmt_fixed.c) fixed-size records (rec_size bytes; the in-flight record
 *                       may carry an 8-byte position tag), cursors struct dsort_cursor
 *                       (merge.h), ordered by a struct dsort_cmp;
 *   dsort_recfmt_lines  (fmt_lines.c) text lines, framed as [position] line eol, cursors
 *                       struct dsort_line_cursor (lines.h), ordered by a dsort_lines_order.
 * The operations are coarse (a cursor, a whole merge), so the per-record work stays in each
 * format's own inlined merge loop: no call through the table per record.
 *
 * A format's context (struct dsort_recfmt_ctx) holds what its operations need; the table is
 * constant. Local, no MPI; a context is used by one thread at a time. Errors are returned as
 * statuses with err filled; nothing exits.
 */
#ifndef DSORT_RECFMT_H
#define DSORT_RECFMT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "format.h"
#include "lines.h"
#include "runfile.h"
#include "runset.h"

struct dsort_memplan_in;
struct dsort_memplan;

/* The splitters a checkpoint keeps (its blob, checkpoint.h), in the format's form; n splitters
 * (ranks - 1). */
struct dsort_recfmt_splits {
    size_t n;
    /* fixed: n composite keys of ks bytes, one after another */
    unsigned char *keys;
    size_t ks;
    /* lines: n lines with their lengths (line[d] NULL: none, everything goes below); with
     * by_pos each ends in its 8-byte input position; the samples' mean line length */
    const unsigned char **line;
    size_t *len;
    int by_pos;
    double avg_line;
};

/* What a format's operations need (the fields of the other format stay zero). */
struct dsort_recfmt_ctx {
    int unique; /* merges keep the first record of each run of equal keys (-u) */
    /* fixed */
    const struct dsort_cmp *cmp; /* the order of in-flight records */
    size_t rec;                  /* in-flight record bytes (with the tag when tagged) */
    /* lines */
    const struct dsort_lines_order *ord;
    int with_pos;       /* lines carry their 8-byte input position (ties under -s/-u) */
    size_t max_payload; /* the largest framed record a run file may hold (its longest line) */
    /* merge: the final merge into the output */
    size_t rec_out;                   /* fixed: the output's record bytes (the tag dropped) */
    struct dsort_sum128 *sum, *sum_c; /* lines: the output's sums, added as lines are written
                                       * (sum NULL: no valsort sum); fixed sums its output where
                                       * the output sink passes it on */
};

struct dsort_recfmt {
    const char *name;
    size_t cur_size; /* bytes of one cursor (arrays of cursors are void *) */
    /* Framing: the run files' record size (0: framed, one record a line). */
    size_t (*run_rec)(const struct dsort_recfmt_ctx *x);
    /* Cursors over memory: a cursor over the records in [p, p + bytes) (whole records or
     * frames, sorted). */
    void (*cursor_memory)(const struct dsort_recfmt_ctx *x, void *cur, const unsigned char *p,
                          size_t bytes);
    /* Cursors over run files: open the run (its reader rd, whose buffers buf and read-ahead
     * threads pf, one per file of the run or NULL, are the caller's; see runfile.h) and a
     * cursor on it. */
    enum dsort_status (*cursor_run)(const struct dsort_recfmt_ctx *x, void *cur,
                                    struct dsort_runreader *rd, const struct dsort_run *run,
                                    size_t block, unsigned char *buf,
                                    struct dsort_prefetch *const *pf, struct dsort_error *err);
    /* Close a cursor over a run file, and its reader (a memory cursor: nothing). */
    void (*cursor_close)(const struct dsort_recfmt_ctx *x, void *cur);
    /* Compare and merge: k sorted cursors (in input order) into the open run writer w, in the
     * format's order (stable; -u per x->unique). *bytes: the records' bytes as the run set
     * measures runs (fixed: records * rec; lines: line + eol bytes, without positions). */
    enum dsort_status (*merge_to_run)(const struct dsort_recfmt_ctx *x, void *cur, size_t k,
                                      struct dsort_runwriter *w, uint64_t *bytes,
                                      struct dsort_error *err);
    /* Memory need (memplan.h, through dsort_memplan_compute): the buffers the budget gives
     * this format (before the run files' block is fitted to the runs), from the format's
     * fields of *in; p->fits 0 when the budget is too small. */
    void (*plan)(const struct dsort_memplan_in *in, struct dsort_memplan *p);
    /* The rounds the rank's share takes under plan p (0 when the job sorts in memory). */
    uint64_t (*rounds)(const struct dsort_memplan_in *in, const struct dsort_memplan *p,
                       int in_memory);
    /* rounds: what differs between formats in a round of the out-of-core sort (the pipeline's
     * ooc_round.c). The wave policy: 1, a piece of the exchange may be split between waves at
     * any record (fixed records: a wave's share of a piece is a count of records); 0, pieces travel
     * whole (lines, whose -u drops repeats per piece and whose pieces are framed with positions).
     */
    int wave_split;
    /* merge: the final merge into the output and -u's policy (src/pipeline/ooc_merge.c). */
    /* -u: 1 when equal keys may sit on two ranks (fixed: the splitters cut composite keys), so
     * the deduplicated merge goes into one more run, and a rank drops its first record when the
     * rank before ends with the same key; 0 when equal keys all go to one rank (lines), so a
     * counting merge sizes the output first. */
    int unique_run;
    /* Merge k sorted cursors into sink in the output's form (tags and positions dropped; -u per
     * x->unique); sink NULL: count only (lines). *records, *bytes: what was (or would be)
     * written. */
    enum dsort_status (*merge_to_out)(const struct dsort_recfmt_ctx *x, void *cur, size_t k,
                                      struct dsort_sink *sink, uint64_t *records, uint64_t *bytes,
                                      struct dsort_error *err);
    /* The checkpoint blob: its bytes for s, s written into blob (blob_len bytes), and s read
     * back from blob (n and, fixed, ks set by the caller; lines: s->line and s->len hold n
     * entries, the caller's): s points into blob, which the caller keeps. blob_get: 0 when
     * the blob does not fit. */
    size_t (*blob_len)(const struct dsort_recfmt_splits *s);
    void (*blob_put)(const struct dsort_recfmt_splits *s, unsigned char *blob);
    int (*blob_get)(struct dsort_recfmt_splits *s, unsigned char *blob, size_t len);
};

extern const struct dsort_recfmt dsort_recfmt_fixed;
extern const struct dsort_recfmt dsort_recfmt_lines;

/* Cursor i of an array of a format's cursors. */
static inline void *dsort_recfmt_cursor(const struct dsort_recfmt *f, void *cur, size_t i)
{
    return (unsigned char *)cur + i * f->cur_size;
}

#endif
