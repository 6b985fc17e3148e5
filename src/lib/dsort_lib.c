/* libdsort: the in-memory distributed sort of fixed-size records (dsort.h).
 *
 * The same steps as the program's in-memory pipeline, on the layers below it (the pipeline
 * reads and writes files and ends the job on an error; a library must do neither): the
 * core's radix sort of the local records (keysort.h), the exact splitters over the sorted
 * runs (splitters.h: composite keys make every record unique, so the cut is exact whatever
 * the duplicates), one exchange (exchange.h), and a stable merge of the p pieces, which
 * arrive in source-rank order, that is input order.
 *
 * Layouts: the splitters cut at global positions (dsort_splitters_cut_at), the prefix sums of
 * the output counts that every rank gathers with the input counts (plan()). dsort_sort_layout
 * takes the caller's counts and buffer; dsort_sort is the same path with the balanced counts
 * and a buffer allocated once they are known (struct dest, alloc).
 *
 * Typed keys (struct dsort_records.keys) as the program's pipelines have them (job_typed.h):
 * the records are widened once (typedkey.h: normkey || record, or the record with its key
 * bytes normalised in place), sorted as a plain fixed format whose key is the normalised key,
 * and narrowed back in the output buffer, so that nothing between knows about typed keys.
 *
 * Agreement: every step that may fail on one rank is followed by agree(), an Allreduce and a
 * Broadcast on the library's own duplicate of the communicator, so that every rank leaves
 * with the lowest failing rank's code and message and no rank enters a collective that
 * another skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsort.h"
#include "error.h"
#include "exchange.h"
#include "format.h"
#include "keysort.h"
#include "merge.h"
#include "splitters.h"
#include "typedkey.h"

#define DSORT_EXPORT __attribute__((visibility("default")))

struct ctx {
    MPI_Comm comm; /* the library's duplicate */
    int rank, size;
    struct dsort_errinfo *info;
};

static int public_code(enum dsort_status st)
{
    switch (st) {
    case DSORT_OK:
        return DSORT_SUCCESS;
    case DSORT_EINVAL:
        return DSORT_ERR_ARG;
    case DSORT_ENOMEM:
        return DSORT_ERR_NOMEM;
    case DSORT_EIO: /* the exchange's failed transfers */
        return DSORT_ERR_MPI;
    default:
        return DSORT_ERR_INTERNAL;
    }
}

/* Collective: 0 when every rank passes st = DSORT_OK; else the lowest failing rank's code,
 * with its message in x->info, on every rank. */
static int agree(struct ctx *x, enum dsort_status st, const struct dsort_error *err)
{
    int mine = st ? x->rank : INT_MAX, low = INT_MAX;
    if (MPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, x->comm) != MPI_SUCCESS)
        return DSORT_ERR_MPI;
    if (low == INT_MAX)
        return DSORT_SUCCESS;
    struct dsort_errinfo e = {public_code(st), low, ""};
    if (low == x->rank)
        snprintf(e.msg, sizeof e.msg, "rank %d: %s", x->rank, err && err->msg[0] ? err->msg : "?");
    if (MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, low, x->comm) != MPI_SUCCESS)
        return DSORT_ERR_MPI;
    if (x->info)
        *x->info = e;
    return e.code;
}

/* The typed keys of f->keys (comma-separated -k specs) into *tk, finished for f->rec_size;
 * an empty set (count 0) for raw bytes. */
static enum dsort_status parse_keys(const struct dsort_records *f, struct dsort_typedkey *tk,
                                    struct dsort_error *err)
{
    dsort_typedkey_init(tk);
    if (!f->keys || !f->keys[0])
        return DSORT_OK;
    for (const char *s = f->keys;; s++) {
        char one[128];
        size_t len = strcspn(s, ",");
        if (len == 0)
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "bad key list '%.100s': an empty key (expected "
                             "OFF:TYPE[:LEN][:r] joined by commas)",
                             f->keys);
        if (len >= sizeof one)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "bad key '%.40s...': too long", s);
        memcpy(one, s, len);
        one[len] = '\0';
        enum dsort_status st = dsort_typedkey_add(tk, one, err);
        if (st)
            return st;
        s += len;
        if (!*s)
            break;
    }
    return dsort_typedkey_finish(tk, f->rec_size, err);
}

