#include "splitters.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct cand {
    uint64_t weight;
    const unsigned char *key;
};

static size_t cand_key_size; /* qsort has no context argument in C11 */

static int cand_cmp(const void *a, const void *b)
{
    return memcmp(((const struct cand *)a)->key, ((const struct cand *)b)->key, cand_key_size);
}

/* First index in [lo, hi) whose key is >= pivot (or > pivot when `after`). */
static uint64_t bound(const struct dsort_splitter_keys *s, uint64_t lo, uint64_t hi,
                      const unsigned char *pivot, int after, unsigned char *tmp)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        s->key_at(s->ctx, mid, tmp);
        int c = memcmp(tmp, pivot, s->key_size);
        if (c < 0 || (after && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The owner's answer for one splitter, all-gathered with the next pivot. */
enum {
    DEC_NONE,       /* not owned, or settled before this round */
    DEC_LEFT,       /* the target is below the pivot: keep the window's part below it */
    DEC_RIGHT,      /* the target is above the pivot: keep the part above it */
    DEC_AT_LESS,    /* settled: cut before the pivot */
    DEC_AT_LESS_EQ, /* settled: cut after the pivot */
    DEC_FAIL        /* no proposals where the target must be: the keys are not unique, or
                     * changed under the selection (an input rewritten while it is sorted) */
};

/* The most rounds a selection over total elements can take, with a margin: every round after
 * the first keeps at most three quarters of each window, so 2 + log_{4/3}(total) rounds settle
 * every splitter, and 3 * log2 exceeds log_{4/3}. Keys that change under the selection (an input
 * rewritten in place while it is sorted, read through its mapping) break that invariant: a
 * window may then never shrink, and without this bound every rank would spin forever. All ranks
 * take the same rounds, so all reach the bound together. */
static int max_rounds(uint64_t total)
{
    int bits = 0;
    while (total) {
        bits++;
        total >>= 1;
    }
    return 4 + 3 * bits;
}

/* A report of one rank to the owner of a splitter: its elements below and up to the pivot,
 * and the size and median of its window's part below the pivot and of its part above it (the
 * owner keeps the side that holds the target: those are the next round's proposals). */
#define R_LESS 0
#define R_LESS_EQ 8
#define R_WLEFT 16
#define R_WRIGHT 24
#define R_KEYS 32

static size_t report_size(size_t ks)
{
    return R_KEYS + 2 * ks;
}

/* Fill a report for the window [lo, hi) split at the pivot into [lo, less) and
 * [less_eq, hi). The owner of splitter j (0-based: rank j+1's first element) is rank j+1. */
static void put_report(const struct dsort_splitter_keys *s, unsigned char *r, uint64_t lo,
                       uint64_t hi, uint64_t less, uint64_t less_eq)
{
    const uint64_t wl = less - lo, wr = hi - less_eq;
    memcpy(r + R_LESS, &less, 8);
    memcpy(r + R_LESS_EQ, &less_eq, 8);
    memcpy(r + R_WLEFT, &wl, 8);
    memcpy(r + R_WRIGHT, &wr, 8);
    if (wl)
        s->key_at(s->ctx, lo + (wl - 1) / 2, r + R_KEYS);
    else
        memset(r + R_KEYS, 0, s->key_size);
    if (wr)
        s->key_at(s->ctx, less_eq + (wr - 1) / 2, r + R_KEYS + s->key_size);
    else
        memset(r + R_KEYS + s->key_size, 0, s->key_size);
}

/* The sums over the p reports (rs bytes each) of their counts below and up to the pivot. */
static void sum_counts(const unsigned char *in, int p, size_t rs, uint64_t *less, uint64_t *less_eq)
{
    *less = *less_eq = 0;
    for (int r = 0; r < p; r++) {
        uint64_t a, b;
        memcpy(&a, in + (size_t)r * rs + R_LESS, 8);
        memcpy(&b, in + (size_t)r * rs + R_LESS_EQ, 8);
        *less += a;
        *less_eq += b;
    }
}

/* The weighted median of the p reports' proposals on one side: each report of rs bytes holds
 * at w_at the weight (uint64) of its proposal, whose key is at k_at; proposals of weight 0 do
 * not count. Sorts cands (room for p) with cmp. The median's key, or NULL if none weighs. */
static const unsigned char *weighted_median(const unsigned char *in, int p, size_t rs, size_t w_at,
                                            size_t k_at, struct cand *cands,
                                            int (*cmp)(const void *, const void *))
{
    size_t nc = 0;
    uint64_t wsum = 0;
    for (int r = 0; r < p; r++) {
        const unsigned char *rep = in + (size_t)r * rs;
        uint64_t w;
        memcpy(&w, rep + w_at, 8);
        if (w) {
            cands[nc].weight = w;
            cands[nc++].key = rep + k_at;
            wsum += w;
        }
    }
    if (nc == 0)
        return NULL;
    qsort(cands, nc, sizeof *cands, cmp);
    uint64_t acc = 0;
    size_t c = 0;
    for (; c + 1 < nc; c++) {
        acc += cands[c].weight;
        if (2 * acc >= wsum)
            break;
    }
    return cands[c].key;
}

/* The owner's step: the global counts at the pivot decide the side (or settle the cut); the
 * next pivot is the weighted median of that side's proposals. */
static unsigned char decide(const unsigned char *in, int p, size_t ks, uint64_t target,
                            struct cand *cands, unsigned char *pivot)
{
    const size_t rs = report_size(ks);
    uint64_t less, less_eq;
    sum_counts(in, p, rs, &less, &less_eq);
    if (target == less || target == less_eq)
        return target == less ? DEC_AT_LESS : DEC_AT_LESS_EQ;
    const unsigned char dec = target < less ? DEC_LEFT : DEC_RIGHT;
    const size_t w_at = dec == DEC_LEFT ? R_WLEFT : R_WRIGHT;
    const size_t k_at = dec == DEC_LEFT ? R_KEYS : R_KEYS + ks;
    const unsigned char *med = weighted_median(in, p, rs, w_at, k_at, cands, cand_cmp);
    if (!med)
        return DEC_FAIL;
    memcpy(pivot, med, ks);
    return dec;
}

/* The state of a selection (exact or sampled): per splitter j (0-based, owned by rank j+1) the
 * local window [lo, hi) that may still hold the target, the local counts below and up to the
 * pivot being decided, and whether it is open; per rank a report out and in (rs bytes: to and
 * from the owners), this rank's decision with its pivot and all of them (gs bytes a rank); the
 * owner's proposals to weigh; keys: room for nkeys keys of key_len bytes (the exact selection:
 * one key to compare; the sampled: each splitter's pivot). */
struct win {
    uint64_t *lo, *hi, *less, *less_eq;
    unsigned char *open, *out, *in, *dec, *all, *keys;
    struct cand *cands;
    size_t m, rs, gs, slot, active;
};

/* Allocate w's arrays for w->m splitters over p ranks (none when m is 0): 1, or 0 if one failed
 * (or a count is too big for the collectives' int counts); win_free frees what there is. */
static int win_alloc(struct win *w, int p, size_t nkeys, size_t key_len)
{
    const size_t m = w->m;
    if (m == 0)
        return 1;
    w->lo = malloc(m * sizeof *w->lo);
    w->hi = malloc(m * sizeof *w->hi);
    w->less = malloc(m * sizeof *w->less);
    w->less_eq = malloc(m * sizeof *w->less_eq);
    w->open = calloc(m, 1);
    w->out = calloc((size_t)p, w->rs);
    w->in = malloc((size_t)p * w->rs);
    w->dec = calloc(1, w->gs);
    w->all = malloc((size_t)p * w->gs);
    w->keys = calloc(nkeys, key_len);
    w->cands = malloc((size_t)p * sizeof *w->cands);
    /* Alltoall and Allgather take int byte counts per rank. */
    return w->lo && w->hi && w->less && w->less_eq && w->open && w->out && w->in && w->dec &&
           w->all && w->keys && w->cands && w->rs <= (size_t)INT_MAX && w->gs <= (size_t)INT_MAX;
}

static void win_free(struct win *w)
{
    free(w->lo);
    free(w->hi);
    free(w->less);
    free(w->less_eq);
    free(w->open);
    free(w->out);
    free(w->in);
    free(w->dec);
    free(w->all);
    free(w->keys);
    free(w->cands);
}

/* Apply the round's decisions all (gs bytes a rank): close the decided splitters (their cuts
 * set), narrow the others' windows and write their next reports. 1 if a decision was lost. */
static int cut_apply(const struct dsort_splitter_keys *src, struct win *w, const unsigned char *all,
                     size_t gs, uint64_t *cuts)
{
    int failed = 0;
    for (size_t j = 0; j < w->m; j++) {
        const unsigned char *g = all + (j + 1) * gs;
        if (!w->open[j])
            continue;
        switch (g[0]) {
        case DEC_AT_LESS:
        case DEC_AT_LESS_EQ:
            cuts[j + 1] = g[0] == DEC_AT_LESS ? w->less[j] : w->less_eq[j];
            w->open[j] = 0;
            w->active--;
            continue;
        case DEC_LEFT:
            w->hi[j] = w->less[j];
            break;
        case DEC_RIGHT:
            w->lo[j] = w->less_eq[j];
            break;
        default:
            failed = 1;
            continue;
        }
        /* Everything below lo is below every window element, everything from hi on above
         * (the invariant), and the pivot is a window element somewhere: search the window. */
        w->less[j] = bound(src, w->lo[j], w->hi[j], g + 1, 0, w->keys);
        w->less_eq[j] = bound(src, w->less[j], w->hi[j], g + 1, 1, w->keys);
        put_report(src, w->out + (j + 1) * w->rs, w->lo[j], w->hi[j], w->less[j], w->less_eq[j]);
    }
    return failed;
}

/* Open the splitters of the p ranks over total keys (n here): the rank's own target in
 * *my_target; a splitter at either end is cut at once. targets: p+1 global positions, or NULL
 * for the balanced ones. */
static void cut_open(const struct dsort_splitter_keys *src, const uint64_t *targets, struct win *w,
                     int rank, int p, uint64_t total, uint64_t *cuts, uint64_t *my_target)
{
    const uint64_t n = src->n;
    for (size_t j = 0; j < w->m; j++) {
        uint64_t t =
            targets ? targets[j + 1] : (uint64_t)((unsigned __int128)total * (j + 1) / (unsigned)p);
        if (j + 1 == (size_t)rank)
            *my_target = t;
        if (t == 0 || t == total) {
            cuts[j + 1] = t == 0 ? 0 : n;
            continue;
        }
        /* The first round decides a virtual pivot above every key: all of the window is
         * below it, so the owner keeps it all, and the proposals are its medians. */
        w->open[j] = 1;
        w->active++;
        w->lo[j] = 0;
        w->hi[j] = w->less[j] = w->less_eq[j] = n;
        put_report(src, w->out + (j + 1) * w->rs, 0, n, n, n);
    }
}

/* The rounds of dsort_splitters_cut, from the windows that cut_open opened. A round: every rank
 * reports to every owner (Alltoall of one report each way), the owners decide, and every rank
 * gets every decision with the next pivot (Allgather). Every rank sees the same decisions, so
 * all take the same number of rounds, and all return the same status. */
static enum dsort_status cut_rounds(MPI_Comm comm, const struct dsort_splitter_keys *src,
                                    struct win *w, int rank, int p, uint64_t total,
                                    uint64_t my_target, uint64_t *cuts, int *rounds,
                                    struct dsort_error *err)
{
    const int most = max_rounds(total);
    for (int round = 0; w->active > 0; round++) {
        if (round == most)
            return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                             "splitter selection did not settle in %d rounds (the keys changed "
                             "while it ran, or are not unique)",
                             most);
        if (rounds)
            (*rounds)++;
        MPI_Alltoall(w->out, (int)w->rs, MPI_BYTE, w->in, (int)w->rs, MPI_BYTE, comm);
        w->dec[0] = DEC_NONE;
        if (rank > 0 && w->open[rank - 1])
            w->dec[0] = decide(w->in, p, src->key_size, my_target, w->cands, w->dec + 1);
        MPI_Allgather(w->dec, (int)w->gs, MPI_BYTE, w->all, (int)w->gs, MPI_BYTE, comm);
        if (cut_apply(src, w, w->all, w->gs, cuts))
            return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                             "splitter selection lost its target (the keys changed while it "
                             "ran, or are not unique)");
    }
    /* Keys are unique, so the cuts are monotone; check it rather than trust it. */
    for (int j = 0; j < p; j++)
        if (cuts[j] > cuts[j + 1])
            return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                             "splitter cuts are not monotone (the keys changed while they were "
                             "chosen, or are not unique)");
    return DSORT_OK;
}

