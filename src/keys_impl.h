/* keys_impl.h - what the files of the keys module share (keys.c: key boundaries and the
 * comparison; keys_spec.c: the options; keys_num.c: -n, -h, -M; keys_general.c: -g;
 * keys_version.c: -V; keys_prefix.c: the 64-bit prefixes). Internal to them: the rest of the
 * program uses keys.h. Everything here is local and cannot fail.
 */
#ifndef DSORT_KEYS_IMPL_H
#define DSORT_KEYS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keys.h"

typedef unsigned char uchar;

/* What dsort_keys_prefix encodes: nothing; the whole line's first 8 bytes; the first key's
 * first 8 bytes; the first key's -n value; the first key's -h suffix order and value. */
enum { PREFIX_NONE, PREFIX_LINE, PREFIX_KEY, PREFIX_NUMERIC, PREFIX_HUMAN, PREFIX_RANDOM };

/* The flags that make a key differ from plain byte comparison (GNU's default_key_compare);
 * r is not among them. */
#define KEY_OPTION_FLAGS                                                                           \
    (DSORT_KEY_SKIP_START_BLANKS | DSORT_KEY_SKIP_END_BLANKS | DSORT_KEY_DICT | DSORT_KEY_FOLD |   \
     DSORT_KEY_NONPRINT | DSORT_KEY_NUMERIC | DSORT_KEY_GENERAL | DSORT_KEY_HUMAN |                \
     DSORT_KEY_VERSION | DSORT_KEY_MONTH | DSORT_KEY_RANDOM)
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

/* Past blanks (GNU's field_sep) from p, up to end. */
static inline const uchar *skip_blanks_p(const uchar *p, const uchar *end)
{
    while (p < end && is_blank(*p))
        p++;
    return p;
}

/* Most -g numbers fit here; strtold reads a NUL-terminated copy (keys_general.c). */
#define GNUM_SHORT 64

/* The key's bytes in the line: [*b, *e) (keys.c). */
void dsort_keys_range(const struct dsort_keys *k, const struct dsort_key *key, const uchar *s,
                      size_t len, size_t *b, size_t *e);

/* keys_num.c. A -n number at [p, end) (after its blanks) into n, which points into it. */
void dsort_keys_num_parse(const uchar *p, const uchar *end, struct num *n);
/* -n on two keys (blanks first skipped). */
int dsort_keys_numeric_cmp(const uchar *a, const uchar *ae, const uchar *b, const uchar *be);
/* -h: the signed SI suffix order of the number at p (0 when none, or when it is zero); f: the
 * key folds case. */
int dsort_keys_human_order(const uchar *p, const uchar *end, bool f);
/* -h on two keys (blanks first skipped). */
int dsort_keys_human_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
                         const uchar *be);
/* -M: the month 1..12 of the key (after blanks), 0 when none. */
int dsort_keys_month(const uchar *p, const uchar *end);

/* -g (keys_general.c), as GNU compares strtold's values, NaNs included. */
int dsort_keys_general_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
                           const uchar *be);

/* R (keys_random.c): the keys' digests compared (0: equal digests), and the first 8 bytes of
 * a key's digest. */
int dsort_keys_random_cmp(const struct dsort_keys *k, unsigned flags, const uchar *a,
                          const uchar *ae, const uchar *b, const uchar *be);
uint64_t dsort_keys_random_prefix(const struct dsort_keys *k, unsigned flags, const uchar *p,
                                  const uchar *e);

/* -V (keys_version.c): gnulib's filenvercmp under the key's d, i and f. */
int dsort_keys_version_cmp(unsigned flags, const uchar *a, const uchar *ae, const uchar *b,
                           const uchar *be);

#endif