/* Local checks of the arguments; *tk gets the typed keys (count 0 without). */
static enum dsort_status check_args(const struct dsort_records *f, const void *in, size_t n,
                                    struct dsort_typedkey *tk, struct dsort_error *err)
{
    dsort_typedkey_init(tk);
    if (!f)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "the record layout is NULL");
    const int typed = f->keys && f->keys[0];
    if (f->rec_size < 1 || (!typed && (f->key_len < 1 || f->key_off > f->rec_size ||
                                       f->key_len > f->rec_size - f->key_off)))
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "bad record layout: size %zu, key of %zu bytes at offset %zu", f->rec_size,
                         f->key_len, f->key_off);
    if (f->flags & ~(DSORT_REVERSE | DSORT_STABLE))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "unknown flags 0x%x", f->flags);
    /* rec_size + 32 must not wrap (a record size near SIZE_MAX divided by zero here) */
    if (f->rec_size > SIZE_MAX / 4)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "record size too large: %zu bytes", f->rec_size);
    enum dsort_status st = parse_keys(f, tk, err);
    if (st)
        return st;
    /* the sorted records' size: widened by the normalised keys (at most 16 * 2^24 bytes) */
    const size_t rs = f->rec_size + (tk->count ? tk->wide_prefix : 0);
    if (rs > SIZE_MAX / 4)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "record size too large: %zu bytes", rs);
    if (n >= DSORT_KEYSORT_MAX_RECORDS || n > SIZE_MAX / 2 / (rs + 32))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "too many records: %zu", n);
    if (n && !in)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "%zu records at a NULL pointer", n);
    return DSORT_OK;
}

/* The layout as words that every rank compares with rank 0's: the raw key's place (0 with
 * typed keys, which ignore it), the flags, then each typed key. */
#define LAYOUT_WORDS (5 + 4 * DSORT_TYPEDKEY_MAX)

static void layout_words(const struct dsort_records *f, const struct dsort_typedkey *tk,
                         uint64_t *v)
{
    memset(v, 0, LAYOUT_WORDS * sizeof *v);
    v[0] = f->rec_size;
    v[1] = tk->count ? 0 : f->key_off;
    v[2] = tk->count ? 0 : f->key_len;
    v[3] = f->flags;
    v[4] = tk->count;
    for (size_t i = 0; i < tk->count; i++) {
        const struct dsort_typedkey_field *k = &tk->keys[i];
        uint64_t *w = v + 5 + 4 * i;
        w[0] = (uint64_t)k->type, w[1] = k->off, w[2] = k->len, w[3] = (uint64_t)k->desc;
    }
}

/* The key list that layout_words wrote, spelled as -k takes it ("none" for raw bytes). */
static void keys_name(const uint64_t *v, char *buf, size_t size)
{
    struct dsort_typedkey tk;
    dsort_typedkey_init(&tk);
    tk.count = v[4] <= DSORT_TYPEDKEY_MAX ? (size_t)v[4] : DSORT_TYPEDKEY_MAX;
    for (size_t i = 0; i < tk.count; i++) {
        const uint64_t *w = v + 5 + 4 * i;
        tk.keys[i].type = w[0] < DSORT_TK_NTYPES ? (enum dsort_typedkey_type)w[0] : DSORT_TK_BYTES;
        tk.keys[i].off = (size_t)w[1], tk.keys[i].len = (size_t)w[2], tk.keys[i].desc = (int)w[3];
    }
    dsort_typedkey_name(&tk, buf, size);
    if (!tk.count)
        snprintf(buf, size, "none");
}

/* Collective: every rank passed rank 0's layout, keys and flags (else the lowest rank that did
 * not says so). */
static enum dsort_status same_layout(struct ctx *x, const struct dsort_records *f,
                                     const struct dsort_typedkey *tk, struct dsort_error *err)
{
    uint64_t v[LAYOUT_WORDS], r0[LAYOUT_WORDS];
    layout_words(f, tk, v);
    memcpy(r0, v, sizeof v);
    if (MPI_Bcast(r0, LAYOUT_WORDS, MPI_UINT64_T, 0, x->comm) != MPI_SUCCESS)
        return DSORT_ERR(err, DSORT_EIO, 0, "MPI_Bcast of the record layout failed");
    if (memcmp(v + 4, r0 + 4, sizeof v - 4 * sizeof *v)) {
        char here[96], there[96];
        keys_name(v, here, sizeof here);
        keys_name(r0, there, sizeof there);
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "keys differ from rank 0's: '%s' here, '%s' on rank 0", here, there);
    }
    if (memcmp(v, r0, sizeof v))
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "record layout or flags differ from rank 0's: size %zu, key %zu+%zu, "
                         "flags %u here; %" PRIu64 ", %" PRIu64 "+%" PRIu64 ", %" PRIu64
                         " on rank 0",
                         f->rec_size, f->key_off, f->key_len, f->flags, r0[0], r0[1], r0[2], r0[3]);
    return DSORT_OK;
}

