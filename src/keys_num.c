/* keys_num.c - -n, -h and -M keys (keys_impl.h). */
#include "keys_impl.h"

#include <string.h>

void dsort_keys_num_parse(const uchar *p, const uchar *end, struct num *n)
{
    struct cstr s = {p, end};
    size_t i = 0;
    n->neg = at(&s, 0) == '-';
    i = n->neg;
    while (at(&s, i) == '0' || at(&s, i) == THOUSANDS_SEP)
        i++;
    n->ip = p + i;
    n->idigits = 0;
    size_t istart = i, iend = i;
    while (is_digit(at(&s, i))) {
        n->idigits++;
        i++;
        iend = i;
        while (at(&s, i) == THOUSANDS_SEP)
            i++;
    }
    n->ilen = iend - istart;
    n->fp = p + i;
    n->flen = 0;
    if (at(&s, i) == '.') {
        /* A separator after the last integer digit is skipped, so "1\x80.5" is 1.5. */
        i++;
        n->fp = p + i;
        size_t f = 0, last = 0;
        while (is_digit(at(&s, i + f))) {
            f++;
            if (at(&s, i + f - 1) != '0')
                last = f;
        }
        n->flen = last;
    }
    if (n->idigits == 0 && n->flen == 0)
        n->neg = false; /* -0 is 0 */
}

/* Compare magnitudes. */
static int num_mag_cmp(const struct num *a, const struct num *b)
{
    if (a->idigits != b->idigits)
        return a->idigits < b->idigits ? -1 : 1;
    const uchar *x = a->ip, *xe = a->ip + a->ilen, *y = b->ip, *ye = b->ip + b->ilen;
    while (x < xe && y < ye) {
        if (*x == THOUSANDS_SEP) {
            x++;
            continue;
        }
        if (*y == THOUSANDS_SEP) {
            y++;
            continue;
        }
        if (*x != *y)
            return *x < *y ? -1 : 1;
        x++;
        y++;
    }
    size_t n = a->flen < b->flen ? a->flen : b->flen;
    int d = n ? memcmp(a->fp, b->fp, n) : 0;
    if (d)
        return d < 0 ? -1 : 1;
    return (a->flen > b->flen) - (a->flen < b->flen);
}

static int num_cmp_parsed(const struct num *a, const struct num *b)
{
    if (a->neg != b->neg)
        return a->neg ? -1 : 1;
    int d = num_mag_cmp(a, b);
    return a->neg ? -d : d;
}

int dsort_keys_numeric_cmp(const uchar *a, const uchar *ae, const uchar *b, const uchar *be)
{
    struct num x, y;
    dsort_keys_num_parse(skip_blanks_p(a, ae), ae, &x);
    dsort_keys_num_parse(skip_blanks_p(b, be), be, &y);
    return num_cmp_parsed(&x, &y);
}

/* -h: the SI suffix right after the number (coreutils 9.1 knows K M G T P E Z Y and k),
 * signed, counts only if some digit is nonzero; a larger suffix wins before the numbers are
 * compared as -n does. Unlike the -n part, the suffix scan does not skip byte 0x80. */
static int unit_order(uchar c)
{
    static const char units[] = "KMGTPEZY";
    if (c == 'k')
        return 1;
    const char *u = c ? strchr(units, c) : NULL;
    return u ? (int)(u - units) + 1 : 0;
}

int dsort_keys_human_order(const uchar *p, const uchar *end, bool f)
{
    struct cstr s = {p, end};
    size_t i = at(&s, 0) == '-';
    bool neg = i;
    bool nonzero = false;
    while (is_digit(at(&s, i)))
        nonzero |= at(&s, i++) != '0';
    if (at(&s, i) == '.') {
        i++;
        while (is_digit(at(&s, i)))
            nonzero |= at(&s, i++) != '0';
    }
    if (!nonzero)
        return 0;
    uchar c = at(&s, i);
    int order = unit_order(f ? fold(c) : c);
    return neg ? -order : order;
}

int dsort_keys_human_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
                         const uchar *be)
{
    bool f = flags & DSORT_KEY_FOLD;
    a = skip_blanks_p(a, ae);
    b = skip_blanks_p(b, be);
    int d = dsort_keys_human_order(a, ae, f) - dsort_keys_human_order(b, be, f);
    if (d)
        return d;
    return dsort_keys_numeric_cmp(a, ae, b, be);
}

/* -M: the first three bytes after blanks, case-folded, as a month (0 when none). */
int dsort_keys_month(const uchar *p, const uchar *end)
{
    static const char names[12][4] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                      "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
    struct cstr s = {skip_blanks_p(p, end), end};
    uchar c0 = fold(at(&s, 0)), c1 = fold(at(&s, 1)), c2 = fold(at(&s, 2));
    for (int m = 0; m < 12; m++)
        if (c0 == (uchar)names[m][0] && c1 == (uchar)names[m][1] && c2 == (uchar)names[m][2])
            return m + 1;
    return 0;
}
