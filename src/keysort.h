/* keysort.h - the in-memory run former: radix sort of key prefixes with an index.
 *
 * Records are never moved while sorting. Each record gets a 16-byte entry: the first 10 bytes
 * of its key, normalised so that comparing entries as unsigned integers agrees with the order
 * (bytes complemented for -r), and a 48-bit record index. A hybrid radix sort (one MSD byte,
 * then cache-resident LSD passes, skipping bytes that do not vary) orders the entries. Only
 * runs of entries that tie on the prefix are compared in full (dsort_cmp_records: the rest of
 * a long key, then the whole record as the last resort unless -s or -u), then by index. So
 * records the order calls equal keep ascending index order: the sort is stable.
 * Then dsort_keysort_gather moves every record once.
 *
 * Memory: 32 bytes per record (entries + scratch), caller-provided. Local, thread-compatible.
 */
#ifndef DSORT_KEYSORT_H
#define DSORT_KEYSORT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "format.h"

#define DSORT_KEYSORT_PREFIX 10
#define DSORT_KEYSORT_IDX_BITS 48
#define DSORT_KEYSORT_IDX_MASK ((UINT64_C(1) << DSORT_KEYSORT_IDX_BITS) - 1)
#define DSORT_KEYSORT_MAX_RECORDS (UINT64_C(1) << DSORT_KEYSORT_IDX_BITS)

struct dsort_sortent {
    uint64_t k0; /* normalised key bytes 0..7, big-endian */
    uint64_t k1; /* normalised key bytes 8..9 in the top 16 bits, record index below */
};

static inline size_t dsort_sortent_index(const struct dsort_sortent *e)
{
    return (size_t)(e->k1 & DSORT_KEYSORT_IDX_MASK);
}

/* Local, process-wide: while fn is set, dsort_keysort_sort calls fn(arg, frac) from its thread
 * at points of its work, frac rising towards 1 (--progress's movement inside a long sort, on
 * rank 0). NULL: off. Not for sorts on several threads at once. */
void dsort_keysort_set_progress(void (*fn)(void *arg, double frac), void *arg);

/* Sort the n fixed-size records at recs (n < DSORT_KEYSORT_MAX_RECORDS) into ents (n entries);
 * tmp is scratch of n entries. Afterwards ents[i] names the i-th record in sorted order. */
void dsort_keysort_sort(const struct dsort_format *fmt, const struct dsort_order *ord,
                        const unsigned char *recs, size_t n, struct dsort_sortent *ents,
                        struct dsort_sortent *tmp);

/* The radix sort alone, for entries the caller made (job_typed.c: keys normalised as the
 * records are read): orders the n entries by their 10-byte prefixes, stably (equal prefixes keep
 * their order: make them in index order); tmp is scratch of n entries. Ties are the caller's. */
void dsort_keysort_sort_entries(struct dsort_sortent *ents, struct dsort_sortent *tmp, size_t n);

/* Copy the records into out in the order of ents (out must not overlap recs). */
void dsort_keysort_gather(const struct dsort_format *fmt, const unsigned char *recs,
                          const struct dsort_sortent *ents, size_t n, unsigned char *out);

/* Merge k sorted runs of entries (runs[i]: lens[i] entries from dsort_keysort_sort, whose
 * indices all name records at recs: runs sorted on different ranks carry global record
 * numbers) and copy the records, in merged order, into sink (flushed when full and once at the
 * end). Entries compare as in dsort_keysort_sort: prefix, then the full comparison where the
 * sort used it, then index; so the result is what sorting all the records at once gives.
 * Entries that came over a network are checked as they are used: run i's indices must lie in
 * [lo[i], hi[i]) (the records its sorter had), each entry's prefix must be its record's, and
 * the prefixes must not go down; a failure is DSORT_EINTERNAL naming the run and the record
 * (a corrupted exchange: the conservation check sees records, not entries). Otherwise the
 * first error of a flush, or DSORT_ENOMEM. Local. */
struct dsort_sink;
enum dsort_status dsort_keysort_merge(const struct dsort_format *fmt, const struct dsort_order *ord,
                                      const unsigned char *recs,
                                      const struct dsort_sortent *const *runs, const size_t *lens,
                                      const uint64_t *lo, const uint64_t *hi, size_t k,
                                      struct dsort_sink *sink, struct dsort_error *err);

/* The caller's order of entries whose prefixes it made (typed keys: dsort_job_typed_sort). */
struct dsort_keysort_keys {
    /* The entry prefix of record rec, index bits zero, as the sort made it. */
    void (*prefix)(void *ctx, const unsigned char *rec, struct dsort_sortent *p);
    /* Records ia and ib, whose prefixes tie: <0, 0 (then the index decides) or >0. */
    int (*tie)(void *ctx, size_t ia, size_t ib);
    void *ctx;
};

/* dsort_keysort_merge with the prefixes and ties of keys instead of a format's key: the same
 * checks of the entries, with keys->prefix as each record's prefix; records of rec_size
 * bytes. Local. */
enum dsort_status dsort_keysort_merge_keys(size_t rec_size, const struct dsort_keysort_keys *keys,
                                           const unsigned char *recs,
                                           const struct dsort_sortent *const *runs,
                                           const size_t *lens, const uint64_t *lo,
                                           const uint64_t *hi, size_t k, struct dsort_sink *sink,
                                           struct dsort_error *err);

#endif
