/* lines.h - text-line records: the sort index, line streams and their merge.
 *
 * A line is the bytes before its terminator (eol: '\n', or '\0' with -z); the terminator is
 * not part of the line but travels with it. The order is struct dsort_keys' (GNU sort's, C
 * locale). Lines are never copied to sort them: an index of 16-byte entries (a cached 64-bit
 * key prefix, the offset and the length of the line in its buffer) is sorted instead, and most
 * comparisons end at the prefixes (see dsort_keys_prefix).
 *
 * A line stream ("framed lines") is what the exchange sends and a spilled run holds: each line
 * as [8-byte big-endian input position, when with_pos] line bytes, eol. The position is the
 * line's place in the job's input (a byte offset); it breaks ties between equal keys when the
 * order must keep input order (-s, -u). Without positions, ties are identical lines.
 *
 * A run file (a spilled run of lines) is framed lines in the checksummed blocks of runfile.h,
 * the format fixed-record runs use (framed records: each block holds whole lines, a line longer
 * than a block gets an oversize block of its own), written by its writer thread and read
 * ahead by the prefetch thread, with O_DIRECT where the file system has it. A cursor over a
 * run checks that every line ends inside its block, counts each block's lines against its
 * header, and at the end compares the line bytes it read with what the writer wrote (the
 * reader compares the lines). Every mismatch is DSORT_EFORMAT naming the file and an offset.
 *
 * All functions are local. Nothing here allocates per line.
 */
#ifndef DSORT_LINES_H
#define DSORT_LINES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checksum.h"
#include "error.h"
#include "io.h"
#include "keys.h"
#include "runfile.h"

/* The order of lines: keys, their cached prefixes, and the framing. */
struct dsort_lines_order {
    const struct dsort_keys *keys;
    int plain;      /* whole-line byte order: memcmp, then length */
    int has_prefix; /* prefixes carry information */
    int tie_pos;    /* equal keys keep input order: compare keys only, then positions */
    unsigned char eol;
};
void dsort_lines_order_init(struct dsort_lines_order *o, const struct dsort_keys *k,
                            unsigned char eol);

/* Keys only (tie_pos) or the full order (keys, then the last resort): <0, 0, >0. */
static inline int dsort_lines_cmp(const struct dsort_lines_order *o, const unsigned char *a,
                                  size_t alen, const unsigned char *b, size_t blen)
{
    if (o->plain) {
        size_t n = alen < blen ? alen : blen;
        int r = n ? memcmp(a, b, n) : 0;
        if (r)
            return r;
        return alen < blen ? -1 : alen > blen;
    }
    return o->tie_pos ? dsort_keys_compare_keys(o->keys, a, alen, b, blen)
                      : dsort_keys_compare(o->keys, a, alen, b, blen);
}

/* dsort_lines_cmp for two lines with equal prefixes p: when p proves their first keys equal,
 * the comparison starts at the second key. */
static inline int dsort_lines_cmp_same_prefix(const struct dsort_lines_order *o, uint64_t p,
                                              const unsigned char *a, size_t alen,
                                              const unsigned char *b, size_t blen)
{
    if (!o->plain && o->has_prefix && dsort_keys_prefix_decides(o->keys, p))
        return o->tie_pos ? dsort_keys_compare_keys_after_first(o->keys, a, alen, b, blen)
                          : dsort_keys_compare_after_first(o->keys, a, alen, b, blen);
    return dsort_lines_cmp(o, a, alen, b, blen);
}

static inline uint64_t dsort_lines_prefix(const struct dsort_lines_order *o,
                                          const unsigned char *line, size_t len)
{
    return o->has_prefix ? dsort_keys_prefix(o->keys, line, len) : 0;
}

/* One line of a buffer. off: 40 bits, len: 24 bits (DSORT_LINE_LONG: look for the eol). */
struct dsort_line_ent {
    uint64_t prefix;
    uint64_t ol;
};
#define DSORT_LINE_LONG 0xFFFFFFu
#define DSORT_LINE_MAX_BUFFER ((uint64_t)1 << 40)

static inline uint64_t dsort_line_off(const struct dsort_line_ent *e)
{
    return e->ol >> 24;
}

