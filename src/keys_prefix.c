/* keys_prefix.c - the 64-bit prefix of a line (dsort_keys_prefix, keys.h). */
#include "keys_impl.h"

/* ---- Prefixes ----------------------------------------------------------------------------
 * A -n value as an unsigned number of 2 + EBITS + MBITS + 1 bits (at most 64) that grows with
 * the value and is the same for equal values:
 *
 *   class (2 bits)   00 negative, 01 zero, 10 positive;
 *   exponent (EBITS) E + BIAS, BIAS = 2^(EBITS-1) - 1, where E is the number of integer
 *                    digits after the leading zeros, or, when there are none, minus the
 *                    number of zeros that start the fraction (1 has E = 1, 0.5 has E = 0,
 *                    0.05 has E = -1). E in [1 - BIAS, BIAS] is exact; a larger E is coded
 *                    2^EBITS - 1 and a smaller one 0, both with a mantissa of 0 and the
 *                    inexact bit set, so that all numbers beyond a clamp share one code
 *                    whatever their digits;
 *   mantissa (MBITS) the first DIGITS significant digits as a decimal integer, padded with
 *                    zeros (10^DIGITS <= 2^MBITS);
 *   inexact (1 bit)  set when the value is not all in the fields above: a nonzero digit
 *                    follows the first DIGITS significant ones, or E is clamped.
 *
 * Two magnitudes with different E compare as their E (clamped codes tie); with the same E,
 * as their digit strings padded with zeros, which the truncated mantissa keeps in order (and
 * trailing zeros, "1.50" against "1.5", cannot tell); with the same mantissa too, an exact
 * one is smaller than an inexact one (which has more nonzero digits after the same ones). A
 * negative number has class 00 and the complement of its magnitude's bits: larger
 * magnitudes go lower, and the inexact bit reads 0 there. A number that dsort_keys_num_parse reads
 * as zero ("-0", "-", ".", "0.000", "", "abc") is class 01 with zeros. Byte 0x80 among the integer
 * digits is skipped, as num_mag_cmp skips it.
 *
 * So equal prefixes of exact values (or of zeros) mean equal values: num_cmp_parsed gives 0
 * (dsort_keys_prefix_decides). Exactness depends on the value alone, so equal values still
 * get equal prefixes. */
struct num_layout {
    unsigned ebits, mbits, digits;
};
static const struct num_layout numeric_layout = {7, 54, 16}; /* 64 bits */
static const struct num_layout human_layout = {6, 50, 15};   /* 59 bits, under 5 of order */

static unsigned num_bits(const struct num_layout *l)
{
    return l->ebits + l->mbits + 1; /* below the class */
}

static uint64_t num_prefix(const struct num *n, const struct num_layout *l)
{
    unsigned shift = num_bits(l);
    uint64_t low = ((uint64_t)1 << shift) - 1;
    if (n->idigits == 0 && n->flen == 0)
        return (uint64_t)1 << shift;
    size_t top = ((size_t)1 << l->ebits) - 1, bias = ((size_t)1 << (l->ebits - 1)) - 1;
    size_t code;
    const uchar *d = n->ip, *de = n->ip + n->ilen; /* integer digits, then the fraction's */
    const uchar *f = n->fp, *fe = n->fp + n->flen;
    if (n->idigits) {
        code = n->idigits > top - 1 - bias ? top : bias + n->idigits;
    } else {
        size_t z = 0;
        while (f[z] == '0') /* flen > 0: a nonzero digit ends the fraction */
            z++;
        f += z;
        code = z > bias - 1 ? 0 : bias - z;
    }
    uint64_t mant = 0, inexact = 1;
    unsigned left = l->digits;
    if (code != 0 && code != top) {
        for (; d < de && left; d++)
            if (*d != THOUSANDS_SEP) {
                mant = mant * 10 + (uint64_t)(*d - '0');
                left--;
            }
        for (; f < fe && left; f++, left--)
            mant = mant * 10 + (uint64_t)(*f - '0');
        /* Exact when no nonzero digit is left: the fraction's last digit is nonzero. */
        inexact = f < fe;
        for (; d < de && !inexact; d++)
            inexact = *d != '0' && *d != THOUSANDS_SEP;
    }
    for (; left; left--)
        mant *= 10;
    uint64_t mag = (uint64_t)code << (l->mbits + 1) | mant << 1 | inexact;
    return n->neg ? ~mag & low : (uint64_t)2 << shift | mag;
}

