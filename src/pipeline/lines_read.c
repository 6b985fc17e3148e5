/* Reading for the text-line pipeline (lines_job.h): whole lines of this rank's share into the
 * arena, with their index entries; samples of every rank's share and the splitter lines. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "lines_job.h"
#include "mem.h"
#include "splitters.h"
#include "job_topo.h"

/* ---- reading whole lines of the share ---- */

static uint64_t seg_pos(const struct chunk *k, uint64_t off);

/* The job-wide input position (for ties under -s and -u) of data offset off. */
uint64_t dsort_lines_job_chunk_pos(const struct lx *x, const struct chunk *k, uint64_t off)
{
    return x->sh.g0 + (seg_pos(k, off) - x->sh.first);
}

static enum dsort_status add_seg(struct chunk *k, uint64_t off, uint64_t pos,
                                 struct dsort_error *err)
{
    if (k->nsegs == k->segcap) {
        size_t cap = k->segcap ? 2 * k->segcap : 64;
        struct seg *s = realloc(k->segs, cap * sizeof *s);
        if (!s)
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
        k->segs = s;
        k->segcap = cap;
    }
    k->segs[k->nsegs++] = (struct seg){off, pos};
    return DSORT_OK;
}

/* The input position of data offset off of the chunk. */
static uint64_t seg_pos(const struct chunk *k, uint64_t off)
{
    size_t lo = 0, hi = k->nsegs;
    while (hi - lo > 1) {
        size_t m = (lo + hi) / 2;
        if (k->segs[m].off <= off)
            lo = m;
        else
            hi = m;
    }
    return k->segs[lo].pos + (off - k->segs[lo].off);
}

/* Grow the arena to size bytes, keeping its data at the front and its entries at the back. */
static enum dsort_status grow_chunk(struct chunk *k, uint64_t size, struct dsort_error *err)
{
    size = (size + 15) / 16 * 16;
    unsigned char *a = dsort_mem_alloc((size_t)size);
    if (!a)
        return DSORT_ERR(err, DSORT_ENOMEM, errno,
                         "cannot allocate %" PRIu64 " bytes to hold a long line", size);
    const size_t eb = k->n * sizeof(struct dsort_line_ent);
    memcpy(a, k->a, (size_t)k->used);
    memcpy(a + size - eb, k->a + k->size - eb, eb);
    dsort_mem_free(k->a, (size_t)k->size);
    k->a = a;
    k->size = size;
    return DSORT_OK;
}

/* Device-parallel reading (with a topology). A read of several files at once must leave room
 * in the arena for the eol of each file whose last line lacks one, before it knows the files'
 * contents: each file's last byte is looked at once, when a read first reaches its end. */
static enum dsort_status file_pad(struct lx *x, size_t f, struct dsort_error *err)
{
    const struct dsort_input *fi = &x->j.in->files[f];
    if (x->known[f] || fi->records == 0)
        return DSORT_OK;
    unsigned char last;
    enum dsort_status st = dsort_inputs_read(x->j.in, fi->first + fi->records - 1, 1, &last, err);
    if (st)
        return st;
    x->pad[f] = last != x->ord.eol;
    x->known[f] = 1;
    return DSORT_OK;
}

struct pad_walk {
    struct lx *x;
    struct chunk *k;
    uint64_t off; /* the data offset of the next piece */
    struct dsort_error *err;
};

/* After a padded read: a seg for every file's piece, and the eol after a file's last line.
 * The room for that eol was left from the file's last byte as file_pad saw it; the byte just
 * read must agree (else the file changed in between, and the lines would run together or
 * past the inputs' end). */
