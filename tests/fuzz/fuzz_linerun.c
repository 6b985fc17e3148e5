/* fuzz_linerun - the line run-file reader of lines.h (dsort_line_cursor_file: checksummed
 * blocks of framed lines), against a reference reader written here from lines.h's format.
 *
 * Input: byte 0: bit 0 eol NUL (else newline), bit 1 8-byte positions (with_pos), bit 2 a -n
 * order (else plain), bit 3 fix the CRC32C of each block of the chain, bit 4 fix each
 * block's line count, bit 5 the writer's counts are known (bytes 3-6), else UINT64_MAX;
 * byte 1: cap = 1 + 64 x byte; byte 2: max_cap = 16 x byte; bytes 3-4: expected lines;
 * bytes 5-6: expected line bytes; the rest is the run file.
 * Checks:
 *   - no crash or out-of-bounds read; a failure is DSORT_EFORMAT with a message;
 *   - the cursor yields exactly the lines (bytes, position, prefix) that the reference
 *     reader yields, then ends, or fails, exactly where the reference does: the reference
 *     checks each header (magic "DSLB", payload <= max_cap, lines <= payload) when it needs
 *     the block, the block's CRC32C before its first line, that every line ends inside its
 *     block, each block's line count when it is used up, and the totals at the end.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checksum.h"
#include "fuzz_common.h"
#include "fuzz_tmpfile.h"
#include "keys.h"
#include "lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR 24
#define MAGIC UINT32_C(0x424C5344) /* "DSLB" */

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

/* The framed lines of a payload: the length of the next frame at p (position, line, eol), or
 * 0 when no eol ends one before end. */
static size_t frame_len(const unsigned char *p, const unsigned char *end, size_t hdr,
                        unsigned char eol)
{
    if ((size_t)(end - p) <= hdr)
        return 0;
    const unsigned char *e = memchr(p + hdr, eol, (size_t)(end - p) - hdr);
    return e ? (size_t)(e - p) + 1 : 0;
}

/* The reference reader: one step. Returns 1 with a line, 0 at a good end, -1 on corruption. */
struct ref {
    const unsigned char *img;
    size_t len, off; /* the next block's offset */
    const unsigned char *p, *end;
    uint64_t blk_lines, blk_seen, lines, bytes, max_cap, expect_lines, expect_bytes;
    size_t hdr;
    unsigned char eol;
};

