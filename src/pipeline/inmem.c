/* The in-memory paths' shared steps (inmem.h): the mapped path written once against a format's
 * table of steps, and the exact cut and the exchange that the copying path shares with it.
 *
 * Memory of the mapped path: 32 bytes an entry (the entries, and the sort's scratch, which then
 * receives the exchanged entries when they fit) and the writer's buffers. The mapped input
 * counts in a rank's resident set (it is the page cache, shared by the node's ranks), not in
 * its own memory.
 */
#include "inmem.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "agree.h"
#include "mem.h"
#include "progress.h"
#include "splitters.h"
#include "job_end.h"
#include "job_topo.h"
#include "phase.h"

/* The mark-th --progress step (a collective: the table says which steps the format has). */
static void step(struct dsort_inmem *m, int mark)
{
    static const char *const names[3] = {"sort", "exchange", "write"};
    if (mark != 1 || m->f->exchange_step)
        dsort_progress_step(m->c, names[mark], m->mark[mark]);
}

/* Read: map the file, fault in this rank's bytes, index and checksum them (the conservation
 * check's first half). *taken 0 (and the map gone) when a rank's format does not accept its
 * data. Agrees. */
static enum dsort_status read_share(struct dsort_inmem *m, enum dsort_status st, int *taken)
{
    const struct dsort_inmem_fmt *f = m->f;
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_READ);
    if (!st)
        st = dsort_inputs_map(&m->map, &m->in->files[0], m->err);
    const int ok = !st && (!f->accepts || f->accepts(m));
    if ((st = dsort_comm_agree(m->c, st, m->err)))
        return st;
    if (f->accepts && !dsort_comm_all_ok(m->c, ok))
        return DSORT_OK;
    *taken = 1;
    m->stats->mapped = 1;
    m->stats->external = 0;
    st = f->range(m);
    if (!st)
        st = dsort_job_topo_populate(m->o->topo, 0, &m->map, m->start, m->end - m->start, m->err);
    if (!st) {
        f->count(m);
        m->cap = m->n;
        m->ents = dsort_mem_alloc(m->cap * DSORT_INMEM_ENT);
        m->tmp = m->ents ? dsort_mem_alloc(m->cap * DSORT_INMEM_ENT) : NULL;
        if (!m->tmp)
            st = DSORT_ERR(m->err, DSORT_ENOMEM, errno,
                           "cannot allocate %" PRIu64 " bytes of entries",
                           (uint64_t)2 * m->cap * DSORT_INMEM_ENT);
    }
    if (!st)
        f->index(m);
    m->stats->bytes_read = m->end - m->start;
    m->stats->records_in = m->n;
    dsort_job_phase_end(m->stats, PH_READ, &pc);
    return dsort_comm_agree(m->c, st, m->err);
}

/* Sort the entries and cut them for the ranks (the cut agrees). */
static enum dsort_status sort_and_cut(struct dsort_inmem *m)
{
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SORT);
    m->f->sort(m);
    dsort_job_phase_end(m->stats, PH_SORT, &pc);
    dsort_job_phase_begin(&pc, m->f->cut_phase);
    enum dsort_status st = m->f->cut(m);
    dsort_job_phase_end(m->stats, m->f->cut_phase, &pc);
    return st;
}

/* Exchange the entries (into the sort's scratch, free now, when they fit) and every rank's
 * range of the file; check what arrived. One rank keeps its entries. Agrees. */
static enum dsort_status exchange(struct dsort_inmem *m)
{
    const struct dsort_comm *c = m->c;
    const uint64_t range[2] = {m->start, m->end};
    if (c->size == 1) {
        m->rbuf = m->ents;
        m->rcount[0] = m->n * DSORT_INMEM_ENT;
        m->lo[0] = range[0];
        m->hi[0] = range[1];
        return dsort_comm_agree(c, dsort_job_blame_input(m->in, m->f->received(m), m->err), m->err);
    }
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_EXCHANGE);
    uint64_t rbytes = 0, *ranges = NULL;
    enum dsort_status st = dsort_inmem_counts(c, m->scount, m->rcount, &rbytes, m->err);
    if (st)
        return st;
    m->rcap = (size_t)(rbytes / DSORT_INMEM_ENT);
    m->rbuf = m->rcap <= m->cap ? m->tmp : dsort_mem_alloc(m->rcap * DSORT_INMEM_ENT);
    if (!m->rbuf)
        st = DSORT_ERR(m->err, DSORT_ENOMEM, errno, "cannot allocate %" PRIu64 " bytes of entries",
                       rbytes);
    if ((st = dsort_comm_agree(c, st, m->err)))
        return st;
    if ((st = dsort_inmem_move(c, m->o, m->ents, m->scount, m->n * DSORT_INMEM_ENT, m->rbuf,
                               m->rcount, rbytes, m->stats, m->err)))
        return st;
    st = dsort_agree_allgather(c, c->comm, range, sizeof range, (void **)&ranges, m->err);
    if ((st = dsort_comm_agree(c, st, m->err)))
        return st;
    for (int r = 0; r < c->size; r++) {
        m->lo[r] = ranges[2 * r];
        m->hi[r] = ranges[2 * r + 1];
    }
    free(ranges);
    st = dsort_comm_agree(c, dsort_job_blame_input(m->in, m->f->received(m), m->err), m->err);
    dsort_job_phase_end(m->stats, PH_EXCHANGE, &pc);
    return st;
}

