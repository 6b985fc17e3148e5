/* The in-memory pipeline over a mapped input (job.h): every rank of the job on one node and
 * one input file, so that every rank can read every record where the page cache holds it.
 * The records are never copied into fresh memory: each rank sorts 16-byte entries of its
 * share (key prefix, the record's number in the file), the exact splitters cut the sorted
 * entries, the ranks exchange entries instead of records, and each rank's merge of the
 * entries it received copies its records from the mapping straight into the output writer's
 * buffers, while the writer thread writes the previous buffer.
 *
 * Memory: 32 bytes a record (the entries, and the radix scratch, which then receives the
 * exchanged entries) and the writer's buffers, where job_mem.c touches two share-sized
 * buffers as well: on these machines fresh memory is the largest cost of an in-memory sort
 * (docs/performance.md). The mapped input counts in a rank's resident set (it is the page
 * cache, shared by the node's ranks), not in its own memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exchange.h"
#include "job.h"
#include "keysort.h"
#include "mem.h"
#include "outsink.h"
#include "output.h"
#include "progress.h"
#include "splitters.h"

/* The writer's buffers: two of this size (and a page). */
#define MAP_OUT_BUF ((size_t)8 << 20)

int dsort_job_map_usable(const struct dsort_comm *c, const struct dsort_job_options *o,
                         const struct dsort_inputs *in)
{
    if (o->no_map || o->ord.unique || o->stdin_rank0 || o->local_inputs || in->count != 1 ||
        in->total_records >= DSORT_KEYSORT_MAX_RECORDS)
        return 0; /* the same on every rank: options and the shared input set */
    /* One node: the ranks that share memory with us are all of them. */
    MPI_Comm node;
    int on_node = 0;
    if (MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &on_node);
        MPI_Comm_free(&node);
    }
    /* And the file system maps files (every rank tries: a failure means the copying path). */
    int maps = 0;
    if (on_node == c->size) {
        struct dsort_input_map m;
        struct dsort_error err = {0};
        maps = dsort_inputs_map(&m, &in->files[0], &err) == DSORT_OK;
        dsort_inputs_unmap(&m);
    }
    return dsort_comm_all_ok(c, on_node == c->size && maps);
}

/* The composite key of the i-th entry of the sorted run, as job_mem.c's run_key_at makes it
 * for the i-th record of its sorted run: the same cuts. */
struct map_keys {
    const struct dsort_cmp *cmp;
    const unsigned char *recs; /* the file's records */
    const struct dsort_sortent *ents;
    size_t rec_size;
    uint64_t g0;
};

static void map_key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    const struct map_keys *k = ctx;
    dsort_job_run_key(k->cmp, k->recs + dsort_sortent_index(&k->ents[i]) * k->rec_size, k->g0, i,
                      out);
}

/* The output sink's view of the records written: their checksums and the progress. */
struct map_out {
    const struct dsort_job_options *o;
    struct dsort_sum128 sum, con;
    uint64_t base, done;
};

static void count_out(void *ctx, const unsigned char *p, size_t len)
{
    struct map_out *m = ctx;
    const size_t rs = m->o->fmt.rec_size;
    dsort_job_sum_records(m->o->output_dir || m->o->verify, p, len / rs, rs, &m->sum, &m->con);
    m->done += len;
    dsort_progress_local("write", m->base + m->done);
}

