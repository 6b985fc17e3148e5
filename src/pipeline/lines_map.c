/* The text lines' steps of the mapped in-memory path (inmem.h; lines_job.h): one input file,
 * one round, the lines left in the page cache; only 16-byte entries (prefix, the line's offset
 * in the file, its length) are sorted and exchanged (the format's sort_chunk and cut,
 * recfmt.h), cut by the sampled splitter lines. And the lines' output (lines_job.h's
 * dsort_lines_job_to_output): a merge's lines streamed into this rank's share of the output,
 * for the mapped path and (its sink's view, dsort_lines_job_out_seen) the out-of-core merge. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "inmem.h"
#include "lines_job.h"
#include "ooc.h"
#include "outsink.h"
#include "progress.h"
#include "runfile.h"
#include "phase.h"

/* Collective: can the job read its one input through a mapping (dsort_job_map_usable), in one
 * round, with offsets that fit an entry? */
int dsort_lines_job_map_usable(const struct lx *x, int direct)
{
    const struct dsort_job_options *o = x->j.o;
    if (!direct || o->checkpoint || o->resume || o->force_external || x->j.in->count != 1 ||
        x->j.in->files[0].size == 0 || x->j.in->files[0].size >= DSORT_LINE_MAX_BUFFER)
        return 0; /* the same on every rank */
    return dsort_job_map_usable(x->j.c, o, x->j.in);
}

struct lines_map {
    struct dsort_inmem m; /* first: the steps get &m */
    struct lx *x;
    const struct dsort_line_ent **runs; /* [ranks]: the received entries of each sender */
    size_t *lens;
};

static const unsigned char *file(const struct dsort_inmem *m)
{
    return (const unsigned char *)m->map.base;
}

/* The file's last line ends in its eol (else the copying path adds it). */
static int lines_accepts(struct dsort_inmem *m)
{
    const struct lx *x = ((struct lines_map *)m)->x;
    return m->map.len && file(m)[m->map.len - 1] == x->ord.eol;
}

/* This rank's lines: those that start in [x->pos, x->end). */
static enum dsort_status lines_range(struct dsort_inmem *m)
{
    struct lx *x = ((struct lines_map *)m)->x;
    m->start = m->end = x->pos;
    enum dsort_status st = dsort_lines_range_start(m->in, x->end, x->ord.eol, &m->end, m->err);
    if (!st && m->end < m->start)
        m->end = m->start;
    return st;
}

static void lines_count(struct dsort_inmem *m)
{
    const unsigned char eol = ((struct lines_map *)m)->x->ord.eol;
    m->n = 0;
    for (const unsigned char *q = file(m) + m->start, *qe = file(m) + m->end; q < qe; m->n++) {
        const unsigned char *e = memchr(q, eol, (size_t)(qe - q));
        q = e ? e + 1 : qe;
    }
    dsort_progress_within(0.5); /* --progress: the read's count is done (inmem.h) */
}

/* Index and checksum the lines in blocks of about 1/32 of the range, each ending after an eol,
 * so that --progress follows (the second half of the read: 0.5 to 1). */
static void lines_index(struct dsort_inmem *m)
{
    struct lx *x = ((struct lines_map *)m)->x;
    struct dsort_line_ent *e = m->ents;
    const unsigned char *f = file(m);
    const uint64_t len = m->end - m->start, blk = len / 32 + 1;
    m->n = 0;
    for (uint64_t s = m->start, t; s < m->end; s = t) {
        t = s + blk < m->end ? s + blk : m->end;
        if (t < m->end) { /* the range ends in an eol (lines_range) */
            const unsigned char *q = memchr(f + t - 1, x->ord.eol, (size_t)(m->end - t + 1));
            t = q ? (uint64_t)(q - f) + 1 : m->end;
        }
        size_t k = dsort_lines_index(&x->ord, f + s, (size_t)(t - s), e + m->n);
        for (size_t i = m->n; i < m->n + k; i++)
            e[i].ol += s << 24;
        dsort_lines_job_sum(x, f, e + m->n, k);
        m->n += k;
        dsort_progress_within(0.5 + 0.5 * (double)(t - m->start) / (double)len);
    }
}