static void put_be64(unsigned char *out, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)v;
}

/* The composite key of the i-th record of the sorted run: the key and the tie bytes, each
 * complemented when descending (so that memcmp orders them as the sort did), then the record's
 * global input position (g0 + i of the sorted run is unique, and ascending along equal keys,
 * because the local sort is stable). */
struct run_keys {
    const struct dsort_cmp *cmp;
    const unsigned char *run;
    size_t rec_size;
    uint64_t g0;
};

static void put_bytes(unsigned char *out, const unsigned char *in, size_t len, int invert)
{
    for (size_t i = 0; i < len; i++)
        out[i] = invert ? (unsigned char)~in[i] : in[i];
}

static void run_key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    const struct run_keys *k = ctx;
    const unsigned char *rec = k->run + i * k->rec_size;
    put_bytes(out, rec + k->cmp->key_off, k->cmp->key_len, k->cmp->reverse);
    out += k->cmp->key_len;
    put_bytes(out, rec + k->cmp->tie_off, k->cmp->tie_len, k->cmp->tie_reverse);
    put_be64(out + k->cmp->tie_len, k->g0);
    put_be64(out + k->cmp->tie_len + 8, i);
}

/* Where the sorted records go: n records of the user's size at buf (the caller's buffer, or
 * one allocated here for dsort_sort), narrowed from the sorted records with typed keys. */
struct dest {
    unsigned char *buf;
    size_t n;  /* records wanted here: the caller's n_out, or the balanced share */
    int alloc; /* dsort_sort: n is computed and buf allocated here */
    const struct dsort_typedkey *tk;
    size_t done; /* records written (the narrowing sink) */
};

/* The local sort: *run gets the n records in sorted order (into, if not NULL, else a new
 * buffer). */
static enum dsort_status sort_local(const struct dsort_format *fmt, const struct dsort_order *ord,
                                    const unsigned char *in, size_t n, unsigned char *into,
                                    unsigned char **run, struct dsort_error *err)
{
    struct dsort_sortent *ents = malloc((n ? n : 1) * sizeof *ents);
    struct dsort_sortent *tmp = malloc((n ? n : 1) * sizeof *tmp);
    *run = into ? into : malloc(n ? n * fmt->rec_size : 1);
    enum dsort_status st = DSORT_OK;
    if (!ents || !tmp || !*run) {
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory for the sort of %zu records", n);
        if (!into)
            free(*run);
        *run = NULL;
    } else {
        dsort_keysort_sort(fmt, ord, in, n, ents, tmp);
        dsort_keysort_gather(fmt, in, ents, n, *run);
    }
    free(ents);
    free(tmp);
    return st;
}

/* The narrowing sink's flush: the staged widened records to the user's records at d->buf. */
static enum dsort_status narrow_flush(struct dsort_sink *s, struct dsort_error *err)
{
    struct dest *d = s->ctx;
    const size_t ws = d->tk->wide_prefix + d->tk->rec_size, k = s->len / ws;
    if (k > d->n - d->done)
        return DSORT_ERR(err, DSORT_EINTERNAL, 0, "merged more than the %zu records wanted", d->n);
    dsort_typedkey_narrow(d->tk, s->buf, k, d->buf + d->done * d->tk->rec_size);
    d->done += k;
    s->len = 0;
    return DSORT_OK;
}

/* Collective: the exchange of the cut run (freed once sent) and the merge of its pieces into
 * d (through a small staged buffer, narrowed, with typed keys). */
