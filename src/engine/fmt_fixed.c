/* The fixed-size records' format (recfmt.h): records of one size (with an 8-byte position tag
 * in flight under -s/-u), ordered by a struct dsort_cmp, merged by merge.h; their memory plan. */
#include "recfmt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keysort.h"
#include "memplan.h"
#include "merge.h"

static size_t fixed_run_rec(const struct dsort_recfmt_ctx *x)
{
    return x->rec;
}

static void fixed_cursor_memory(const struct dsort_recfmt_ctx *x, void *cur, const unsigned char *p,
                                size_t bytes)
{
    dsort_cursor_memory(cur, p, bytes / x->rec, x->rec);
}

static enum dsort_status fixed_cursor_run(const struct dsort_recfmt_ctx *x, void *cur,
                                          struct dsort_runreader *rd, const struct dsort_run *run,
                                          size_t block, unsigned char *buf,
                                          struct dsort_prefetch *const *pf, struct dsort_error *err)
{
    const char *paths[DSORT_RUN_MAX_STRIPES];
    size_t k = dsort_run_files(run, paths);
    enum dsort_status st =
        dsort_runreader_open_striped(rd, paths, k, x->rec, block, 0, buf, pf, run->records, err);
    if (st)
        return st;
    /* A copy of the reader's cursor; its refill finds the reader through ctx. */
    struct dsort_cursor *c = cur;
    *c = rd->cur;
    c->ctx = rd;
    return DSORT_OK;
}

static void fixed_cursor_close(const struct dsort_recfmt_ctx *x, void *cur)
{
    (void)x;
    struct dsort_cursor *c = cur;
    if (c->refill && c->ctx)
        dsort_runreader_close(c->ctx);
    c->refill = NULL;
    c->ctx = NULL;
}

static enum dsort_status fixed_merge_to_run(const struct dsort_recfmt_ctx *x, void *cur, size_t k,
                                            struct dsort_runwriter *w, uint64_t *bytes,
                                            struct dsort_error *err)
{
    *bytes = 0; /* the writer's records * rec */
    return dsort_merge_cmp(x->cmp, x->rec, x->rec, x->unique, cur, k, &w->sink, err);
}

static enum dsort_status fixed_merge_to_out(const struct dsort_recfmt_ctx *x, void *cur, size_t k,
                                            struct dsort_sink *sink, uint64_t *records,
                                            uint64_t *bytes, struct dsort_error *err)
{
    const uint64_t before = sink->records;
    enum dsort_status st =
        dsort_merge_cmp(x->cmp, x->rec, x->rec_out, x->unique, cur, k, sink, err);
    *records = sink->records - before;
    *bytes = *records * x->rec_out;
    return st;
}

/* ---- chunks ---- */

static void fixed_sort_chunk(const struct dsort_recfmt_ctx *x, struct dsort_recfmt_chunk *c)
{
    dsort_keysort_sort(x->fmt, x->order, c->data, c->n, c->ents, c->scratch);
}

static void put_bytes(unsigned char *out, const unsigned char *in, size_t len, int flip)
{
    if (flip)
        for (size_t b = 0; b < len; b++)
            out[b] = (unsigned char)~in[b];
    else
        memcpy(out, in, len);
}

/* The composite key: normalised key, normalised last-resort bytes (untagged) or nothing, then
 * the position. memcmp order = output order. */
static size_t fixed_sample_key(const struct dsort_recfmt_ctx *x, const unsigned char *rec,
                               size_t len, uint64_t pos, unsigned char *out)
{
    (void)len;
    const struct dsort_cmp *c = x->cmp;
    unsigned char *o = out;
    put_bytes(o, rec + c->key_off, c->key_len, c->reverse);
    o += c->key_len;
    if (!x->tagged) {
        put_bytes(o, rec + c->tie_off, c->tie_len, c->tie_reverse);
        o += c->tie_len;
    }
    dsort_recfmt_put_be64(o, pos);
    return (size_t)(o + 8 - out);
}

static int fixed_key_cmp(const struct dsort_recfmt_ctx *x, const unsigned char *a, size_t alen,
                         const unsigned char *b, size_t blen)
{
    (void)alen, (void)blen;
    return memcmp(a, b, x->ks);
}

