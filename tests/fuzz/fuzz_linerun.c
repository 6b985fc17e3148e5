/* fuzz_linerun - run files of lines (lines.h: framed lines in runfile.h's checksummed blocks,
 * read by dsort_runreader_open_framed and parsed by dsort_line_cursor_run / _next), against a
 * reference reader written here from the format of runfile.h and lines.h.
 *
 * Input: byte 0: flags,
 *   bit 0 eol NUL (else newline), bit 1 8-byte positions (with_pos), bit 2 a -n order (else
 *   plain), bit 3 fix the CRC32C of each block along the chain, bit 4 fix each block's record
 *   count (its whole lines), bit 5 read through a prefetch thread (else synchronously),
 *   bit 6 the file is the rest of the input split at "BLK!", each piece at the next multiple
 *   of 4 KiB after the one before (zero-filled; so that inputs stay small), else the rest as
 *   is; bit 7 (with bit 6) set each piece's magic and payload to its length, before the fixes;
 * byte 1: block = 4096 (bit 0 clear) or 8192 bytes; max_payload = 1 KiB x (byte >> 1) (the
 *   reader takes at least a block's payload);
 * byte 2: bits 0-1 the writer's line count: 0 unknown (UINT64_MAX), 1 bytes 3-4, 2-3 the
 *   reference's own count (right); bits 2-3 the same for the line bytes (bytes 5-6);
 * bytes 3-4, 5-6: little-endian counts; the rest: the run file.
 * Checks:
 *   - no crash or out-of-bounds read (ASan, UBSan); a failure (of open or of a step) is
 *     DSORT_EFORMAT or DSORT_EIO with a message naming the file;
 *   - the cursor yields exactly the lines (bytes, position, prefix) that the reference yields,
 *     each inside the reader's buffers, then ends (and stays ended), or fails after exactly
 *     as many lines as the reference. The reference takes the block at offset 0, then each
 *     next one at align_up(24 + payload): the header (magic "DSRB"; payload <= the block's
 *     payload, or an oversize block of exactly 1 record with payload <= max_payload; records
 *     <= payload; records > 0 for a payload > 0), the payload inside the file (a cut only in
 *     the last block's zero padding is no error, but for an oversize block, see below), its
 *     CRC32C, then each line (ending inside its block), then the block's line count; at the
 *     end of the file, the line count and line bytes against the writer's when known.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "fuzz_common.h"
#include "fuzz_tmpfile.h"
#include "keys.h"
#include "lines.h"
#include "prefetch.h"
#include "runfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR 24
#define ALIGN 4096
#define MAGIC UINT32_C(0x42525344) /* "DSRB" */
#define MAX_PIECES 64

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint64_t align_up(uint64_t n)
{
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

/* The framed line at p (position, line, eol) before end: its length, or 0 when no eol ends
 * one there. */
static size_t frame_len(const unsigned char *p, const unsigned char *end, size_t hdr,
                        unsigned char eol)
{
    if ((size_t)(end - p) <= hdr)
        return 0;
    const unsigned char *e = memchr(p + hdr, eol, (size_t)(end - p) - hdr);
    return e ? (size_t)(e - p) + 1 : 0;
}

/* The file image: the input as is, or its "BLK!" pieces, each at the next multiple of 4 KiB
 * (fix: with the magic and payload of its length). NULL for too many pieces. */
static unsigned char *make_image(const unsigned char *p, size_t n, bool pieces, bool fix,
                                 size_t *len)
{
    if (!pieces) {
        unsigned char *img = malloc(n ? n : 1);
        FUZZ_CHECK(img, "out of memory");
        memcpy(img, p, n);
        *len = n;
        return img;
    }
    size_t start[MAX_PIECES + 1], end[MAX_PIECES + 1], k = 0, from = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && (i + 4 > n || memcmp(p + i, "BLK!", 4)))
            continue;
        if (k == MAX_PIECES)
            return NULL;
        start[k] = from;
        end[k++] = i;
        from = i + 4;
        i += 3;
    }
    size_t total = 0;
    for (size_t i = 0; i < k; i++)
        total = (size_t)align_up(total) + (end[i] - start[i]);
    unsigned char *img = calloc(total ? total : 1, 1);
    FUZZ_CHECK(img, "out of memory");
    size_t at = 0;
    for (size_t i = 0; i < k; i++) {
        at = (size_t)align_up(at);
        size_t m = end[i] - start[i];
        memcpy(img + at, p + start[i], m);
        if (fix && m >= HDR) {
            put_le(img + at, MAGIC, 4);
            put_le(img + at + 8, m - HDR, 8);
        }
        at += m;
    }
    *len = total;
    return img;
}