enum dsort_status dsort_splitters_cut(MPI_Comm comm, const struct dsort_splitter_keys *src,
                                      uint64_t *cuts, int *rounds, struct dsort_error *err)
{
    return dsort_splitters_cut_at(comm, src, NULL, cuts, rounds, err);
}

enum dsort_status dsort_splitters_cut_at(MPI_Comm comm, const struct dsort_splitter_keys *src,
                                         const uint64_t *targets, uint64_t *cuts, int *rounds,
                                         struct dsort_error *err)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    const size_t ks = src->key_size;
    const uint64_t n = src->n;
    cuts[0] = 0;
    cuts[p] = n;
    if (rounds)
        *rounds = 0;

    /* Per splitter: its window; a report; a decision and its pivot. */
    struct win w = {0};
    w.m = (size_t)(p > 1 ? p - 1 : 0);
    w.rs = report_size(ks);
    w.gs = 1 + ks;
    const int ok = win_alloc(&w, p, 1, ks);
    /* The total, and (so that no rank waits in a collective for one that left) whether any
     * rank failed to allocate. */
    uint64_t mine_tf[2] = {n, ok ? 0 : 1}, tf[2] = {0, 0};
    MPI_Allreduce(mine_tf, tf, 2, MPI_UINT64_T, MPI_SUM, comm);
    const uint64_t total = tf[0];
    enum dsort_status st = DSORT_OK;
    if (!tf[1] && targets && targets[p] != total) {
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "splitter targets end at %" PRIu64 " of %" PRIu64 " elements", targets[p],
                       total);
    } else if (tf[1]) {
        st = DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM, "cannot allocate the splitter state");
    } else {
        uint64_t my_target = 0;
        cut_open(src, targets, &w, rank, p, total, cuts, &my_target);
        cand_key_size = ks;
        st = cut_rounds(comm, src, &w, rank, p, total, my_target, cuts, rounds, err);
    }
    win_free(&w);
    return st;
}

