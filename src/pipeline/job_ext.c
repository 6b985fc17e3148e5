/* The out-of-core pipeline: some rank's share does not fit its memory budget.
 *
 *   sample: every rank preads a few thousand records at evenly spaced positions of its
 *           share; rank 0 sorts the samples and picks p-1 splitters (composite keys, so that
 *           equal keys are still split evenly).
 *   rounds: each rank reads a memory-sized chunk (the kernel prefetches the next one),
 *           radix-sorts it, cuts it by the splitters and sends every piece to its owner once.
 *           Each rank merges what it receives in a round into one sorted run and spills it
 *           to a temp dir (checksummed blocks, written by a writer thread). If a round would
 *           bring a rank more than its receive buffer holds (skewed input order), the round
 *           is split into waves, each of which makes its own run.
 *   merge:  the runs are merged with the largest fan-in that the open-file limit and the
 *           budget allow; only when there are more runs than that are the smallest merged
 *           first (an extra pass over just those). The final merge writes the output.
 * I/O: read input, write runs, read runs, write output: 2 reads + 2 writes of the data.
 * With -u the deduplicated output goes through one more temp run, because its size (and so
 * every rank's offset in -o FILE) is known only after the final merge.
 *
 * Ties: with -s or -u, equal keys must keep input order across runs made in different
 * rounds, so every record carries its 8-byte global position while it is in flight and on
 * disk ("tagged" records); the default order breaks ties by the whole record and needs no tag.
 *
 * Memory: A and B (a chunk each) plus 16 bytes a record of chunk for the sort entries, plus
 * two I/O blocks for the writer thread. In the merge phase A and B hold the read buffers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "exchange.h"
#include "job.h"
#include "keysort.h"
#include "mem.h"
#include "merge.h"
#include "output.h"
#include "outsink.h"
#include "runfile.h"
#include "runset.h"
#include "splitters.h"
#include "tempdir.h"

#define SAMPLES_PER_RANK 4096
#define SAMPLE_BYTES ((uint64_t)32 << 20) /* all ranks' samples, on rank 0 */
#define MIN_CHUNK_RECORDS 16

struct ext {
    const struct dsort_comm *c;
    const struct dsort_job_options *o;
    const struct dsort_inputs *in;
    struct dsort_job_stats *stats;
    struct dsort_error err;
    size_t rs, irs; /* record size in the input and in flight (irs = rs + 8 when tagged) */
    int tagged;
    struct dsort_cmp cmp; /* on in-flight records */
    size_t ks;            /* composite key bytes */
    unsigned char *splitters;
    uint64_t first, n; /* this rank's share of the inputs it opened */
    uint64_t g0;       /* global position of its first record */
    uint64_t chunk;    /* records per chunk */
    size_t block;
    size_t abytes, bbytes, ebytes; /* A also receives: 1/16 more than a chunk */
    unsigned char *a, *b;
    struct dsort_sortent *ents, *scratch; /* scratch only when records are < 16 bytes */
    struct dsort_tempdirs td;
    struct dsort_runset runs;
    struct dsort_sum128 sum_in, sum_out; /* --verify: valsort's CRC-32 sums */
    struct dsort_sum128 con_in, con_out; /* conservation (always): CRC32C sums */
};

/* The composite key of an input record at global position g: normalised key, normalised
 * last-resort bytes (default order) or nothing, then g. memcmp order = output order. */
static void composite(const struct ext *x, const unsigned char *rec, uint64_t g, unsigned char *out)
{
    const struct dsort_format *f = &x->o->fmt;
    dsort_job_put_bytes(out, rec + f->key_off, f->key_len, x->cmp.reverse);
    out += f->key_len;
    if (!x->tagged) {
        dsort_job_put_bytes(out, rec + x->cmp.tie_off, x->cmp.tie_len, x->cmp.tie_reverse);
        out += x->cmp.tie_len;
    }
    dsort_job_put_be64(out, g);
}

