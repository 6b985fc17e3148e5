#include "keys.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char uchar;

/* What dsort_keys_prefix encodes: nothing; the whole line's first 8 bytes; the first key's
 * first 8 bytes; the first key's -n value; the first key's -h suffix order and value. */
enum { PREFIX_NONE, PREFIX_LINE, PREFIX_KEY, PREFIX_NUMERIC, PREFIX_HUMAN };

/* The flags that make a key differ from plain byte comparison (GNU's default_key_compare);
 * r is not among them. */
#define KEY_OPTION_FLAGS                                                                           \
    (DSORT_KEY_SKIP_START_BLANKS | DSORT_KEY_SKIP_END_BLANKS | DSORT_KEY_DICT | DSORT_KEY_FOLD |   \
     DSORT_KEY_NONPRINT | DSORT_KEY_NUMERIC | DSORT_KEY_GENERAL | DSORT_KEY_HUMAN |                \
     DSORT_KEY_VERSION | DSORT_KEY_MONTH)
#define KEY_IGNORE_FLAGS (DSORT_KEY_DICT | DSORT_KEY_NONPRINT)
#define KEY_KIND_FLAGS                                                                             \
    (DSORT_KEY_NUMERIC | DSORT_KEY_GENERAL | DSORT_KEY_HUMAN | DSORT_KEY_VERSION | DSORT_KEY_MONTH)

/* ---- C-locale character classes ---------------------------------------------------------- */

/* GNU's field_sep(): isblank() plus newline. */
static const bool blank_table[256] = {[' '] = true, ['\t'] = true, ['\n'] = true};

static inline bool is_blank(uchar c)
{
    return blank_table[c];
}

static inline bool is_digit(uchar c)
{
    return (unsigned)(c - '0') <= 9;
}

static inline bool is_alpha(uchar c)
{
    return (unsigned)((c | 0x20) - 'a') <= 'z' - 'a';
}

static inline bool is_alnum(uchar c)
{
    return is_digit(c) || is_alpha(c);
}

