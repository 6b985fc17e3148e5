/* checksum.c - table-driven CRC-32 and CRC-32C (slice-by-8), 128-bit sums. */
#include "checksum.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define DSORT_HAVE_SSE42_CRC 1
#include <nmmintrin.h>
#endif

#define CRC32_POLY 0xEDB88320u  /* zlib, reflected */
#define CRC32C_POLY 0x82F63B78u /* Castagnoli, reflected */

/* tab[0] is the classic byte-at-a-time table; tab[k][b] is the CRC of byte b
 * followed by k zero bytes, which lets the main loop fold 8 bytes at once. */
struct crc_tables {
    uint32_t t[8][256];
};

static struct crc_tables crc32_tab, crc32c_tab;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_table(struct crc_tables *tables, uint32_t poly)
{
    uint32_t(*tab)[256] = tables->t;

    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        tab[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++)
            tab[k][b] = (tab[k - 1][b] >> 8) ^ tab[0][tab[k - 1][b] & 0xFF];
}

static void build_tables(void)
{
    build_table(&crc32_tab, CRC32_POLY);
    build_table(&crc32c_tab, CRC32C_POLY);
}

static void tables_init(void)
{
    (void)pthread_once(&tables_once, build_tables);
}

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The raw (not pre/post-inverted) slice-by-8 update; tables must be built. */
static uint32_t crc_update(const struct crc_tables *tables, uint32_t c, const unsigned char *p,
                           size_t len)
{
    const uint32_t(*tab)[256] = tables->t;

    while (len >= 8) {
        uint64_t v = load_le64(p) ^ c;
        c = tab[7][v & 0xFF] ^ tab[6][(v >> 8) & 0xFF] ^ tab[5][(v >> 16) & 0xFF] ^
            tab[4][(v >> 24) & 0xFF] ^ tab[3][(v >> 32) & 0xFF] ^ tab[2][(v >> 40) & 0xFF] ^
            tab[1][(v >> 48) & 0xFF] ^ tab[0][v >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xFF];
    return c;
}

uint32_t dsort_crc32(uint32_t crc, const void *buf, size_t len)
{
    if (len == 0)
        return crc;
    tables_init();
    return ~crc_update(&crc32_tab, ~crc, buf, len);
}

uint32_t dsort_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    if (len == 0)
        return crc;
    tables_init();
    return ~crc_update(&crc32c_tab, ~crc, buf, len);
}

#ifdef DSORT_HAVE_SSE42_CRC
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf,
                                                            size_t len)
{
    const unsigned char *p = buf;
    uint64_t c = ~crc & 0xFFFFFFFFu;

    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        c = _mm_crc32_u64(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}
#endif

uint32_t dsort_crc32c(uint32_t crc, const void *buf, size_t len)
{
    if (len == 0)
        return crc;
#ifdef DSORT_HAVE_SSE42_CRC
    if (__builtin_cpu_supports("sse4.2"))
        return crc32c_hw(crc, buf, len);
#endif
    return dsort_crc32c_sw(crc, buf, len);
}

void dsort_sum128_add(struct dsort_sum128 *s, uint64_t v)
{
    s->lo += v;
    s->hi += s->lo < v; /* carry out of the low half */
}

void dsort_sum128_merge(struct dsort_sum128 *s, const struct dsort_sum128 *t)
{
    uint64_t lo = t->lo, hi = t->hi; /* copies: s and t may alias */
    s->lo += lo;
    s->hi += hi + (s->lo < lo);
}

void dsort_sum128_hex(const struct dsort_sum128 *s, char out[33])
{
    if (s->hi == 0)
        snprintf(out, 33, "%" PRIx64, s->lo);
    else
        snprintf(out, 33, "%" PRIx64 "%016" PRIx64, s->hi, s->lo);
}

void dsort_checksum_records(struct dsort_sum128 *s, const unsigned char *recs, size_t nrec,
                            size_t rec_size)
{
    if (nrec == 0)
        return;
    tables_init();
    for (size_t i = 0; i < nrec; i++, recs += rec_size)
        dsort_sum128_add(s, ~crc_update(&crc32_tab, 0xFFFFFFFFu, recs, rec_size));
}

#ifdef DSORT_HAVE_SSE42_CRC
/* Four records at a time: the crc32 instruction has a latency of three cycles and a throughput
 * of one, so four independent chains run about three times as fast as one record after
 * another (a 100-byte record is only 12 words and a tail). */
__attribute__((target("sse4.2"))) static size_t
crc32c_records4(struct dsort_sum128 *s, const unsigned char *recs, size_t nrec, size_t rec_size)
{
    const size_t words = rec_size / 8;
    size_t i = 0;
    for (; i + 4 <= nrec; i += 4, recs += 4 * rec_size) {
        const unsigned char *p0 = recs, *p1 = recs + rec_size, *p2 = p1 + rec_size,
                            *p3 = p2 + rec_size;
        uint64_t c0 = 0xFFFFFFFFu, c1 = c0, c2 = c0, c3 = c0, v0, v1, v2, v3;
        for (size_t w = 0; w < words; w++) {
            memcpy(&v0, p0 + 8 * w, 8);
            memcpy(&v1, p1 + 8 * w, 8);
            memcpy(&v2, p2 + 8 * w, 8);
            memcpy(&v3, p3 + 8 * w, 8);
            c0 = _mm_crc32_u64(c0, v0);
            c1 = _mm_crc32_u64(c1, v1);
            c2 = _mm_crc32_u64(c2, v2);
            c3 = _mm_crc32_u64(c3, v3);
        }
        uint32_t d0 = (uint32_t)c0, d1 = (uint32_t)c1, d2 = (uint32_t)c2, d3 = (uint32_t)c3;
        for (size_t b = 8 * words; b < rec_size; b++) {
            d0 = _mm_crc32_u8(d0, p0[b]);
            d1 = _mm_crc32_u8(d1, p1[b]);
            d2 = _mm_crc32_u8(d2, p2[b]);
            d3 = _mm_crc32_u8(d3, p3[b]);
        }
        dsort_sum128_add(s, ~d0);
        dsort_sum128_add(s, ~d1);
        dsort_sum128_add(s, ~d2);
        dsort_sum128_add(s, ~d3);
    }
    return i;
}
#endif

void dsort_checksum_records_c(struct dsort_sum128 *s, const unsigned char *recs, size_t nrec,
                              size_t rec_size)
{
    size_t i = 0;
#ifdef DSORT_HAVE_SSE42_CRC
    if (rec_size > 0 && __builtin_cpu_supports("sse4.2"))
        i = crc32c_records4(s, recs, nrec, rec_size);
#endif
    for (recs += i * rec_size; i < nrec; i++, recs += rec_size)
        dsort_sum128_add(s, dsort_crc32c(0, recs, rec_size));
}
