/* fuzz_runfile - the run-file block reader (runfile.h: dsort_runreader_open and its cursor).
 *
 * Input: byte 0: rec_size = 1 + (byte & 63); byte 1: block = 1 + 48 x byte (1 B to 12 KiB,
 * so strides of 4 and 8 KiB and up to a few hundred records a block); byte 2: flags,
 *   bit 0 fix the CRC32C of every block whose header's payload fits (else only inputs with
 *        CRCs right by chance get past the check),
 *   bit 1 fix the records count (payload / rec_size) of those headers,
 *   bit 2 read through a prefetch thread (else synchronously),
 *   bit 3 the file is the rest of the input as is; otherwise the rest is split at "BLK!" and
 *        piece i is put at offset i x stride (zero-padded), so that inputs stay small;
 * bytes 3-4: the records the writer wrote (0xffff: unknown).
 * Checks:
 *   - open and every refill return a status, never crash or read out of bounds (ASan); a
 *     failure is DSORT_EFORMAT or DSORT_EIO with a message;
 *   - [cur, end) holds whole records, inside the buffer the block was read into, and its
 *     bytes are the payload of the next non-empty block of the file;
 *   - a run read to its end delivered r.records records, and with a known count, that many.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "fuzz_common.h"
#include "fuzz_tmpfile.h"
#include "prefetch.h"
#include "runfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

/* The file image: the input as is, or its "BLK!" pieces at stride offsets. */
static unsigned char *make_image(const unsigned char *p, size_t n, bool raw, size_t stride,
                                 size_t *len)
{
    if (raw) {
        unsigned char *img = malloc(n ? n : 1);
        if (img)
            memcpy(img, p, n);
        *len = n;
        return img;
    }
    size_t pieces = 1;
    for (size_t i = 0; i + 4 <= n; i++)
        if (!memcmp(p + i, "BLK!", 4))
            pieces++, i += 3;
    if (pieces > 64)
        return NULL;
    unsigned char *img = calloc(pieces, stride);
    if (!img)
        return NULL;
    size_t at = 0, piece = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && (i + 4 > n || memcmp(p + i, "BLK!", 4)))
            continue;
        size_t m = i - start < stride ? i - start : stride;
        memcpy(img + piece * stride, p + start, m);
        at = piece * stride + m;
        piece++;
        start = i + 4;
        i += 3;
    }
    *len = at;
    return img;
}

/* Rewrite the CRCs (and record counts) of the headers whose payload lies in the image. */
static void fix_headers(unsigned char *img, size_t len, size_t stride, size_t rec_size, bool crc,
                        bool records)
{
    for (size_t off = 0; off + DSORT_RUN_HEADER <= len; off += stride) {
        uint64_t payload = get_le64(img + off + 8);
        if (payload > stride - DSORT_RUN_HEADER || payload > len - off - DSORT_RUN_HEADER)
            continue;
        if (crc)
            put_le(img + off + 4, dsort_crc32c(0, img + off + DSORT_RUN_HEADER, payload), 4);
        if (records)
            put_le(img + off + 16, payload / rec_size, 8);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct dsort_prefetch *pf;
    struct fuzz_in in = {data, size};
    size_t rec_size = 1 + (fuzz_byte(&in) & 63);
    size_t block = 1 + 48 * (size_t)fuzz_byte(&in);
    unsigned flags = fuzz_byte(&in);
    unsigned e = fuzz_byte(&in);
    e |= fuzz_byte(&in) << 8;
    uint64_t expected = e == 0xffff ? UINT64_MAX : e;
    size_t stride = dsort_run_stride(rec_size, block);

    size_t len;
    unsigned char *img = make_image(in.p, in.n, flags & 8, stride, &len);
    if (!img)
        return 0;
    if (flags & 3)
        fix_headers(img, len, stride, rec_size, flags & 1, flags & 2);
    const char *path = fuzz_tmp_write(img, len);

    struct dsort_error err = {0};
    if ((flags & 4) && !pf)
        FUZZ_CHECK(dsort_prefetch_create(&pf, &err) == DSORT_OK, "prefetch: %s", err.msg);
    size_t buf_len = dsort_runreader_buf_len(rec_size, block, 1);
    unsigned char *buf = aligned_alloc(DSORT_RUN_ALIGN, buf_len);
    FUZZ_CHECK(buf, "out of memory");
    struct dsort_runreader r;
    enum dsort_status st = dsort_runreader_open(&r, path, rec_size, block, buf,
                                                (flags & 4) ? pf : NULL, expected, &err);
    uint64_t seen = 0;
    size_t blk = 0; /* the block after the last one delivered */
    unsigned sum = 0;
    while (!st && r.cur.cur != r.cur.end) {
        const unsigned char *cur = r.cur.cur, *end = r.cur.end;
        bool in0 = cur >= buf && end <= buf + stride,
             in1 = cur >= buf + stride && end <= buf + 2 * stride;
        FUZZ_CHECK(cur < end && (in0 || in1), "block [%p, %p) outside the buffers [%p, +%zu)",
                   (const void *)cur, (const void *)end, (const void *)buf, 2 * stride);
        size_t n = (size_t)(end - cur);
        FUZZ_CHECK(n % rec_size == 0, "%zu bytes for records of %zu", n, rec_size);
        /* The next non-empty block of the file. */
        while (blk * stride + DSORT_RUN_HEADER <= len && get_le64(img + blk * stride + 8) == 0)
            blk++;
        size_t off = blk * stride + DSORT_RUN_HEADER;
        FUZZ_CHECK(off + n <= len && !memcmp(cur, img + off, n),
                   "block %zu: the records read are not the file's", blk);
        blk++;
        for (const unsigned char *p = cur; p < end; p += rec_size)
            sum += p[0] + p[rec_size - 1];
        seen += n / rec_size;
        r.cur.cur = end;
        st = r.cur.refill(&r.cur, &err);
    }
    if (st) {
        FUZZ_CHECK(st == DSORT_EFORMAT || st == DSORT_EIO, "status %d: %s", (int)st, err.msg);
        FUZZ_CHECK(err.msg[0] && memchr(err.msg, 0, sizeof err.msg), "no message");
    } else {
        FUZZ_CHECK(seen == r.records, "%llu records seen, the reader counts %llu",
                   (unsigned long long)seen, (unsigned long long)r.records);
        FUZZ_CHECK(expected == UINT64_MAX || seen == expected, "%llu records read, %llu expected",
                   (unsigned long long)seen, (unsigned long long)expected);
    }
    dsort_runreader_close(&r); /* also after a failed open: harmless */
    if (fuzz_verbose())
        fprintf(stderr, "runfile: rec_size %zu stride %zu, %llu records, status %d %s\n", rec_size,
                stride, (unsigned long long)seen, (int)st, st ? err.msg : "");
    (void)sum;
    free(buf);
    free(img);
    return 0;
}