/* Choose the splitters from a sample of every rank's share. Collective; agrees. */
static enum dsort_status choose_splitters(struct ext *x)
{
    const struct dsort_comm *c = x->c;
    /* Rank 0 holds every rank's samples: SAMPLE_BYTES at most (outside the budget). */
    uint64_t s = dsort_splitters_sample_count(x->n, c->size, x->ks, SAMPLES_PER_RANK, SAMPLE_BYTES);
    unsigned char *mine = malloc(s * x->ks + 1), *rec = malloc(x->rs);
    x->splitters = calloc((size_t)c->size, x->ks);
    enum dsort_status st = DSORT_OK;
    if (!mine || !rec || !x->splitters)
        st = DSORT_ERR(&x->err, DSORT_ENOMEM, errno, "out of memory");
    for (uint64_t k = 0; !st && k < s; k++) {
        uint64_t i = (k * x->n + x->n / 2) / s; /* evenly spaced, centred */
        st = dsort_inputs_read(x->in, x->first + i, 1, rec, &x->err);
        if (!st)
            composite(x, rec, x->g0 + i, mine + k * x->ks);
    }
    if (!(st = dsort_comm_agree(c, st, &x->err)))
        st = dsort_comm_agree(
            c, dsort_splitters_sample(c->comm, mine, s, x->ks, x->splitters, &x->err), &x->err);
    free(mine);
    free(rec);
    return st;
}

static enum dsort_status add_run(struct ext *x, const char *path, uint64_t records)
{
    return dsort_runset_add(&x->runs, path, records, records * x->irs, &x->err);
}

/* Merge k in-memory pieces (in source order) of in-flight records into a new run. */
static enum dsort_status spill(struct ext *x, struct dsort_cursor *cur, size_t k)
{
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SPILL);
    char path[4096];
    dsort_tempdirs_run_path(&x->td, path, sizeof path);
    struct dsort_runwriter w;
    enum dsort_status st = dsort_runwriter_open(&w, path, x->irs, x->block, &x->err);
    if (st)
        return st;
    st = dsort_merge_cmp(&x->cmp, x->irs, x->irs, x->o->ord.unique, cur, k, &w.sink, &x->err);
    if (st) {
        dsort_runwriter_abort(&w);
        return st;
    }
    if ((st = dsort_runwriter_close(&w, &x->err))) {
        dsort_runwriter_abort(&w);
        return st;
    }
    dsort_runwriter_free(&w);
    x->stats->runs++;
    x->stats->spill_bytes += w.off;
    st = add_run(x, path, w.records);
    dsort_job_phase_end(x->stats, PH_SPILL, &pc);
    return st;
}