static enum dsort_status pad_piece(void *ctx, const struct dsort_input_segment *seg)
{
    struct pad_walk *w = ctx;
    enum dsort_status st = add_seg(w->k, w->off, seg->file->first + seg->offset, w->err);
    if (st)
        return st;
    w->off += seg->length;
    if (seg->offset + seg->length != seg->file->records || seg->length == 0)
        return DSORT_OK;
    const int lacks_eol = w->k->a[w->off - 1] != w->x->ord.eol;
    if (lacks_eol != w->x->pad[seg->index])
        return DSORT_ERR(w->err, DSORT_EFORMAT, 0,
                         "'%s' changed while it was being sorted (its last byte is not what it "
                         "was); nothing written",
                         seg->file->path);
    if (lacks_eol)
        w->k->a[w->off++] = w->x->ord.eol;
    return DSORT_OK;
}

/* Read up to want bytes of the share from x->pos on (never past x->end) into the chunk's
 * arena at k->used, one thread per device (dsort_job_topo_read_padded), adding an eol after
 * each file's last line that lacks one. The arena must have room for want + 1 bytes: when the
 * read ends more than one file, want shrinks by the extra eols that may be added. */
static enum dsort_status read_devices(struct lx *x, struct chunk *k, uint64_t want,
                                      struct dsort_error *err)
{
    const struct dsort_inputs *in = x->j.in;
    if (!x->pad) {
        if (!(x->pad = calloc(2 * in->count + 1, 1)))
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
        x->known = x->pad + in->count;
    }
    if (want > x->end - x->pos)
        want = x->end - x->pos;
    uint64_t ends = 0; /* files that end within the read */
    for (size_t f = dsort_lines_file_at(in, x->pos); f < in->count; f++) {
        const struct dsort_input *fi = &in->files[f];
        if (fi->first >= x->pos + want)
            break;
        if (fi->records && fi->first + fi->records <= x->pos + want)
            ends++;
    }
    if (ends > 1)
        want -= ends - 1; /* each such file holds a byte of the read: want stays >= 1 */
    for (size_t f = dsort_lines_file_at(in, x->pos); f < in->count; f++) {
        const struct dsort_input *fi = &in->files[f];
        if (fi->first >= x->pos + want)
            break;
        enum dsort_status st;
        if (fi->records && fi->first + fi->records <= x->pos + want && (st = file_pad(x, f, err)))
            return st;
    }
    enum dsort_status st =
        dsort_job_topo_read_padded(x->j.o->topo, in, x->pos, want, k->a + k->used, x->pad, err);
    if (st)
        return st;
    struct pad_walk w = {x, k, k->used, err};
    if ((st = dsort_inputs_segments(in, x->pos, want, pad_piece, &w)))
        return st == DSORT_EINTERNAL
                   ? DSORT_ERR(err, DSORT_EINTERNAL, 0, "read past the end of the inputs")
                   : st;
    k->used = w.off;
    x->pos += want;
    return DSORT_OK;
}

/* Index the whole lines of the chunk's data from *scan on (their entries at the arena's back,
 * in reverse input order). 1: the chunk is complete (at a line of the next rank's, or at a line
 * with no room for its entry: x->pos and k->used go back to that line); 0: read more. */
static int index_lines(struct lx *x, struct chunk *k, uint64_t *scan)
{
    const uint64_t ent = sizeof(struct dsort_line_ent);
    while (*scan < k->used) {
        uint64_t lpos = seg_pos(k, *scan);
        if (lpos >= x->end) { /* the next rank's lines */
            x->pos = x->end;
            k->used = *scan;
            return 1;
        }
        const unsigned char *e = memchr(k->a + *scan, x->ord.eol, (size_t)(k->used - *scan));
        if (!e)
            return 0;
        if (k->used + (k->n + 1) * ent > k->size) { /* no room for its entry */
            x->pos = lpos;
            k->used = *scan;
            return 1;
        }
        size_t len = (size_t)(e - (k->a + *scan));
        if (len + 1 > x->longest)
            x->longest = len + 1;
        struct dsort_line_ent *slot =
            (struct dsort_line_ent *)(void *)(k->a + k->size) - (k->n + 1);
        dsort_line_set(slot, *scan, len, dsort_lines_prefix(&x->ord, k->a + *scan, len));
        k->n++;
        *scan += len + 1;
    }
    return 0;
}

