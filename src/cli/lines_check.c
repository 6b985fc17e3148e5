/* lines_check.c - dsort-validate --format lines (valsort's figures for text lines) and
 * dsort -c --format lines (GNU sort -c's message).
 *
 * The inputs, as one sequence of bytes, are cut evenly over the ranks; a rank checks the lines
 * that start in its range (as dsort reads them: a range that begins mid-line leaves that line
 * to the rank before). Each line is compared with the one before it in GNU sort's order under
 * the same options (sort -c's rule: with -u equal keys are disorder too, with -s and -u only
 * the keys count). The checksum is valsort's, applied to lines: the 128-bit sum of the CRC-32
 * of every line with its terminator (for gensort -a records that is the record itself, so the
 * figure equals valsort's and dsort-gen -c's). Rank 0 joins the ranks' summaries and checks
 * the boundaries between them. For sort -c's "FILE:LINE" every rank also counts the lines of
 * each file in its range and keeps its first line out of order; rank 0 adds the counts of the
 * ranks before the one with the first disorder.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "check.h"
#include "lines.h"
#include "lines_check.h"

struct lsum {
    uint64_t lines, unordered, first_unordered, duplicates;
    struct dsort_sum128 sum;
    unsigned char *first, *last; /* copies of the first and last line */
    size_t first_len, last_len, last_cap;
    /* for sort -c's message: where the lines are (file index, lines of each file seen) */
    size_t file, first_file, bad_file;
    uint64_t *file_lines, bad_line;   /* bad_line: lines of bad_file in this range before it */
    struct dsort_file_sum *file_sums; /* dsort-validate: each file's lines and checksum */
    unsigned char *bad;               /* a copy of the first line out of order */
    size_t bad_len;
};

static enum dsort_status keep(unsigned char **buf, size_t *cap, size_t *len,
                              const unsigned char *line, size_t n, struct dsort_error *err)
{
    if (n > SIZE_MAX / 4)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "a line of %zu bytes", n);
    if (n + 1 > *cap) {
        size_t c = n * 2 + 64;
        unsigned char *b = realloc(*buf, c);
        if (!b)
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
        *buf = b;
        *cap = c;
    }
    if (n)
        memcpy(*buf, line, n);
    *len = n;
    return DSORT_OK;
}

/* Is b out of order after a? Duplicate (equal keys)? */
static void judge(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                  const unsigned char *b, size_t blen, int *bad, int *dup)
{
    int rk = dsort_keys_compare_keys(k, a, alen, b, blen);
    *dup = rk == 0;
    if (k->unique)
        *bad = rk >= 0;
    else if (k->stable)
        *bad = rk > 0;
    else
        *bad = rk > 0 || (rk == 0 && dsort_keys_compare(k, a, alen, b, blen) > 0);
}

static void see(struct lsum *s, const struct dsort_inputs *in, uint64_t off,
                const struct dsort_keys *k, const unsigned char *line, size_t len,
                unsigned char eol, struct dsort_error *err, enum dsort_status *st)
{
    while (s->file < in->count && off >= in->files[s->file].first + in->files[s->file].records)
        s->file++;
    if (s->lines) {
        int bad, dup;
        judge(k, s->last, s->last_len, line, len, &bad, &dup);
        if (bad && !s->unordered++) {
            size_t cap = 0;
            s->first_unordered = s->lines;
            s->bad_file = s->file;
            s->bad_line = s->file < in->count ? s->file_lines[s->file] : 0;
            if ((*st = keep(&s->bad, &cap, &s->bad_len, line, len, err)))
                return;
        }
        s->duplicates += (uint64_t)dup;
    } else {
        size_t cap = 0;
        s->first_file = s->file;
        if ((*st = keep(&s->first, &cap, &s->first_len, line, len, err)))
            return;
    }
    if (s->file < in->count)
        s->file_lines[s->file]++;
    if ((*st = keep(&s->last, &s->last_cap, &s->last_len, line, len, err)))
        return;
    uint32_t crc = dsort_crc32(dsort_crc32(0, line, len), &eol, 1);
    dsort_sum128_add(&s->sum, crc);
    if (s->file_sums && s->file < in->count) {
        s->file_sums[s->file].records++;
        dsort_sum128_add(&s->file_sums[s->file].sum, crc);
    }
    s->lines++;
}

