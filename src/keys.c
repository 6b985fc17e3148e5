/* keys.c - key boundaries and the comparison of two lines by their keys (keys.h); the kinds of
 * keys other than text are in keys_num.c, keys_general.c and keys_version.c. */
#include "keys_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- Key boundaries (GNU's begfield and limfield) ---------------------------------------- */

/* Skip `fields` fields from position i. With a separator, each one ends after its
 * separator, except that the last one stops on it when stop_on_last. */
static size_t skip_fields(const struct dsort_keys *k, const uchar *s, size_t i, size_t len,
                          size_t fields, bool stop_on_last)
{
    if (k->tab >= 0) {
        while (i < len && fields--) {
            const uchar *q = memchr(s + i, k->tab, len - i);
            if (!q)
                return len;
            i = (size_t)(q - s);
            if (fields || !stop_on_last)
                i++;
        }
        return i;
    }
    while (i < len && fields--) {
        while (i < len && is_blank(s[i]))
            i++;
        while (i < len && !is_blank(s[i]))
            i++;
    }
    return i;
}

static size_t skip_blanks(const uchar *s, size_t i, size_t len)
{
    while (i < len && is_blank(s[i]))
        i++;
    return i;
}

static size_t advance(size_t i, size_t by, size_t len)
{
    return by >= len - i ? len : i + by;
}

/* The key's bytes in the line: [*b, *e). */
void dsort_keys_range(const struct dsort_keys *k, const struct dsort_key *key, const uchar *s,
                      size_t len, size_t *b, size_t *e)
{
    size_t field = skip_fields(k, s, 0, len, key->sfield, false);
    size_t start = field;
    if (key->flags & DSORT_KEY_SKIP_START_BLANKS)
        start = skip_blanks(s, start, len);
    start = advance(start, key->schar, len);

    size_t end = len;
    if (key->efield != DSORT_KEY_EOL) {
        /* Without a character position, the key runs to the end of field efield: skip one
         * more field, stopping on the separator that ends it. Fields are skipped one after
         * the other, so the scan can go on from the start field. (When it cannot, the key
         * ends before it starts and is empty either way.) */
        size_t fields = key->echar ? key->efield : key->efield + 1;
        if (fields >= key->sfield)
            end = skip_fields(k, s, field, len, fields - key->sfield, key->echar == 0);
        else
            end = skip_fields(k, s, 0, len, fields, key->echar == 0);
        if (key->echar) {
            if (key->flags & DSORT_KEY_SKIP_END_BLANKS)
                end = skip_blanks(s, end, len);
            end = advance(end, key->echar, len);
        }
    }
    *b = start;
    *e = end < start ? start : end;
}

/* ---- Text keys --------------------------------------------------------------------------- */

static int bytes_cmp(const uchar *a, size_t alen, const uchar *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int d = n ? memcmp(a, b, n) : 0;
    if (d)
        return d;
    return (alen > blen) - (alen < blen);
}

static int text_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
                    const uchar *be)
{
    if (!(flags & (KEY_IGNORE_FLAGS | DSORT_KEY_FOLD)))
        return bytes_cmp(a, (size_t)(ae - a), b, (size_t)(be - b));
    bool f = flags & DSORT_KEY_FOLD;
    if (!(flags & KEY_IGNORE_FLAGS)) {
        for (; a < ae && b < be; a++, b++) {
            int d = fold(*a) - fold(*b);
            if (d)
                return d;
        }
        return (a < ae) - (b < be);
    }
    for (;;) {
        while (a < ae && ignored(flags, *a))
            a++;
        while (b < be && ignored(flags, *b))
            b++;
        if (a == ae || b == be)
            return (a < ae) - (b < be);
        int d = f ? fold(*a) - fold(*b) : *a - *b;
        if (d)
            return d;
        a++;
        b++;
    }
}

/* ---- Comparison -------------------------------------------------------------------------- */

static int key_cmp(const struct dsort_keys *k, const struct dsort_key *key, const uchar *a,
                   size_t alen, const uchar *b, size_t blen)
{
    size_t ab, ae, bb, be;
    dsort_keys_range(k, key, a, alen, &ab, &ae);
    dsort_keys_range(k, key, b, blen, &bb, &be);
    unsigned f = key->flags;
    const uchar *x = a + ab, *xe = a + ae, *y = b + bb, *ye = b + be;
    if (f & DSORT_KEY_RANDOM) { /* before V, which GNU lets go with R */
        int d = dsort_keys_random_cmp(k, f, x, xe, y, ye);
        return d ? d : text_cmp(f, x, xe, y, ye);
    }
    switch (f & KEY_KIND_FLAGS) {
    case DSORT_KEY_NUMERIC:
        return dsort_keys_numeric_cmp(x, xe, y, ye);
    case DSORT_KEY_HUMAN:
        return dsort_keys_human_cmp(f, x, xe, y, ye);
    case DSORT_KEY_GENERAL:
        return dsort_keys_general_cmp(f, x, xe, y, ye);
    case DSORT_KEY_MONTH:
        return dsort_keys_month(x, xe) - dsort_keys_month(y, ye);
    case DSORT_KEY_VERSION:
        return dsort_keys_version_cmp(f, x, xe, y, ye);
    default:
        return text_cmp(f, x, xe, y, ye);
    }
}