static int ref_next(struct ref *r, const unsigned char **line, size_t *len, uint64_t *pos)
{
    for (;;) {
        if (r->p < r->end) {
            size_t f = frame_len(r->p, r->end, r->hdr, r->eol);
            if (!f)
                return -1; /* a line runs past the end of its block */
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
        if (r->blk_seen != r->blk_lines)
            return -1;
        if (r->off == r->len)
            return (r->expect_lines != UINT64_MAX && r->lines != r->expect_lines) ||
                           (r->expect_bytes != UINT64_MAX && r->bytes != r->expect_bytes)
                       ? -1
                       : 0;
        const unsigned char *h = r->img + r->off;
        size_t left = r->len - r->off;
        if (left < HDR) {
            /* A partial header is a bad one if its magic is already wrong, else truncated:
             * an error either way. */
            return -1;
        }
        uint64_t payload = get_le(h + 8, 8), lines = get_le(h + 16, 8);
        if (get_le(h, 4) != MAGIC || payload > r->max_cap || lines > payload)
            return -1;
        if (payload > left - HDR)
            return -1; /* truncated */
        if (dsort_crc32c(0, h + HDR, (size_t)payload) != (uint32_t)get_le(h + 4, 4))
            return -1;
        r->p = h + HDR;
        r->end = r->p + payload;
        r->off += HDR + (size_t)payload;
        r->blk_lines = lines;
        r->blk_seen = 0;
    }
}

/* Rewrite the CRCs and line counts along the chain of blocks. */
static void fix_chain(unsigned char *img, size_t len, bool crc, bool lines, size_t hdr,
                      unsigned char eol)
{
    for (size_t off = 0; off + HDR <= len;) {
        uint64_t payload = get_le(img + off + 8, 8);
        if (payload > len - off - HDR)
            break;
        const unsigned char *p = img + off + HDR, *end = p + payload;
        if (lines) {
            uint64_t n = 0;
            for (size_t f; p < end && (f = frame_len(p, end, hdr, eol)); p += f)
                n++;
            put_le(img + off + 16, n, 8);
        }
        if (crc)
            put_le(img + off + 4, dsort_crc32c(0, img + off + HDR, (size_t)payload), 4);
        off += HDR + (size_t)payload;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    unsigned b0 = fuzz_byte(&in);
    size_t cap = 1 + 64 * (size_t)fuzz_byte(&in);
    size_t max_cap = 16 * (size_t)fuzz_byte(&in);
    uint64_t el = fuzz_byte(&in);
    el |= fuzz_byte(&in) << 8;
    uint64_t eb = fuzz_byte(&in);
    eb |= fuzz_byte(&in) << 8;
    if (!(b0 & 32))
        el = eb = UINT64_MAX;
    unsigned char eol = (b0 & 1) ? '\0' : '\n';
    int with_pos = (b0 >> 1) & 1;
    size_t hdr = with_pos ? 8 : 0;

    struct dsort_keys k;
    struct dsort_error err = {0};
    dsort_keys_init(&k);
    if (b0 & 4)
        FUZZ_CHECK(dsort_keys_set_global(&k, 'n', &err) == DSORT_OK, "-n");
    FUZZ_CHECK(dsort_keys_finish(&k, &err) == DSORT_OK, "finish");
    struct dsort_lines_order ord;
    dsort_lines_order_init(&ord, &k, eol);

    unsigned char *img = malloc(in.n ? in.n : 1);
    FUZZ_CHECK(img, "out of memory");
    memcpy(img, in.p, in.n);
    if (b0 & 24)
        fix_chain(img, in.n, b0 & 8, b0 & 16, hdr, eol);
    const char *path = fuzz_tmp_write(img, in.n);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "open %s", path);
    struct dsort_line_cursor c;
    enum dsort_status st =
        dsort_line_cursor_file(&c, &ord, fd, path, cap, max_cap, with_pos, el, eb, &err);
    FUZZ_CHECK(st == DSORT_OK, "cursor_file: %s", err.msg);

    struct ref r = {.img = img,
                    .len = in.n,
                    .max_cap = c.max_cap,
                    .expect_lines = el,
                    .expect_bytes = eb,
                    .hdr = hdr,
                    .eol = eol};
    for (uint64_t n = 0;; n++) {
        const unsigned char *line = NULL;
        size_t len = 0;
        uint64_t pos = 0;
        int want = ref_next(&r, &line, &len, &pos);
        struct dsort_error e = {0};
        st = dsort_line_cursor_next(&c, &e);
        if (fuzz_verbose() && want <= 0)
            fprintf(stderr, "linerun: %llu lines, then %s (status %d %s)\n", (unsigned long long)n,
                    want ? "an error" : "the end", (int)st, st ? e.msg : "");
        if (want < 0) {
            FUZZ_CHECK(st == DSORT_EFORMAT && e.msg[0] && memchr(e.msg, 0, sizeof e.msg),
                       "line %llu: the reference fails, the cursor gives status %d (done %d)",
                       (unsigned long long)n, (int)st, c.done);
            break;
        }
        FUZZ_CHECK(st == DSORT_OK, "line %llu: the reference reads on, the cursor fails: %s",
                   (unsigned long long)n, e.msg);
        FUZZ_CHECK(c.done == !want, "line %llu: done %d, the reference %s", (unsigned long long)n,
                   c.done, want ? "has a line" : "is at the end");
        if (!want)
            break;
        FUZZ_CHECK(c.len == len && !memcmp(c.line, line, len) && c.pos == pos &&
                       c.prefix == dsort_lines_prefix(&ord, line, len),
                   "line %llu: the cursor's line (%zu bytes) is not the reference's (%zu)",
                   (unsigned long long)n, c.len, len);
        FUZZ_CHECK(c.line >= c.buf && c.line + c.len < c.buf + c.cap && c.line[c.len] == eol,
                   "line %llu is not in the cursor's buffer", (unsigned long long)n);
    }
    dsort_line_cursor_close(&c);
    free(img);
    return 0;
}