uint64_t dsort_splitters_memory(int p, size_t key_size)
{
    /* Per splitter: lo, hi, less, less_eq, open; per rank: a report out and in, a decision,
     * a proposal to weigh; one key. */
    const uint64_t m = p > 1 ? (uint64_t)p - 1 : 0, q = p > 0 ? (uint64_t)p : 0;
    return m * (4 * sizeof(uint64_t) + 1) +
           q * (2 * report_size(key_size) + 1 + key_size + sizeof(struct cand)) + 1 + 2 * key_size;
}

uint64_t dsort_splitters_sample_count(uint64_t n, int p, size_t key_size, uint64_t per_rank,
                                      uint64_t cap_bytes)
{
    uint64_t s = n < per_rank ? n : per_rank;
    uint64_t fit = cap_bytes / ((uint64_t)(p > 0 ? p : 1) * (key_size ? key_size : 1));
    if (s > fit)
        s = fit > 16 ? fit : (n < 16 ? n : 16);
    return s;
}

/* ---- sampled splitters: distributed selection over local samples ---- */

/* The owner's answer for one sampled splitter (all-gathered with the next pivot). */
enum { SEL_NONE, SEL_LEFT, SEL_RIGHT, SEL_DONE };

/* A slot: an 8-byte length, then up to kmax bytes of key. */
static size_t slot_len(const unsigned char *slot)
{
    uint64_t l;
    memcpy(&l, slot, 8);
    return (size_t)l;
}

