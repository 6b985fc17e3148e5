/* typedkey.h - typed keys of fixed-size records, and their byte-comparable normalised form.
 *
 * A key set is one or more keys, each spelled as dsort's -k option takes it for fixed formats:
 *
 *     OFF:TYPE[:LEN][:r]
 *
 * OFF is the key's first byte in the record (decimal); TYPE one of
 *     u8 i8 u16le u16be i16le i16be u32le u32be i32le i32be u64le u64be i64le i64be
 *     f32le f32be f64le f64be bytes
 * (unsigned, signed two's complement and IEEE 754 binary32/binary64 numbers, little- or
 * big-endian, sized in bits as Rust and Arrow name them: u64le is numpy's '<u8'); LEN is the
 * length in bytes of a `bytes` key (compared as unsigned bytes, like --format's key) and is
 * only given for `bytes`; a final `r` makes the key descending (GNU sort's per-key r). The
 * first key decides, the next breaks its ties, and so on.
 *
 * Floats order as numpy's sort does: -inf < ... < -0.0 == +0.0 < ... < +inf < NaN, every NaN
 * (whatever its sign and payload) equal to every other. A descending key is the exact
 * reverse of its ascending order (NaNs first).
 *
 * Normalisation turns a record's keys into one byte string, norm_len bytes long for every
 * record of the set, such that memcmp of two normalised keys orders the records as the keys
 * do (0 exactly when every key is equal). Each key becomes a field of its own width: integers
 * big-endian with the sign bit flipped when signed; floats as their bits made monotone (sign
 * bit flipped for positives, every bit for negatives, -0.0 as +0.0, any NaN as all ones);
 * `bytes` as they are; a descending key with all its bits inverted. Ties between equal keys
 * are then broken by the caller (the whole record, or input order with -s) as for untyped
 * keys: the pipeline sorts records widened to normkey || record, or with their key bytes
 * normalised in place where that is a bijection (dsort_typedkey_widen, wide_prefix).
 *
 * All functions are local and pure; a key set is a plain value (no allocation), and is not
 * changed by normalisation, so threads may share one.
 */
#ifndef DSORT_TYPEDKEY_H
#define DSORT_TYPEDKEY_H

#include <stddef.h>

#include "error.h"

#define DSORT_TYPEDKEY_MAX 16 /* keys in a set */

enum dsort_typedkey_type {
    DSORT_TK_U8,
    DSORT_TK_I8,
    DSORT_TK_U16LE,
    DSORT_TK_U16BE,
    DSORT_TK_I16LE,
    DSORT_TK_I16BE,
    DSORT_TK_U32LE,
    DSORT_TK_U32BE,
    DSORT_TK_I32LE,
    DSORT_TK_I32BE,
    DSORT_TK_U64LE,
    DSORT_TK_U64BE,
    DSORT_TK_I64LE,
    DSORT_TK_I64BE,
    DSORT_TK_F32LE,
    DSORT_TK_F32BE,
    DSORT_TK_F64LE,
    DSORT_TK_F64BE,
    DSORT_TK_BYTES,
    DSORT_TK_NTYPES
};

struct dsort_typedkey_field {
    enum dsort_typedkey_type type;
    size_t off;      /* first byte in the record */
    size_t len;      /* bytes in the record, and in the normalised key */
    size_t norm_off; /* where its normalised form lies in the normalised key */
    int desc;        /* descending */
};

struct dsort_typedkey {
    size_t count;
    struct dsort_typedkey_field keys[DSORT_TYPEDKEY_MAX];
    size_t norm_len; /* bytes of a normalised key: the sum of the keys' lengths */
    size_t rec_size; /* 0 until dsort_typedkey_finish */
    /* The widened records (dsort_typedkey_widen), set by dsort_typedkey_finish: wide_prefix
     * bytes before the record (norm_len, or 0 when the keys are normalised in place) and the
     * normalised key at wide_key_off of a widened record of wide_prefix + rec_size bytes. */
    size_t wide_prefix, wide_key_off;
};

