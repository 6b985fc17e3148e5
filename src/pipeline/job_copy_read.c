/* The copying path's read, splitters and cut (job_copy_impl.h; the design: job_copy.c). */
#include "job_copy_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "job_topo.h"
#include "job_typed.h"
#include "mem.h"
#include "progress.h"
#include "splitters.h"

/* Buckets above this many entries are sorted when a part is split (with the split's scratch),
 * the others as they are wanted, with a scratch of their size a thread (at most 4 MiB).
 * DSORT_COPY_EAGER=N (a testing aid) sets it: 0 sorts every bucket at the split; more than the
 * default (or not a number) is the default. */
#define COPY_EAGER ((size_t)1 << 18)
size_t dsort_copy_eager(void)
{
    const char *v = getenv("DSORT_COPY_EAGER");
    char *end;
    errno = 0;
    const unsigned long long n = v && *v ? strtoull(v, &end, 10) : 0;
    return v && *v && !errno && !*end && n <= COPY_EAGER ? (size_t)n : COPY_EAGER;
}

/* The entries made as a part is read (dsort_job_topo_read_each's hook, made_piece): those of
 * the records wholly inside each piece, while it is in the cache, counted by first byte; a
 * record that a piece's start or end cuts is noted (cut) and its entry made after the read. */
struct made {
    const struct part *pt;
    struct dsort_sortent *tmp; /* the part's entries, in index order (in X) */
    pthread_mutex_t mu;        /* (the pieces of a share on several devices: several threads) */
    size_t cnt[256];
    uint64_t *cut;
    size_t ncut, cap;
    int nomem;
};

static void made_piece(void *arg, unsigned char *piece, size_t len)
{
    struct made *m = arg;
    const struct part *pt = m->pt;
    const struct copy *x = pt->x;
    const size_t rs = x->rs, off = (size_t)(piece - pt->recs), end = off + len;
    const size_t i0 = (off + rs - 1) / rs, i1 = end / rs; /* wholly inside: [i0, i1) */
    size_t cnt[256] = {0};
    if (i1 > i0)
        dsort_keysort_entries(&x->o->fmt, &x->o->ord, pt->recs, i0, i1 - i0, m->tmp, cnt);
    pthread_mutex_lock(&m->mu);
    for (int b = 0; b < 256; b++)
        m->cnt[b] += cnt[b];
    for (int k = 0; k < 2; k++) {
        const size_t at = k ? end : off;
        if (at % rs == 0)
            continue;
        if (m->ncut == m->cap) {
            uint64_t *c = realloc(m->cut, (2 * m->cap + 16) * sizeof *c);
            if (!c) {
                m->nomem = 1;
                break;
            }
            m->cut = c;
            m->cap = 2 * m->cap + 16;
        }
        m->cut[m->ncut++] = at / rs;
    }
    pthread_mutex_unlock(&m->mu);
}

static int u64_cmp(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Read part pt into A, making its entries in tmp (n of them) as it comes in, counted by their
 * first key byte in cnt. Local; on the reader thread for R. */
static enum dsort_status read_part(struct part *pt, struct dsort_sortent *tmp, size_t *cnt,
                                   struct dsort_error *err)
{
    struct copy *x = pt->x;
    struct made m = {.pt = pt, .tmp = tmp};
    pthread_mutex_init(&m.mu, NULL);
    dsort_mem_populate(tmp, (size_t)pt->n * sizeof *tmp); /* (A: a piece at a time, as read) */
    /* (not typed: dsort_job_copy_usable; summed later, sum_input) */
    enum dsort_status st = dsort_job_topo_read_each(x->o->topo, x->in, pt->first, pt->n, pt->recs,
                                                    made_piece, &m, err);
    if (!st && m.nomem)
        st = dsort_job_alloc_error(err, ENOMEM, "the read's notes", (m.cap + 16) * sizeof *m.cut);
    if (!st && m.ncut) /* the entries of the records the pieces cut, each once */
        qsort(m.cut, m.ncut, sizeof *m.cut, u64_cmp);
    for (size_t k = 0; !st && k < m.ncut; k++)
        if (k == 0 || m.cut[k] != m.cut[k - 1])
            dsort_keysort_entries(&x->o->fmt, &x->o->ord, pt->recs, m.cut[k], 1, tmp, m.cnt);
    uint64_t made = 0;
    for (int b = 0; b < 256; b++)
        made += cnt[b] = m.cnt[b];
    if (!st && made != pt->n)
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "the read made %" PRIu64 " entries for %" PRIu64 " records", made, pt->n);
    pthread_mutex_destroy(&m.mu);
    free(m.cut);
    return st;
}

/* Split part pt's entries (made in tmp, cnt their counts by first byte) into pt->ents by their
 * first key byte: the radix sort's first pass (the rest is done as they are wanted). Local. */