/* The line's length; buf is the buffer the entry indexes. */
static inline size_t dsort_line_len(const struct dsort_line_ent *e, const unsigned char *buf,
                                    unsigned char eol)
{
    size_t len = (size_t)(e->ol & DSORT_LINE_LONG);
    if (len == DSORT_LINE_LONG) {
        const unsigned char *p = buf + dsort_line_off(e) + DSORT_LINE_LONG, *q = p;
        while (*q != eol) /* lines of 16 MiB and more: rare, and the eol is there */
            q++;
        len = DSORT_LINE_LONG + (size_t)(q - p);
    }
    return len;
}

/* The length of e's line when the line lies in [lo, hi) of buf and ends with its eol there:
 * 1 and *len; else 0 (the entry names no line of that range, or the buffer changed under it: a
 * mapped input rewritten while it is sorted). Never reads buf beyond hi. */
static inline int dsort_line_len_in(const struct dsort_line_ent *e, const unsigned char *buf,
                                    unsigned char eol, uint64_t lo, uint64_t hi, size_t *len)
{
    const uint64_t off = dsort_line_off(e);
    size_t l = (size_t)(e->ol & DSORT_LINE_LONG);
    if (off < lo || off >= hi)
        return 0;
    if (l == DSORT_LINE_LONG) {
        const unsigned char *q = memchr(buf + off, eol, (size_t)(hi - off));
        if (!q || (size_t)(q - (buf + off)) < DSORT_LINE_LONG)
            return 0;
        l = (size_t)(q - (buf + off));
    } else if (off + l >= hi || buf[off + l] != eol) {
        return 0;
    }
    *len = l;
    return 1;
}

static inline void dsort_line_set(struct dsort_line_ent *e, uint64_t off, size_t len,
                                  uint64_t prefix)
{
    e->prefix = prefix;
    e->ol = off << 24 | (len < DSORT_LINE_LONG ? len : DSORT_LINE_LONG);
}

/* Index the lines of buf[0, size), which must end with eol (or be empty): fill ents (room for
 * every line) and return the count. */
size_t dsort_lines_index(const struct dsort_lines_order *o, const unsigned char *buf, size_t size,
                         struct dsort_line_ent *ents);

/* --progress's view of dsort_lines_sort (as keysort.h's): fn(arg, frac) is called on the
 * sorting thread as a sort goes on, frac rising from 0 to 1 (a few hundred calls at most a
 * sort). NULL: off. Process-wide: set it while no sort runs. */
void dsort_lines_set_progress(void (*fn)(void *arg, double frac), void *arg);
/* Sort n entries of buf's lines: stable (equal lines keep their entry order, which is input
 * order). tmp has room for n entries. */
void dsort_lines_sort(const struct dsort_lines_order *o, const unsigned char *buf,
                      struct dsort_line_ent *ents, size_t n, struct dsort_line_ent *tmp);

/* Inputs as lines (opened as 1-byte records, see io.h): the file that holds byte x, i.e. the
 * first non-empty one that ends beyond x (in->count past the end). */
size_t dsort_lines_file_at(const struct dsort_inputs *in, uint64_t x);
/* The first line start at or after byte x: x itself when it starts a file or follows an eol,
 * else just after the next eol, or the file's end. A range that begins mid-line leaves that
 * line to the range before (how ranks, and dsort-validate's ranks, cut the inputs). */
enum dsort_status dsort_lines_range_start(const struct dsort_inputs *in, uint64_t x,
                                          unsigned char eol, uint64_t *out,
                                          struct dsort_error *err);

/* Bytes of a run file block's header (see the top of this file). */

/* A line being read from a stream: a cursor. */
struct dsort_line_cursor {
    const unsigned char *line;
    size_t len;
    uint64_t pos;
    uint64_t prefix;
    int done;
    /* where the data comes from */
    const unsigned char *p, *end; /* framed lines in memory, or the unread rest of the current
                                     block of a run file */
    struct dsort_runreader *run;  /* the run file's reader (not owned), or NULL: memory */
    uint64_t blk_seen;            /* lines handed out from the current block */
    uint64_t lines, bytes;        /* lines handed out, and their line + eol bytes */
    uint64_t expect_bytes;        /* what the writer wrote (UINT64_MAX: unknown) */
    int with_pos;
    const struct dsort_lines_order *ord;
};
/* A cursor over framed lines in memory [p, p + size). */
void dsort_line_cursor_memory(struct dsort_line_cursor *c, const struct dsort_lines_order *o,
                              const unsigned char *p, size_t size, int with_pos);