/* First index in the sorted chunk whose composite key is >= key. */
static uint64_t chunk_bound(const struct ext *x, uint64_t m, uint64_t g0, const unsigned char *key,
                            unsigned char *tmp)
{
    uint64_t lo = 0, hi = m;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        size_t idx = dsort_sortent_index(&x->ents[mid]);
        composite(x, x->a + idx * x->rs, g0 + idx, tmp);
        if (memcmp(tmp, key, x->ks) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* One round: the chunk of m records at global position g0 is sorted in A/ents. Cut it, move
 * it to B as in-flight records, exchange in waves, spill what arrives. Collective. */
static enum dsort_status exchange_round(struct ext *x, uint64_t m, uint64_t g0)
{
    const struct dsort_comm *c = x->c;
    const int p = c->size;
    const size_t irs = x->irs;
    struct dsort_phase_clock pc;
    enum dsort_status st = DSORT_OK;
    uint64_t *cuts = calloc((size_t)p + 1, sizeof *cuts), *sent = calloc((size_t)p, sizeof *sent);
    uint64_t *want = calloc((size_t)p, sizeof *want), *left = calloc((size_t)p, sizeof *left);
    uint64_t *grant = calloc((size_t)p, sizeof *grant), *allot = calloc((size_t)p, sizeof *allot);
    uint64_t *sc = calloc((size_t)p, sizeof *sc), *rc = calloc((size_t)p, sizeof *rc);
    uint64_t *sd = calloc((size_t)p, sizeof *sd);
    struct dsort_cursor *cur = calloc((size_t)p, sizeof *cur);
    unsigned char *tmp = malloc(x->ks);
    if (!cuts || !sent || !want || !left || !grant || !allot || !sc || !rc || !sd || !cur || !tmp)
        st = DSORT_ERR(&x->err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, &x->err)))
        goto out;

    dsort_job_phase_begin(&pc, PH_SPLIT);
    cuts[0] = 0;
    cuts[p] = m;
    for (int j = 1; j < p; j++)
        cuts[j] = chunk_bound(x, m, g0, x->splitters + (size_t)(j - 1) * x->ks, tmp);
    dsort_job_phase_end(x->stats, PH_SPLIT, &pc);

    /* In-flight records: the record, plus its global position when tagged. */
    dsort_job_phase_begin(&pc, PH_SORT);
    if (!x->tagged) {
        dsort_keysort_gather(&x->o->fmt, x->a, x->ents, m, x->b);
    } else {
        for (uint64_t i = 0; i < m; i++) {
            size_t idx = dsort_sortent_index(&x->ents[i]);
            memcpy(x->b + i * irs, x->a + idx * x->rs, x->rs);
            dsort_job_put_be64(x->b + i * irs + x->rs, g0 + idx);
        }
    }
    dsort_job_phase_end(x->stats, PH_SORT, &pc);

    dsort_job_phase_begin(&pc, PH_EXCHANGE);
    for (int j = 0; j < p; j++)
        want[j] = cuts[j + 1] - cuts[j];
    /* left[s]: records source s still has for us. */
    if ((st = dsort_exchange_counts(c->comm, want, left, &x->err)) ||
        (st = dsort_comm_agree(c, st, &x->err)))
        goto out;
    const uint64_t cap = x->abytes / irs; /* A receives */
    for (;;) {
        /* Plan a wave: take from the sources in order, up to what A holds. */
        uint64_t pending = dsort_waves_allot(left, p, cap, allot);
        if (dsort_comm_sum(c, pending) == 0)
            break;
        /* Tell every source how much to send us now. */
        if ((st = dsort_exchange_counts(c->comm, allot, grant, &x->err)))
            break;
        uint64_t got = 0;
        for (int s = 0; s < p; s++) {
            sc[s] = grant[s] * irs;
            sd[s] = (cuts[s] + sent[s]) * irs;
            rc[s] = allot[s] * irs;
            got += allot[s];
        }
        int rounds = 0;
        st = dsort_exchange_runv(c->comm, x->b, sc, sd, x->a, rc, NULL, (size_t)x->o->chunk,
                                 &rounds, &x->err);
        if ((st = dsort_comm_agree(c, st, &x->err)))
            break;
        x->stats->exchange_rounds += rounds;
        for (int s = 0; s < p; s++) {
            sent[s] += grant[s];
            left[s] -= allot[s];
            if (s != c->rank) {
                x->stats->bytes_sent += sc[s];
                x->stats->bytes_received += rc[s];
            }
        }
        dsort_job_phase_end(x->stats, PH_EXCHANGE, &pc);
        if (got) {
            uint64_t off = 0;
            for (int s = 0; s < p; s++) {
                dsort_cursor_memory(&cur[s], x->a + off, allot[s], irs);
                off += allot[s] * irs;
            }
            st = spill(x, cur, (size_t)p);
        }
        if ((st = dsort_comm_agree(c, st, &x->err)))
            break;
        dsort_job_phase_begin(&pc, PH_EXCHANGE);
    }
out:
    free(cuts);
    free(sent);
    free(want);
    free(left);
    free(grant);
    free(allot);
    free(sc);
    free(rc);
    free(sd);
    free(cur);
    free(tmp);
    return st;
}

/* Read, sort and exchange every chunk of this rank's share. Collective. */
static enum dsort_status form_runs(struct ext *x)
{
    const struct dsort_comm *c = x->c;
    uint64_t rounds = dsort_comm_max(c, (x->n + x->chunk - 1) / x->chunk);
    enum dsort_status st = DSORT_OK;
    struct dsort_phase_clock pc;
    for (uint64_t r = 0; r < rounds && !st; r++) {
        uint64_t at = r * x->chunk < x->n ? r * x->chunk : x->n;
        uint64_t m = x->n - at < x->chunk ? x->n - at : x->chunk;
        dsort_job_phase_begin(&pc, PH_READ);
        st = dsort_job_topo_read(x->o->topo, x->in, x->first + at, m, x->a, &x->err);
        if (!st && at + m < x->n) /* let the kernel fetch the next chunk meanwhile */
            dsort_inputs_advise(x->in, x->first + at + m,
                                x->n - at - m < x->chunk ? x->n - at - m : x->chunk);
        if (!st && x->o->verify)
            dsort_checksum_records(&x->sum_in, x->a, m, x->rs);
        if (!st)
            dsort_checksum_records_c(&x->con_in, x->a, m, x->rs);
        x->stats->bytes_read += m * x->rs;
        dsort_job_phase_end(x->stats, PH_READ, &pc);
        if ((st = dsort_comm_agree(c, st, &x->err)))
            break;
        dsort_job_phase_begin(&pc, PH_SORT);
        dsort_keysort_sort(&x->o->fmt, &x->o->ord, x->a, m, x->ents,
                           x->scratch ? x->scratch : (struct dsort_sortent *)(void *)x->b);
        dsort_job_phase_end(x->stats, PH_SORT, &pc);
        st = exchange_round(x, m, x->g0 + at);
    }
    return st;
}

