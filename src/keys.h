/* keys.h - GNU sort's line order in the C locale: -k, -t, -b -d -f -i -n -g -h -V -M -r, -s, -u.
 *
 * A struct dsort_keys holds what sort's ordering options say, and compares two lines (bytes,
 * any values including NUL and bytes >= 0x80, without their terminator) exactly as
 * `LC_ALL=C sort` of GNU coreutils 9.1 orders them:
 *
 *   - each -k key in turn, with its own options; the first key that differs decides, and
 *     its 'r' reverses that decision;
 *   - then, unless -s or -u, the "last resort": the whole lines as unsigned bytes, the
 *     shorter first on a common prefix, reversed by the global -r.
 *
 * Usage: dsort_keys_init(), then the options in command-line order (dsort_keys_add for -k,
 * dsort_keys_set_tab for -t, dsort_keys_set_global for each of -bdfghiMnrV), set `stable`
 * and `unique`, then dsort_keys_finish(). Only then may the compare and prefix functions be
 * called; the struct is read-only from there on, so any number of threads may share it.
 *
 * GNU's rules that finish() applies:
 *   - a key with no options of its own (not even 'b') inherits every global option, the
 *     global -r included; a key with any option inherits nothing;
 *   - with no -k at all, global options other than -r make one key spanning the whole line;
 *     -r alone only reverses the last resort (which is then the whole order);
 *   - a key may use at most one of n, g, h, M, and "V or d or i" ("options '-gn' are
 *     incompatible"); d wins over i when both are given. Global options that no key
 *     inherits are never checked, as in GNU.
 *
 * Fields: with -t SEP, each SEP ends a field (empty fields count). By default a field is a
 * maximal run of blanks followed by non-blanks, so leading blanks belong to the field;
 * blanks are space, tab and newline (newline matters only for NUL-terminated lines).
 * R (-R, --sort=random) orders keys by the MD5 digest of a 16-byte seed followed by the key
 * (after its d, i and f), equal digests by the keys themselves, as GNU sort does in the C
 * locale: the same seed gives GNU's order, at any rank count. Locales other than C are not
 * supported.
 *
 * Where GNU 9.1's behaviour is undefined, this code picks a definite one: two NaN keys with
 * the same bits are equal (GNU memcmps long doubles including uninitialized padding), and a
 * character offset near SIZE_MAX (-k1.99999999999999999999) is clamped to the end of the
 * line (GNU's pointer arithmetic wraps around to before the line). GNU's x86 quirk that byte
 * 0x80 acts as a thousands separator in -n and -h numbers is kept on every platform; other
 * NaNs order by memcmp of their long double bytes (on x86: payload first, then the sign).
 *
 * Errors: the setup functions return DSORT_EINVAL with GNU's message (without the "sort: "
 * prefix) in err, e.g. "field number is zero: invalid field specification '0'"; the struct
 * then keeps its previous keys and settings. The compare and prefix functions cannot fail,
 * never allocate, and use at most about 12 KiB of stack (for -g keys of more than 64 bytes).
 */
#ifndef DSORT_KEYS_H
#define DSORT_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define DSORT_KEYS_MAX 32

/* Per-key and global option flags. */
enum {
    DSORT_KEY_SKIP_START_BLANKS = 1, /* 'b' on POS1 (or global -b) */
    DSORT_KEY_SKIP_END_BLANKS = 2,   /* 'b' on POS2 (or global -b) */
    DSORT_KEY_DICT = 4,              /* d: only blanks and alphanumerics count */
    DSORT_KEY_FOLD = 8,              /* f: a-z compare as A-Z */
    DSORT_KEY_NONPRINT = 16,         /* i: only bytes 0x20..0x7e count */
    DSORT_KEY_NUMERIC = 32,          /* n */
    DSORT_KEY_GENERAL = 64,          /* g */
    DSORT_KEY_HUMAN = 128,           /* h */
    DSORT_KEY_VERSION = 256,         /* V */
    DSORT_KEY_MONTH = 512,           /* M */
    DSORT_KEY_REVERSE = 1024,        /* r */
    DSORT_KEY_RANDOM = 2048          /* R: the keyed hash order (dsort_keys_set_random_seed) */
};

/* dsort_key.efield for a key that runs to the end of the line (no POS2). */
#define DSORT_KEY_EOL SIZE_MAX

/* One -k POS1[,POS2]. Positions are 0-based here: -k 2.3,4.5 is sfield 1, schar 2, efield 3,
 * echar 5. The key starts schar bytes into field sfield (after its blanks with 'b') and
 * ends echar bytes into field efield (after its blanks with 'b' on POS2), or at the end of
 * that field when echar is 0. Offsets are clamped to the line; a key that would end before
 * it starts is empty. */
struct dsort_key {
    size_t sfield, schar;
    size_t efield, echar;
    unsigned flags;
};

struct dsort_keys {
    struct dsort_key key[DSORT_KEYS_MAX];
    size_t n;
    int tab;         /* -1: default blank splitting; else the separator byte 0..255 */
    unsigned global; /* global option flags */
    int stable;      /* -s: no last resort */
    int unique;      /* -u: no last resort; callers keep the first line of each equal run */
    /* Set by dsort_keys_finish: */
    int finished;
    int reverse;     /* the last resort is reversed (global -r) */
    int prefix_mode; /* what dsort_keys_prefix encodes (PREFIX_* in keys_impl.h) */
    /* R keys: the 16 bytes that key their hash (GNU's --random-source bytes) */
    unsigned char random_seed[16];
    int random_seeded;
};

/* An empty order: no keys, default field splitting, no options. Never fails. */
void dsort_keys_init(struct dsort_keys *k);