/* A cursor over a run file, through its open framed reader r (dsort_runreader_open_framed,
 * with the writer's line count as expected). expect_bytes is the line + eol bytes the writer
 * wrote (a dsort_line_sink's count), checked at the end; UINT64_MAX: unknown. */
void dsort_line_cursor_run(struct dsort_line_cursor *c, const struct dsort_lines_order *o,
                           struct dsort_runreader *r, int with_pos, uint64_t expect_bytes);
/* Step to the next line (c->done at the end). A run file that fails a check (see the top of
 * this file) is DSORT_EFORMAT naming the file and the offset of the block; a read error is
 * DSORT_EIO. After an error the cursor may only be closed. */
enum dsort_status dsort_line_cursor_next(struct dsort_line_cursor *c, struct dsort_error *err);
/* Close a cursor over a run file (its reader too); a memory cursor has nothing to close. */
void dsort_line_cursor_close(struct dsort_line_cursor *c);

/* Where merged lines go: emit(ctx, line, len, pos) writes one line (the sink adds the eol and,
 * when it frames, the position). */
struct dsort_line_sink {
    enum dsort_status (*emit)(void *ctx, const unsigned char *line, size_t len, uint64_t pos,
                              struct dsort_error *err);
    void *ctx;
    uint64_t lines, bytes; /* counted by dsort_lines_merge: lines and line + eol bytes */
};

/* Merge n sorted cursors into sink, in the order o (ties: positions when o->tie_pos, else
 * cursor order). With unique, only the first line of each run of equal keys is emitted.
 * Cursors are stepped until done; they are not closed. */
enum dsort_status dsort_lines_merge(const struct dsort_lines_order *o,
                                    struct dsort_line_cursor *cur, size_t n, int unique,
                                    struct dsort_line_sink *sink, struct dsort_error *err);

/* Merge k sorted runs of entries that index one buffer (runs[i]: lens[i] entries, sorted by
 * dsort_lines_sort; their offsets are into buf, and are the lines' input positions for ties
 * under o->tie_pos) into sink, in the order o (ties: position under tie_pos, else run order).
 * Entries that came over a network are checked as they are used: run i's lines must lie in
 * [lo[i], hi[i]) of buf and end with the eol there, and each prefix must be its line's; else
 * DSORT_EINTERNAL naming the run ("corrupted in the exchange"). Long lines are measured by
 * looking for their eol, never beyond hi[i] (dsort_line_len_in). */
enum dsort_status dsort_lines_merge_ents(const struct dsort_lines_order *o,
                                         const unsigned char *buf,
                                         const struct dsort_line_ent *const *runs,
                                         const size_t *lens, const uint64_t *lo, const uint64_t *hi,
                                         size_t k, struct dsort_line_sink *sink,
                                         struct dsort_error *err);

/* A writer of merged lines: into a run file (framed, open: each line one framed record, with
 * its position when frame_pos), or into a merge sink (e.g. the output's, with its writer
 * thread: plain lines as a byte stream into sink->buf, flushed when full; a line may span
 * flushes). Zero-initialise, then set the fields above `lines`; close the run writer or finish
 * the sink after the last line. */
struct dsort_line_writer {
    struct dsort_runwriter *run; /* or NULL: */
    struct dsort_sink *sink;
    int frame_pos;     /* run files: write [position] before each line */
    unsigned char eol; /* added after each line */
    uint64_t lines;
    struct dsort_sum128 *sum;   /* when not NULL: add the CRC-32 of line + eol */
    struct dsort_sum128 *sum_c; /* when not NULL: add the CRC32C of line + eol (conservation) */
};

/* Sink callback for a writer (ctx: the writer). */
enum dsort_status dsort_line_writer_emit(void *ctx, const unsigned char *line, size_t len,
                                         uint64_t pos, struct dsort_error *err);

#endif