/* How many runs one merge may read at once: the open-file limit (less what is open now and
 * a margin) and the read buffers that fit in A and B. When there are more runs than that,
 * --stats and -v say why. */
static size_t fan_in(const struct ext *x)
{
    const size_t blen = dsort_runreader_buf_len(x->irs, x->block);
    struct dsort_fan_in fi;
    dsort_fan_in_now((uint64_t)(x->abytes / blen + x->bbytes / blen) * blen, blen, 0, &fi);
    dsort_fan_in_explain(&fi, x->runs.n, x->stats->merge_why, sizeof x->stats->merge_why);
    return fi.f;
}

/* The output sink's view of the records passed on: their checksums. */
static void count_out(void *ctx, const unsigned char *p, size_t len)
{
    struct ext *x = ctx;
    if (x->o->output_dir || x->o->verify)
        dsort_checksum_records(&x->sum_out, p, len / x->rs, x->rs);
    dsort_checksum_records_c(&x->con_out, p, len / x->rs, x->rs);
}

/* Open readers for runs [from, from + k) with buffers carved from A and B. */
static enum dsort_status open_readers(struct ext *x, size_t from, size_t k,
                                      struct dsort_runreader *rd, struct dsort_cursor *cur,
                                      struct dsort_prefetch *pf)
{
    const size_t blen = dsort_runreader_buf_len(x->irs, x->block);
    for (size_t i = 0; i < k; i++) {
        unsigned char *buf =
            i < x->abytes / blen ? x->a + i * blen : x->b + (i - x->abytes / blen) * blen;
        enum dsort_status st =
            dsort_runreader_open(&rd[i], x->runs.runs[from + i].path, x->irs, x->block, buf, pf,
                                 x->runs.runs[from + i].records, &x->err);
        if (st) {
            for (size_t j = 0; j < i; j++)
                dsort_runreader_close(&rd[j]);
            return st;
        }
    }
    for (size_t i = 0; i < k; i++) {
        cur[i] = rd[i].cur;
        cur[i].ctx = &rd[i];
    }
    return DSORT_OK;
}

static void drop_runs(struct ext *x, size_t from, size_t k, struct dsort_runreader *rd)
{
    for (size_t i = 0; i < k; i++)
        dsort_runreader_close(&rd[i]);
    dsort_runset_drop(&x->runs, from, k);
}

/* Merge runs [0, k) (after the refill cursors are set) through cur into sink. The cursors'
 * refill reads the next block of each run. */
static enum dsort_status merge_runs(struct ext *x, size_t k, size_t out_size,
                                    struct dsort_sink *sink, struct dsort_runreader *rd,
                                    struct dsort_cursor *cur)
{
    struct dsort_prefetch *pf = NULL;
    enum dsort_status st = dsort_prefetch_create(&pf, &x->err);
    if (!st)
        st = open_readers(x, 0, k, rd, cur, pf);
    /* The cursors are copies of the readers' own; refill finds its reader through ctx. */
    if (!st) {
        st = dsort_merge_cmp(&x->cmp, x->irs, out_size, x->o->ord.unique, cur, k, sink, &x->err);
        for (size_t i = 0; i < k; i++)
            dsort_runreader_close(&rd[i]);
    }
    dsort_prefetch_destroy(pf);
    return st;
}