/* The arena has no room for another line: in memory it grows up to a third of the budget (the
 * share was an estimate); a line that does not fit an empty arena is held whole, past the
 * budget if need be, as GNU sort does (noted under -v); else the chunk ends before the partial
 * line at data offset scan, input position next (*done). */
static enum dsort_status arena_full(struct lx *x, struct chunk *k, uint64_t scan, uint64_t next,
                                    int *done, struct dsort_error *err)
{
    const struct dsort_inputs *in = x->j.in;
    const uint64_t grown =
        k->size * 2 > k->size + ((uint64_t)4 << 20) ? k->size * 2 : k->size + ((uint64_t)4 << 20);
    if (x->grow_share && k->size < x->mp.third)
        return grow_chunk(k, grown < x->mp.third ? grown : x->mp.third, err);
    if (k->n == 0) {
        if (x->j.o->verbose && !x->noted_long) {
            size_t i = dsort_lines_file_at(in, next);
            dsort_comm_print(x->j.c,
                             "'%s': the line at byte %" PRIu64 " is longer than the %" PRIu64
                             "-byte arena (a third of the budget): held whole, past the budget",
                             in->files[i].path, next - in->files[i].first, k->size);
            x->noted_long = 1;
        }
        return grow_chunk(k, grown, err);
    }
    x->pos = next;
    k->used = scan;
    *done = 1;
    return DSORT_OK;
}

/* Read more of the share (file f holds x->pos) into the arena's room bytes, leaving room for
 * the entries of the lines read: the room is shared in proportion to the line length seen so
 * far (scan bytes indexed), or in the samples. */
static enum dsort_status read_more(struct lx *x, struct chunk *k, uint64_t scan, uint64_t room,
                                   size_t f, struct dsort_error *err)
{
    const struct dsort_inputs *in = x->j.in;
    const uint64_t ent = sizeof(struct dsort_line_ent);
    double avg = k->n ? (double)scan / (double)k->n : x->avg_line;
    if (avg < 1)
        avg = 1;
    uint64_t want = (uint64_t)((double)(room - ent - 1) * avg / (avg + (double)ent));
    if (want == 0)
        want = 1;
    if (x->j.o->topo && x->pos < x->end) /* the rest of the share: every device at once */
        return read_devices(x, k, want, err);
    const uint64_t fend = in->files[f].first + in->files[f].records;
    if (want > fend - x->pos)
        want = fend - x->pos;
    if (want > ((uint64_t)4 << 20))
        want = (uint64_t)4 << 20;
    enum dsort_status st;
    if ((st = add_seg(k, k->used, x->pos, err)) ||
        (st = dsort_inputs_read(in, x->pos, (size_t)want, k->a + k->used, err)))
        return st;
    k->used += want;
    x->pos += want;
    if (x->pos == fend && k->a[k->used - 1] != x->ord.eol) /* the file's last line */
        k->a[k->used++] = x->ord.eol;
    return DSORT_OK;
}

/* Fill the chunk with whole lines from x->pos on (those that start before x->end), indexing
 * them as they arrive. Stops when the arena is full (a partial line at the end is given back
 * and read again next time); a line that cannot fit in an empty arena is an error. */
