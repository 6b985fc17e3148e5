/* The in-memory pipeline over a mapped input for fixed records (job.h): the format's steps of
 * the mapped path (inmem.h), which sorts 16-byte entries (key prefix, the record's number in the
 * file) instead of records. The exact splitters cut the sorted entries, so that each rank's
 * merge writes as many records as it read: its share of the output. The merge copies the
 * records from the mapping straight into the output writer's buffers, while the writer thread
 * writes the previous buffer.
 *
 * On these machines fresh memory is the largest cost of an in-memory sort
 * (docs/performance.md): the records are never copied into it, where job_mem.c touches two
 * share-sized buffers.
 *
 * Typed keys (job_typed.h) keep this path: the records in the mapping stay the user's, the
 * entries are made as their keys are normalised, the cut looks at the records it needs widened
 * (o->fmt is the widened format, so that it orders as the copying path does), and the merge
 * normalises the keys it reads from the mapping.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "inmem.h"
#include "job_typed.h"
#include "keysort.h"
#include "outsink.h"
#include "progress.h"
#include "job_end.h"
#include "phase.h"

/* The writer's buffers: two of this size (and a page). */
#define MAP_OUT_BUF ((size_t)8 << 20)

int dsort_job_map_usable(const struct dsort_comm *c, const struct dsort_job_options *o,
                         const struct dsort_inputs *in)
{
    if (o->no_map || o->ord.unique || o->stdin_rank0 || o->local_inputs || in->count != 1 ||
        in->total_records >= DSORT_KEYSORT_MAX_RECORDS)
        return 0; /* the same on every rank: options and the shared input set */
    /* One node: the ranks that share memory with us (comm.h's node) are all of them. */
    const int one_node = c->node_size == c->size;
    /* And the file system maps files (every rank tries: a failure means the copying path). */
    int maps = 0;
    if (one_node) {
        struct dsort_input_map m;
        struct dsort_error err = {0};
        maps = dsort_inputs_map(&m, &in->files[0], &err) == DSORT_OK;
        dsort_inputs_unmap(&m);
    }
    return dsort_comm_all_ok(c, one_node && maps);
}

struct fixed_map {
    struct dsort_inmem m; /* first: the steps get &m */
    struct dsort_share sh;
    size_t rs;
    uint64_t *cuts;                    /* [ranks + 1] */
    const struct dsort_sortent **runs; /* [ranks]: the received entries of each sender */
    size_t *lens;
    struct dsort_sum128 sum_in, con_in, sum_out, con_out;
    const struct dsort_typedkey *tk; /* typed keys, or NULL */
    unsigned char *keys;             /* typed keys: two normalised keys (the sort's) */
    unsigned char *wide;             /* typed keys: one widened record (the cut's) */
    uint64_t nout, done;             /* records received; bytes written (--progress) */
};

static const unsigned char *mine(const struct fixed_map *x)
{
    return (const unsigned char *)x->m.map.base + x->m.start;
}

static enum dsort_status fixed_range(struct dsort_inmem *m)
{
    struct fixed_map *x = (struct fixed_map *)m;
    m->start = x->sh.first * x->rs;
    m->end = m->start + x->sh.n * x->rs;
    return DSORT_OK;
}

static void fixed_count(struct dsort_inmem *m)
{
    m->n = (size_t)((struct fixed_map *)m)->sh.n;
}

/* The keysort makes the entries as it sorts: here only the checksums. */
static void fixed_index(struct dsort_inmem *m)
{
    struct fixed_map *x = (struct fixed_map *)m;
    dsort_job_sum_records(m->o->verify, mine(x), m->n, x->rs, &x->sum_in, &x->con_in);
}

/* Sort this rank's entries; then make their indices the records' numbers in the file. */
static void fixed_sort(struct dsort_inmem *m)
{
    struct fixed_map *x = (struct fixed_map *)m;
    struct dsort_sortent *e = m->ents;
    if (x->tk)
        dsort_job_typed_sort(x->tk, &m->o->ord, mine(x), m->n, e, m->tmp, x->keys);
    else
        dsort_keysort_sort(&m->o->fmt, &m->o->ord, mine(x), m->n, e, m->tmp);
    for (size_t i = 0; i < m->n; i++)
        e[i].k1 += x->sh.first;
}

static const unsigned char *sorted_rec(const void *ctx, uint64_t i)
{
    const struct fixed_map *x = ctx;
    const struct dsort_sortent *e = x->m.ents;
    const unsigned char *rec =
        (const unsigned char *)x->m.map.base + dsort_sortent_index(&e[i]) * x->rs;
    if (!x->tk)
        return rec;
    dsort_typedkey_widen(x->tk, rec, 1, x->wide); /* as the copying path's records are */
    return x->wide;
}

/* The exact splitters over the sorted entries (the keys are read from the mapping: an input
 * rewritten meanwhile shows here first; typed keys' records widened). Agrees. */
static enum dsort_status fixed_cut(struct dsort_inmem *m)
{
    struct fixed_map *x = (struct fixed_map *)m;
    enum dsort_status st = dsort_inmem_cut(m->c, m->o, m->in, m->n, x->sh.g0, sorted_rec, x,
                                           x->cuts, m->stats, m->err);
    for (int r = 0; r < m->c->size; r++)
        m->scount[r] = (x->cuts[r + 1] - x->cuts[r]) * DSORT_INMEM_ENT;
    return st;
}