static inline int reversed(int d, bool rev)
{
    return rev ? (d < 0) - (d > 0) : d;
}

static inline int last_resort(const struct dsort_keys *k, const uchar *a, size_t alen,
                              const uchar *b, size_t blen)
{
    return reversed(bytes_cmp(a, alen, b, blen), k->reverse);
}

/* Keys from key[first] on: the first that differs decides. */
static int keys_from(const struct dsort_keys *k, size_t first, const uchar *a, size_t alen,
                     const uchar *b, size_t blen)
{
    for (size_t i = first; i < k->n; i++) {
        const struct dsort_key *key = &k->key[i];
        int d = key_cmp(k, key, a, alen, b, blen);
        if (d)
            return reversed(d, key->flags & DSORT_KEY_REVERSE);
    }
    return 0;
}

/* The keys alone from key[first] on; with no keys, the whole lines. */
static int keys_only_from(const struct dsort_keys *k, size_t first, const uchar *a, size_t alen,
                          const uchar *b, size_t blen)
{
    if (k->n == 0)
        return last_resort(k, a, alen, b, blen);
    return keys_from(k, first, a, alen, b, blen);
}

/* The full order from key[first] on: those keys, then the last resort. */
static int compare_from(const struct dsort_keys *k, size_t first, const uchar *a, size_t alen,
                        const uchar *b, size_t blen)
{
    if (k->n == 0)
        return last_resort(k, a, alen, b, blen);
    int d = keys_from(k, first, a, alen, b, blen);
    if (d || k->stable || k->unique)
        return d;
    return last_resort(k, a, alen, b, blen);
}

int dsort_keys_compare_keys(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                            const unsigned char *b, size_t blen)
{
    return keys_only_from(k, 0, a, alen, b, blen);
}

int dsort_keys_compare(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                       const unsigned char *b, size_t blen)
{
    return compare_from(k, 0, a, alen, b, blen);
}

int dsort_keys_compare_keys_after_first(const struct dsort_keys *k, const unsigned char *a,
                                        size_t alen, const unsigned char *b, size_t blen)
{
    return keys_only_from(k, 1, a, alen, b, blen);
}

int dsort_keys_compare_after_first(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                                   const unsigned char *b, size_t blen)
{
    return compare_from(k, 1, a, alen, b, blen);
}

/* ---- --debug ----------------------------------------------------------------------------- */

void dsort_keys_debug_span(const struct dsort_keys *k, size_t i, const uchar *s, size_t len,
                           size_t *b, size_t *e)
{
    const struct dsort_key *key = &k->key[i];
    size_t kb, ke;
    dsort_keys_range(k, key, s, len, &kb, &ke);
    *b = kb;
    *e = ke;
    if (!(key->flags & (DSORT_KEY_NUMERIC | DSORT_KEY_HUMAN | DSORT_KEY_GENERAL | DSORT_KEY_MONTH)))
        return;
    kb = skip_blanks(s, kb, ke);
    *b = *e = kb;
    if (key->flags & DSORT_KEY_MONTH) {
        if (dsort_keys_month(s + kb, s + ke))
            *e = kb + 3;
    } else if (key->flags & DSORT_KEY_GENERAL) {
        /* what strtold reads of it (a NUL-terminated copy) */
        size_t n = ke - kb;
        char small[GNUM_SHORT], *copy = n < sizeof small ? small : malloc(n + 1);
        if (!copy)
            return;
        memcpy(copy, s + kb, n);
        copy[n] = '\0';
        char *end = copy;
        (void)strtold(copy, &end);
        *e = kb + (size_t)(end - copy);
        if (copy != small)
            free(copy);
    } else {
        /* -n, -h: [-]digits[.digits] (GNU 9.1's --debug does not take the 0x80 that its -n
         * comparison skips), and -h's one suffix right after it (9.1's: KMGTPEZY and k) */
        size_t p = kb, digits = 0;
        if (p < ke && s[p] == '-')
            p++;
        for (; p < ke && is_digit(s[p]); p++)
            digits++;
        if (p < ke && s[p] == '.')
            for (p++; p < ke && is_digit(s[p]); p++)
                digits++;
        if (!digits)
            return;
        if ((key->flags & DSORT_KEY_HUMAN) && p < ke && s[p] && strchr("KMGTPEZYk", s[p]))
            p++;
        *e = p;
    }
}