int dsort_job_sort_mapped(const struct dsort_comm *c, const struct dsort_job_options *o,
                          const struct dsort_inputs *in, const struct dsort_share *share,
                          struct dsort_job_stats *stats)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    int rc = 2;
    const size_t rs = o->fmt.rec_size, es = sizeof(struct dsort_sortent);
    struct dsort_phase_clock pc;
    const struct dsort_share sh = *share;
    const uint64_t n = sh.n;
    stats->records_in = n;
    stats->mapped = 1;

    struct dsort_output out;
    if (dsort_job_output_open(c, o, n * rs, &out, &err))
        return 2;
    const size_t bytes = (size_t)(n * rs);
    /* --progress: read, sort, exchange, merge and write: four passes */
    dsort_progress_start(c, o->progress, bytes, 4);
    struct dsort_input_map map = {NULL, 0, NULL};
    struct dsort_sortent *ents = dsort_mem_alloc(n * es), *tmp = dsort_mem_alloc(n * es);
    uint64_t *cuts = calloc((size_t)c->size + 1, sizeof *cuts);
    uint64_t *scount = calloc((size_t)c->size, sizeof *scount);
    uint64_t *rcount = calloc((size_t)c->size, sizeof *rcount);
    const struct dsort_sortent **runs = calloc((size_t)c->size, sizeof *runs);
    size_t *lens = calloc((size_t)c->size, sizeof *lens);
    /* [lo[r], hi[r]): the records rank r sorted (its entries may name no others) */
    uint64_t *lo = calloc((size_t)c->size, sizeof *lo), *hi = calloc((size_t)c->size, sizeof *hi);
    if (!ents || !tmp || !cuts || !scount || !rcount || !runs || !lens || !lo || !hi)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "cannot allocate %" PRIu64 " bytes of entries",
                       2 * n * es);
    struct dsort_sum128 sum_in = {0, 0}, con_in = {0, 0};

    /* Read: map the file, fault in this rank's share, and checksum it (the conservation
     * check's first half; a pass over the page cache). */
    dsort_job_phase_begin(&pc, PH_READ);
    if (!st)
        st = dsort_inputs_map(&map, &in->files[0], &err);
    const unsigned char *mine = map.base ? map.base + sh.first * rs : NULL;
    if (!st)
        st = dsort_job_topo_populate(o->topo, 0, &map, sh.first * rs, bytes, &err);
    if (!st)
        dsort_job_sum_records(o->verify, mine, n, rs, &sum_in, &con_in);
    stats->bytes_read = bytes;
    dsort_job_phase_end(stats, PH_READ, &pc);
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail;
    dsort_progress_step(c, "sort", bytes);

    /* Sort this rank's entries; then make their indices the records' numbers in the file. */
    dsort_job_phase_begin(&pc, PH_SORT);
    dsort_keysort_sort(&o->fmt, &o->ord, mine, n, ents, tmp);
    for (uint64_t i = 0; i < n; i++)
        ents[i].k1 += sh.first;
    dsort_job_phase_end(stats, PH_SORT, &pc);

    /* Exact splitters over the sorted entries. */
    dsort_job_phase_begin(&pc, PH_SPLIT);
    struct dsort_cmp cmp;
    dsort_cmp_init(&cmp, &o->fmt, &o->ord);
    struct map_keys mk = {&cmp, map.base, ents, rs, sh.g0};
    struct dsort_splitter_keys sk = {n, cmp.key_len + cmp.tie_len + 16, map_key_at, &mk};
    /* (the keys are read from the mapping: an input rewritten meanwhile shows here first) */
    st = dsort_splitters_cut(c->comm, &sk, cuts, &stats->splitter_rounds, &err);
    if ((st = dsort_comm_agree(c, dsort_job_blame_input(in, st, &err), &err)))
        goto fail;
    dsort_job_phase_end(stats, PH_SPLIT, &pc);
    dsort_progress_step(c, "exchange", 2 * (uint64_t)bytes);

    /* Exchange the entries (into the scratch, free now); the records stay where they are. */
    size_t k = 1;
    runs[0] = ents;
    lens[0] = (size_t)n;
    uint64_t range[2] = {sh.first, sh.first + n}, *ranges = range;
    if (c->size > 1) {
        ranges = malloc(2 * (size_t)c->size * sizeof *ranges);
        st = ranges ? DSORT_OK : DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
        if ((st = dsort_comm_agree(c, st, &err))) {
            free(ranges);
            goto fail;
        }
        /* Raw: ranges was allocated on every rank and agreed just above. */
        MPI_Allgather(range, 2, MPI_UINT64_T, ranges, 2, MPI_UINT64_T, c->comm);
    }
    for (int r = 0; r < c->size; r++) {
        lo[r] = ranges[2 * r];
        hi[r] = ranges[2 * r + 1];
    }
    if (ranges != range)
        free(ranges);
    uint64_t nout = n;
    if (c->size > 1) {
        dsort_job_phase_begin(&pc, PH_EXCHANGE);
        for (int r = 0; r < c->size; r++)
            scount[r] = (cuts[r + 1] - cuts[r]) * es;
        st = dsort_exchange_counts(c->comm, scount, rcount, &err);
        uint64_t rbytes = 0;
        for (int r = 0; r < c->size; r++)
            rbytes += rcount[r];
        if (!st && rbytes > n * es)
            st = DSORT_ERR(&err, DSORT_EINTERNAL, 0,
                           "receiving %" PRIu64 " entries but the buffer holds %" PRIu64,
                           rbytes / es, n);
        if ((st = dsort_comm_agree(c, st, &err)))
            goto fail;
        st = dsort_exchange_move(o->exchange, (const unsigned char *)ents, scount, NULL,
                                 (unsigned char *)tmp, rcount, NULL, &stats->exchange_rounds, &err);
        stats->bytes_sent = n * es - scount[c->rank];
        stats->bytes_received = rbytes - rcount[c->rank];
        if ((st = dsort_comm_agree(c, st, &err)))
            goto fail;
        dsort_job_phase_end(stats, PH_EXCHANGE, &pc);
        k = (size_t)c->size;
        uint64_t off = 0;
        for (int r = 0; r < c->size; r++) {
            runs[r] = tmp + off;
            lens[r] = (size_t)(rcount[r] / es);
            off += lens[r];
        }
        nout = off;
    }
    stats->records_out = nout;
    dsort_progress_step(c, "write", 3 * (uint64_t)bytes);

    /* Merge the entries; their records go from the mapping into the writer's buffers. The
     * exact splitters give every rank as many records as it read: its share of the output. */
    dsort_job_phase_begin(&pc, PH_WRITE);
    struct map_out mo = {o, {0, 0}, {0, 0}, 3 * (uint64_t)bytes, 0};
    struct dsort_output_sink os;
    /* two buffers, each with room for two records and the O_DIRECT lead and carry */
    const size_t buf_len = MAP_OUT_BUF > 2 * rs ? MAP_OUT_BUF + 4096 : 2 * rs + 2 * 4096;
    if (nout != n)
        st = DSORT_ERR(&err, DSORT_EINTERNAL, 0,
                       "received %" PRIu64 " records for a share of %" PRIu64, nout, n);
    else
        st = dsort_output_sink_open(&os, &out, buf_len, count_out, &mo, &err);
    if (!st) {
        st = dsort_keysort_merge(&o->fmt, &o->ord, map.base, runs, lens, lo, hi, k, &os.sink, &err);
        st = dsort_output_sink_finish(&os, st, &err);
        stats->bytes_written = os.pos;
    }
    dsort_job_phase_end(stats, PH_WRITE, &pc);
    dsort_job_note_rss(stats); /* with the mapping: the page cache this rank used */
    if ((st = dsort_comm_agree(c, dsort_job_blame_input(in, st, &err), &err)))
        goto fail;
    dsort_inputs_unmap(&map);
    dsort_mem_free(ents, n * es);
    dsort_mem_free(tmp, n * es);
    ents = tmp = NULL;
    struct dsort_job_sums sums = {sum_in, mo.sum, con_in, mo.con, n, nout, nout * rs};
    rc = dsort_job_finish(c, o, in, &out, &sums, stats, &err);
    goto done;

fail:
    dsort_output_abandon(&out);
    dsort_inputs_unmap(&map);
    dsort_mem_free(ents, n * es);
    dsort_mem_free(tmp, n * es);
done:
    free(cuts);
    free(scount);
    free(rcount);
    free(runs);
    free(lens);
    free(lo);
    free(hi);
    return rc;
}