/* Extra passes: while there are more runs than the fan-in, merge the smallest together. */
static enum dsort_status reduce_runs(struct ext *x, size_t f, struct dsort_runreader *rd,
                                     struct dsort_cursor *cur)
{
    enum dsort_status st = DSORT_OK;
    while (!st && x->runs.n > f) {
        struct dsort_phase_clock pc;
        dsort_job_phase_begin(&pc, PH_MERGE);
        dsort_runset_sort_smallest(&x->runs);
        size_t k = dsort_fan_in_step(x->runs.n, f);
        char path[4096];
        dsort_tempdirs_run_path(&x->td, path, sizeof path);
        struct dsort_runwriter w;
        if ((st = dsort_runwriter_open(&w, path, x->irs, x->block, &x->err)))
            break;
        st = merge_runs(x, k, x->irs, &w.sink, rd, cur);
        if (!st)
            st = dsort_runwriter_close(&w, &x->err);
        if (st) {
            dsort_runwriter_abort(&w);
            break;
        }
        dsort_runwriter_free(&w);
        x->stats->merge_passes++;
        x->stats->extra_merge_bytes += w.off;
        drop_runs(x, 0, k, rd);
        st = add_run(x, path, w.records);
        dsort_job_phase_end(x->stats, PH_MERGE, &pc);
    }
    return st;
}

/* Write records [0, n) of a run file (plain records) to the output, skipping the first
 * `skip`. Used for -u, whose output size is known only after the final merge. */
static enum dsort_status copy_run(struct ext *x, const char *path, uint64_t records, uint64_t skip,
                                  struct dsort_output_sink *os)
{
    struct dsort_runreader r;
    struct dsort_prefetch *pf = NULL;
    enum dsort_status st = dsort_prefetch_create(&pf, &x->err);
    if (!st)
        st = dsort_runreader_open(&r, path, x->rs, x->block, x->a, pf, records, &x->err);
    if (st) {
        dsort_prefetch_destroy(pf);
        return st;
    }
    while (!st && r.cur.cur != r.cur.end) {
        while (skip && r.cur.cur != r.cur.end) {
            r.cur.cur += x->rs;
            skip--;
        }
        size_t len = (size_t)(r.cur.end - r.cur.cur);
        while (len) {
            /* Whole records only: the sink counts records per flush. */
            size_t room = (os->sink.cap - os->sink.len) / x->rs * x->rs;
            size_t n = len < room ? len : room;
            if (n == 0) { /* not a whole record left in the buffer */
                if ((st = os->sink.flush(&os->sink, &x->err)))
                    break;
                continue;
            }
            memcpy(os->sink.buf + os->sink.len, r.cur.cur, n);
            os->sink.len += n;
            r.cur.cur += n;
            len -= n;
        }
        if (!st)
            st = r.cur.refill(&r.cur, &x->err);
    }
    dsort_runreader_close(&r);
    dsort_prefetch_destroy(pf);
    return st;
}

static enum dsort_status final_merge(struct ext *x, struct dsort_output *out, uint64_t *nout)
{
    const struct dsort_comm *c = x->c;
    enum dsort_status st = DSORT_OK;
    struct dsort_phase_clock pc;
    size_t f = fan_in(x);
    x->stats->fan_in = (int)f;
    struct dsort_runreader *rd = calloc(f, sizeof *rd);
    struct dsort_cursor *cur = calloc(f, sizeof *cur);
    if (!rd || !cur)
        st = DSORT_ERR(&x->err, DSORT_ENOMEM, errno, "out of memory");
    if (!st)
        st = reduce_runs(x, f, rd, cur);
    if ((st = dsort_comm_agree(c, st, &x->err)))
        goto out;