static void release(struct dsort_inmem *m)
{
    dsort_inputs_unmap(&m->map);
    if (m->rbuf != m->tmp && m->rbuf != m->ents)
        dsort_mem_free(m->rbuf, m->rcap * DSORT_INMEM_ENT);
    dsort_mem_free(m->ents, m->cap * DSORT_INMEM_ENT);
    dsort_mem_free(m->tmp, m->cap * DSORT_INMEM_ENT);
    m->ents = m->tmp = m->rbuf = NULL;
    free(m->scount);
    m->scount = NULL;
}

enum dsort_status dsort_inmem_mapped(struct dsort_inmem *m, enum dsort_status st, int *taken)
{
    const size_t p = (size_t)m->c->size;
    *taken = 0;
    m->map = (struct dsort_input_map){NULL, 0, NULL};
    m->scount = calloc(4 * p, sizeof *m->scount);
    if (!st && !m->scount)
        st = DSORT_ERR(m->err, DSORT_ENOMEM, errno, "out of memory");
    m->rcount = m->scount + p;
    m->lo = m->scount + 2 * p;
    m->hi = m->scount + 3 * p;
    /* --progress: where the read and the sort lie in this rank's work */
    dsort_progress_window("read", 0, m->mark[0], m->f->read_reports ? 0.4 : 1);
    dsort_progress_window("sort", m->mark[0], m->mark[m->f->exchange_step ? 1 : 2], 0);
    if ((st = read_share(m, st, taken)) || !*taken)
        goto out;
    step(m, 0);
    if ((st = sort_and_cut(m)))
        goto out;
    step(m, 1);
    if ((st = exchange(m)))
        goto out;
    step(m, 2);
    /* Merge the entries; their records go from the mapping to the output's writer. */
    st = m->f->write(m);
    dsort_job_note_rss(m->stats); /* with the mapping: the page cache this rank used */
    st = dsort_comm_agree(m->c, dsort_job_blame_input(m->in, st, m->err), m->err);
out:
    release(m);
    return st;
}

/* The composite key of the i-th sorted record (dsort_job_run_key). */
struct cut_keys {
    const struct dsort_cmp *cmp;
    const unsigned char *(*rec_at)(const void *ctx, uint64_t i);
    const void *ctx;
    uint64_t g0;
};

static void cut_key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    const struct cut_keys *k = ctx;
    dsort_job_run_key(k->cmp, k->rec_at(k->ctx, i), k->g0, i, out);
}

enum dsort_status dsort_inmem_cut(const struct dsort_comm *c, const struct dsort_job_options *o,
                                  const struct dsort_inputs *in, uint64_t n, uint64_t g0,
                                  const unsigned char *(*rec_at)(const void *ctx, uint64_t i),
                                  const void *ctx, uint64_t *cuts, struct dsort_job_stats *stats,
                                  struct dsort_error *err)
{
    struct dsort_cmp cmp;
    dsort_cmp_init(&cmp, &o->fmt, &o->ord);
    struct cut_keys ck = {&cmp, rec_at, ctx, g0};
    struct dsort_splitter_keys sk = {n, cmp.key_len + cmp.tie_len + 16, cut_key_at, &ck};
    enum dsort_status st = dsort_splitters_cut(c->comm, &sk, cuts, &stats->splitter_rounds, err);
    return dsort_comm_agree(c, dsort_job_blame_input(in, st, err), err);
}

enum dsort_status dsort_inmem_counts(const struct dsort_comm *c, const uint64_t *scount,
                                     uint64_t *rcount, uint64_t *rbytes, struct dsort_error *err)
{
    enum dsort_status st = dsort_exchange_counts(c->comm, scount, rcount, err);
    *rbytes = 0;
    for (int r = 0; r < c->size; r++)
        *rbytes += rcount[r];
    return dsort_comm_agree(c, st, err);
}

enum dsort_status dsort_inmem_move(const struct dsort_comm *c, const struct dsort_job_options *o,
                                   const void *send, const uint64_t *scount, uint64_t sent,
                                   void *recv, const uint64_t *rcount, uint64_t rbytes,
                                   struct dsort_job_stats *stats, struct dsort_error *err)
{
    int rounds = 0;
    enum dsort_status st =
        dsort_exchange_move(o->exchange, send, scount, NULL, recv, rcount, NULL, &rounds, err);
    stats->exchange_rounds += rounds;
    stats->bytes_sent += sent - scount[c->rank];
    stats->bytes_received += rbytes - rcount[c->rank];
    return dsort_comm_agree(c, st, err);
}