static void put_slot(const struct dsort_sample_items *s, uint64_t i, unsigned char *slot)
{
    const uint64_t l = s->key_at(s->ctx, i, slot + 8);
    memcpy(slot, &l, 8);
}

/* First index in [lo, hi) whose item is >= key (or > key when `after`). */
static uint64_t sel_bound(const struct dsort_sample_items *s, uint64_t lo, uint64_t hi,
                          const unsigned char *slot, int after)
{
    const size_t len = slot_len(slot);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = s->cmp_at(s->ctx, mid, slot + 8, len);
        if (c < 0 || (after && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first c of a rank's items as counted in the reports: c itself, or (weighted) the share
 * of the records they stand for (monotone in c; all n items: all the records). */
static uint64_t sel_weigh(const struct dsort_sample_items *s, uint64_t c)
{
    if (!s->represents || !s->n)
        return c;
    return (uint64_t)((unsigned __int128)c * s->represents / s->n);
}

/* Reports as in dsort_splitters_cut (R_LESS .. R_WRIGHT), then two slots: the medians of the
 * window's part below and of its part above the pivot. */
static void put_sel_report(const struct dsort_sample_items *s, unsigned char *r, size_t slot,
                           uint64_t lo, uint64_t hi, uint64_t less, uint64_t less_eq)
{
    const uint64_t wless = sel_weigh(s, less), wless_eq = sel_weigh(s, less_eq);
    const uint64_t wl = wless - sel_weigh(s, lo), wr = sel_weigh(s, hi) - wless_eq;
    memcpy(r + R_LESS, &wless, 8);
    memcpy(r + R_LESS_EQ, &wless_eq, 8);
    memcpy(r + R_WLEFT, &wl, 8);
    memcpy(r + R_WRIGHT, &wr, 8);
    memset(r + R_KEYS, 0, 2 * slot);
    if (wl) /* the medians by items (each weighs at least one record: represents >= n) */
        put_slot(s, lo + (less - lo - 1) / 2, r + R_KEYS);
    if (wr)
        put_slot(s, less_eq + (hi - less_eq - 1) / 2, r + R_KEYS + slot);
}

static const struct dsort_sample_items *sel_src; /* qsort has no context argument in C11 */

static int sel_cand_cmp(const void *a, const void *b)
{
    const unsigned char *x = ((const struct cand *)a)->key, *y = ((const struct cand *)b)->key;
    return sel_src->cmp(sel_src->ctx, x + 8, slot_len(x), y + 8, slot_len(y));
}

/* The owner's step for one splitter with target t (elements that must go to lower ranks):
 * settle when the cut at the pivot (before it, or after it with `after`) is within tol of t,
 * or when t falls inside the pivot's run of equal items (the cut cannot be nearer); else keep
 * the side that holds t and take the weighted median of its proposals as the next pivot. No
 * proposals on that side (only at the edges, or with ties) settle at the current pivot. The
 * first round's pivot is virtual (above every item): it never settles. */
static unsigned char sel_decide(const unsigned char *in, int p, size_t slot, uint64_t t,
                                uint64_t tol, int after, int first, struct cand *cands,
                                unsigned char *pivot)
{
    const size_t rs = R_KEYS + 2 * slot;
    uint64_t less, less_eq;
    sum_counts(in, p, rs, &less, &less_eq);
    const uint64_t cut = after ? less_eq : less;
    if (!first && ((cut > t ? cut - t : t - cut) <= tol || (less < t && t < less_eq)))
        return SEL_DONE;
    const unsigned char dec = (after ? t <= less : t < less) ? SEL_LEFT : SEL_RIGHT;
    const size_t w_at = dec == SEL_LEFT ? R_WLEFT : R_WRIGHT;
    const size_t k_at = dec == SEL_LEFT ? R_KEYS : R_KEYS + slot;
    const unsigned char *med = weighted_median(in, p, rs, w_at, k_at, cands, sel_cand_cmp);
    if (!med)
        return SEL_DONE; /* (first: no items anywhere is caught before the rounds) */
    memcpy(pivot, med, slot);
    return dec;
}

void dsort_sampled_free(struct dsort_sampled *out)
{
    free(out->keys);
    out->keys = NULL;
}

/* Apply the round's decisions (w->all): close the settled splitters (their pivot, decided last
 * round, is the splitter: every rank has it), narrow the others' windows around their new
 * pivots and write their next reports. */
static void sel_apply(const struct dsort_sample_items *src, struct win *w)
{
    for (size_t j = 0; j < w->m; j++) {
        const unsigned char *g = w->all + (j + 1) * w->gs;
        if (!w->open[j])
            continue;
        if (g[0] == SEL_DONE) {
            w->open[j] = 0;
            w->active--;
            continue;
        }
        if (g[0] == SEL_LEFT)
            w->hi[j] = w->less[j];
        else
            w->lo[j] = w->less_eq[j];
        unsigned char *key = w->keys + j * w->slot;
        memcpy(key, g + 1, w->slot);
        w->less[j] = sel_bound(src, w->lo[j], w->hi[j], key, 0);
        w->less_eq[j] = sel_bound(src, w->less[j], w->hi[j], key, 1);
        put_sel_report(src, w->out + (j + 1) * w->rs, w->slot, w->lo[j], w->hi[j], w->less[j],
                       w->less_eq[j]);
    }
}

/* The rounds of dsort_splitters_select. A round: every rank reports to every owner (Alltoall),
 * the owners decide, and every rank gets every decision with its pivot (Allgather): all ranks
 * take the same rounds. */
static enum dsort_status sel_rounds(MPI_Comm comm, const struct dsort_sample_items *src,
                                    struct win *w, int after, double tol, struct dsort_sampled *out,
                                    struct dsort_error *err)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    const uint64_t n = src->n, total = out->total;
    uint64_t my_target = 0, tol_n = (uint64_t)(tol * (double)total / (double)p);
    for (size_t j = 0; j < w->m; j++) {
        if (j + 1 == (size_t)rank)
            my_target = (uint64_t)((unsigned __int128)total * (j + 1) / (unsigned)p);
        w->open[j] = 1;
        w->lo[j] = 0;
        w->hi[j] = w->less[j] = w->less_eq[j] = n;
        put_sel_report(src, w->out + (j + 1) * w->rs, w->slot, 0, n, n, n);
    }
    sel_src = src;
    w->active = w->m;
    /* (weighted: a round takes a quarter of the windows' weight, not of their items; every
     * item weighs at least one, so the weight's bits bound the rounds) */
    const int most = max_rounds(total);
    for (int first = 1; w->active > 0; first = 0) {
        if (out->rounds == most)
            return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                             "splitter selection over the samples did not settle in %d "
                             "rounds",
                             most);
        out->rounds++;
        MPI_Alltoall(w->out, (int)w->rs, MPI_BYTE, w->in, (int)w->rs, MPI_BYTE, comm);
        w->dec[0] = SEL_NONE;
        if (rank > 0 && w->open[rank - 1])
            w->dec[0] =
                sel_decide(w->in, p, w->slot, my_target, tol_n, after, first, w->cands, w->dec + 1);
        MPI_Allgather(w->dec, (int)w->gs, MPI_BYTE, w->all, (int)w->gs, MPI_BYTE, comm);
        sel_apply(src, w);
    }
    return DSORT_OK;
}

enum dsort_status dsort_splitters_select(MPI_Comm comm, const struct dsort_sample_items *src,
                                         int after, double tol, struct dsort_sampled *out,
                                         struct dsort_error *err)
{
    int p;
    MPI_Comm_size(comm, &p);
    const size_t m = (size_t)(p > 1 ? p - 1 : 0);
    const uint64_t n = src->n;
    memset(out, 0, sizeof *out);

    /* The total (the items' weight); the longest key, and whether a key is too long. */
    uint64_t total = 0, mine = sel_weigh(src, n);
    uint64_t mx_in[2] = {src->key_max, src->key_max > ((uint64_t)1 << 30)}, mx[2];
    MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
    MPI_Allreduce(mx_in, mx, 2, MPI_UINT64_T, MPI_MAX, comm);
    out->total = total;
    if (mx[1])
        return DSORT_ERR(err, DSORT_EINVAL, 0, "sample keys too long for the splitters");
    if (total == 0 || m == 0)
        return DSORT_OK; /* no splitters (or none needed): keys stays NULL */
    struct win w = {0};
    w.m = m;
    w.slot = 8 + (size_t)mx[0];
    w.rs = R_KEYS + 2 * w.slot;
    w.gs = 1 + w.slot;
    const int ok = win_alloc(&w, p, m, w.slot);
    int any_fail = 0, fail = !ok;
    MPI_Allreduce(&fail, &any_fail, 1, MPI_INT, MPI_LOR, comm);
    enum dsort_status st;
    if (any_fail)
        st = DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM, "cannot allocate the splitter state");
    else
        st = sel_rounds(comm, src, &w, after, tol, out, err);
    if (!st) {
        out->keys = w.keys;
        out->slot = w.slot;
        w.keys = NULL;
    }
    win_free(&w);
    return st;
}