    uint64_t total = dsort_runset_records(&x->runs);
    char upath[4096] = "";
    uint64_t drop = 0;
    if (x->o->ord.unique) {
        /* Deduplicate into one more temp run; then the share and the boundary are known. */
        dsort_job_phase_begin(&pc, PH_FINAL_MERGE);
        dsort_tempdirs_run_path(&x->td, upath, sizeof upath);
        struct dsort_runwriter w;
        st = dsort_runwriter_open(&w, upath, x->rs, x->block, &x->err);
        if (!st) {
            st = merge_runs(x, x->runs.n, x->rs, &w.sink, rd, cur);
            if (!st)
                st = dsort_runwriter_close(&w, &x->err);
            if (st)
                dsort_runwriter_abort(&w);
        }
        if (!st) {
            drop_runs(x, 0, x->runs.n, rd);
            total = w.records;
        }
        /* The first record: read the run's first block into A (free now); keep it in B. */
        if (!st && total) {
            struct dsort_runreader r;
            st = dsort_runreader_open(&r, upath, x->rs, x->block, x->a, NULL, total, &x->err);
            if (!st) {
                memcpy(x->b, r.cur.cur, x->rs);
                dsort_runreader_close(&r);
            }
        }
        dsort_job_phase_end(x->stats, PH_FINAL_MERGE, &pc);
        int d = 0;
        if (!(st = dsort_comm_agree(c, st, &x->err)))
            st = dsort_job_unique_boundary(c, &x->o->fmt, x->b, w.last, total, &d, &x->err);
        dsort_runwriter_free(&w);
        if (st)
            goto out;
        drop = d ? 1 : 0;
    }
    *nout = total - drop;
    if ((st = dsort_output_set_share(c, out, *nout * x->rs, &x->err)))
        goto out;

    dsort_job_phase_begin(&pc, PH_FINAL_MERGE);
    struct dsort_output_sink os;
    /* One page more than a block: room for a whole block after a carried partial page. */
    st = dsort_output_sink_open(&os, out, dsort_run_stride(x->rs, x->block) + DSORT_RUN_ALIGN,
                                count_out, x, &x->err);
    if (!st) {
        if (x->o->ord.unique) {
            st = copy_run(x, upath, total, drop, &os);
            unlink(upath);
            dsort_cleanup_forget(upath);
        } else {
            st = merge_runs(x, x->runs.n, x->rs, &os.sink, rd, cur);
            if (!st)
                drop_runs(x, 0, x->runs.n, rd);
        }
        st = dsort_output_sink_finish(&os, st, &x->err);
    }
    x->stats->bytes_written = os.pos;
    dsort_job_phase_end(x->stats, x->o->ord.unique ? PH_WRITE : PH_FINAL_MERGE, &pc);
    st = dsort_comm_agree(c, st, &x->err);
out:
    free(rd);
    free(cur);
    return st;
}

static void release(struct ext *x)
{
    dsort_mem_free(x->a, x->abytes);
    dsort_mem_free(x->b, x->bbytes);
    dsort_mem_free(x->ents, x->ebytes);
    dsort_mem_free(x->scratch, x->ebytes);
    x->a = x->b = NULL;
    x->ents = x->scratch = NULL;
    dsort_runset_release(&x->runs);
    dsort_tempdirs_destroy(&x->td);
    free(x->splitters);
    x->splitters = NULL;
}

/* Size the chunk and the I/O block from the budget. */
static enum dsort_status plan_memory(struct ext *x)
{
    uint64_t budget = x->stats->budget;
    uint64_t block = x->o->block < budget / 16 ? x->o->block : budget / 16;
    if (block < 4096)
        block = 4096;
    x->block = (size_t)block;
    uint64_t writer = 2 * dsort_run_stride(x->irs, x->block);
    uint64_t per = 2 * x->irs + x->irs / 16 + sizeof(struct dsort_sortent) +
                   (x->rs < sizeof(struct dsort_sortent) ? sizeof(struct dsort_sortent) : 0);
    uint64_t chunk = budget > writer ? (budget - writer) / per : 0;
    /* A must also hold at least two read buffers for the merge. */
    if (chunk < MIN_CHUNK_RECORDS || chunk * x->irs < dsort_runreader_buf_len(x->irs, x->block)) {
        char b1[32];
        return DSORT_ERR(&x->err, DSORT_ENOMEM, 0,
                         "the memory budget %s (-S) is too small to sort %zu-byte records out of "
                         "core; give at least %s",
                         dsort_mem_format(budget, b1, sizeof b1), x->rs,
                         dsort_mem_format(writer + MIN_CHUNK_RECORDS * per + 2 * block + (1 << 20),
                                          b1 + 16, 16));
    }
    /* No bigger than the share, but big enough for two merge read buffers. */
    uint64_t floor_chunk = dsort_runreader_buf_len(x->irs, x->block) / x->irs + 1;
    if (floor_chunk < MIN_CHUNK_RECORDS)
        floor_chunk = MIN_CHUNK_RECORDS;
    if (chunk > x->n)
        chunk = x->n > floor_chunk ? x->n : floor_chunk;
    x->chunk = chunk;
    /* A receives a round's pieces: with sampled splitters a rank may get a little more than
     * a chunk, and a second wave (another run) for a few records is a waste. */
    x->bbytes = (size_t)(chunk * x->irs);
    x->abytes = x->bbytes + x->bbytes / 16;
    x->ebytes = (size_t)(chunk * sizeof(struct dsort_sortent));
    x->a = dsort_mem_alloc(x->abytes);
    x->b = dsort_mem_alloc(x->bbytes);
    x->ents = dsort_mem_alloc(x->ebytes);
    if (x->rs < sizeof(struct dsort_sortent))
        x->scratch = dsort_mem_alloc(x->ebytes);
    if (!x->a || !x->b || !x->ents || (x->rs < sizeof(struct dsort_sortent) && !x->scratch))
        return DSORT_ERR(&x->err, DSORT_ENOMEM, errno, "cannot allocate the sort buffers");
    return DSORT_OK;
}