static int exchange_merge(struct ctx *x, const struct dsort_format *fmt,
                          const struct dsort_order *ord, unsigned char **run, const uint64_t *cuts,
                          struct dest *d)
{
    struct dsort_error err = {0};
    const size_t rs = fmt->rec_size, p = (size_t)x->size, stage = rs * (65536 / rs + 1);
    uint64_t *sc = calloc(p, sizeof *sc), *rc = calloc(p, sizeof *rc);
    struct dsort_cursor *cur = calloc(p, sizeof *cur);
    unsigned char *recv = NULL, *staged = d->tk->count ? malloc(stage) : NULL;
    enum dsort_status st = DSORT_OK;
    if (!sc || !rc || !cur || (d->tk->count && !staged))
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    int code = agree(x, st, &err);
    if (code)
        goto out;
    for (size_t r = 0; r < p; r++)
        sc[r] = (cuts[r + 1] - cuts[r]) * rs;
    st = dsort_exchange_counts(x->comm, sc, rc, &err);
    uint64_t total = 0;
    for (size_t r = 0; r < p; r++)
        total += rc[r];
    if (!st && total != (uint64_t)d->n * rs)
        st = DSORT_ERR(&err, DSORT_EINTERNAL, 0, "%" PRIu64 " records come of the %zu wanted",
                       total / rs, d->n);
    if (!st && !(recv = malloc(total ? total : 1)))
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory for %" PRIu64 " bytes", total);
    if ((code = agree(x, st, &err)))
        goto out;
    st = dsort_exchange_run(x->comm, *run, sc, recv, rc, DSORT_EXCHANGE_CHUNK, NULL, &err);
    free(*run); /* sent: the merge's peak is the received pieces and the output */
    *run = NULL;
    if ((code = agree(x, st, &err)))
        goto out;
    /* Pieces arrive in source-rank order, which is input order: a merge that prefers the
     * lower cursor on ties keeps -s stable. */
    uint64_t off = 0;
    for (size_t r = 0; r < p; r++) {
        dsort_cursor_memory(&cur[r], recv + off, rc[r] / rs, rs);
        off += rc[r];
    }
    struct dsort_sink sink;
    dsort_sink_memory(&sink, staged ? staged : d->buf, staged ? stage : total);
    if (staged)
        sink.flush = narrow_flush, sink.ctx = d;
    st = dsort_merge(fmt, ord, cur, p, &sink, &err);
    if (!st && sink.records != d->n)
        st = DSORT_ERR(&err, DSORT_EINTERNAL, 0, "merged %" PRIu64 " records of %zu", sink.records,
                       d->n);
    code = agree(x, st, &err);
out:
    free(sc);
    free(rc);
    free(cur);
    free(recv);
    free(staged);
    return code;
}

/* Collective: sort the n records at in (fmt's, widened with typed keys) into d, rank j getting
 * global positions [targets[j], targets[j+1]); g0 is this rank's first input position. *own,
 * if not NULL, is in, freed once the local sort no longer needs it. */
static int sort_fmt(struct ctx *x, const struct dsort_format *fmt, const struct dsort_order *ord,
                    const unsigned char *in, size_t n, unsigned char **own, const uint64_t *targets,
                    uint64_t g0, struct dest *d)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    unsigned char *run = NULL;
    int code;
    const int direct = x->size == 1 && !d->tk->count; /* the sorted run is the output */
    uint64_t *cuts = calloc((size_t)x->size + 1, sizeof *cuts);
    if (!cuts)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    if (!st)
        st = sort_local(fmt, ord, in, n, direct ? d->buf : NULL, &run, &err);
    free(*own);
    *own = NULL;
    if ((code = agree(x, st, &err)) || direct)
        goto out;
    if (x->size == 1) { /* typed keys: the sorted run narrowed is the output */
        if (n)          /* else out may be NULL */
            dsort_typedkey_narrow(d->tk, run, n, d->buf);
        goto out;
    }
    struct dsort_cmp cmp;
    dsort_cmp_init(&cmp, fmt, ord);
    struct run_keys rk = {&cmp, run, fmt->rec_size, g0};
    struct dsort_splitter_keys sk = {n, cmp.key_len + cmp.tie_len + 16, run_key_at, &rk};
    st = dsort_splitters_cut_at(x->comm, &sk, targets, cuts, NULL, &err);
    if ((code = agree(x, st, &err)))
        goto out;
    code = exchange_merge(x, fmt, ord, &run, cuts, d);
out:
    if (run != d->buf)
        free(run);
    free(cuts);
    return code;
}

