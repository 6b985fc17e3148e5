/* validate.h - order, count and checksum of a record sequence (valsort's figures).
 *
 * A summary describes a contiguous stretch of records: how many, how many are out of order
 * (a record whose key is before its predecessor's), the index of the first such record,
 * how many have a key equal to their predecessor's (duplicates), the valsort checksum (the
 * 128-bit sum of the CRC-32 of every record), and the first and last keys. Summaries of
 * adjacent stretches combine associatively, checking the boundary between them: this is how
 * `valsort -s` checks partitions, and how ranks check their pieces in parallel.
 *
 * The check is on keys only, ascending unless `reverse`. With `strict`, equal neighbours
 * count as out of order too (sort -c -u). Local; summaries own their key buffers.
 *
 * With typed keys (fmt->typed, typedkey.h) the keys compared are the records' normalised keys:
 * the summary keeps whole first and last records (key_len is the record size) and normalises
 * each record once as it is added.
 */
#ifndef DSORT_VALIDATE_H
#define DSORT_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "checksum.h"
#include "error.h"
#include "format.h"

#define DSORT_VALIDATE_NONE UINT64_MAX

struct dsort_vsum {
    uint64_t records;
    uint64_t unordered;       /* count of records before their predecessor */
    uint64_t first_unordered; /* index of the first one, or DSORT_VALIDATE_NONE */
    uint64_t duplicates;
    struct dsort_sum128 checksum;
    size_t key_len; /* bytes kept of the first and last record: the key, or (whole) all */
    size_t cmp_off; /* where the key lies within those bytes */
    size_t cmp_len;
    int whole;                           /* compare whole records after equal keys */
    unsigned char *first_key, *last_key; /* key_len bytes each; valid when records > 0 */
    const struct dsort_typedkey *typed;  /* fmt->typed */
    unsigned char *norm;                 /* typed: 2 normalised keys of scratch */
};

/* Initialise an empty summary for keys of fmt->key_len bytes. */
enum dsort_status dsort_vsum_init(struct dsort_vsum *s, const struct dsort_format *fmt,
                                  struct dsort_error *err);
/* The same; with whole != 0, records with equal keys must also be in whole-record order
 * (reversed with -r): GNU sort's last resort, which dsort -c checks. Equal keys still count as
 * duplicates when the records are in order. */
enum dsort_status dsort_vsum_init_ex(struct dsort_vsum *s, const struct dsort_format *fmt,
                                     int whole, struct dsort_error *err);
void dsort_vsum_destroy(struct dsort_vsum *s);

/* Append n records (contiguous, fixed size) to the stretch that s describes. */
void dsort_vsum_add(struct dsort_vsum *s, const struct dsort_format *fmt,
                    const struct dsort_order *ord, const unsigned char *recs, size_t n);

/* s := s followed by t (t is unchanged). Both must use the same key length. */
void dsort_vsum_append(struct dsort_vsum *s, const struct dsort_vsum *t,
                       const struct dsort_order *ord);

/* Serialise to / from a flat buffer of dsort_vsum_packed_size(s->key_len) bytes (for MPI). */
size_t dsort_vsum_packed_size(size_t key_len);
void dsort_vsum_pack(const struct dsort_vsum *s, unsigned char *buf);
void dsort_vsum_unpack(struct dsort_vsum *s, const unsigned char *buf);

#endif