/* Does a number prefix (not complemented for r) hold an exact value or zero? */
static bool num_prefix_exact(uint64_t v, const struct num_layout *l)
{
    unsigned cls = (unsigned)(v >> num_bits(l)) & 3;
    return cls == 1 || (v & 1) == (cls == 0);
}

/* The plain-bytes prefix: the first 7 bytes (folded with f, zeros past the end), then a
 * byte that is the length when it is at most 7 and otherwise max(8, the 8th byte). With
 * equal first 7 bytes, a key of at most 7 bytes is a prefix of the other key, so a smaller
 * length is a smaller key, and a key of 8 bytes or more the larger one; the byte after
 * that keeps the order too (text loses nothing: it has no bytes below 8). A last byte below
 * 8 means the prefix holds the whole key. */
static uint64_t bytes_prefix(const uchar *p, size_t n, bool f)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 7; i++)
        v = v << 8 | (i < n ? (f ? fold(p[i]) : p[i]) : 0);
    uchar last = (uchar)n;
    if (n > 7) {
        last = f ? fold(p[7]) : p[7];
        if (last < 8)
            last = 8;
    }
    return v << 8 | last;
}

/* Is the first key reversed in the prefix? */
static bool prefix_reversed(const struct dsort_keys *k)
{
    if (k->prefix_mode == PREFIX_LINE)
        return k->reverse;
    return k->key[0].flags & DSORT_KEY_REVERSE;
}

uint64_t dsort_keys_prefix(const struct dsort_keys *k, const unsigned char *line, size_t len)
{
    const uchar *p = line;
    size_t n = len;
    bool f = false;
    if (k->prefix_mode == PREFIX_NONE)
        return 0;
    if (k->prefix_mode != PREFIX_LINE) {
        size_t b, e;
        dsort_keys_range(k, &k->key[0], line, len, &b, &e);
        p = line + b;
        n = e - b;
        f = k->key[0].flags & DSORT_KEY_FOLD;
    }
    uint64_t v = 0;
    if (k->prefix_mode == PREFIX_RANDOM) {
        v = dsort_keys_random_prefix(k, k->key[0].flags, p, p + n);
    } else if (k->prefix_mode == PREFIX_NUMERIC || k->prefix_mode == PREFIX_HUMAN) {
        /* As dsort_keys_numeric_cmp and dsort_keys_human_cmp read the key. */
        const uchar *q = skip_blanks_p(p, p + n);
        struct num x;
        dsort_keys_num_parse(q, p + n, &x);
        if (k->prefix_mode == PREFIX_NUMERIC) {
            v = num_prefix(&x, &numeric_layout);
        } else {
            /* The suffix order, -8..8, first; then the value in the low 59 bits. */
            unsigned shift = 2 + num_bits(&human_layout);
            v = (uint64_t)(dsort_keys_human_order(q, p + n, f) + 8) << shift |
                num_prefix(&x, &human_layout);
        }
    } else {
        v = bytes_prefix(p, n, f);
    }
    return prefix_reversed(k) ? ~v : v;
}

int dsort_keys_prefix_decides(const struct dsort_keys *k, uint64_t p)
{
    if (k->prefix_mode == PREFIX_NONE)
        return 0;
    uint64_t v = prefix_reversed(k) ? ~p : p;
    switch (k->prefix_mode) {
    case PREFIX_RANDOM: /* equal digests' first bytes prove nothing of the keys */
        return 0;
    case PREFIX_NUMERIC:
        return num_prefix_exact(v, &numeric_layout);
    case PREFIX_HUMAN:
        /* The suffix orders are equal with the prefixes; then the values decide. */
        return num_prefix_exact(v, &human_layout);
    default:
        return (v & 0xFF) < 8;
    }
}
