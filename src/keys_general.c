/* keys_general.c - -g keys: strtold's value of a key as GNU sort reads it, for keys of any
 * length (keys_impl.h). */
#include "keys_impl.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- -g: strtold ------------------------------------------------------------------------- */

/* Most numbers fit here; strtold reads a NUL-terminated copy. */
/* Longer numbers are rewritten as 0.DDD...e+X with at most this many significant digits plus
 * one sticky digit that stands for the rest. Every long double and every midpoint between
 * two of them (which decide strtold's rounding) has fewer significant digits than this
 * (about 11,520 decimal or 18 hexadecimal at most), so the rewrite rounds the same. */
#define GNUM_DEC_DIGITS 11600
#define GNUM_HEX_DIGITS 32
#define GNUM_EXP_CLAMP 10000000
#define GNUM_EXP_SATURATE 1000000000000000LL

static bool is_xdigit(uchar c)
{
    return is_digit(c) || (unsigned)((c | 0x20) - 'a') <= 5;
}

static bool is_nan_char(uchar c)
{
    return is_alnum(c) || c == '_';
}

/* The payload of "nan(SEQ)", rewritten so that strtoull(SEQ, 0) (which glibc's strtold uses,
 * and only when it reads all of SEQ) gives the same: leading zeros dropped, and more digits
 * than 64 bits hold replaced by the largest value. Writes at most 24 bytes; returns the
 * length, or 0 when SEQ is not a number (then the NaN has the default payload). */
static size_t nan_payload(const uchar *s, size_t n, char *out)
{
    size_t i = 0, o = 0, max = 20;
    bool (*ok)(uchar) = is_digit;
    if (n > 2 && s[0] == '0' && (s[1] | 0x20) == 'x' && is_xdigit(s[2])) {
        i = 2, max = 16, ok = is_xdigit;
        out[o++] = '0', out[o++] = 'x';
    } else if (n > 0 && s[0] == '0') {
        max = 22;
        out[o++] = '0';
    }
    for (size_t j = i; j < n; j++)
        if (!ok(s[j]) || (max == 22 && s[j] > '7'))
            return 0;
    if (n == 0)
        return 0;
    while (i < n && s[i] == '0')
        i++;
    if (n - i > max)
        return (size_t)snprintf(out, 24, "0xffffffffffffffff");
    memcpy(out + o, s + i, n - i);
    return o + n - i;
}

/* inf, nan, nan(SEQ) or no number at all at p + i, with buf holding o bytes (the sign): as
 * strtold reads it, with a "nan(SEQ)" payload rewritten by nan_payload. */
static bool gnum_parse_word(const uchar *p, const uchar *end, size_t i, char *buf, size_t o,
                            long double *out)
{
    struct cstr s = {p, end};
    if ((at(&s, i) | 0x20) == 'n' && (at(&s, i + 1) | 0x20) == 'a' &&
        (at(&s, i + 2) | 0x20) == 'n') {
        memcpy(buf + o, "nan", 3);
        o += 3;
        size_t j = i + 4;
        while (at(&s, i + 3) == '(' && is_nan_char(at(&s, j)))
            j++;
        if (at(&s, i + 3) == '(' && at(&s, j) == ')') {
            char pay[24];
            size_t np = nan_payload(p + i + 4, j - i - 4, pay);
            if (np) {
                buf[o++] = '(';
                memcpy(buf + o, pay, np);
                o += np;
                buf[o++] = ')';
            }
        }
        buf[o] = '\0';
    } else {
        size_t n = (size_t)(end - p) - i;
        if (n > 16)
            n = 16;
        memcpy(buf + o, p + i, n);
        buf[o + n] = '\0';
    }
    char *e;
    *out = strtold(buf, &e);
    return e != buf;
}

/* The exponent after 'e' (decimal) or 'p' (hexadecimal, a power of 2) at i, 0 if none,
 * saturated far beyond where any value becomes 0 or infinity. */
static long long gnum_exponent(const struct cstr *s, size_t i, bool hex)
{
    long long exp = 0;
    if ((at(s, i) | 0x20) == (hex ? 'p' : 'e')) {
        size_t j = i + 1;
        bool eneg = false;
        if (at(s, j) == '+' || at(s, j) == '-')
            eneg = at(s, j++) == '-';
        for (; is_digit(at(s, j)); j++)
            if (exp < GNUM_EXP_SATURATE)
                exp = exp * 10 + (at(s, j) - '0');
        if (eneg)
            exp = -exp;
    }
    return exp;
}