/* Check the lines that start in [first, first + n) of the inputs. */
static enum dsort_status check_range(const struct dsort_inputs *in, uint64_t first, uint64_t n,
                                     const struct dsort_keys *k, unsigned char eol, struct lsum *s,
                                     struct dsort_error *err)
{
    const uint64_t end = first + n;
    size_t cap = (size_t)16 << 20;
    unsigned char *buf = malloc(cap + 1);
    if (!buf)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status st = DSORT_OK;
    uint64_t pos;
    /* a range that begins mid-line: that line is the previous rank's */
    if ((st = dsort_lines_range_start(in, first, eol, &pos, err)))
        goto out;
    size_t have = 0; /* bytes in buf, starting at input byte `pos` */
    while (pos < end) {
        size_t f = dsort_lines_file_at(in, pos + have);
        uint64_t fend = f < in->count ? in->files[f].first + in->files[f].records : pos + have;
        if (have == cap) { /* one line fills the buffer: grow it */
            unsigned char *b = realloc(buf, cap * 2 + 1);
            if (!b) {
                st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
                goto out;
            }
            buf = b;
            cap *= 2;
        }
        size_t want = fend - (pos + have) < cap - have ? (size_t)(fend - (pos + have)) : cap - have;
        if (want && (st = dsort_inputs_read(in, pos + have, want, buf + have, err)))
            goto out;
        have += want;
        int at_file_end = pos + have == fend;
        size_t p = 0;
        while (pos + p < end) {
            unsigned char *e = memchr(buf + p, eol, have - p);
            size_t len;
            if (e)
                len = (size_t)(e - (buf + p));
            else if (at_file_end && p < have) /* the file's last line, unterminated */
                len = have - p;
            else
                break;
            see(s, in, pos + p, k, buf + p, len, eol, err, &st);
            if (st)
                goto out;
            p += len + (e ? 1 : 0);
        }
        memmove(buf, buf + p, have - p);
        pos += p;
        have -= p;
        if (at_file_end && have == 0 && f == in->count)
            break;
        if (f == in->count)
            break;
    }
out:
    free(buf);
    return st;
}

static enum dsort_status gather_lines(const struct dsort_comm *c, const unsigned char *line,
                                      size_t len, unsigned char **all, size_t **offs,
                                      struct dsort_error *err)
{
    void *got = NULL;
    enum dsort_status st = dsort_agree_gatherv(c, line, len, &got, offs, err);
    *all = got;
    return st;
}

/* Rank 0, sort -c's message: "PROG: FILE:LINE: disorder: TEXT" for the line out of order that
 * comes first, line number LINE (from 1) of input file `file`, of which the ranks before `rank`
 * saw the lines counted in file_lines (in->count per rank) and rank `rank` saw `before`. */
static void disorder(const struct dsort_comm *c, const struct dsort_inputs *in,
                     const uint64_t *file_lines, int rank, size_t file, uint64_t before,
                     const unsigned char *text, size_t len, unsigned char eol, char *const *shown)
{
    const char *name = file >= in->count ? "?"
                       : shown           ? shown[in->files[file].arg]
                                         : in->files[file].path;
    uint64_t line = before + 1;
    for (int r = 0; r < rank && file < in->count; r++)
        line += file_lines[(size_t)r * in->count + file];
    fprintf(stderr, "%s: %s:%" PRIu64 ": disorder: ", c->prog, name, line);
    fwrite(text, 1, len, stderr);
    fputc(eol, stderr);
    fflush(stderr);
}

enum { V_LINES, V_UNORD, V_FIRST, V_DUPS, V_LO, V_HI, V_FFILE, V_BFILE, V_BLINE, V_N };

/* What rank 0 gathers from every rank: the summaries (V_N each), the first, last and first
 * unordered lines (texts and offsets), and the lines of each file that each rank saw. */
struct gathered {
    uint64_t *all, *fls;
    unsigned char *fl, *ll, *bl;
    size_t *foff, *loff, *boff;
};

/* Every rank enters every gather (the last two only with check); a failed allocation of one is
 * returned after them all, for the caller to agree on. */
static enum dsort_status gather_all(const struct dsort_comm *c, const struct dsort_inputs *in,
                                    const struct lsum *s, int check, struct gathered *g,
                                    struct dsort_error *err)
{
    uint64_t mine[V_N] = {s->lines,  s->unordered,  s->first_unordered, s->duplicates, s->sum.lo,
                          s->sum.hi, s->first_file, s->bad_file,        s->bad_line};
    void *got = NULL, *got_fls = NULL;
    enum dsort_status st = DSORT_OK;
    enum dsort_status r[] = {
        dsort_agree_gather(c, mine, sizeof mine, &got, err),
        gather_lines(c, s->first, s->first_len, &g->fl, &g->foff, err),
        gather_lines(c, s->last, s->last_len, &g->ll, &g->loff, err),
        check ? gather_lines(c, s->bad, s->bad_len, &g->bl, &g->boff, err) : DSORT_OK,
        check
            ? dsort_agree_gather(c, s->file_lines, in->count * sizeof *s->file_lines, &got_fls, err)
            : DSORT_OK};
    for (size_t i = 0; i < sizeof r / sizeof *r && !st; i++)
        st = r[i];
    g->all = got;
    g->fls = got_fls;
    return st;
}

static void free_gathered(struct gathered *g)
{
    free(g->all);
    free(g->fl);
    free(g->ll);
    free(g->bl);
    free(g->foff);
    free(g->loff);
    free(g->boff);
    free(g->fls);
}

static void free_lsum(struct lsum *s)
{
    free(s->first);
    free(s->last);
    free(s->bad);
    free(s->file_lines);
}