/* First index in [lo, n) of the sorted chunk whose composite key is >= key. */
static size_t bound(const struct dsort_recfmt_ctx *x, const struct dsort_recfmt_chunk *c, size_t lo,
                    const unsigned char *key, unsigned char *tmp)
{
    const struct dsort_sortent *e = c->ents;
    size_t hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t idx = dsort_sortent_index(&e[mid]);
        fixed_sample_key(x, c->data + idx * x->rec_in, x->rec_in, c->g0 + idx, tmp);
        if (memcmp(tmp, key, x->ks) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static enum dsort_status fixed_cut(const struct dsort_recfmt_ctx *x,
                                   const struct dsort_recfmt_chunk *c,
                                   const struct dsort_recfmt_splits *s, size_t *end,
                                   struct dsort_error *err)
{
    unsigned char *tmp = malloc(x->ks ? x->ks : 1);
    if (!tmp)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    size_t lo = 0;
    for (size_t d = 0; d < s->n; d++)
        lo = end[d] = bound(x, c, lo, s->keys + d * s->ks, tmp);
    end[s->n] = c->n;
    free(tmp);
    return DSORT_OK;
}

static uint64_t fixed_frame(const struct dsort_recfmt_ctx *x, const struct dsort_recfmt_chunk *c,
                            size_t lo, size_t hi, unsigned char *out)
{
    const struct dsort_sortent *e = c->ents;
    if (!x->tagged) {
        dsort_keysort_gather(x->fmt, c->data, e + lo, hi - lo, out);
        return (uint64_t)(hi - lo) * x->rec;
    }
    for (size_t i = lo; i < hi; i++, out += x->rec) {
        size_t idx = dsort_sortent_index(&e[i]);
        memcpy(out, c->data + idx * x->rec_in, x->rec_in);
        dsort_recfmt_put_be64(out + x->rec_in, c->g0 + idx);
    }
    return (uint64_t)(hi - lo) * x->rec;
}

static uint64_t fixed_frame_bytes(const struct dsort_recfmt_ctx *x,
                                  const struct dsort_recfmt_chunk *c)
{
    return (uint64_t)c->n * x->rec;
}

/* The blob: the composite keys, one after another. */
static size_t fixed_blob_len(const struct dsort_recfmt_splits *s)
{
    return s->n * s->ks;
}

static void fixed_blob_put(const struct dsort_recfmt_splits *s, unsigned char *blob)
{
    memcpy(blob, s->keys, s->n * s->ks);
}

static int fixed_blob_get(struct dsort_recfmt_splits *s, unsigned char *blob, size_t len)
{
    s->keys = blob;
    return len == s->n * s->ks;
}

/* The bytes a chunk record costs: A and B, a sixteenth of slack in A, its sort entry and, for
 * records shorter than an entry, the sort scratch; with read-ahead (ahead), C as large as A. */
static uint64_t per_record(const struct dsort_memplan_in *in, int ahead)
{
    const size_t ent = sizeof(struct dsort_sortent);
    const uint64_t a = in->rec + in->rec / 16;
    const uint64_t rest = in->rec + ent + (in->rec_in < ent ? ent : 0);
    /* with C, A's sixteenth rounded up, so that A and C (bbytes + bbytes / 16 each) fit */
    return ahead ? 2 * (in->rec + (in->rec + 15) / 16) + rest : a + rest;
}

/* The chunk (records) that budget leaves with I/O blocks of block bytes, or 0 if it does not
 * hold DSORT_MEMPLAN_MIN_CHUNK records and two merge read buffers besides the run writer's
 * buffers (two blocks, or one more than the files of a run striped over several temp devices,
 * runfile.h). */
static uint64_t chunk_for(const struct dsort_memplan_in *in, uint64_t block, int ahead)
{
    uint64_t writer = dsort_runwriter_buf_len(in->rec, block, in->temp_disks);
    uint64_t chunk = in->budget > writer ? (in->budget - writer) / per_record(in, ahead) : 0;
    if (chunk < DSORT_MEMPLAN_MIN_CHUNK ||
        chunk * in->rec < dsort_runreader_buf_len(in->rec, block, in->temp_disks))
        return 0;
    return chunk;
}

/* The I/O block: --block-size, at most a sixteenth of the budget, and smaller still (down to
 * 4 KiB) while the chunk does not hold two blocks: with records of a few bytes each record
 * costs many times its size, so a sixteenth of the budget is more than the chunk holds.
 * *chunk gets chunk_for's answer for it (0: the budget is too small for any block). */
static uint64_t block_for(const struct dsort_memplan_in *in, uint64_t *chunk, int ahead)
{
    uint64_t block = in->block < in->budget / 16 ? in->block : in->budget / 16;
    if (block < 4096)
        block = 4096;
    while (!(*chunk = chunk_for(in, block, ahead)) && block > 4096)
        block = block / 2 < 4096 ? 4096 : block / 2;
    return block;
}

/* The plan with buffers A and B (and C with ahead); p->fits 0 if the budget is too small to
 * sort out of core. */
static void plan_with(const struct dsort_memplan_in *in, struct dsort_memplan *p, int ahead)
{
    uint64_t chunk;
    *p = (struct dsort_memplan){0};
    p->block = (size_t)block_for(in, &chunk, ahead);
    if (!(p->fits = chunk != 0))
        return;
    /* No bigger than the share, but big enough for two merge read buffers. */
    uint64_t floor_chunk = dsort_runreader_buf_len(in->rec, p->block, in->temp_disks) / in->rec + 1;
    if (floor_chunk < DSORT_MEMPLAN_MIN_CHUNK)
        floor_chunk = DSORT_MEMPLAN_MIN_CHUNK;
    if (chunk > in->records)
        chunk = in->records > floor_chunk ? in->records : floor_chunk;
    p->chunk = chunk;
    /* A receives a round's pieces: with sampled splitters a rank may get a little more than
     * a chunk, and a second wave (another run) for a few records is a waste. */
    p->bbytes = (size_t)(chunk * in->rec);
    p->abytes = p->bbytes + p->bbytes / 16;
    p->cbytes = ahead ? p->abytes : 0;
    p->ebytes = (size_t)(chunk * sizeof(struct dsort_sortent));
    p->scratch = in->rec_in < sizeof(struct dsort_sortent);
    p->merge_mem = (uint64_t)p->abytes + p->bbytes + p->cbytes;
}

/* Does plan p (with more than one round) let the final merge read every run at once in
 * blocks of the floor's size (memplan.c's fit)? */
static int merge_fits(const struct dsort_memplan_in *in, const struct dsort_memplan *p)
{
    const uint64_t rounds = (in->records + p->chunk - 1) / p->chunk;
    return dsort_runreader_bufs(in->temp_disks) * (rounds + rounds / 4 + 1) *
               DSORT_MEMPLAN_MIN_RUN_BLOCK <=
           p->merge_mem;
}

/* Fixed records: the chunk, the block and buffers A and B, and C for the read-ahead when it
 * is asked for and pays: the share takes more than one round as planned without it, and the
 * smaller chunk's runs still fit the final merge at once (an extra merge pass, or a larger
 * one, costs more than the overlap saves). */
static void fixed_plan(const struct dsort_memplan_in *in, struct dsort_memplan *p)
{
    plan_with(in, p, 0);
    if (!in->readahead || !p->fits || p->chunk >= in->records)
        return;
    struct dsort_memplan q;
    plan_with(in, &q, 1);
    if (q.fits && merge_fits(in, &q))
        *p = q;
}

static uint64_t fixed_rounds(const struct dsort_memplan_in *in, const struct dsort_memplan *p,
                             int in_memory)
{
    (void)in_memory;
    return p->chunk ? (in->records + p->chunk - 1) / p->chunk : 0;
}

size_t dsort_recfmt_fixed_init(struct dsort_recfmt_ctx *x, struct dsort_cmp *cmp,
                               const struct dsort_format *fmt, const struct dsort_order *ord)
{
    const size_t rs = fmt->rec_size;
    const int tagged = !dsort_order_last_resort(ord);
    dsort_cmp_init(cmp, fmt, ord);
    if (tagged) { /* ties by the position suffix, ascending */
        cmp->tie_off = rs;
        cmp->tie_len = 8;
        cmp->tie_reverse = 0;
    }
    x->cmp = cmp;
    x->rec = rs + (tagged ? 8 : 0);
    x->fmt = fmt;
    x->order = ord;
    x->rec_in = rs;
    x->tagged = tagged;
    x->ks = fmt->key_len + (tagged ? 0 : cmp->tie_len) + 8;
    return x->ks;
}

const struct dsort_recfmt dsort_recfmt_fixed = {.name = "fixed",
                                                .cur_size = sizeof(struct dsort_cursor),
                                                .run_rec = fixed_run_rec,
                                                .cursor_memory = fixed_cursor_memory,
                                                .cursor_run = fixed_cursor_run,
                                                .cursor_close = fixed_cursor_close,
                                                .merge_to_run = fixed_merge_to_run,
                                                .plan = fixed_plan,
                                                .rounds = fixed_rounds,
                                                .wave_split = 1,
                                                .sort_chunk = fixed_sort_chunk,
                                                .cut = fixed_cut,
                                                .frame = fixed_frame,
                                                .frame_bytes = fixed_frame_bytes,
                                                .sample_key = fixed_sample_key,
                                                .key_cmp = fixed_key_cmp,

                                                .unique_run = 1,
                                                .merge_to_out = fixed_merge_to_out,
                                                .blob_len = fixed_blob_len,
                                                .blob_put = fixed_blob_put,
                                                .blob_get = fixed_blob_get};