/* Rewrite the CRCs and record counts (whole lines) along the chain of blocks, where a block's
 * payload lies inside the image. */
static void fix_chain(unsigned char *img, size_t len, bool crc, bool records, size_t hdr,
                      unsigned char eol)
{
    for (size_t at = 0; at + HDR <= len;) {
        uint64_t payload = get_le(img + at + 8, 8);
        if (payload > len - at - HDR)
            break;
        const unsigned char *p = img + at + HDR, *end = p + payload;
        if (records) {
            uint64_t n = 0;
            for (size_t f; p < end && (f = frame_len(p, end, hdr, eol)); p += f)
                n++;
            put_le(img + at + 16, n, 8);
        }
        if (crc)
            put_le(img + at + 4, dsort_crc32c(0, img + at + HDR, (size_t)payload), 4);
        at = (size_t)align_up(at + HDR + payload);
    }
}

/* The reference reader. ref_next: 1 with a line, 0 at a good end, -1 on an error. */
struct ref {
    const unsigned char *img;
    size_t len;
    uint64_t at; /* the next block's offset */
    const unsigned char *p, *end;
    uint64_t blk_at, blk_records, blk_seen, records, lines, bytes;
    uint64_t block_payload, max_payload, expect_lines, expect_bytes;
    size_t hdr;
    unsigned char eol;
    const char *why; /* what failed, for the messages */
};

static int ref_fail(struct ref *r, const char *why)
{
    r->why = why;
    return -1;
}

static int ref_next(struct ref *r, const unsigned char **line, size_t *len, uint64_t *pos)
{
    for (;;) {
        if (r->p < r->end) {
            size_t f = frame_len(r->p, r->end, r->hdr, r->eol);
            if (!f)
                return ref_fail(r, "a line runs past the end of its block");
            *pos = 0;
            for (size_t i = 0; i < r->hdr; i++) /* big-endian */
                *pos = *pos << 8 | r->p[i];
            *line = r->p + r->hdr;
            *len = f - r->hdr - 1;
            r->p += f;
            r->blk_seen++;
            r->lines++;
            r->bytes += *len + 1;
            return 1;
        }
        if (r->blk_seen != r->blk_records)
            return ref_fail(r, "block line count");
        r->blk_seen = r->blk_records = 0;
        if (r->at >= r->len) { /* the end of the run */
            if (r->expect_lines != UINT64_MAX && r->records != r->expect_lines)
                return ref_fail(r, "records at the end");
            if (r->expect_bytes != UINT64_MAX && r->bytes != r->expect_bytes)
                return ref_fail(r, "bytes at the end");
            return 0;
        }
        const unsigned char *h = r->img + r->at;
        uint64_t left = r->len - r->at;
        if (left < HDR)
            return ref_fail(r, "a partial header");
        uint64_t payload = get_le(h + 8, 8), records = get_le(h + 16, 8);
        bool oversize = payload > r->block_payload;
        if (get_le(h, 4) != MAGIC || payload > r->max_payload || records > payload ||
            (oversize && records != 1) || (payload && !records))
            return ref_fail(r, "bad header");
        uint64_t took = align_up(HDR + payload);
        if (HDR + payload > left)
            return ref_fail(r, "truncated payload");
        /* runfile.c reads an oversize block whole, padding included: cut in its padding, it is
         * reported truncated (a block of one stride cut there is not). */
        if (oversize && took > left)
            return ref_fail(r, "oversize block cut in its padding");
        if (dsort_crc32c(0, h + HDR, (size_t)payload) != (uint32_t)get_le(h + 4, 4))
            return ref_fail(r, "CRC32C");
        r->records += records;
        r->blk_at = r->at;
        r->blk_records = records;
        r->p = h + HDR;
        r->end = r->p + payload;
        r->at += took;
    }
}

