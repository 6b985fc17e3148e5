/* lines_job.h - the text-line pipeline's state and its reading side, shared by ooc_lines.c
 * (its part of the out-of-core skeleton: setup, rounds, runs, final merge), lines_read.c
 * (reading whole lines of the share into the arena; sampling and choosing the splitter lines),
 * and lines_map.c (the mapped path, and the lines' output). Internal to src/pipeline/.
 * Local unless marked collective.
 */
#ifndef DSORT_LINES_JOB_H
#define DSORT_LINES_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "lines.h"
#include "memplan.h"
#include "ooc.h"
#include "recfmt.h"
#include "runmerge.h"
#include "runset.h"
#include "tempdir.h"
#include "job_topo.h"

/* A chunk: lines at the front of an arena, their index entries at the back (growing down).
 * segs map data offsets to input positions (data is contiguous input but for the eols added at
 * files' ends). */
struct seg {
    uint64_t off, pos;
};
struct chunk {
    unsigned char *a;
    uint64_t size;
    uint64_t used; /* data bytes */
    size_t n;      /* lines indexed */
    struct seg *segs;
    size_t nsegs, segcap;
};

static inline struct dsort_line_ent *chunk_ents(const struct chunk *k)
{
    return (struct dsort_line_ent *)(void *)(k->a + k->size) - k->n;
}

struct lx {
    struct dsort_ooc j; /* the skeleton's state (ooc.h) */
    struct dsort_share sh;
    struct dsort_lines_order ord;
    int with_pos;
    uint64_t budget;         /* the smallest budget of all ranks */
    struct dsort_memplan mp; /* its buffers (memplan.h): mp.third each of chunk, send, receive */
    uint64_t end;            /* lines starting at or after this byte are not ours */
    uint64_t pos;            /* the next byte to read (index into the inputs) */
    unsigned char *spl; /* the splitter lines (or a checkpoint's blob); split[] points into it */
    const unsigned char **split;
    size_t *split_len;
    /* The splitters are (line, position): the last 8 bytes of split[d] (counted in
     * split_len[d]) are the job-wide input position of the splitter line, big-endian, and
     * lines equal to it are cut by position, so that equal keys spread over the ranks. Set
     * unless -u (equal keys must meet on one rank to be made unique): under -s the positions
     * travel with the lines; otherwise lines that compare equal are equal bytes, and any cut of
     * them gives the same output. */
    int by_pos;
    int direct; /* the job sorts in memory (one round, no spill), as planned after the sample */
    double avg_line;   /* bytes a line (with its eol) in the samples of all ranks */
    size_t run_block;  /* bytes of a run file's checksummed blocks (the plan's or resumed) */
    int grow_share;    /* in memory (one round): the arena may grow up to a third */
    uint64_t longest;  /* the longest line (with its eol) this rank read */
    uint64_t max_line; /* the longest line of all ranks (set before run files are read) */
    int noted_long;    /* -v: the note about a line held past the budget was printed */
    /* The sample, while the splitters are chosen: its lines (smp.a) and their entries. */
    struct chunk smp;
    struct dsort_line_ent *smp_ents, *smp_tmp;
    uint64_t smp_cover; /* bytes of the share whose lines the sample holds (0: all of it) */
    /* Device-parallel reading (with a topology): per input file, whether its last byte was
     * looked at (known) and whether its last line lacks an eol (pad: 1 byte to add after it).
     * One allocation of 2 * in->count bytes (pad, then known), freed with the job. */
    unsigned char *pad, *known;
};

/* The job-wide input position (for ties under -s and -u) of data offset off of the chunk. */
uint64_t dsort_lines_job_chunk_pos(const struct lx *x, const struct chunk *k, uint64_t off);
/* Fill the chunk with whole lines from x->pos on (those that start before x->end), indexing
 * them as they arrive; a line longer than the arena grows it (see lines_read.c). With a
 * topology (x->o->topo) the rest of the share is read with dsort_job_topo_read, as much as the
 * arena holds a call, one thread per device; the end of the last line, past the share, and
 * jobs without a topology are read with one stream (dsort_inputs_read). */
enum dsort_status dsort_lines_job_fill(struct lx *x, struct chunk *k, struct dsort_error *err);
/* The splitters (ooc.h's sample, select, sample_free): local, sample this rank's share (x->smp,
 * sorted by select); collective, choose the p-1 splitter lines (x->split) over every rank's
 * sample; local, free the sample. */
enum dsort_status dsort_lines_job_sample(void *x);
enum dsort_status dsort_lines_job_select(void *x, int *rounds);
void dsort_lines_job_sample_free(void *x);
/* The splitter lines as the format's cut takes them (recfmt.h). */
static inline struct dsort_recfmt_splits dsort_lines_job_splits(const struct lx *x)
{
    return (struct dsort_recfmt_splits){.n = (size_t)(x->j.c->size - 1),
                                        .line = x->split,
                                        .len = x->split_len,
                                        .by_pos = x->by_pos};
}

/* The mapped in-memory path (lines_map.c). Collective: can the job read its one input through
 * a mapping (dsort_job_map_usable), in one round (direct), with offsets that fit an entry? */
int dsort_lines_job_map_usable(const struct lx *x, int direct);
/* Collective: the whole in-memory job over the mapped input (see lines_map.c); *taken 0 (and
 * nothing done) when the file's last line lacks its eol: the copying path adds it. */
enum dsort_status dsort_lines_job_sort_mapped(struct lx *x, struct dsort_output *out, int *taken);
/* Local: add the line and eol checksums of n entries' lines in buf (conservation; --verify). */
void dsort_lines_job_sum(struct lx *x, const unsigned char *buf, const struct dsort_line_ent *e,
                         size_t n);
/* Collective (lines_map.c): set this rank's share of the output to bytes, then stream
 * merge(x, ctx, sink)'s lines into it through the output's writer thread (outsink.h); with
 * exact, the bytes written must be `bytes`. */
enum dsort_status
dsort_lines_job_to_output(struct lx *x, struct dsort_output *out, uint64_t bytes, int exact,
                          enum dsort_status (*merge)(struct lx *, void *, struct dsort_line_sink *),
                          void *ctx);
/* Local: the output sink's view of the bytes passed on (ctx: the struct lx): --progress's
 * local figure on rank 0, and the bytes written so far (lines_map.c). */
void dsort_lines_job_out_seen(void *ctx, const unsigned char *p, size_t len);

#endif