/* Floor of a merge read block: below it the disks seek more than they read. */
#define MIN_MERGE_BLOCK ((size_t)256 << 10)

/* 2 reads + 2 writes at small budgets: the final merge reads every run at once when its read
 * buffers (two blocks a run, carved from A and B) fit, so the run files are written in blocks
 * small enough for the runs expected (one a round, and a margin for the waves of skewed
 * input), down to MIN_MERGE_BLOCK. rounds: the most rounds of any rank (agreed). Local. */
static void fit_block(struct ext *x, uint64_t rounds)
{
    uint64_t runs = rounds + rounds / 4 + 1;
    uint64_t fit = (uint64_t)(x->abytes + x->bbytes) / (2 * runs);
    fit = fit / 4096 * 4096;
    if (fit < MIN_MERGE_BLOCK)
        fit = MIN_MERGE_BLOCK;
    if (fit < x->block)
        x->block = (size_t)fit;
}

int dsort_job_sort_external(const struct dsort_comm *c, const struct dsort_job_options *o,
                            const struct dsort_inputs *in, const struct dsort_share *sh,
                            struct dsort_job_stats *stats)
{
    struct ext x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.o = o;
    x.in = in;
    x.stats = stats;
    x.rs = o->fmt.rec_size;
    x.tagged = !dsort_order_last_resort(&o->ord);
    x.irs = x.rs + (x.tagged ? 8 : 0);
    dsort_cmp_init(&x.cmp, &o->fmt, &o->ord);
    if (x.tagged) { /* ties by the position suffix, ascending */
        x.cmp.tie_off = x.rs;
        x.cmp.tie_len = 8;
        x.cmp.tie_reverse = 0;
    }
    x.ks = o->fmt.key_len + (x.tagged ? 0 : x.cmp.tie_len) + 8;
    x.first = sh->first;
    x.n = sh->n;
    x.g0 = sh->g0;
    stats->records_in = x.n;

    struct dsort_output out;
    enum dsort_status st = dsort_job_output_open(c, o, 0, &out, &x.err);
    if (st)
        return 2;
    char job[256];
    dsort_job_name(c, job, sizeof job);
    st = plan_memory(&x);
    if (!st)
        st = dsort_job_tempdirs(o, job, c->rank, &x.td, &x.err);
    if ((st = dsort_comm_agree(c, st, &x.err)))
        goto fail;
    fit_block(&x, dsort_comm_max(c, (x.n + x.chunk - 1) / x.chunk));

    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_SAMPLE);
    st = choose_splitters(&x);
    dsort_job_phase_end(stats, PH_SAMPLE, &pc);
    if (st || (st = form_runs(&x)))
        goto fail;
    dsort_mem_free(x.ents, x.ebytes);
    dsort_mem_free(x.scratch, x.ebytes);
    x.ents = x.scratch = NULL;
    uint64_t nout = 0;
    if ((st = final_merge(&x, &out, &nout)))
        goto fail;
    stats->records_out = nout;
    struct dsort_job_sums sums = {x.sum_in, x.sum_out, x.con_in, x.con_out, x.n, nout, nout * x.rs};
    int rc = dsort_job_finish(c, o, in, &out, &sums, stats, &x.err);
    release(&x);
    return rc;
fail:
    dsort_output_abandon(&out);
    release(&x);
    return 2;
}
