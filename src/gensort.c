/* gensort.c - gensort 1.5 compatible record generator (see gensort.h). */
#include "gensort.h"

#include <string.h>

__extension__ typedef unsigned __int128 u128;

#define U128(hi, lo) (((u128)(hi) << 64) | (u128)(lo))

/* The LCG: f(x) = A*x + C mod 2^128. */
#define LCG_A U128(0x2360ed051fc65da4ULL, 0x4385df649fccf645ULL)
#define LCG_C U128(0x4a696d4772617952ULL, 0x4950202020202001ULL)

#define QUEUE 10     /* random numbers per binary record */
#define SKEW_BYTES 6 /* skew rows are the first 6 key bytes of a record */
#define BATCH 128    /* records generated per inner batch */

/* Masks xor-ed into the random numbers behind 10-byte groups 1..9 of a binary
 * record (only the top 80 bits matter), so that the groups do not simply
 * repeat the next records' keys. */
static const u128 group_mask[QUEUE] = {
    0,
    U128(0xF0E8E4E2E1D8D4D2ULL, 0xD1CCULL << 48),
    U128(0xCAC9C6C5C3B8B4B2ULL, 0xB1ACULL << 48),
    U128(0xAAA9A6A5A39C9A99ULL, 0x9695ULL << 48),
    U128(0x938E8D8B87787472ULL, 0x716CULL << 48),
    U128(0x6A696665635C5A59ULL, 0x5655ULL << 48),
    U128(0x534E4D4B473C3A39ULL, 0x3635ULL << 48),
    U128(0x332E2D2B271E1D1BULL, 0x170FULL << 48),
    U128(0xC8C4C2C198949291ULL, 0x8CE0ULL << 48),
    U128(0x170F332E2D2B271EULL, 0x1D1BULL << 48),
};

static const char hex_upper[16] = {'0', '1', '2', '3', '4', '5', '6', '7',
                                   '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'};

static inline u128 lcg_step(u128 x)
{
    return x * LCG_A + LCG_C;
}

/* f^n(x) in O(log n): (a, c) runs through f^(2^i) = (a_i, c_i), squared as
 * f^(2^(i+1))(x) = a_i*(a_i*x + c_i) + c_i.  Powers of f commute, so the
 * order in which the selected powers are applied does not matter. */
static u128 lcg_jump(u128 x, u128 n)
{
    u128 a = LCG_A, c = LCG_C;

    while (n != 0) {
        if (n & 1)
            x = a * x + c;
        c = a * c + c;
        a = a * a;
        n >>= 1;
    }
    return x;
}

static inline uint64_t hi64(u128 v)
{
    return (uint64_t)(v >> 64);
}

static inline uint64_t lo64(u128 v)
{
    return (uint64_t)v;
}

static inline void store_be64(unsigned char *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
    memcpy(p, &v, sizeof v);
#else
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
#endif
}

/* The top 80 bits of v, big-endian. */
static inline void put_group(unsigned char *p, u128 v)
{
    uint64_t lo = lo64(v);
    store_be64(p, hi64(v));
    p[8] = (unsigned char)(lo >> 56);
    p[9] = (unsigned char)(lo >> 48);
}

/* Record i of the batch uses win[i] .. win[i + 9]. */
static void emit_binary(unsigned char *out, const u128 *win, size_t n)
{
    for (size_t i = 0; i < n; i++, out += DSORT_GENSORT_REC_SIZE)
        for (int k = 0; k < QUEUE; k++)
            put_group(out + 10 * k, win[i + k] ^ group_mask[k]);
}

static void ascii_key(unsigned char *p, u128 r)
{
    uint64_t t = hi64(r);
    for (int j = 0; j < 8; j++, t /= 95)
        p[j] = (unsigned char)(' ' + t % 95);
    t = lo64(r);
    p[8] = (unsigned char)(' ' + t % 95);
    p[9] = (unsigned char)(' ' + (t / 95) % 95);
}

static void emit_ascii(unsigned char *out, const u128 *win, size_t n, u128 recno)
{
    for (size_t i = 0; i < n; i++, out += DSORT_GENSORT_REC_SIZE, recno++) {
        uint64_t lo = lo64(win[i]), nhi = hi64(recno), nlo = lo64(recno);

        ascii_key(out, win[i]);
        out[10] = out[11] = ' ';
        for (int j = 0; j < 16; j++) {
            out[12 + j] = (unsigned char)hex_upper[(nhi >> (60 - 4 * j)) & 0xF];
            out[28 + j] = (unsigned char)hex_upper[(nlo >> (60 - 4 * j)) & 0xF];
        }
        out[44] = out[45] = ' ';
        for (int j = 0; j < 13; j++)
            memset(out + 46 + 4 * j, hex_upper[(lo >> (48 - 4 * j)) & 0xF], 4);
        out[98] = '\r';
        out[99] = '\n';
    }
}