static void split_part(struct part *pt, struct dsort_sortent *tmp, const size_t *cnt)
{
    const struct copy *x = pt->x;
    dsort_mem_populate(pt->ents, (size_t)pt->n * sizeof *pt->ents);
    dsort_keysort_split(&pt->lazy, &x->o->fmt, &x->o->ord, pt->recs, (size_t)pt->n, pt->ents, tmp,
                        cnt, dsort_copy_eager());
}

/* Read part pt and split it, in the read and sort phases (stats; NULL: none, on the reader
 * thread during the exchange). Local. */
enum dsort_status dsort_copy_read_and_split(struct part *pt, struct dsort_job_stats *stats,
                                            struct dsort_error *err)
{
    struct copy *x = pt->x;
    struct dsort_sortent *tmp = (struct dsort_sortent *)(void *)x->w; /* (X's start) */
    size_t cnt[256];
    struct dsort_phase_clock pc;
    if (stats)
        dsort_job_phase_begin(&pc, PH_READ);
    enum dsort_status st = read_part(pt, tmp, cnt, err);
    if (stats) {
        stats->bytes_read += pt->n * dsort_job_out_rec(x->o);
        dsort_job_phase_end(stats, PH_READ, &pc);
        if ((st = dsort_comm_agree(x->c, st, err)))
            return st;
        dsort_progress_step(x->c, "sort", x->n * x->rs); /* (a pass: R is read meanwhile) */
        dsort_job_phase_begin(&pc, PH_SORT);
    }
    if (!st)
        split_part(pt, tmp, cnt);
    if (stats)
        dsort_job_phase_end(stats, PH_SORT, &pc);
    return st;
}

/* The sampled splitters (several ranks): composite keys (as out of core: fmt_fixed.c) of a few
 * thousand records at drawn positions of the share (all of a smaller one), selected over every
 * rank's sample (dsort_splitters_sample: no rank gathers them). Collective. */
enum dsort_status dsort_copy_choose_splitters(struct copy *x, struct dsort_error *err)
{
    /* DSORT_COPY_SAMPLES=N (a testing aid): at most N a rank (0: none anywhere sends every
     * record to the last rank) */
    const char *v = getenv("DSORT_COPY_SAMPLES");
    char *vend;
    errno = 0;
    const unsigned long long want = v && *v ? strtoull(v, &vend, 10) : COPY_SAMPLES;
    const uint64_t per = v && *v && !errno && !*vend && want < COPY_SAMPLES ? want : COPY_SAMPLES;
    uint64_t ns = dsort_splitters_sample_count(x->n, 1, x->ks, COPY_SAMPLES, COPY_SAMPLE_BYTES);
    ns = ns < per ? ns : per;
    unsigned char *sample = malloc(ns * x->ks + 1);
    x->splitters = calloc((size_t)x->c->size, x->ks);
    enum dsort_status st = DSORT_OK;
    if (!sample || !x->splitters)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    uint64_t *at = malloc(ns * sizeof *at + 1);
    if (!st && !at)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if (!st) {
        dsort_job_sample_positions(x->g0, x->n, ns, at);
        st = dsort_job_sample_keys(x->o, x->in, x->part[0].first, x->g0, at, ns, &x->fx, sample,
                                   err);
    }
    free(at);
    if (!(st = dsort_comm_agree(x->c, st, err)))
        st = dsort_comm_agree(x->c,
                              dsort_splitters_sample(x->c->comm, sample, ns, x->n, x->ks,
                                                     COPY_SAMPLE_TOL, x->splitters,
                                                     &x->stats->splitter_rounds, err),
                              err);
    free(sample);
    return st;
}

/* Cut part pt by the splitters (at one rank: all of it to this rank). The search reads only
 * the bucket each splitter falls in (its first byte; every entry of a lower bucket is below
 * it, of a higher one above), sorted first. Local. */
enum dsort_status dsort_copy_cut_part(struct copy *x, struct part *pt, struct dsort_error *err)
{
    const int p = x->c->size;
    pt->cuts[0] = 0;
    pt->cuts[p] = pt->n;
    if (p == 1)
        return DSORT_OK;
    for (int d = 0; d < p - 1; d++) {
        const int b = x->o->fmt.key_len ? x->splitters[(size_t)d * x->ks] : -1;
        const size_t lo = b < 0 ? 0 : pt->lazy.off[b], hi = b < 0 ? pt->n : pt->lazy.off[b + 1];
        dsort_keysort_ready(&pt->lazy, lo, hi, x->tmp_main);
    }
    size_t *end = malloc((size_t)p * sizeof *end);
    if (!end)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    const struct dsort_recfmt_chunk ch = {.data = pt->recs,
                                          .n = (size_t)pt->n,
                                          .ents = pt->ents,
                                          .g0 = x->g0 + (pt->first - x->part[0].first)};
    const struct dsort_recfmt_splits sp = {.n = (size_t)(p - 1), .keys = x->splitters, .ks = x->ks};
    enum dsort_status st = dsort_recfmt_fixed.cut(&x->fx, &ch, &sp, end, err);
    for (int d = 0; !st && d < p - 1; d++)
        pt->cuts[d + 1] = end[d];
    free(end);
    return st;
}