/* Add a key from a -k SPEC (F[.C][OPTS][,F[.C][OPTS]], OPTS from "bdfghiMnRrV"). Returns
 * DSORT_EINVAL on a malformed spec or when DSORT_KEYS_MAX keys are already defined. */
enum dsort_status dsort_keys_add(struct dsort_keys *k, const char *spec, struct dsort_error *err);

/* The obsolete key +POS1 [-POS2] (GNU sort's traditional syntax, fields and characters
 * counted from 0): "+A.x -B.y" is "-k A+1.x+1,B.y" when y is 0 or absent, and
 * "-k A+1.x+1,B+1.y" otherwise; pos2 may be NULL. Returns DSORT_EINVAL with *not_key set when
 * pos1 is no key (GNU then takes it for a file name; nothing said in err), or with GNU's
 * message for a malformed pos2. */
enum dsort_status dsort_keys_add_obsolete(struct dsort_keys *k, const char *pos1, const char *pos2,
                                          int *not_key, struct dsort_error *err);

/* -t ARG: a single byte, or "\0" for NUL. Errors, as GNU: "empty tab", "multi-character tab
 * 'ab'", and "incompatible tabs" when a different separator was set before. */
enum dsort_status dsort_keys_set_tab(struct dsort_keys *k, const char *arg,
                                     struct dsort_error *err);

/* One global ordering option, one of "bdfghiMnRrV". */
enum dsort_status dsort_keys_set_global(struct dsort_keys *k, char opt, struct dsort_error *err);

/* R keys' seed: 16 bytes (GNU's first 16 bytes of --random-source). Needed before
 * dsort_keys_finish when some key or global option is R. */
void dsort_keys_set_random_seed(struct dsort_keys *k, const unsigned char seed[16]);
/* Does some key, or the global options, use R (before or after finish)? */
int dsort_keys_random(const struct dsort_keys *k);

/* After all options, with stable and unique set: applies inheritance, the whole-line key and
 * the compatibility check ("options '-dn' are incompatible"); an R key without a seed is
 * refused. May be called again after a
 * failure has been reported; calling it twice on success is harmless. */
enum dsort_status dsort_keys_finish(struct dsort_keys *k, struct dsort_error *err);

/* Is the order plain whole-line byte order (memcmp, then the shorter first)? */
int dsort_keys_plain(const struct dsort_keys *k);

/* The keys alone: <0, 0, >0. 0 means duplicates for -u and ties for -s. With no keys this is
 * the whole-line comparison (reversed by -r), as in GNU. */
int dsort_keys_compare_keys(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                            const unsigned char *b, size_t blen);

/* The full GNU order: the keys, then the last resort unless stable or unique. */
int dsort_keys_compare(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                       const unsigned char *b, size_t blen);

/* A 64-bit summary of a line such that for all lines a, b:
 *   dsort_keys_compare(a, b) < 0       implies prefix(a) <= prefix(b), and
 *   dsort_keys_compare_keys(a, b) == 0 implies prefix(a) == prefix(b).
 * So prefix(a) < prefix(b) decides compare(a, b) < 0 without reading the lines. It holds the
 * first 7 bytes of the line (no keys) or of the first key when that key compares plain bytes
 * (possibly with b, f or r), then the length when it is at most 7 and otherwise the 8th
 * byte, raised to 8 if below; for a first -n key, its value: the sign, the count of integer
 * digits (or of zeros after the point), the first 16 significant digits and whether any
 * nonzero digit follows them; for a first R key, the first 8 bytes of its digest; for a first -h
 * key, the signed SI suffix order, then the value as for -n with 15 digits. It is complemented when
 * the first key (or, with no keys, the order) is descending. Values that agree in those digits, and
 * numbers with more than 63 integer digits (-h: 31) or more than 62 zeros after the point (-h: 30),
 * share prefixes. For other first keys (g, M, V, d, i) it is 0 for every line. */
uint64_t dsort_keys_prefix(const struct dsort_keys *k, const unsigned char *line, size_t len);

/* For two lines with the same prefix p: does p prove that their first keys compare equal
 * (with no keys: that the lines are equal)? True when p holds the first key's whole value:
 * a -n or -h number with at most 16 (-h: 15) significant digits within the exponent range
 * above, or zero (any spelling); a plain-bytes key (or line) of at most 7 bytes. Always 0
 * when has_prefix is false. Constant time; the lines are not needed. */
int dsort_keys_prefix_decides(const struct dsort_keys *k, uint64_t p);

/* As dsort_keys_compare and dsort_keys_compare_keys, for lines whose first keys are known to
 * compare equal (e.g. equal prefixes that dsort_keys_prefix_decides): they start at the
 * second key, then the last resort as usual. With no keys they are the same as
 * dsort_keys_compare and dsort_keys_compare_keys (the whole-line comparison). */
int dsort_keys_compare_after_first(const struct dsort_keys *k, const unsigned char *a, size_t alen,
                                   const unsigned char *b, size_t blen);
int dsort_keys_compare_keys_after_first(const struct dsort_keys *k, const unsigned char *a,
                                        size_t alen, const unsigned char *b, size_t blen);

/* Does dsort_keys_prefix carry information (is it not constant)? */
int dsort_keys_has_prefix(const struct dsort_keys *k);

/* --debug (GNU sort's key annotation), on a finished k: the bytes [*b, *e) of line s (len bytes,
 * no terminator) that key i (< k->n) compares, as GNU sort --debug underlines them: the key's
 * range, and for -n, -h, -g and -M only the number or month name in it (after blanks). *e == *b
 * when the key has nothing of the kind ("no match"); *b is then where it was looked for. */
void dsort_keys_debug_span(const struct dsort_keys *k, size_t i, const unsigned char *s, size_t len,
                           size_t *b, size_t *e);

#endif