enum dsort_status dsort_lines_job_fill(struct lx *x, struct chunk *k, struct dsort_error *err)
{
    const struct dsort_inputs *in = x->j.in;
    const uint64_t ent = sizeof(struct dsort_line_ent);
    enum dsort_status st = DSORT_OK;
    uint64_t scan = 0; /* data offset of the first byte not indexed */
    int done = 0;
    k->used = 0;
    k->n = 0;
    k->nsegs = 0;
    while (!st && !done && !(done = index_lines(x, k, &scan))) {
        uint64_t next = scan < k->used ? seg_pos(k, scan) : x->pos;
        if (scan == k->used && (x->pos >= x->end || dsort_lines_file_at(in, x->pos) == in->count))
            break;
        size_t f = dsort_lines_file_at(in, x->pos);
        if (f == in->count) /* a line runs past the inputs' end: every file's ends in an eol */
            return DSORT_ERR(err, DSORT_EINTERNAL, 0, "the last line of the inputs has no end");
        uint64_t used_room = k->used + k->n * ent;
        uint64_t room = k->size > used_room ? k->size - used_room : 0;
        st = room < ent + 2 ? arena_full(x, k, scan, next, &done, err)
                            : read_more(x, k, scan, room, f, err);
    }
    if (st)
        return st;
    /* the entries sit at the back in reverse input order: put them in input order */
    struct dsort_line_ent *e = chunk_ents(k);
    for (size_t i = 0, j = k->n ? k->n - 1 : 0; i < j; i++, j--) {
        struct dsort_line_ent t = e[i];
        e[i] = e[j];
        e[j] = t;
    }
    return DSORT_OK;
}

/* ---- splitters ---- */

/* The sample: up to 256 windows spread evenly over the share; from each, every line that starts
 * in its first SAMPLE_SPAN bytes (and ends within SAMPLE_READ bytes of the window's first line).
 * A line is sampled when its start falls in a window, whatever its length, so that each line
 * has the same chance and the splitters balance lines, not bytes (a fixed number of lines a
 * window would give the lines of a region of short lines less weight than they have). */
#define SAMPLE_SPAN 4096
#define SAMPLE_READ 16384

/* Append l bytes to the sample (k->a grows by realloc; k->size is its capacity). */
static int sample_add(struct chunk *k, const unsigned char *line, size_t l)
{
    if (k->used + l > k->size) {
        uint64_t cap = k->size * 2 > k->used + l ? k->size * 2 : k->used + l;
        unsigned char *t = realloc(k->a, (size_t)cap);
        if (!t)
            return -1;
        k->a = t;
        k->size = cap;
    }
    memcpy(k->a + k->used, line, l);
    k->used += l;
    return 0;
}

/* Sample this rank's share: whole lines copied to smp (its a and used; its segs map them to
 * input positions as a chunk's do, one a window: dsort_lines_job_chunk_pos). The
 * sample stays on this rank (dsort_splitters_select), so its size does not shrink with p: at
 * most 256 windows of SAMPLE_READ bytes, 4 MiB. A share under 2 MiB is taken whole (every
 * line): its splitters are exact. */
static enum dsort_status sample(struct lx *x, struct chunk *smp, struct dsort_error *err)
{
    const unsigned char eol = x->ord.eol;
    const uint64_t first = x->sh.first, n = x->sh.n;
    const int whole = n < ((uint64_t)2 << 20);
    const uint64_t win = whole ? n : SAMPLE_READ;
    const size_t windows = whole ? 1 : n / win + 1 > 256 ? 256 : (size_t)(n / win + 1);
    unsigned char *buf = malloc(win + 1);
    uint64_t lo = first;
    enum dsort_status st = DSORT_OK;
    if (!buf)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    /* Whole: window after window from where the last one stopped (a window ends at its file's
     * end), until the share's end or a line longer than what is left of the window. */
    for (size_t w = 0; (whole || w < windows) && !st && n; w++) {
        uint64_t at = whole ? lo : first + n / windows * w, start;
        const uint64_t span_end = whole ? first + n : at + SAMPLE_SPAN;
        if (at < lo)
            continue;
        if ((st = dsort_lines_range_start(x->j.in, at, eol, &start, err)))
            break;
        if (start >= first + n)
            break;
        size_t f = dsort_lines_file_at(x->j.in, start);
        if (f == x->j.in->count)
            break;
        uint64_t fend = x->j.in->files[f].first + x->j.in->files[f].records;
        size_t len = fend - start < win ? (size_t)(fend - start) : (size_t)win;
        if ((st = dsort_inputs_read(x->j.in, start, len, buf, err)))
            break;
        if (start + len == fend && (len == 0 || buf[len - 1] != eol))
            buf[len++] = eol;
        size_t p = 0;
        if ((st = add_seg(smp, smp->used, start, err)))
            break;
        while (p < len && start + p < first + n && start + p < span_end) {
            const unsigned char *e = memchr(buf + p, eol, len - p);
            if (!e)
                break;
            size_t l = (size_t)(e - (buf + p)) + 1;
            if (sample_add(smp, buf + p, l)) {
                st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
                break;
            }
            p += l;
        }
        lo = start + p;
        if (!whole) /* the lines that start in [at, span_end) of the share */
            x->smp_cover += (span_end < first + n ? span_end : first + n) - at;
        if (whole && p == 0)
            break;
    }
    free(buf);
    return st;
}