/* The runs of received entries; the ranges as record numbers. */
static enum dsort_status fixed_received(struct dsort_inmem *m)
{
    struct fixed_map *x = (struct fixed_map *)m;
    const struct dsort_sortent *e = m->rbuf;
    x->nout = 0;
    for (int r = 0; r < m->c->size; r++) {
        x->runs[r] = e + x->nout;
        x->lens[r] = (size_t)(m->rcount[r] / DSORT_INMEM_ENT);
        x->nout += x->lens[r];
        m->lo[r] /= x->rs;
        m->hi[r] /= x->rs;
    }
    m->stats->records_out = x->nout;
    if (x->nout != x->sh.n)
        return DSORT_ERR(m->err, DSORT_EINTERNAL, 0,
                         "received %" PRIu64 " records for a share of %" PRIu64, x->nout, x->sh.n);
    return DSORT_OK;
}

/* The output sink's view of the records written: their checksums and the progress. */
static void count_out(void *ctx, const unsigned char *p, size_t len)
{
    struct fixed_map *x = ctx;
    const struct dsort_job_options *o = x->m.o;
    dsort_job_sum_records(o->output_dir || o->verify, p, len / x->rs, x->rs, &x->sum_out,
                          &x->con_out);
    x->done += len;
    dsort_progress_local("write", x->m.mark[2] + x->done);
}

/* Merge the entries; their records go from the mapping into the writer's buffers. */
static enum dsort_status fixed_write(struct dsort_inmem *m)
{
    struct fixed_map *x = (struct fixed_map *)m;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_WRITE);
    struct dsort_output_sink os;
    /* two buffers, each with room for two records and the O_DIRECT lead and carry */
    const size_t buf_len = MAP_OUT_BUF > 2 * x->rs ? MAP_OUT_BUF + 4096 : 2 * x->rs + 2 * 4096;
    enum dsort_status st = dsort_output_sink_open(&os, m->out, buf_len, count_out, x, m->err);
    if (!st) {
        if (x->tk)
            st = dsort_job_typed_merge(x->tk, &m->o->ord, m->map.base, x->runs, x->lens, m->lo,
                                       m->hi, (size_t)m->c->size, &os.sink, m->err);
        else
            st = dsort_keysort_merge(&m->o->fmt, &m->o->ord, m->map.base, x->runs, x->lens, m->lo,
                                     m->hi, (size_t)m->c->size, &os.sink, m->err);
        st = dsort_output_sink_finish(&os, st, m->err);
        m->stats->bytes_written = os.pos;
    }
    dsort_job_phase_end(m->stats, PH_WRITE, &pc);
    return st;
}

static const struct dsort_inmem_fmt fixed_fmt = {.range = fixed_range,
                                                 .count = fixed_count,
                                                 .index = fixed_index,
                                                 .sort = fixed_sort,
                                                 .cut = fixed_cut,
                                                 .cut_phase = PH_SPLIT,
                                                 .received = fixed_received,
                                                 .write = fixed_write,
                                                 .exchange_step = 1};

int dsort_job_sort_mapped(const struct dsort_comm *c, const struct dsort_job_options *o,
                          const struct dsort_inputs *in, const struct dsort_share *share,
                          struct dsort_job_stats *stats)
{
    struct dsort_error err = {0};
    struct dsort_output out;
    struct fixed_map x = {.sh = *share, .rs = dsort_job_out_rec(o), .tk = o->typed};
    const uint64_t bytes = x.sh.n * x.rs;
    stats->records_in = x.sh.n;
    stats->mapped = 1;
    if (dsort_job_output_open(c, o, bytes, &out, &err))
        return 2;
    out.narrow = NULL; /* the user's records, typed keys or not */
    /* --progress: read, sort, exchange, merge and write: four passes */
    dsort_progress_start(c, o->progress, bytes, 4);
    x.m = (struct dsort_inmem){.f = &fixed_fmt,
                               .c = c,
                               .o = o,
                               .in = in,
                               .stats = stats,
                               .err = &err,
                               .out = &out,
                               .mark = {bytes, 2 * bytes, 3 * bytes}};
    x.cuts = calloc((size_t)c->size + 1, sizeof *x.cuts);
    x.runs = calloc((size_t)c->size, sizeof *x.runs);
    x.lens = calloc((size_t)c->size, sizeof *x.lens);
    enum dsort_status st = DSORT_OK;
    if (!x.cuts || !x.runs || !x.lens)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    if (!st && x.tk) {
        x.wide = malloc(o->fmt.rec_size);
        x.keys = malloc(2 * x.tk->norm_len);
        if (!x.wide || !x.keys)
            st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    }
    int taken, rc = 2;
    if (!(st = dsort_inmem_mapped(&x.m, st, &taken))) {
        struct dsort_job_sums sums = {x.sum_in, x.sum_out, x.con_in,     x.con_out,
                                      x.sh.n,   x.nout,    x.nout * x.rs};
        rc = dsort_job_finish(c, o, in, &out, &sums, stats, &err);
    } else {
        dsort_output_abandon(&out);
    }
    free(x.keys);
    free(x.wide);
    free(x.cuts);
    free(x.runs);
    free(x.lens);
    return rc;
}
