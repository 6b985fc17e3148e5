/* keys_random.c - the R key (-R, --sort=random): GNU sort's keyed hash order (keys.h).
 *
 * GNU sort orders R keys in the C locale by the MD5 digest of 16 bytes of its random source
 * followed by the key (after the key's d, i and f), compared as bytes; equal digests fall
 * back to the keys themselves. Doing the same here makes the order a function of the seed and
 * the lines only, so it is the same at any rank count, and the same as GNU sort's for the
 * same --random-source. MD5 is written from RFC 1321; it is no security measure here, only
 * GNU's choice of a well-mixed hash.
 */
#include "keys_impl.h"

#include <string.h>

struct md5 {
    uint32_t h[4];
    uint64_t len; /* bytes processed */
    uchar buf[64];
    size_t n; /* bytes in buf */
};

static inline uint32_t rotl(uint32_t x, unsigned s)
{
    return x << s | x >> (32 - s);
}

/* The per-round shifts and the sines' constants of RFC 1321, section 3.4. */
static const unsigned md5_shift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                       5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                       4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                       6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
static const uint32_t md5_k[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

static void md5_block(uint32_t h[4], const uchar *p)
{
    uint32_t m[16];
    for (int i = 0; i < 16; i++)
        m[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
               (uint32_t)p[4 * i + 3] << 24;
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (unsigned i = 0; i < 64; i++) {
        uint32_t f;
        unsigned g;
        if (i < 16) {
            f = (b & c) | (~b & d);
            g = i;
        } else if (i < 32) {
            f = (d & b) | (~d & c);
            g = (5 * i + 1) & 15;
        } else if (i < 48) {
            f = b ^ c ^ d;
            g = (3 * i + 5) & 15;
        } else {
            f = c ^ (b | ~d);
            g = (7 * i) & 15;
        }
        uint32_t t = d;
        d = c;
        c = b;
        b = b + rotl(a + f + md5_k[i] + m[g], md5_shift[i]);
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

static void md5_init(struct md5 *s)
{
    s->h[0] = 0x67452301;
    s->h[1] = 0xefcdab89;
    s->h[2] = 0x98badcfe;
    s->h[3] = 0x10325476;
    s->len = 0;
    s->n = 0;
}

static void md5_byte(struct md5 *s, uchar c)
{
    s->buf[s->n++] = c;
    s->len++;
    if (s->n == 64) {
        md5_block(s->h, s->buf);
        s->n = 0;
    }
}

static void md5_bytes(struct md5 *s, const uchar *p, size_t n)
{
    while (n && s->n) {
        md5_byte(s, *p++);
        n--;
    }
    for (; n >= 64; p += 64, n -= 64) {
        md5_block(s->h, p);
        s->len += 64;
    }
    while (n--)
        md5_byte(s, *p++);
}

static void md5_finish(struct md5 *s, uchar out[16])
{
    uint64_t bits = s->len * 8;
    md5_byte(s, 0x80);
    while (s->n != 56)
        md5_byte(s, 0);
    for (int i = 0; i < 8; i++)
        s->buf[56 + i] = (uchar)(bits >> (8 * i));
    md5_block(s->h, s->buf);
    for (int i = 0; i < 16; i++)
        out[i] = (uchar)(s->h[i / 4] >> (8 * (i % 4)));
}

/* The digest of the seed and the key [p, e) as the key's d, i and f make it. */
static void random_digest(const struct dsort_keys *k, unsigned flags, const uchar *p,
                          const uchar *e, uchar out[16])
{
    struct md5 s;
    md5_init(&s);
    md5_bytes(&s, k->random_seed, sizeof k->random_seed);
    if (!(flags & (KEY_IGNORE_FLAGS | DSORT_KEY_FOLD)))
        md5_bytes(&s, p, (size_t)(e - p));
    else
        for (; p < e; p++)
            if (!ignored(flags, *p))
                md5_byte(&s, flags & DSORT_KEY_FOLD ? fold(*p) : *p);
    md5_finish(&s, out);
}

int dsort_keys_random_cmp(const struct dsort_keys *k, unsigned flags, const uchar *a,
                          const uchar *ae, const uchar *b, const uchar *be)
{
    uchar da[16], db[16];
    random_digest(k, flags, a, ae, da);
    random_digest(k, flags, b, be, db);
    return memcmp(da, db, sizeof da);
}

uint64_t dsort_keys_random_prefix(const struct dsort_keys *k, unsigned flags, const uchar *p,
                                  const uchar *e)
{
    uchar d[16];
    random_digest(k, flags, p, e, d);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | d[i];
    return v;
}

void dsort_keys_set_random_seed(struct dsort_keys *k, const unsigned char seed[16])
{
    memcpy(k->random_seed, seed, sizeof k->random_seed);
    k->random_seeded = 1;
}

int dsort_keys_random(const struct dsort_keys *k)
{
    if (k->global & DSORT_KEY_RANDOM)
        return 1;
    for (size_t i = 0; i < k->n; i++)
        if (k->key[i].flags & DSORT_KEY_RANDOM)
            return 1;
    return 0;
}
