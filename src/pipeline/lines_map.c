/* The text lines' in-memory path over the mapped input (lines_job.h): one input file, one
 * round, the lines left in the page cache; only 16-byte entries are sorted and exchanged. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "exchange.h"
#include "lines_job.h"
#include "mem.h"
#include "progress.h"

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

struct ent_merge {
    const unsigned char *file;
    const struct dsort_line_ent **runs;
    const size_t *lens;
    const uint64_t *lo, *hi;
    size_t k;
};

static enum dsort_status merge_ents(struct lx *x, void *ctx, struct dsort_line_sink *sink)
{
    const struct ent_merge *m = ctx;
    return dsort_lines_merge_ents(&x->ord, m->file, m->runs, m->lens, m->lo, m->hi, m->k, sink,
                                  &x->j.err);
}

/* The mapped path's output size: the received entries (rcount bytes from each rank, in rbuf;
 * runs[r] and lens[r] set to rank r's) with their eols, each of which must lie in the sender's
 * lines, ranges[2r, 2r+1) (lo, hi set to them), and end there (a long line is measured by
 * looking for its eol: never past the range, whose last eol a rewrite of the input may have
 * taken). */
static enum dsort_status measure_received(struct lx *x, const unsigned char *base,
                                          const uint64_t *ranges, const uint64_t *rcount,
                                          const struct dsort_line_ent *rbuf,
                                          const struct dsort_line_ent **runs, size_t *lens,
                                          uint64_t *lo, uint64_t *hi, uint64_t *out_bytes)
{
    const size_t es = sizeof(struct dsort_line_ent);
    const int p = x->j.c->size;
    enum dsort_status st = DSORT_OK;
    uint64_t bytes = 0, at = 0;
    for (int r = 0; r < p; r++) {
        lo[r] = ranges[2 * r];
        hi[r] = ranges[2 * r + 1];
        runs[r] = rbuf + at;
        lens[r] = (size_t)(rcount[r] / es);
        at += lens[r];
        for (size_t i = 0, len = 0; i < lens[r] && !st; i++) {
            if (dsort_line_len_in(&runs[r][i], base, x->ord.eol, lo[r], hi[r], &len))
                bytes += len + 1;
            else
                st = DSORT_ERR(&x->j.err, DSORT_EINTERNAL, 0,
                               "an entry from rank %d names no line of its range at offset %" PRIu64
                               " (the input changed while it was being sorted, or the entry was "
                               "corrupted in the exchange); nothing written",
                               r, dsort_line_off(&runs[r][i]));
        }
    }
    *out_bytes = bytes;
    return st;
}

/* Collective: the whole in-memory job over the mapped input, as job_map.c does it for fixed
 * records: the lines stay in the page cache; the ranks sort 16-byte entries (prefix, the line's
 * offset in the file, its length), cut them by the splitters, exchange the entries, and each
 * merges what it received, copying lines from the mapping to the output's writer. *taken is 0
 * (and nothing done) when the file's last line lacks its eol: the copying path adds it. */