/* The chunk as the format's chunk operations see it (recfmt.h): the mapped file, offsets into
 * it, which are input positions. */
static uint64_t file_pos_at(const void *ctx, uint64_t off)
{
    const struct lx *x = ctx;
    return x->sh.g0 + (off - x->sh.first);
}

static struct dsort_recfmt_chunk chunk_of(const struct dsort_inmem *m, const struct lx *x)
{
    return (struct dsort_recfmt_chunk){.data = file(m),
                                       .n = m->n,
                                       .ents = m->ents,
                                       .scratch = m->tmp,
                                       .pos = file_pos_at,
                                       .pos_ctx = x};
}

static void lines_sort(struct dsort_inmem *m)
{
    const struct lx *x = ((struct lines_map *)m)->x;
    struct dsort_recfmt_chunk c = chunk_of(m, x);
    dsort_recfmt_lines.sort_chunk(&x->j.fx, &c);
}

/* By the splitter lines (local: they were chosen before). */
static enum dsort_status lines_cut(struct dsort_inmem *m)
{
    struct lx *x = ((struct lines_map *)m)->x;
    const size_t p = (size_t)m->c->size;
    const struct dsort_recfmt_chunk c = chunk_of(m, x);
    const struct dsort_recfmt_splits sp = dsort_lines_job_splits(x);
    size_t *end = malloc(p * sizeof *end);
    if (!end)
        return DSORT_ERR(m->err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status st = dsort_recfmt_lines.cut(&x->j.fx, &c, &sp, end, m->err);
    for (size_t d = 0, l = 0; !st && d < p; l = end[d], d++)
        m->scount[d] = (end[d] - l) * DSORT_INMEM_ENT;
    free(end);
    return st;
}

/* The output's size: the received entries' lines with their eols, each of which must lie in
 * the sender's range [lo, hi) and end there (a long line is measured by looking for its eol:
 * never past the range, whose last eol a rewrite of the input may have taken). */
static enum dsort_status lines_received(struct dsort_inmem *m)
{
    struct lines_map *lm = (struct lines_map *)m;
    const unsigned char eol = lm->x->ord.eol;
    const struct dsort_line_ent *e = m->rbuf;
    enum dsort_status st = DSORT_OK;
    m->out_bytes = 0;
    for (int r = 0; r < m->c->size; r++) {
        lm->runs[r] = e;
        lm->lens[r] = (size_t)(m->rcount[r] / DSORT_INMEM_ENT);
        e += lm->lens[r];
        for (size_t i = 0, len = 0; i < lm->lens[r] && !st; i++) {
            if (dsort_line_len_in(&lm->runs[r][i], file(m), eol, m->lo[r], m->hi[r], &len))
                m->out_bytes += len + 1;
            else
                st = DSORT_ERR(m->err, DSORT_EINTERNAL, 0,
                               "an entry from rank %d names no line of its range at offset %" PRIu64
                               " (the input changed while it was being sorted, or the entry was "
                               "corrupted in the exchange); nothing written",
                               r, dsort_line_off(&lm->runs[r][i]));
        }
    }
    return st;
}

/* ---- the output: a merge's lines streamed into this rank's share of the output, for the
 * out-of-core merge (ooc_lines.c) and the mapped path ---- */

/* The output sink's view of the bytes passed on: --progress's local figure (rank 0). */
void dsort_lines_job_out_seen(void *ctx, const unsigned char *p, size_t len)
{
    struct lx *x = ctx;
    (void)p;
    x->j.out_done += len;
    dsort_progress_local("write", x->sh.n + x->j.out_done);
}

/* The output's writer: a merge's lines through a line writer into the output's sink
 * (O_DIRECT, page-carry: outsink.h). */
struct lines_write {
    struct lx *x;
    enum dsort_status (*merge)(struct lx *, void *, struct dsort_line_sink *);
    void *ctx;
    struct dsort_line_writer w;
    struct dsort_line_sink sink;
};

/* ooc.h's write: the merge's lines through a line writer into the output's sink. */
static enum dsort_status write_lines(void *ctx, struct dsort_output_sink *os)
{
    struct lines_write *lw = ctx;
    lw->w.sink = &os->sink;
    return lw->merge(lw->x, lw->ctx, &lw->sink);
}

enum dsort_status
dsort_lines_job_to_output(struct lx *x, struct dsort_output *out, uint64_t bytes, int exact,
                          enum dsort_status (*merge)(struct lx *, void *, struct dsort_line_sink *),
                          void *ctx)
{
    const struct dsort_job_options *o = x->j.o;
    struct lines_write lw = {.x = x, .merge = merge, .ctx = ctx};
    lw.w = (struct dsort_line_writer){.eol = x->ord.eol,
                                      .sum = o->verify || o->output_dir ? &x->j.sum_out : NULL,
                                      .sum_c = &x->j.con_out};
    lw.sink = (struct dsort_line_sink){dsort_line_writer_emit, &lw.w, 0, 0};
    /* A page more than a block: room for a block after a carried partial page. */
    enum dsort_status st =
        dsort_ooc_to_output(&x->j, out, bytes, x->mp.out_block + DSORT_RUN_ALIGN,
                            dsort_lines_job_out_seen, write_lines, &lw, PH_WRITE, PH_WRITE);
    if (st == DSORT_OK && exact && lw.sink.bytes != bytes)
        st =
            DSORT_ERR(&x->j.err, DSORT_EINTERNAL, 0,
                      "wrote %" PRIu64 " bytes of output, expected %" PRIu64, lw.sink.bytes, bytes);
    x->j.stats->records_out = lw.sink.lines;
    x->j.stats->bytes_written = lw.sink.bytes;
    return st;
}

static enum dsort_status merge_ents(struct lx *x, void *ctx, struct dsort_line_sink *sink)
{
    const struct lines_map *lm = ctx;
    return dsort_lines_merge_ents(&x->ord, file(&lm->m), lm->runs, lm->lens, lm->m.lo, lm->m.hi,
                                  (size_t)lm->m.c->size, sink, &x->j.err);
}

/* Merge the entries; their lines go from the mapping to the output's writer thread. */
static enum dsort_status lines_write(struct dsort_inmem *m)
{
    struct lines_map *lm = (struct lines_map *)m;
    return dsort_lines_job_to_output(lm->x, m->out, m->out_bytes, 1, merge_ents, lm);
}

static const struct dsort_inmem_fmt lines_fmt = {.accepts = lines_accepts,
                                                 .range = lines_range,
                                                 .count = lines_count,
                                                 .index = lines_index,
                                                 .sort = lines_sort,
                                                 .cut = lines_cut,
                                                 .cut_phase = PH_SORT,
                                                 .received = lines_received,
                                                 .write = lines_write,
                                                 .exchange_step = 1,
                                                 .read_reports = 1};

enum dsort_status dsort_lines_job_sort_mapped(struct lx *x, struct dsort_output *out, int *taken)
{
    const struct dsort_comm *c = x->j.c;
    struct lines_map lm = {.x = x};
    lm.m = (struct dsort_inmem){.f = &lines_fmt,
                                .c = c,
                                .o = x->j.o,
                                .in = x->j.in,
                                .stats = x->j.stats,
                                .err = &x->j.err,
                                .out = out,
                                .mark = {x->sh.n / 2, x->sh.n / 4 * 3, x->sh.n}};
    lm.runs = calloc((size_t)c->size, sizeof *lm.runs);
    lm.lens = calloc((size_t)c->size, sizeof *lm.lens);
    enum dsort_status st = DSORT_OK;
    if (!lm.runs || !lm.lens)
        st = DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    st = dsort_inmem_mapped(&lm.m, st, taken);
    free(lm.runs);
    free(lm.lens);
    return st;
}
