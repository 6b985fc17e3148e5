/* format.h - record framing and keys.
 *
 * A format says how a byte stream splits into records and where each record's key lies.
 * This version knows fixed-size binary records ("gensort" = fixed:100:0:10, or
 * "fixed:SIZE:KEYOFF:KEYLEN"); keys compare as unsigned bytes (memcmp). Variable-length
 * formats (lines) will add a kind here; code that only needs framing and key comparison goes
 * through these functions so that it keeps working when they arrive.
 *
 * The ordering (struct dsort_order) is kept apart from the format: -r, -u and -s apply to
 * every format. All functions are local and pure.
 */
#ifndef DSORT_FORMAT_H
#define DSORT_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "error.h"

enum dsort_format_kind { DSORT_FORMAT_FIXED };

struct dsort_typedkey;

struct dsort_format {
    enum dsort_format_kind kind;
    size_t rec_size; /* bytes per record, >= 1 */
    size_t key_off;  /* key's first byte within the record */
    size_t key_len;  /* key length in bytes, >= 1, key_off + key_len <= rec_size */
    char name[64];   /* canonical spelling, e.g. "fixed:100:0:10" */
    /* Typed keys (typedkey.h, finished for rec_size) that replace key_off/key_len where
     * supported (dsort_vsum: dsort-validate), or NULL. Not owned; never set by the parser. */
    const struct dsort_typedkey *typed;
};

struct dsort_order {
    int reverse; /* -r: descending keys */
    int unique;  /* -u: keep the first record (in input order) of each run of equal keys */
    int stable;  /* -s: equal keys keep input order (also implied by -u) */
};

/* Parse "gensort" or "fixed:SIZE:KEYOFF:KEYLEN". Returns DSORT_EINVAL with a message naming the
 * spec on a bad value; *fmt is then unspecified. */
enum dsort_status dsort_format_parse(const char *spec, struct dsort_format *fmt,
                                     struct dsort_error *err);

/* The gensort format: 100-byte records, 10-byte key at offset 0. */
void dsort_format_gensort(struct dsort_format *fmt);

static inline const unsigned char *dsort_format_key(const struct dsort_format *fmt,
                                                    const unsigned char *rec)
{
    return rec + fmt->key_off;
}

/* Compare the keys of two records as unsigned bytes: <0, 0, >0. Ignores the order. */
static inline int dsort_format_key_cmp(const struct dsort_format *fmt, const unsigned char *a,
                                       const unsigned char *b)
{
    return memcmp(a + fmt->key_off, b + fmt->key_off, fmt->key_len);
}

/* Compare keys under an order: the result is negated for -r. */
static inline int dsort_order_key_cmp(const struct dsort_format *fmt, const struct dsort_order *ord,
                                      const unsigned char *a, const unsigned char *b)
{
    int c = dsort_format_key_cmp(fmt, a, b);
    return ord->reverse ? -c : c;
}

/* The full comparison of two records under an order: the key bytes, then the "tie" bytes,
 * then nothing (equal). By default the tie bytes are the whole record, GNU sort's
 * last-resort comparison, and -r reverses both; with -s or -u there is no last resort, and
 * equal keys keep input order (the caller breaks those ties by position: cursor order in a
 * merge, index in keysort, or an 8-byte position suffix on spilled records).
 * The byte ranges may reach beyond fmt->rec_size when records carry such a suffix. */
struct dsort_cmp {
    size_t key_off, key_len;
    size_t tie_off, tie_len; /* tie_len 0: no last resort */
    int reverse;             /* keys descending */
    int tie_reverse;         /* tie bytes descending */
};

/* The comparison that fmt and ord define (see above). */
void dsort_cmp_init(struct dsort_cmp *c, const struct dsort_format *fmt,
                    const struct dsort_order *ord);

/* Does the order have a last resort (whole-record comparison)? */
static inline int dsort_order_last_resort(const struct dsort_order *ord)
{
    return !ord->stable && !ord->unique;
}

/* 8 bytes at p as a big-endian number: memcmp's order of 8-byte strings as an integer's (the
 * radix sort's prefixes, the merge's first comparison). */
static inline uint64_t dsort_load_be64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline int dsort_cmp_keys(const struct dsort_cmp *c, const unsigned char *a,
                                 const unsigned char *b)
{
    int r = memcmp(a + c->key_off, b + c->key_off, c->key_len);
    return c->reverse ? -r : r;
}

static inline int dsort_cmp_records(const struct dsort_cmp *c, const unsigned char *a,
                                    const unsigned char *b)
{
    int r = memcmp(a + c->key_off, b + c->key_off, c->key_len);
    if (r)
        return c->reverse ? -r : r;
    if (!c->tie_len)
        return 0;
    r = memcmp(a + c->tie_off, b + c->tie_off, c->tie_len);
    return c->tie_reverse ? -r : r;
}

#endif
