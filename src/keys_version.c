/* keys_version.c - -V keys (keys_impl.h). */
#include "keys_impl.h"

/* ---- -V: gnulib's filenvercmp as in coreutils 9.1 -----------------------------------------
 * Works on the key as d, i and f leave it: ignored bytes are skipped on the fly and f folds
 * letters. Positions are pointers into the key; `end` bounds a view. */

struct vview {
    unsigned flags;
};

static inline const uchar *vskip(const struct vview *v, const uchar *p, const uchar *end)
{
    if (v->flags & KEY_IGNORE_FLAGS)
        while (p < end && ignored(v->flags, *p))
            p++;
    return p;
}

static inline uchar vchar(const struct vview *v, const uchar *p)
{
    return (v->flags & DSORT_KEY_FOLD) ? fold(*p) : *p;
}

/* Rank of the byte at p for the non-digit parts: the end before everything but '~', '~'
 * first, letters next, then every other byte. */
static inline int vorder(const struct vview *v, const uchar *p, const uchar *end)
{
    if (p >= end)
        return -1;
    uchar c = vchar(v, p);
    if (is_digit(c))
        return 0;
    if (is_alpha(c))
        return c;
    if (c == '~')
        return -2;
    return c + 256;
}

static inline bool vsuffix_char(uchar c)
{
    return is_alnum(c) || c == '~';
}

/* Where the file suffix starts: the longest tail matching (\.[A-Za-z~][A-Za-z0-9~]*)*.
 * Returns end when there is none. In the gnulib of coreutils 9.1 the suffix may be the
 * whole string, so all of ".a" is a suffix but none of "..a" is: ".a" sorts before ".0"
 * and "..a" after ".a". (Later gnulib never takes the whole string.) */
static const uchar *vprefix_end(const struct vview *v, const uchar *p, const uchar *end)
{
    p = vskip(v, p, end);
    const uchar *prefix = p;
    for (;;) {
        for (;;) {
            if (p >= end || vchar(v, p) != '.')
                break;
            const uchar *q = vskip(v, p + 1, end);
            if (q >= end || !(is_alpha(vchar(v, q)) || vchar(v, q) == '~'))
                break;
            p = vskip(v, q + 1, end);
            while (p < end && vsuffix_char(vchar(v, p)))
                p = vskip(v, p + 1, end);
        }
        if (p >= end)
            return prefix;
        p = vskip(v, p + 1, end);
        prefix = p;
    }
}

/* The Debian version comparison (dpkg's verrevcmp) of [a, ae) and [b, be). */
static int vrevcmp(const struct vview *v, const uchar *a, const uchar *ae, const uchar *b,
                   const uchar *be)
{
    a = vskip(v, a, ae);
    b = vskip(v, b, be);
    while (a < ae || b < be) {
        while ((a < ae && !is_digit(vchar(v, a))) || (b < be && !is_digit(vchar(v, b)))) {
            int x = vorder(v, a, ae), y = vorder(v, b, be);
            if (x != y)
                return x - y;
            a = vskip(v, a + 1, ae);
            b = vskip(v, b + 1, be);
        }
        while (a < ae && vchar(v, a) == '0')
            a = vskip(v, a + 1, ae);
        while (b < be && vchar(v, b) == '0')
            b = vskip(v, b + 1, be);
        int first = 0;
        while (a < ae && b < be && is_digit(vchar(v, a)) && is_digit(vchar(v, b))) {
            if (!first)
                first = vchar(v, a) - vchar(v, b);
            a = vskip(v, a + 1, ae);
            b = vskip(v, b + 1, be);
        }
        if (a < ae && is_digit(vchar(v, a)))
            return 1;
        if (b < be && is_digit(vchar(v, b)))
            return -1;
        if (first)
            return first;
    }
    return 0;
}

/* Rank of a name among "", ".", ".." and other leading-dot names: 0 "", 1 ".", 2 "..",
 * 3 other names starting with '.', 4 the rest. */
static int vdot_rank(const struct vview *v, const uchar *p, const uchar *end)
{
    p = vskip(v, p, end);
    if (p >= end)
        return 0;
    if (vchar(v, p) != '.')
        return 4;
    const uchar *q = vskip(v, p + 1, end);
    if (q >= end)
        return 1;
    if (vchar(v, q) == '.' && vskip(v, q + 1, end) >= end)
        return 2;
    return 3;
}

int dsort_keys_version_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
                           const uchar *be)
{
    struct vview v = {flags};
    int ra = vdot_rank(&v, a, ae), rb = vdot_rank(&v, b, be);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (ra < 3)
        return 0;
    const uchar *pa = vprefix_end(&v, a, ae), *pb = vprefix_end(&v, b, be);
    int d = vrevcmp(&v, a, pa, b, pb);
    if (d)
        return d;
    /* Equal without their suffixes: compare again with them, when either has one. */
    if (vskip(&v, pa, ae) >= ae && vskip(&v, pb, be) >= be)
        return 0;
    return vrevcmp(&v, a, ae, b, be);
}