/* The rank's sorted sample lines as dsort_splitters_select's items: their sample keys (the
 * format's, recfmt.h: the line, and with by_pos its job-wide position after it, so that equal
 * lines are told apart). key: room for the longest key. */
struct sample_items {
    struct dsort_recfmt_ctx fx;
    const unsigned char *buf;
    const struct dsort_line_ent *ents;
    const struct lx *x;
    const struct chunk *smp; /* the sample's data and segs (buf is smp->a) */
    unsigned char *key;
};

static size_t item_key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    const struct sample_items *s = ctx;
    const uint64_t off = dsort_line_off(&s->ents[i]);
    const size_t l = dsort_line_len(&s->ents[i], s->buf, s->fx.ord->eol);
    const uint64_t pos = s->fx.by_pos ? dsort_lines_job_chunk_pos(s->x, s->smp, off) : 0;
    return dsort_recfmt_lines.sample_key(&s->fx, s->buf + off, l, pos, out);
}

static int item_cmp_at(const void *ctx, uint64_t i, const unsigned char *key, size_t len)
{
    const struct sample_items *s = ctx;
    const size_t kl = item_key_at(s, i, s->key);
    return dsort_recfmt_lines.key_cmp(&s->fx, s->key, kl, key, len);
}

static int item_cmp(const void *ctx, const unsigned char *a, size_t alen, const unsigned char *b,
                    size_t blen)
{
    const struct sample_items *s = ctx;
    return dsort_recfmt_lines.key_cmp(&s->fx, a, alen, b, blen);
}

/* Tolerance of the selection, as a fraction of a bucket's sample lines (see ooc_fixed.c). */
#define SAMPLE_TOL 0.002

enum dsort_status dsort_lines_job_sample(void *ctx)
{
    struct lx *x = ctx;
    const int p = x->j.c->size;
    x->by_pos = !x->j.o->keys->unique;
    enum dsort_status st = sample(x, &x->smp, &x->j.err);
    const unsigned char *mine = x->smp.a;
    const size_t mlen = (size_t)x->smp.used;
    size_t lines = 1; /* sample() keeps whole lines: one entry per eol */
    for (const unsigned char *at = mine; !st && at && at < mine + mlen; lines++) {
        at = memchr(at, x->ord.eol, (size_t)(mine + mlen - at));
        at = at ? at + 1 : NULL;
    }
    if (st)
        return st;
    x->smp_ents = malloc(lines * sizeof *x->smp_ents);
    x->smp_tmp = malloc(lines * sizeof *x->smp_tmp);
    x->split = calloc((size_t)p, sizeof *x->split);
    x->split_len = calloc((size_t)p, sizeof *x->split_len);
    if (!x->smp_ents || !x->smp_tmp || !x->split || !x->split_len)
        return DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    return DSORT_OK;
}