static int bit_length64(uint64_t v)
{
    return v == 0 ? 0 : 64 - __builtin_clzll(v);
}

/* gensort's "about log2 of the record number", quirks included: any of the
 * top 4 bits of a 64-bit half set gives the half's maximum. */
static int skew_index_of(u128 recno)
{
    uint64_t hi = hi64(recno), lo = lo64(recno);

    if (hi == 0)
        return (lo >> 60) ? 64 : bit_length64(lo);
    return (hi >> 60) ? 128 : 64 + bit_length64(hi);
}

/* gensort's skew tables hold, for each index k in 0..128, the first 6 key
 * bytes of the unskewed record number k of the same kind. */
static void load_skew_row(struct dsort_gensort *g, int idx)
{
    u128 r = lcg_jump(0, (u128)idx + 1);

    if (g->kind == DSORT_GENSORT_ASCII) {
        unsigned char key[DSORT_GENSORT_KEY_SIZE];
        ascii_key(key, r);
        memcpy(g->skew_row, key, SKEW_BYTES);
    } else {
        unsigned char grp[10];
        put_group(grp, r);
        memcpy(g->skew_row, grp, SKEW_BYTES);
    }
    g->skew_index = idx;
}

static void apply_skew(struct dsort_gensort *g, unsigned char *out, const u128 *win, size_t n,
                       u128 recno)
{
    for (size_t i = 0; i < n; i++, out += DSORT_GENSORT_REC_SIZE, recno++) {
        int idx = skew_index_of(recno);
        if (idx != g->skew_index)
            load_skew_row(g, idx);

        unsigned bits = (unsigned)(lo64(win[i]) >> 32);
        if (g->kind == DSORT_GENSORT_ASCII) {
            unsigned nbytes = bits & 0x7;
            if (nbytes <= SKEW_BYTES)
                memcpy(out, g->skew_row, nbytes);
        } else {
            unsigned nbits = bits & 0x3F;
            if (nbits > 8 * SKEW_BYTES)
                continue;
            memcpy(out, g->skew_row, nbits / 8);
            if (nbits % 8) {
                unsigned char keep = (unsigned char)(0xFFu >> (nbits % 8));
                out[nbits / 8] =
                    (unsigned char)((g->skew_row[nbits / 8] & ~keep) | (out[nbits / 8] & keep));
            }
        }
    }
}

int dsort_gensort_init(struct dsort_gensort *g, enum dsort_gensort_kind kind, int skew,
                       uint64_t first_record)
{
    if (g == NULL || (kind != DSORT_GENSORT_BINARY && kind != DSORT_GENSORT_ASCII))
        return -1;

    u128 r = lcg_jump(0, (u128)first_record + 1);
    for (int k = 0; k < QUEUE; k++) {
        g->q_hi[k] = hi64(r);
        g->q_lo[k] = lo64(r);
        r = lcg_step(r);
    }
    g->rec_lo = first_record;
    g->rec_hi = 0;
    g->kind = (int)kind;
    g->skew = skew != 0;
    g->skew_index = -1;
    memset(g->skew_row, 0, sizeof g->skew_row);
    return 0;
}

void dsort_gensort_fill(struct dsort_gensort *g, unsigned char *out, size_t nrec)
{
    u128 win[BATCH + QUEUE];
    u128 recno = U128(g->rec_hi, g->rec_lo);

    for (int k = 0; k < QUEUE; k++)
        win[k] = U128(g->q_hi[k], g->q_lo[k]);

    while (nrec > 0) {
        size_t n = nrec < BATCH ? nrec : BATCH;
        u128 x = win[QUEUE - 1];

        /* Extend the window so that records 0..n-1 of this batch, and
         * the queue left for the next one, are all available. */
        for (size_t i = QUEUE; i < n + QUEUE; i++) {
            x = lcg_step(x);
            win[i] = x;
        }
        if (g->kind == DSORT_GENSORT_ASCII)
            emit_ascii(out, win, n, recno);
        else
            emit_binary(out, win, n);
        if (g->skew)
            apply_skew(g, out, win, n, recno);

        memmove(win, win + n, QUEUE * sizeof win[0]);
        out += n * DSORT_GENSORT_REC_SIZE;
        recno += n;
        nrec -= n;
    }

    for (int k = 0; k < QUEUE; k++) {
        g->q_hi[k] = hi64(win[k]);
        g->q_lo[k] = lo64(win[k]);
    }
    g->rec_hi = hi64(recno);
    g->rec_lo = lo64(recno);
}