/* Typed keys: *wide gets the n records widened (typedkey.h: normkey || record, or the record
 * with its key bytes normalised), which sort by memcmp of the normalised key as the keys say,
 * and whose whole bytes order equal keys as the records' bytes do. */
static enum dsort_status widen(const struct dsort_typedkey *tk, const void *in, size_t n,
                               unsigned char **wide, struct dsort_error *err)
{
    const size_t ws = tk->wide_prefix + tk->rec_size;
    if (!(*wide = malloc(n ? n * ws : 1)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory for %zu records of %zu bytes", n,
                         ws);
    dsort_typedkey_widen(tk, in, n, *wide);
    return DSORT_OK;
}

/* Local checks of the caller's output (dsort_sort_layout). */
static enum dsort_status check_dest(const struct dsort_records *f, const struct dest *d,
                                    struct dsort_error *err)
{
    if (d->alloc)
        return DSORT_OK;
    if (d->n >= DSORT_KEYSORT_MAX_RECORDS || d->n > SIZE_MAX / 2 / f->rec_size)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "too many output records: %zu", d->n);
    if (d->n && !d->buf)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "%zu output records at a NULL pointer", d->n);
    return DSORT_OK;
}

/* Collective: every rank's input and output counts (each below DSORT_KEYSORT_MAX_RECORDS, so
 * that the sums cannot wrap); targets (p+1) the global first position of each rank's output,
 * *g0 this rank's first input position. dsort_sort: d->n the balanced share, and d->buf
 * allocated. */
static enum dsort_status plan(struct ctx *x, const struct dsort_records *f, size_t n,
                              struct dest *d, uint64_t *all, uint64_t *targets, uint64_t *g0,
                              struct dsort_error *err)
{
    const uint64_t mine[2] = {n, d->alloc ? 0 : d->n}, p = (uint64_t)x->size;
    if (MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, x->comm) != MPI_SUCCESS)
        return DSORT_ERR(err, DSORT_EIO, 0, "MPI_Allgather of the record counts failed");
    uint64_t total = 0, want = 0;
    *g0 = 0;
    for (uint64_t r = 0; r < p; r++) {
        *g0 += r < (uint64_t)x->rank ? all[2 * r] : 0;
        total += all[2 * r];
        targets[r] = want;
        want += all[2 * r + 1];
    }
    targets[p] = want;
    if (!d->alloc && want != total)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "the output counts add up to %" PRIu64 " records, the inputs to %" PRIu64,
                         want, total);
    if (!d->alloc)
        return DSORT_OK;
    for (uint64_t j = 0; j <= p; j++) /* the balanced layout: floor(j*N/p) */
        targets[j] = (uint64_t)((unsigned __int128)total * j / p);
    d->n = (size_t)(targets[x->rank + 1] - targets[x->rank]);
    if (d->n > SIZE_MAX / f->rec_size || !(d->buf = malloc(d->n ? d->n * f->rec_size : 1)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory for %zu records", d->n);
    return DSORT_OK;
}

static int sort_comm(struct ctx *x, const struct dsort_records *f, const void *in, size_t n,
                     struct dest *d)
{
    struct dsort_error err = {0};
    struct dsort_typedkey tk;
    enum dsort_status st = check_args(f, in, n, &tk, &err);
    if (!st)
        st = check_dest(f, d, &err);
    int code = agree(x, st, &err);
    if (!code)
        code = agree(x, same_layout(x, f, &tk, &err), &err);
    if (code)
        return code;
    d->tk = &tk;
    const size_t p = (size_t)x->size;
    uint64_t g0 = 0, *all = malloc((3 * p + 1) * sizeof *all), *targets = all + 2 * p;
    if ((code = agree(x, all ? DSORT_OK : DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory"),
                      &err))) {
        free(all);
        return code;
    }
    st = plan(x, f, n, d, all, targets, &g0, &err);
    struct dsort_format fmt = {DSORT_FORMAT_FIXED, f->rec_size, f->key_off, f->key_len, "", NULL};
    struct dsort_order ord = {(f->flags & DSORT_REVERSE) != 0, 0, (f->flags & DSORT_STABLE) != 0};
    unsigned char *wide = NULL;
    if (!st && tk.count) { /* sort the widened records by their normalised key, as the program */
        fmt.rec_size = tk.wide_prefix + tk.rec_size;
        fmt.key_off = tk.wide_key_off;
        fmt.key_len = tk.norm_len;
        st = widen(&tk, in, n, &wide, &err);
        in = wide;
    }
    if (!(code = agree(x, st, &err)))
        code = sort_fmt(x, &fmt, &ord, in, n, &wide, targets, g0, d);
    free(wide); /* NULL unless another rank failed before the sort */
    free(all);
    d->tk = NULL;
    return code;
}

/* Both entry points: the checks that need no communication, the library's duplicate of comm,
 * and the sort into d; err filled in on an error. */
static int run(MPI_Comm comm, const struct dsort_records *fmt, const void *in, size_t n,
               struct dest *d, struct dsort_errinfo *err)
{
    struct ctx x = {MPI_COMM_NULL, 0, 0, err};
    if (err)
        *err = (struct dsort_errinfo){DSORT_SUCCESS, -1, ""};
    int code = DSORT_ERR_MPI, init = 0, fin = 1, inter = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin || comm == MPI_COMM_NULL) {
        code = DSORT_ERR_ARG; /* local, but the same on every rank that calls */
        if (err)
            snprintf(err->msg, sizeof err->msg, "%s",
                     comm == MPI_COMM_NULL ? "the communicator is MPI_COMM_NULL"
                                           : "MPI is not initialised, or already finalised");
    } else if (MPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter) {
        code = DSORT_ERR_ARG; /* every rank of an intercommunicator sees it */
        if (err)
            snprintf(err->msg, sizeof err->msg, "intercommunicators are not supported");
    } else if (MPI_Comm_dup(comm, &x.comm) == MPI_SUCCESS) {
        /* The duplicate keeps the caller's error handler: with MPI's default, an MPI call that
         * fails ends the job, as it must when it fails on one rank in the middle of the
         * exchange (the others wait for that rank's messages, and nothing could tell them);
         * with MPI_ERRORS_RETURN the code comes back as DSORT_ERR_MPI (tests/pmpi/fault.sh:
         * when the library set MPI_ERRORS_RETURN itself, the other rank waited for ever). */
        MPI_Comm_rank(x.comm, &x.rank);
        MPI_Comm_size(x.comm, &x.size);
        code = sort_comm(&x, fmt, in, n, d);
        MPI_Comm_free(&x.comm);
    }
    if (code) {
        if (err && !err->code)
            *err = (struct dsort_errinfo){code, -1, ""};
        if (err && !err->msg[0])
            snprintf(err->msg, sizeof err->msg, "%s", dsort_strerror(code));
    }
    return code;
}