/* The rewrite for numbers longer than GNUM_SHORT; p is past any leading white space. */
static __attribute__((noinline)) bool gnum_parse_long(const uchar *p, const uchar *end,
                                                      long double *out)
{
    char buf[GNUM_DEC_DIGITS + 64];
    size_t o = 0;
    struct cstr s = {p, end};
    size_t i = 0;
    if (at(&s, i) == '+' || at(&s, i) == '-')
        buf[o++] = (char)at(&s, i++);
    bool hex = at(&s, i) == '0' && (at(&s, i + 1) | 0x20) == 'x' &&
               (is_xdigit(at(&s, i + 2)) || (at(&s, i + 2) == '.' && is_xdigit(at(&s, i + 3))));
    if (!hex && !is_digit(at(&s, i)) && !(at(&s, i) == '.' && is_digit(at(&s, i + 1))))
        return gnum_parse_word(p, end, i, buf, o, out);
    if (hex)
        i += 2;
    bool (*isd)(uchar) = hex ? is_xdigit : is_digit;
    size_t limit = hex ? GNUM_HEX_DIGITS : GNUM_DEC_DIGITS;
    memcpy(buf + o, hex ? "0x0." : "0.", hex ? 4 : 2);
    o += hex ? 4 : 2;
    /* value = 0.D1D2... * base^(before - skipped), where D1 is the first nonzero digit,
     * `before` counts the digits before the point and `skipped` the zeros ahead of D1. */
    long long before = 0, skipped = 0;
    size_t sig = 0;
    bool sticky = false, seen = false, point = false;
    for (;; i++) {
        uchar c = at(&s, i);
        if (c == '.' && !point) {
            point = true;
            continue;
        }
        if (!isd(c))
            break;
        before += !point;
        if (!seen && c == '0') {
            skipped++;
            continue;
        }
        seen = true;
        if (sig < limit)
            buf[o + sig++] = (char)c;
        else if (c != '0')
            sticky = true;
    }
    long long exp = gnum_exponent(&s, i, hex);
    if (!seen) {
        buf[o++] = '0';
    } else {
        o += sig;
        if (sticky)
            buf[o++] = '1';
        long long scale = before - skipped;
        long long total = hex ? 4 * scale + exp : scale + exp;
        if (total > GNUM_EXP_CLAMP)
            total = GNUM_EXP_CLAMP;
        if (total < -GNUM_EXP_CLAMP)
            total = -GNUM_EXP_CLAMP;
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%c%lld", hex ? 'p' : 'e', total);
    }
    buf[o] = '\0';
    *out = strtold(buf, NULL);
    return true;
}

/* The common case of a -g key, a plain integer of at most 18 digits that nothing after it
 * extends (no '.', exponent or hex prefix): its value is exact as a long double, so it can be
 * had without strtold. Returns false when the key is anything else. */
static bool gnum_integer(const uchar *p, const uchar *end, long long *out)
{
    while (p < end && is_space(*p))
        p++;
    bool neg = p < end && *p == '-';
    if (p < end && (*p == '-' || *p == '+'))
        p++;
    const uchar *d = p;
    long long v = 0;
    while (p < end && is_digit(*p) && p - d < 18)
        v = v * 10 + (*p++ - '0');
    if (p == d)
        return false;
    if (p < end && (is_digit(*p) || *p == '.' || (*p | 0x20) == 'e' || (*p | 0x20) == 'x'))
        return false;
    *out = neg ? -v : v;
    return true;
}

/* strtold on the key as GNU does it: returns false when no number was read. */
static bool gnum_parse(const uchar *p, const uchar *end, bool f, long double *out)
{
    const uchar *nul = memchr(p, 0, (size_t)(end - p));
    if (nul)
        end = nul;
    while (p < end && is_space(*p))
        p++;
    size_t n = (size_t)(end - p), m = n < GNUM_SHORT ? n : GNUM_SHORT;
    char buf[GNUM_SHORT + 1];
    for (size_t i = 0; i < m; i++)
        buf[i] = (char)(f ? fold(p[i]) : p[i]);
    buf[m] = '\0';
    char *e;
    *out = strtold(buf, &e);
    if (m == n)
        return e != buf;
    /* Cut short. strtold looks at most 3 bytes past where it stops ("e+5", "0x.8"), except
     * for a "nan(" whose ')' may lie past the cut. Folding never changes what it reads. */
    size_t used = (size_t)(e - buf);
    if (used + 4 <= m && !(isnan(*out) && buf[used] == '('))
        return e != buf;
    return gnum_parse_long(p, end, out);
}

/* GNU 9.1 orders NaNs by memcmp of their long double representations with the padding
 * zeroed: on x86 the low mantissa byte first, so by payload, and -nan after nan. */
static int nan_cmp(long double x, long double y)
{
    unsigned char rx[sizeof x], ry[sizeof y];
    size_t bytes = LDBL_MANT_DIG == 64 ? 10 : sizeof x;
    memset(rx, 0, sizeof rx);
    memset(ry, 0, sizeof ry);
    memcpy(rx, &x, bytes);
    memcpy(ry, &y, bytes);
    return memcmp(rx, ry, sizeof rx);
}

int dsort_keys_general_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
                           const uchar *be)
{
    long long ix, iy;
    if (gnum_integer(a, ae, &ix) && gnum_integer(b, be, &iy))
        return (ix > iy) - (ix < iy);
    bool f = flags & DSORT_KEY_FOLD;
    long double x, y;
    bool okx = gnum_parse(a, ae, f, &x), oky = gnum_parse(b, be, f, &y);
    if (!okx)
        return oky ? -1 : 0;
    if (!oky)
        return 1;
    if (x < y)
        return -1;
    if (x > y)
        return 1;
    if (x == y)
        return 0;
    /* NaNs sort before all numbers. */
    if (!isnan(x))
        return 1;
    if (!isnan(y))
        return -1;
    return nan_cmp(x, y);
}