/* isspace() in the C locale: what strtold skips. */
static inline bool is_space(uchar c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline uchar fold(uchar c)
{
    return (unsigned)(c - 'a') <= 'z' - 'a' ? (uchar)(c - 'a' + 'A') : c;
}

/* Is c left out under the key's d or i? (d wins when both are set: finish keeps only d.) */
static inline bool ignored(unsigned flags, uchar c)
{
    if (flags & DSORT_KEY_DICT)
        return !is_alnum(c) && !is_blank(c);
    if (flags & DSORT_KEY_NONPRINT)
        return c < 0x20 || c > 0x7e;
    return false;
}

/* ---- Setup ------------------------------------------------------------------------------- */

void dsort_keys_init(struct dsort_keys *k)
{
    memset(k, 0, sizeof *k);
    k->tab = -1;
}

/* One option letter of a key or of the global options; pos is 1 for POS1, 2 for POS2 and 0
 * for a global option (where b means both). Returns false for a letter that is not one. */
static bool option_flag(char c, int pos, unsigned *flags)
{
    switch (c) {
    case 'b':
        if (pos != 2)
            *flags |= DSORT_KEY_SKIP_START_BLANKS;
        if (pos != 1)
            *flags |= DSORT_KEY_SKIP_END_BLANKS;
        return true;
    case 'd':
        *flags |= DSORT_KEY_DICT;
        return true;
    case 'f':
        *flags |= DSORT_KEY_FOLD;
        return true;
    case 'g':
        *flags |= DSORT_KEY_GENERAL;
        return true;
    case 'h':
        *flags |= DSORT_KEY_HUMAN;
        return true;
    case 'i':
        *flags |= DSORT_KEY_NONPRINT;
        return true;
    case 'M':
        *flags |= DSORT_KEY_MONTH;
        return true;
    case 'n':
        *flags |= DSORT_KEY_NUMERIC;
        return true;
    case 'r':
        *flags |= DSORT_KEY_REVERSE;
        return true;
    case 'V':
        *flags |= DSORT_KEY_VERSION;
        return true;
    default:
        return false;
    }
}

/* Parse the option letters at s into flags; returns where they stop. */
static const char *parse_options(const char *s, int pos, unsigned *flags)
{
    while (*s && option_flag(*s, pos, flags))
        s++;
    return s;
}

/* A field or character count as GNU reads it (xstrtoumax): optional white space, an
 * optional '+', decimal digits; too large a value becomes SIZE_MAX. Returns the end of the
 * digits, or NULL when there are none (or a '-'). */
static const char *parse_count(const char *s, size_t *val)
{
    while (is_space((uchar)*s))
        s++;
    if (*s == '+')
        s++;
    if (!is_digit((uchar)*s))
        return NULL;
    size_t v = 0;
    for (; is_digit((uchar)*s); s++) {
        size_t d = (size_t)(*s - '0');
        v = v > (SIZE_MAX - d) / 10 ? SIZE_MAX : v * 10 + d;
    }
    *val = v;
    return s;
}

/* gnulib's quote() in the C locale, which GNU sort uses in its messages: 'text', with C
 * escapes for \a \b \f \n \r \t \v, \\ and \', and octal for other bytes outside
 * 0x20..0x7e. Truncated to fit size. */
static const char *quoted(const char *s, char *buf, size_t size)
{
    static const char plain[] = "\a\b\f\n\r\t\v\\'";
    static const char named[] = "abfnrtv\\'";
    size_t o = 0;
    buf[o++] = '\'';
    for (; *s && o + 6 < size; s++) {
        uchar c = (uchar)*s;
        const char *e = strchr(plain, c);
        if (e) {
            buf[o++] = '\\';
            buf[o++] = named[e - plain];
        } else if (c < 0x20 || c > 0x7e) {
            buf[o++] = '\\';
            buf[o++] = (char)('0' + (c >> 6));
            buf[o++] = (char)('0' + ((c >> 3) & 7));
            buf[o++] = (char)('0' + (c & 7));
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

static enum dsort_status bad_spec(struct dsort_error *err, const char *why, const char *spec)
{
    char q[256];
    return DSORT_ERR(err, DSORT_EINVAL, 0, "%s: invalid field specification %s", why,
                     quoted(spec, q, sizeof q));
}

static enum dsort_status bad_count(struct dsort_error *err, const char *why, const char *at)
{
    char q[256];
    return DSORT_ERR(err, DSORT_EINVAL, 0, "%s: invalid count at start of %s", why,
                     quoted(at, q, sizeof q));
}

enum dsort_status dsort_keys_add(struct dsort_keys *k, const char *spec, struct dsort_error *err)
{
    struct dsort_key key = {0, 0, DSORT_KEY_EOL, 0, 0};
    const char *s = parse_count(spec, &key.sfield);
    if (!s)
        return bad_count(err, "invalid number at field start", spec);
    if (key.sfield-- == 0)
        return bad_spec(err, "field number is zero", spec);
    if (*s == '.') {
        const char *at = s + 1;
        if (!(s = parse_count(at, &key.schar)))
            return bad_count(err, "invalid number after '.'", at);
        if (key.schar-- == 0)
            return bad_spec(err, "character offset is zero", spec);
    }
    s = parse_options(s, 1, &key.flags);
    if (*s == ',') {
        const char *at = s + 1;
        if (!(s = parse_count(at, &key.efield)))
            return bad_count(err, "invalid number after ','", at);
        if (key.efield-- == 0)
            return bad_spec(err, "field number is zero", spec);
        if (*s == '.') {
            at = s + 1;
            if (!(s = parse_count(at, &key.echar)))
                return bad_count(err, "invalid number after '.'", at);
        }
        s = parse_options(s, 2, &key.flags);
    }
    if (*s == 'R')
        return DSORT_ERR(err, DSORT_EINVAL, 0, "random sort ('R' in '%s') is not supported", spec);
    if (*s)
        return bad_spec(err, "stray character in field spec", spec);
    if (k->n == DSORT_KEYS_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "too many keys (at most %d): '%s'", DSORT_KEYS_MAX,
                         spec);
    k->key[k->n++] = key;
    k->finished = 0;
    return DSORT_OK;
}

enum dsort_status dsort_keys_set_tab(struct dsort_keys *k, const char *arg, struct dsort_error *err)
{
    int tab = (uchar)arg[0];
    if (!arg[0])
        return DSORT_ERR(err, DSORT_EINVAL, 0, "empty tab");
    if (arg[1]) {
        if (strcmp(arg, "\\0") != 0) {
            char q[256];
            return DSORT_ERR(err, DSORT_EINVAL, 0, "multi-character tab %s",
                             quoted(arg, q, sizeof q));
        }
        tab = 0;
    }
    if (k->tab >= 0 && k->tab != tab)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "incompatible tabs");
    k->tab = tab;
    return DSORT_OK;
}

enum dsort_status dsort_keys_set_global(struct dsort_keys *k, char opt, struct dsort_error *err)
{
    if (opt == 'R')
        return DSORT_ERR(err, DSORT_EINVAL, 0, "random sort (-R) is not supported");
    unsigned flags = k->global;
    if (!option_flag(opt, 0, &flags))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "invalid ordering option -- '%c'", opt);
    k->global = flags;
    k->finished = 0;
    return DSORT_OK;
}

/* GNU's spelling of a key's options in the "incompatible" message: b and r left out, d or
 * i (d when both), in the order of its key_to_opts. */
static void incompatible_letters(unsigned flags, char *out)
{
    if (flags & DSORT_KEY_DICT)
        *out++ = 'd';
    if (flags & DSORT_KEY_FOLD)
        *out++ = 'f';
    if (flags & DSORT_KEY_GENERAL)
        *out++ = 'g';
    if (flags & DSORT_KEY_HUMAN)
        *out++ = 'h';
    if ((flags & KEY_IGNORE_FLAGS) == DSORT_KEY_NONPRINT)
        *out++ = 'i';
    if (flags & DSORT_KEY_MONTH)
        *out++ = 'M';
    if (flags & DSORT_KEY_NUMERIC)
        *out++ = 'n';
    if (flags & DSORT_KEY_VERSION)
        *out++ = 'V';
    *out = '\0';
}

/* At most one of n, g, h, M and "V or d or i" (GNU's check_ordering_compatibility). */
static bool compatible(unsigned f)
{
    int kinds = !!(f & DSORT_KEY_NUMERIC) + !!(f & DSORT_KEY_GENERAL) + !!(f & DSORT_KEY_HUMAN) +
                !!(f & DSORT_KEY_MONTH) + !!(f & (DSORT_KEY_VERSION | KEY_IGNORE_FLAGS));
    return kinds <= 1;
}

enum dsort_status dsort_keys_finish(struct dsort_keys *k, struct dsort_error *err)
{
    struct dsort_key keys[DSORT_KEYS_MAX];
    size_t n = k->n;
    memcpy(keys, k->key, n * sizeof keys[0]);
    for (size_t i = 0; i < n; i++)
        if (!(keys[i].flags & (KEY_OPTION_FLAGS | DSORT_KEY_REVERSE)))
            keys[i].flags = k->global;
    if (n == 0 && (k->global & KEY_OPTION_FLAGS))
        keys[n++] = (struct dsort_key){0, 0, DSORT_KEY_EOL, 0, k->global};
    for (size_t i = 0; i < n; i++) {
        if (!compatible(keys[i].flags)) {
            char opts[16];
            incompatible_letters(keys[i].flags, opts);
            return DSORT_ERR(err, DSORT_EINVAL, 0, "options '-%s' are incompatible", opts);
        }
        if (keys[i].flags & DSORT_KEY_DICT)
            keys[i].flags &= ~(unsigned)DSORT_KEY_NONPRINT;
    }
    memcpy(k->key, keys, n * sizeof keys[0]);
    k->n = n;
    k->reverse = !!(k->global & DSORT_KEY_REVERSE);
    if (n == 0)
        k->prefix_mode = PREFIX_LINE;
    else if (!(k->key[0].flags & (KEY_KIND_FLAGS | KEY_IGNORE_FLAGS)))
        k->prefix_mode = PREFIX_KEY;
    else if ((k->key[0].flags & KEY_KIND_FLAGS) == DSORT_KEY_NUMERIC)
        k->prefix_mode = PREFIX_NUMERIC;
    else if ((k->key[0].flags & KEY_KIND_FLAGS) == DSORT_KEY_HUMAN)
        k->prefix_mode = PREFIX_HUMAN;
    else
        k->prefix_mode = PREFIX_NONE;
    k->finished = 1;
    return DSORT_OK;
}

int dsort_keys_plain(const struct dsort_keys *k)
{
    return k->n == 0 && !k->reverse;
}

int dsort_keys_has_prefix(const struct dsort_keys *k)
{
    return k->prefix_mode != PREFIX_NONE;
}

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
static void key_range(const struct dsort_keys *k, const struct dsort_key *key, const uchar *s,
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

/* ---- Numbers as C strings ------------------------------------------------------------------
 * GNU hands -n, -h, -g and -M keys to C string functions, so a key ends at its first NUL.
 * `at` reads such a string: NUL at and past the end. */

struct cstr {
    const uchar *p, *end;
};

static inline uchar at(const struct cstr *s, size_t i)
{
    return i < (size_t)(s->end - s->p) ? s->p[i] : 0;
}

/* In the C locale GNU sort has no thousands separator, and marks that with the value
 * CHAR_MAX + 1 = 128, which gnulib's strnumcmp compares against unsigned bytes: so byte
 * 0x80 acts as a thousands separator in -n and -h numbers (it is skipped anywhere in the
 * integer part). */
#define THOUSANDS_SEP 0x80

/* A -n number: sign, the integer digits (leading zeros and separators dropped), and the
 * fraction digits (trailing zeros dropped). */
struct num {
    bool neg;
    const uchar *ip; /* integer digits, possibly with separators between them */
    size_t ilen;     /* bytes of ip */
    size_t idigits;  /* digits in ip */
    const uchar *fp; /* fraction digits */
    size_t flen;
};

static void num_parse(const uchar *p, const uchar *end, struct num *n)
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

static const uchar *skip_blanks_p(const uchar *p, const uchar *end)
{
    while (p < end && is_blank(*p))
        p++;
    return p;
}

static int numeric_cmp(const uchar *a, const uchar *ae, const uchar *b, const uchar *be)
{
    struct num x, y;
    num_parse(skip_blanks_p(a, ae), ae, &x);
    num_parse(skip_blanks_p(b, be), be, &y);
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

static int human_order(const uchar *p, const uchar *end, bool f)
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

static int human_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
                     const uchar *be)
{
    bool f = flags & DSORT_KEY_FOLD;
    a = skip_blanks_p(a, ae);
    b = skip_blanks_p(b, be);
    int d = human_order(a, ae, f) - human_order(b, be, f);
    if (d)
        return d;
    return numeric_cmp(a, ae, b, be);
}

/* -M: the first three bytes after blanks, case-folded, as a month (0 when none). */
static int month_of(const uchar *p, const uchar *end)
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

/* ---- -g: strtold ------------------------------------------------------------------------- */

/* Most numbers fit here; strtold reads a NUL-terminated copy. */
#define GNUM_SHORT 64
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
    if (!hex && !is_digit(at(&s, i)) && !(at(&s, i) == '.' && is_digit(at(&s, i + 1)))) {
        /* inf, nan, nan(SEQ) or nothing. */
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
    /* The exponent after 'e' (decimal) or 'p' (hexadecimal, a power of 2), saturated far
     * beyond where any value becomes 0 or infinity. */
    long long exp = 0;
    if ((at(&s, i) | 0x20) == (hex ? 'p' : 'e')) {
        size_t j = i + 1;
        bool eneg = false;
        if (at(&s, j) == '+' || at(&s, j) == '-')
            eneg = at(&s, j++) == '-';
        for (; is_digit(at(&s, j)); j++)
            if (exp < GNUM_EXP_SATURATE)
                exp = exp * 10 + (at(&s, j) - '0');
        if (eneg)
            exp = -exp;
    }
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

static int general_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
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

static int version_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
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

/* ---- Comparison -------------------------------------------------------------------------- */

static int key_cmp(const struct dsort_keys *k, const struct dsort_key *key, const uchar *a,
                   size_t alen, const uchar *b, size_t blen)
{
    size_t ab, ae, bb, be;
    key_range(k, key, a, alen, &ab, &ae);
    key_range(k, key, b, blen, &bb, &be);
    unsigned f = key->flags;
    const uchar *x = a + ab, *xe = a + ae, *y = b + bb, *ye = b + be;
    switch (f & KEY_KIND_FLAGS) {
    case DSORT_KEY_NUMERIC:
        return numeric_cmp(x, xe, y, ye);
    case DSORT_KEY_HUMAN:
        return human_cmp(f, x, xe, y, ye);
    case DSORT_KEY_GENERAL:
        return general_cmp(f, x, xe, y, ye);
    case DSORT_KEY_MONTH:
        return month_of(x, xe) - month_of(y, ye);
    case DSORT_KEY_VERSION:
        return version_cmp(f, x, xe, y, ye);
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
    if (k->n == 0)
        return last_resort(k, a, alen, b, blen);
    return keys_from(k, 0, a, alen, b, blen);
}

int dsort_keys_compare(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                       const unsigned char *b, size_t blen)
{
    return compare_from(k, 0, a, alen, b, blen);
}

int dsort_keys_compare_keys_after_first(const struct dsort_keys *k, const unsigned char *a,
                                        size_t alen, const unsigned char *b, size_t blen)
{
    if (k->n == 0)
        return last_resort(k, a, alen, b, blen);
    return keys_from(k, 1, a, alen, b, blen);
}

int dsort_keys_compare_after_first(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                                   const unsigned char *b, size_t blen)
{
    return compare_from(k, 1, a, alen, b, blen);
}

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
 * magnitudes go lower, and the inexact bit reads 0 there. A number that num_parse reads as
 * zero ("-0", "-", ".", "0.000", "", "abc") is class 01 with zeros. Byte 0x80 among the
 * integer digits is skipped, as num_mag_cmp skips it.
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
        key_range(k, &k->key[0], line, len, &b, &e);
        p = line + b;
        n = e - b;
        f = k->key[0].flags & DSORT_KEY_FOLD;
    }
    uint64_t v = 0;
    if (k->prefix_mode == PREFIX_NUMERIC || k->prefix_mode == PREFIX_HUMAN) {
        /* As numeric_cmp and human_cmp read the key. */
        const uchar *q = skip_blanks_p(p, p + n);
        struct num x;
        num_parse(q, p + n, &x);
        if (k->prefix_mode == PREFIX_NUMERIC) {
            v = num_prefix(&x, &numeric_layout);
        } else {
            /* The suffix order, -8..8, first; then the value in the low 59 bits. */
            unsigned shift = 2 + num_bits(&human_layout);
            v = (uint64_t)(human_order(q, p + n, f) + 8) << shift | num_prefix(&x, &human_layout);
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
    case PREFIX_NUMERIC:
        return num_prefix_exact(v, &numeric_layout);
    case PREFIX_HUMAN:
        /* The suffix orders are equal with the prefixes; then the values decide. */
        return num_prefix_exact(v, &human_layout);
    default:
        return (v & 0xFF) < 8;
    }
}

/* ---- --debug ----------------------------------------------------------------------------- */

void dsort_keys_debug_span(const struct dsort_keys *k, size_t i, const uchar *s, size_t len,
                           size_t *b, size_t *e)
{
    const struct dsort_key *key = &k->key[i];
    size_t kb, ke;
    key_range(k, key, s, len, &kb, &ke);
    *b = kb;
    *e = ke;
    if (!(key->flags & (DSORT_KEY_NUMERIC | DSORT_KEY_HUMAN | DSORT_KEY_GENERAL | DSORT_KEY_MONTH)))
        return;
    kb = skip_blanks(s, kb, ke);
    *b = *e = kb;
    if (key->flags & DSORT_KEY_MONTH) {
        if (month_of(s + kb, s + ke))
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