static void ref_init(struct ref *r, const unsigned char *img, size_t len, size_t block,
                     size_t max_payload, size_t hdr, unsigned char eol, uint64_t el, uint64_t eb)
{
    memset(r, 0, sizeof *r);
    r->img = img;
    r->len = len;
    r->block_payload = align_up(block) - HDR;
    r->max_payload = max_payload > r->block_payload ? max_payload : r->block_payload;
    r->hdr = hdr;
    r->eol = eol;
    r->expect_lines = el;
    r->expect_bytes = eb;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct dsort_prefetch *pf;
    struct fuzz_in in = {data, size};
    unsigned flags = fuzz_byte(&in);
    unsigned b1 = fuzz_byte(&in);
    unsigned b2 = fuzz_byte(&in);
    uint64_t el = fuzz_byte(&in);
    el |= fuzz_byte(&in) << 8;
    uint64_t eb = fuzz_byte(&in);
    eb |= fuzz_byte(&in) << 8;
    const unsigned char eol = (flags & 1) ? '\0' : '\n';
    const int with_pos = (flags >> 1) & 1;
    const size_t hdr = with_pos ? 8 : 0;
    const size_t block = (b1 & 1) ? 8192 : 4096;
    const size_t max_payload = 1024 * (size_t)(b1 >> 1);

    size_t len;
    unsigned char *img = make_image(in.p, in.n, flags & 64, flags & 128, &len);
    if (!img)
        return 0;
    if (flags & 24)
        fix_chain(img, len, flags & 8, flags & 16, hdr, eol);

    /* The reference's own counts (for "known and right"): a read with unknown counts. */
    struct ref r;
    ref_init(&r, img, len, block, max_payload, hdr, eol, UINT64_MAX, UINT64_MAX);
    {
        const unsigned char *line;
        size_t n;
        uint64_t pos;
        while (ref_next(&r, &line, &n, &pos) > 0)
            ;
    }
    if ((b2 & 3) == 0)
        el = UINT64_MAX;
    else if ((b2 & 3) >= 2)
        el = r.lines;
    if ((b2 >> 2 & 3) == 0)
        eb = UINT64_MAX;
    else if ((b2 >> 2 & 3) >= 2)
        eb = r.bytes;
    ref_init(&r, img, len, block, max_payload, hdr, eol, el, eb);

    struct dsort_keys k;
    struct dsort_error err = {0};
    dsort_keys_init(&k);
    if (flags & 4)
        FUZZ_CHECK(dsort_keys_set_global(&k, 'n', &err) == DSORT_OK, "-n: %s", err.msg);
    FUZZ_CHECK(dsort_keys_finish(&k, &err) == DSORT_OK, "finish: %s", err.msg);
    struct dsort_lines_order ord;
    dsort_lines_order_init(&ord, &k, eol);

    const char *path = fuzz_tmp_write(img, len);
    if ((flags & 32) && !pf)
        FUZZ_CHECK(dsort_prefetch_create(&pf, &err) == DSORT_OK, "prefetch: %s", err.msg);
    const size_t buf_len = dsort_runreader_buf_len(0, block, 1);
    unsigned char *buf = aligned_alloc(DSORT_RUN_ALIGN, buf_len);
    FUZZ_CHECK(buf, "out of memory");
    struct dsort_runreader rr;
    struct dsort_line_cursor c;
    memset(&c, 0, sizeof c);
    enum dsort_status st = dsort_runreader_open_framed(&rr, path, block, max_payload, buf,
                                                       (flags & 32) ? pf : NULL, el, &err);
    if (!st)
        dsort_line_cursor_run(&c, &ord, &rr, with_pos, eb);

    uint64_t n = 0;
    for (;; n++) {
        const unsigned char *line = NULL;
        size_t llen = 0;
        uint64_t pos = 0;
        int want = ref_next(&r, &line, &llen, &pos);
        if (!st)
            st = dsort_line_cursor_next(&c, &err);
        if (fuzz_verbose() && want <= 0)
            fprintf(stderr,
                    "linerun: block %zu, %llu lines, then %s %s; the cursor: status %d %s\n", block,
                    (unsigned long long)n, want ? "an error:" : "the end", want ? r.why : "",
                    (int)st, st ? err.msg : "");
        if (want < 0) {
            FUZZ_CHECK(st == DSORT_EFORMAT || st == DSORT_EIO,
                       "line %llu: the reference fails (%s at block %llu), the cursor gives "
                       "status %d (done %d)",
                       (unsigned long long)n, r.why, (unsigned long long)r.at, (int)st, c.done);
            FUZZ_CHECK(err.msg[0] && memchr(err.msg, 0, sizeof err.msg) && strstr(err.msg, path),
                       "line %llu: the message '%s' does not name '%s'", (unsigned long long)n,
                       err.msg, path);
            break;
        }
        FUZZ_CHECK(st == DSORT_OK, "line %llu: the reference reads on, the cursor fails: %s",
                   (unsigned long long)n, err.msg);
        FUZZ_CHECK(c.done == !want, "line %llu: done %d, the reference %s", (unsigned long long)n,
                   c.done, want ? "has a line" : "is at the end");
        if (!want) {
            /* ended, and stays so */
            st = dsort_line_cursor_next(&c, &err);
            FUZZ_CHECK(st == DSORT_OK && c.done && !c.line, "after the end: status %d", (int)st);
            FUZZ_CHECK(c.lines == r.lines && c.bytes == r.bytes, "counts %llu %llu, want %llu %llu",
                       (unsigned long long)c.lines, (unsigned long long)c.bytes,
                       (unsigned long long)r.lines, (unsigned long long)r.bytes);
            break;
        }
        if (c.len != llen || memcmp(c.line, line, llen) || c.pos != pos ||
            c.prefix != dsort_lines_prefix(&ord, line, llen)) {
            fuzz_print("cursor", c.line, c.len);
            fuzz_print("reference", line, llen);
            FUZZ_CHECK(0, "line %llu: the cursor's line (pos %llu) is not the reference's (%llu)",
                       (unsigned long long)n, (unsigned long long)c.pos, (unsigned long long)pos);
        }
        /* inside the reader's buffers, or the oversize block it holds */
        const unsigned char *lo = buf, *hi = buf + buf_len;
        if (rr.big) {
            lo = rr.big;
            hi = rr.big + HDR + (r.end - (r.img + r.blk_at + HDR));
        }
        FUZZ_CHECK(c.line - hdr >= lo && c.line + c.len < hi && c.line[c.len] == eol,
                   "line %llu is not in the reader's buffer", (unsigned long long)n);
        FUZZ_CHECK(rr.blk_off == r.blk_at, "line %llu: block at %llu, the reference's at %llu",
                   (unsigned long long)n, (unsigned long long)rr.blk_off,
                   (unsigned long long)r.blk_at);
    }
    if (c.run)
        dsort_line_cursor_close(&c);
    else
        dsort_runreader_close(&rr); /* a failed open has closed it: harmless */
    free(buf);
    free(img);
    return 0;
}