enum dsort_status dsort_lines_job_sort_mapped(struct lx *x, struct dsort_output *out, int *taken)
{
    const struct dsort_comm *c = x->j.c;
    const int p = c->size;
    const size_t es = sizeof(struct dsort_line_ent);
    struct dsort_phase_clock pc;
    struct dsort_input_map map = {NULL, 0, NULL};
    struct dsort_line_ent *ents = NULL, *tmp = NULL, *rbuf = NULL;
    size_t n = 0, rn = 0;
    uint64_t *v = calloc((size_t)p * 4, sizeof *v), range[2] = {0, 0};
    const struct dsort_line_ent **runs = calloc((size_t)p, sizeof *runs);
    size_t *lens = calloc((size_t)p, sizeof *lens);
    *taken = 0;
    dsort_job_phase_begin(&pc, PH_READ);
    enum dsort_status st =
        v && runs && lens ? DSORT_OK : DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    if (!st)
        st = dsort_inputs_map(&map, &x->j.in->files[0], &x->j.err);
    const int eol_end = !st && map.len && map.base[map.len - 1] == x->ord.eol;
    if ((st = dsort_comm_agree(c, st, &x->j.err)) || !dsort_comm_all_ok(c, eol_end))
        goto out;
    *taken = 1;
    x->j.stats->mapped = 1;
    x->j.stats->external = 0;
    uint64_t *scount = v, *rcount = v + p, *lo = v + 2 * p, *hi = v + 3 * p;
    /* This rank's lines: those that start in [x->pos, x->end). */
    uint64_t start = x->pos, end = start;
    st = dsort_lines_range_start(x->j.in, x->end, x->ord.eol, &end, &x->j.err);
    if (!st && end < start)
        end = start;
    if (!st)
        st = dsort_job_topo_populate(x->j.o->topo, 0, &map, start, end - start, &x->j.err);
    for (const unsigned char *q = map.base + start, *qe = map.base + end; !st && q < qe; n++) {
        const unsigned char *e = memchr(q, x->ord.eol, (size_t)(qe - q));
        q = e ? e + 1 : qe;
    }
    if (!st && (!(ents = dsort_mem_alloc(n * es)) || !(tmp = dsort_mem_alloc(n * es))))
        st = DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "cannot allocate %zu line entries", 2 * n);
    if (!st) {
        n = dsort_lines_index(&x->ord, map.base + start, (size_t)(end - start), ents);
        for (size_t i = 0; i < n; i++)
            ents[i].ol += start << 24;
        dsort_lines_job_sum(x, map.base, ents, n);
    }
    x->j.stats->bytes_read = end - start;
    x->j.stats->records_in = n;
    dsort_job_phase_end(x->j.stats, PH_READ, &pc);
    if ((st = dsort_comm_agree(c, st, &x->j.err)))
        goto out;
    dsort_progress_step(c, "sort", x->sh.n / 2);

    dsort_job_phase_begin(&pc, PH_SORT);
    if (n > 1)
        dsort_lines_sort(&x->ord, map.base, ents, n, tmp);
    for (size_t d = 0, l = 0; d < (size_t)p; d++) {
        size_t h =
            d + 1 < (size_t)p ? dsort_lines_job_cut_after_file(x, ents, map.base, l, n, (int)d) : n;
        scount[d] = (h - l) * es;
        l = h;
    }
    dsort_job_phase_end(x->j.stats, PH_SORT, &pc);

    /* Exchange the entries; what arrives from rank s names lines of s's range. */
    dsort_job_phase_begin(&pc, PH_EXCHANGE);
    if ((st = dsort_exchange_counts(c->comm, scount, rcount, &x->j.err)) ||
        (st = dsort_comm_agree(c, st, &x->j.err)))
        goto out;
    uint64_t rbytes = 0;
    for (int r = 0; r < p; r++)
        rbytes += rcount[r];
    rn = (size_t)(rbytes / es);
    rbuf = rn <= n ? tmp : dsort_mem_alloc(rn * es); /* the sort's scratch, free now */
    if (!rbuf)
        st = DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "cannot allocate %zu line entries", rn);
    if ((st = dsort_comm_agree(c, st, &x->j.err)))
        goto out;
    int rounds = 0;
    st = dsort_exchange_move(x->j.o->exchange, (const unsigned char *)ents, scount, NULL,
                             (unsigned char *)rbuf, rcount, NULL, &rounds, &x->j.err);
    x->j.stats->exchange_rounds += rounds;
    x->j.stats->bytes_sent += n * es - scount[c->rank];
    x->j.stats->bytes_received += rbytes - rcount[c->rank];
    range[0] = start;
    range[1] = end;
    uint64_t *ranges = malloc(2 * (size_t)p * sizeof *ranges);
    if (!st && !ranges)
        st = DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, &x->j.err))) {
        free(ranges);
        goto out;
    }
    /* Raw: ranges was allocated on every rank and agreed just above. */
    MPI_Allgather(range, 2, MPI_UINT64_T, ranges, 2, MPI_UINT64_T, c->comm);
    /* The output's size, every entry checked against its sender's range. */
    uint64_t bytes = 0;
    st = measure_received(x, map.base, ranges, rcount, rbuf, runs, lens, lo, hi, &bytes);
    free(ranges);
    if ((st = dsort_comm_agree(c, dsort_job_blame_input(x->j.in, st, &x->j.err), &x->j.err)))
        goto out;
    dsort_job_phase_end(x->j.stats, PH_EXCHANGE, &pc);
    dsort_progress_step(c, "write", x->sh.n);

    /* Merge the entries; their lines go from the mapping to the output's writer thread. */
    struct ent_merge em = {map.base, runs, lens, lo, hi, (size_t)p};
    st = dsort_lines_job_to_output(x, out, bytes, 1, merge_ents, &em);
    dsort_job_note_rss(x->j.stats); /* with the mapping: the page cache this rank used */
    st = dsort_comm_agree(c, dsort_job_blame_input(x->j.in, st, &x->j.err), &x->j.err);
out:
    dsort_inputs_unmap(&map);
    if (rbuf != tmp)
        dsort_mem_free(rbuf, rn * es);
    dsort_mem_free(ents, n * es);
    dsort_mem_free(tmp, n * es);
    free(v);
    free(runs);
    free(lens);
    return st;
}