/* The ranks' summaries joined in rank order, with the edges between ranks judged. */
struct joined {
    uint64_t lines, unordered, first_bad, dups;
    struct dsort_sum128 sum;
    int bad_rank, bad_edge; /* the rank of the first line out of order; 1: its first line */
};

static void join_ranks(const struct dsort_comm *c, const struct dsort_keys *k,
                       const struct gathered *g, struct joined *j)
{
    memset(j, 0, sizeof *j);
    j->bad_rank = -1;
    int prev = -1;
    for (int r = 0; r < c->size; r++) {
        const uint64_t *v = g->all + V_N * r;
        if (!v[V_LINES])
            continue;
        if (prev >= 0) {
            int bad, dup;
            judge(k, g->ll + g->loff[prev], g->loff[prev + 1] - g->loff[prev], g->fl + g->foff[r],
                  g->foff[r + 1] - g->foff[r], &bad, &dup);
            if (bad && !j->unordered++) {
                j->first_bad = j->lines;
                j->bad_rank = r;
                j->bad_edge = 1; /* rank r's first line */
            }
            j->dups += (uint64_t)dup;
        }
        if (v[V_UNORD] && !j->unordered) {
            j->first_bad = j->lines + v[V_FIRST];
            j->bad_rank = r;
        }
        j->unordered += v[V_UNORD];
        j->dups += v[V_DUPS];
        struct dsort_sum128 t = {v[V_LO], v[V_HI]};
        dsort_sum128_merge(&j->sum, &t);
        j->lines += v[V_LINES];
        prev = r;
    }
}

/* Rank 0: join, print sort -c's message (check 'c'), fill fig; the exit status, 0 or 1. */
static int rank0_result(const struct dsort_comm *c, const struct dsort_inputs *in,
                        const struct dsort_keys *k, unsigned char eol, int check,
                        char *const *shown, const struct gathered *g,
                        struct dsort_lines_figures *fig)
{
    struct joined j;
    join_ranks(c, k, g, &j);
    if (check == 'c' && j.unordered) {
        const int br = j.bad_rank;
        const uint64_t *v = g->all + V_N * br;
        if (j.bad_edge)
            disorder(c, in, g->fls, br, (size_t)v[V_FFILE], 0, g->fl + g->foff[br],
                     g->foff[br + 1] - g->foff[br], eol, shown);
        else
            disorder(c, in, g->fls, br, (size_t)v[V_BFILE], v[V_BLINE], g->bl + g->boff[br],
                     g->boff[br + 1] - g->boff[br], eol, shown);
    }
    if (fig) {
        fig->records = j.lines;
        fig->unordered = j.unordered;
        fig->first_unordered = j.first_bad;
        fig->duplicates = j.dups;
        fig->checksum = j.sum;
    }
    return j.unordered ? 1 : 0;
}

/* The collective check behind dsort_lines_validate (check 0: valsort's figures into fig, and
 * each file's into files) and dsort_lines_check (check 'c': sort -c's message, 'C': silent). */
static int lines_check(const struct dsort_comm *c, const struct dsort_inputs *in,
                       const struct dsort_keys *k, unsigned char eol, int check, char *const *shown,
                       struct dsort_lines_figures *fig, struct dsort_file_sum *files)
{
    struct dsort_error err = {0};
    struct lsum s;
    memset(&s, 0, sizeof s);
    uint64_t first, n;
    dsort_io_split(in->total_records, c->rank, c->size, &first, &n);
    s.file_lines = calloc(in->count + 1, sizeof *s.file_lines);
    s.file_sums = files;
    if (files)
        memset(files, 0, in->count * sizeof *files);
    enum dsort_status st = s.file_lines ? check_range(in, first, n, k, eol, &s, &err)
                                        : DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, &err))) {
        free_lsum(&s);
        return 2;
    }
    /* rank 0: join the summaries in rank order */
    struct gathered g = {0};
    st = gather_all(c, in, &s, check, &g, &err);
    int code = dsort_comm_agree(c, st, &err) ? 2 : 0;
    if (c->rank == 0 && !code)
        code = rank0_result(c, in, k, eol, check, shown, &g, fig);
    code = dsort_agree_code(c, code);
    if (fig)
        dsort_agree_bcast(c, fig, sizeof *fig, "sharing the check's figures (MPI_Bcast)");
    if (files)
        dsort_check_sum_files(c, files, in->count);
    free_gathered(&g);
    free_lsum(&s);
    return code;
}

int dsort_lines_validate(const struct dsort_comm *c, const struct dsort_inputs *in,
                         const struct dsort_keys *k, unsigned char eol,
                         struct dsort_lines_figures *fig, struct dsort_file_sum *files)
{
    return lines_check(c, in, k, eol, 0, NULL, fig, files);
}

int dsort_lines_check(const struct dsort_comm *c, const struct dsort_inputs *in,
                      const struct dsort_keys *k, unsigned char eol, int quiet, char *const *shown)
{
    return lines_check(c, in, k, eol, quiet ? 'C' : 'c', shown, NULL, NULL);
}