/* An empty set. */
void dsort_typedkey_init(struct dsort_typedkey *tk);

/* Does an -k argument spell a typed key (it has a ':'; GNU sort's KEYDEF never has one)? */
int dsort_typedkey_is_spec(const char *arg);

/* Parse "OFF:TYPE[:LEN]" at the start of s into *f (desc 0, norm_off 0); *rest points past it
 * (at '\0' or the ':' before what follows). DSORT_EINVAL with a message naming s on a bad OFF,
 * an unknown TYPE, a LEN of 0, a LEN with a numeric type or none with bytes. Shared with
 * dsort-gen's field specs. */
enum dsort_status dsort_typedkey_parse_field(const char *s, struct dsort_typedkey_field *f,
                                             const char **rest, struct dsort_error *err);

/* Append one key, "OFF:TYPE[:LEN][:r]". DSORT_EINVAL with a message naming arg on a bad spec
 * or a full set; the set is then unchanged. */
enum dsort_status dsort_typedkey_add(struct dsort_typedkey *tk, const char *arg,
                                     struct dsort_error *err);

/* Bind the set to records of rec_size bytes: every key must lie within the record
 * (DSORT_EINVAL naming the key otherwise, and for an empty set). Sets norm_off, norm_len and
 * the widened layout: in place (wide_prefix 0, wide_key_off the first key's offset) when every
 * key is an integer or bytes and each starts where the one before it ends (then normalising
 * is a bijection of those bytes, and the record with its key bytes normalised orders, ties
 * included, as normkey || record does: the other bytes are the same); else normkey || record. */
enum dsort_status dsort_typedkey_finish(struct dsort_typedkey *tk, size_t rec_size,
                                        struct dsort_error *err);

/* The canonical spelling of the set, "-k 0:u64le -k 8:f64be:r" style without the "-k ": keys
 * joined by ' '. Truncated to fit buf (always terminated when size > 0). */
void dsort_typedkey_name(const struct dsort_typedkey *tk, char *buf, size_t size);

/* The name of a type ("u64le"). */
const char *dsort_typedkey_type_name(enum dsort_typedkey_type t);
/* Bytes of a numeric type; 0 for bytes. */
size_t dsort_typedkey_type_size(enum dsort_typedkey_type t);

/* Write the normalised key of rec (rec_size bytes) to out (tk->norm_len bytes). */
void dsort_typedkey_normalize(const struct dsort_typedkey *tk, const unsigned char *rec,
                              unsigned char *out);

/* The normalised key's fixed length (tk->norm_len). */
static inline size_t dsort_typedkey_norm_len(const struct dsort_typedkey *tk)
{
    return tk->norm_len;
}

/* n records (rec_size bytes each) to n widened records of wide_prefix + rec_size bytes each:
 * the normalised key, then the record unchanged; or, in place (wide_prefix 0), the record with
 * its key bytes normalised. in and out must not overlap. */
void dsort_typedkey_widen(const struct dsort_typedkey *tk, const unsigned char *in, size_t n,
                          unsigned char *out);

/* The inverse: the records back from n widened records. in and out must not overlap. */
void dsort_typedkey_narrow(const struct dsort_typedkey *tk, const unsigned char *in, size_t n,
                           unsigned char *out);

/* In place, for a buffer sized for n widened records (n * (wide_prefix + rec_size) bytes): the
 * n records stored at buf + n * wide_prefix (the buffer's tail) become n widened records from
 * buf on. The pipeline reads the user's records into the tail and widens them there, so that
 * no second buffer is needed. */
void dsort_typedkey_widen_inplace(const struct dsort_typedkey *tk, unsigned char *buf, size_t n);

/* In place: n widened records at buf become the n records at buf (the first n * rec_size
 * bytes; the rest is left unspecified). */
void dsort_typedkey_narrow_inplace(const struct dsort_typedkey *tk, unsigned char *buf, size_t n);

#endif