DSORT_EXPORT int dsort_sort_layout(MPI_Comm comm, const struct dsort_records *fmt, const void *in,
                                   size_t n, void *out, size_t n_out, struct dsort_errinfo *err)
{
    struct dest d = {out, n_out, 0, NULL, 0};
    return run(comm, fmt, in, n, &d, err);
}

DSORT_EXPORT int dsort_sort(MPI_Comm comm, const struct dsort_records *fmt, const void *in,
                            size_t n, void **out, size_t *n_out, struct dsort_errinfo *err)
{
    struct dest d = {NULL, 0, 1, NULL, 0}; /* the balanced counts, allocated by plan() */
    int code = run(comm, fmt, in, n, &d, err);
    if (code || !d.n) { /* dsort.h: NULL when *n_out is 0 */
        free(d.buf);
        d.buf = NULL, d.n = 0;
    }
    if (out)
        *out = d.buf;
    else
        free(d.buf);
    if (n_out)
        *n_out = d.n;
    return code;
}

DSORT_EXPORT const char *dsort_strerror(int code)
{
    switch (code) {
    case DSORT_SUCCESS:
        return "success";
    case DSORT_ERR_ARG:
        return "invalid argument";
    case DSORT_ERR_NOMEM:
        return "out of memory";
    case DSORT_ERR_MPI:
        return "an MPI call failed";
    case DSORT_ERR_INTERNAL:
        return "internal error";
    case DSORT_ERR_IO:
        return "an input or output file failed";
    case DSORT_ERR_DATA:
        return "an input is not in the format";
    default:
        return "unknown error code";
    }
}

DSORT_EXPORT const char *dsort_version(void)
{
    return DSORT_LIB_VERSION;
}