enum dsort_status dsort_lines_job_select(void *ctx, int *rounds)
{
    struct lx *x = ctx;
    const struct dsort_comm *c = x->j.c;
    const unsigned char *mine = x->smp.a;
    const size_t mlen = (size_t)x->smp.used;
    struct dsort_line_ent *ents = x->smp_ents;
    struct dsort_sampled sel = {0};
    /* The sample stays on this rank, sorted; the splitters are selected over all ranks'
     * samples (dsort_splitters_select: O(p) bytes a rank a round, no rank gathers them). */
    size_t n = dsort_lines_index(&x->ord, mine, mlen, ents), longest = 0;
    dsort_lines_sort(&x->ord, mine, ents, n, x->smp_tmp);
    for (size_t i = 0; i < n; i++) {
        size_t l = dsort_line_len(&ents[i], mine, x->ord.eol);
        longest = l > longest ? l : longest;
    }
    uint64_t here[2] = {mlen, n}, all[2] = {0, 0};
    dsort_agree_reduce(c, c->comm, here, all, 2, MPI_UINT64_T, MPI_SUM, -1, "the samples' sizes");
    x->avg_line = all[1] ? (double)all[0] / (double)all[1] : 100.0;
    struct sample_items si = {.fx = {.ord = &x->ord, .by_pos = x->by_pos},
                              .buf = mine,
                              .ents = ents,
                              .x = x,
                              .smp = &x->smp};
    /* Each rank's sample weighs as its share's lines (shares of node-local inputs differ) */
    const uint64_t represents =
        x->smp_cover ? (uint64_t)((unsigned __int128)n * x->sh.n / x->smp_cover) : n;
    struct dsort_sample_items it = {.n = n,
                                    .key_max = longest + (x->by_pos ? 8 : 0),
                                    .key_at = item_key_at,
                                    .cmp_at = item_cmp_at,
                                    .cmp = item_cmp,
                                    .ctx = &si,
                                    .represents = represents};
    enum dsort_status st = DSORT_OK;
    if (!(si.key = malloc(it.key_max + 1)))
        st = DSORT_ERR(&x->j.err, DSORT_ENOMEM, errno, "out of memory");
    st = dsort_comm_agree(c, st, &x->j.err);
    /* Lines that go to rank d are those up to and including split[d] (the format's cut). */
    if (!st)
        st = dsort_splitters_select(c->comm, &it, 1, SAMPLE_TOL, &sel, &x->j.err);
    free(si.key);
    *rounds = sel.rounds;
    /* No lines anywhere: everything (nothing) goes to rank 0 (split[d] stays NULL). */
    for (int d = 0; !st && d + 1 < c->size && sel.keys; d++) {
        const unsigned char *k = sel.keys + (size_t)d * sel.slot;
        uint64_t l;
        memcpy(&l, k, 8);
        x->split[d] = k + 8;
        x->split_len[d] = (size_t)l;
    }
    if (!st) {
        x->spl = sel.keys; /* the splitters point into it; freed with the job */
        sel.keys = NULL;
    }
    dsort_sampled_free(&sel);
    return st;
}

void dsort_lines_job_sample_free(void *ctx)
{
    struct lx *x = ctx;
    free(x->smp.a);
    free(x->smp.segs);
    free(x->smp_ents);
    free(x->smp_tmp);
    memset(&x->smp, 0, sizeof x->smp);
    x->smp_ents = x->smp_tmp = NULL;
}

/* The line and eol checksums of n entries' lines in buf (conservation; --verify). */
void dsort_lines_job_sum(struct lx *x, const unsigned char *buf, const struct dsort_line_ent *e,
                         size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = dsort_line_len(&e[i], buf, x->ord.eol);
        const unsigned char *line = buf + dsort_line_off(&e[i]);
        dsort_sum128_add(&x->j.con_in, dsort_crc32c(dsort_crc32c(0, line, len), &x->ord.eol, 1));
        if (x->j.o->verify)
            dsort_sum128_add(&x->j.sum_in, dsort_crc32(dsort_crc32(0, line, len), &x->ord.eol, 1));
    }
}
