/* recfmt.h - the engine's record formats: one table of operations a format, through which the
 * out-of-core machinery that is the same for every format (spilling a merge into a run file,
 * the extra merge passes, opening the final merge's cursors over the runs: runmerge.h) handles
 * records without knowing their shape, through which the one memory plan (memplan.h) learns a
 * format's memory need, and through which a format's pipeline glue (src/pipeline/ooc_fixed.c,
 * ooc_lines.c) sorts a chunk, cuts it after the splitters, frames its pieces for the exchange
 * and makes the sample keys the splitters are chosen from. Two implementations, a file each:
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

/* Big-endian 64-bit numbers (positions in frames, sample keys and blobs). */
static inline void dsort_recfmt_put_be64(unsigned char *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (unsigned char)(v >> (56 - 8 * b));
}

static inline uint64_t dsort_recfmt_get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 0; b < 8; b++)
        v = v << 8 | p[b];
    return v;
}

/* A chunk of the share in memory, as the chunk operations (sort_chunk, cut, frame) see it;
 * the pipeline reads it and owns every buffer. */
struct dsort_recfmt_chunk {
    const unsigned char *data; /* fixed: n records of rec_in bytes; lines: the lines, each
                                * ending in the eol, bytes of them */
    size_t n;                  /* records, or lines indexed */
    uint64_t bytes;            /* lines: the data's bytes */
    void *ents;    /* n sort entries: fixed struct dsort_sortent (made by sort_chunk); lines
                    * struct dsort_line_ent (made by the reader, lines.h) */
    void *scratch; /* room for n entries: the sort's scratch */
    uint64_t g0;   /* fixed: the job-wide input position of record 0 (record i's: g0 + i) */
    /* lines: the job-wide input position of the line at data offset off (ties by position:
     * frames under with_pos, cuts under the splitters' by_pos; else may be NULL) */
    uint64_t (*pos)(const void *ctx, uint64_t off);
    const void *pos_ctx;
};

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
    const struct dsort_cmp *cmp;     /* the order of in-flight records */
    size_t rec;                      /* in-flight record bytes (with the tag when tagged) */
    const struct dsort_format *fmt;  /* chunks: the input's records (rec_size: rec_in) */
    const struct dsort_order *order; /* chunks: the order the sort keys follow */
    size_t rec_in;                   /* the input's record bytes */
    int tagged;                      /* in flight a record ends in its 8-byte position */
    size_t ks;                       /* a sample key's bytes (see sample_key) */
    /* lines */
    const struct dsort_lines_order *ord;
    int with_pos;       /* lines carry their 8-byte input position (ties under -s/-u) */
    int by_pos;         /* sample keys end in the line's 8-byte input position (unless -u) */
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
    /* chunks: what differs between formats in forming a round's pieces (the pipeline reads the
     * chunk, times the phases and moves the pieces). */
    /* Sort the chunk's entries in the format's order, c->scratch as scratch (fixed: index the
     * records into c->ents first; lines: the reader indexed them). Stable: equal keys keep
     * input order. */
    void (*sort_chunk)(const struct dsort_recfmt_ctx *x, struct dsort_recfmt_chunk *c);
    /* Cut the sorted chunk after the splitters s (s->n of them): rank d's piece is entries
     * [end[d-1], end[d]) (end[-1]: 0), end[s->n] = c->n. Fixed: records whose sample key is
     * below splitter d go to ranks up to d; lines: lines at or below splitter line d (by
     * line, then position under s->by_pos; none: everything below). DSORT_ENOMEM only. */
    enum dsort_status (*cut)(const struct dsort_recfmt_ctx *x, const struct dsort_recfmt_chunk *c,
                             const struct dsort_recfmt_splits *s, size_t *end,
                             struct dsort_error *err);
    /* Frame entries [lo, hi) of the sorted chunk for the exchange into out, as the run files
     * and cursor_memory take them; the bytes written. Fixed: the records (each followed by
     * its 8-byte big-endian position when tagged); lines: [position] line eol (the position
     * under with_pos), and under -u only the first line of each run of equal keys. */
    uint64_t (*frame)(const struct dsort_recfmt_ctx *x, const struct dsort_recfmt_chunk *c,
                      size_t lo, size_t hi, unsigned char *out);
    /* The most bytes frame writes for the whole chunk. */
    uint64_t (*frame_bytes)(const struct dsort_recfmt_ctx *x, const struct dsort_recfmt_chunk *c);
    /* sample: the keys the splitters are chosen from (and that the checkpoint's blob keeps).
     * The sample key of a record at job-wide input position pos into out (at most ks bytes:
     * fixed; len + 8: lines); its bytes. Fixed: rec is an input record (len unused), the key
     * the normalised key, the normalised last-resort bytes when untagged, then pos, so that
     * memcmp orders keys as the output; lines: rec is the line (len bytes, no eol), the key the
     * line, then pos under by_pos. */
    size_t (*sample_key)(const struct dsort_recfmt_ctx *x, const unsigned char *rec, size_t len,
                         uint64_t pos, unsigned char *out);
    /* The order of two sample keys (<0, 0, >0). */
    int (*key_cmp)(const struct dsort_recfmt_ctx *x, const unsigned char *a, size_t alen,
                   const unsigned char *b, size_t blen);
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

/* The fixed records' order as the chunks, cuts and merges see it, for records of fmt in order
 * ord: cmp (ties by the 8-byte position suffix of an in-flight record when the order has no
 * last resort: "tagged") and x's fields for it (x->unique, the lines' and the merge's fields
 * are the caller's). Returns the composite key's bytes (x->ks). Local. */
size_t dsort_recfmt_fixed_init(struct dsort_recfmt_ctx *x, struct dsort_cmp *cmp,
                               const struct dsort_format *fmt, const struct dsort_order *ord);
extern const struct dsort_recfmt dsort_recfmt_lines;

/* Cursor i of an array of a format's cursors. */
static inline void *dsort_recfmt_cursor(const struct dsort_recfmt *f, void *cur, size_t i)
{
    return (unsigned char *)cur + i * f->cur_size;
}

#endif
