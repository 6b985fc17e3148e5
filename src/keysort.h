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
 * Memory: 32 bytes per record (entries + scratch), caller-provided. Local, thread-compatible;
 * the sort a bucket at a time below is thread-safe (each thread with its own scratch).
 */
#ifndef DSORT_KEYSORT_H
#define DSORT_KEYSORT_H

#include <stdatomic.h>
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
 * at points of its work, frac rising towards 1 (dsort_keysort_split to 0.5: the rest of its
 * sort is done later, without ticks) (--progress's movement inside a long sort, on
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

/* A sort finished a bucket at a time, as the entries are wanted (the copying path: most of
 * the sort then runs while the exchange waits on the network). dsort_keysort_entries makes the
 * entries (all at once, or a range at a time as the records arrive) and dsort_keysort_split
 * does the sort's first MSD pass: ents then holds 256 buckets by the first normalised key byte,
 * bucket b at [off[b], off[b + 1]), each in index order. Buckets larger than eager entries are
 * sorted at once (with tmp, where the entries were made, which is free again afterwards);
 * dsort_keysort_ready sorts the others when their entries are first wanted. Once every entry has
 * been readied, ents is exactly what dsort_keysort_sort gives. Ready calls may run on several
 * threads at once, each with its own scratch: a bucket is sorted by the first that wants it, and
 * the others wait for it, yielding the core: at most one bucket's sort (about a millisecond for
 * 20000 entries; eager bounds the largest). */
struct dsort_keysort_lazy {
    const struct dsort_format *fmt;
    const struct dsort_order *ord;
    const unsigned char *recs;
    struct dsort_sortent *ents;
    size_t n;
    size_t off[257];
    size_t lazy_max;                 /* the largest bucket not sorted by split: ready's scratch */
    _Atomic unsigned char done[256]; /* bucket b: not sorted, being sorted, sorted */
};

/* The entries of records [first, first + k) of recs, as the sorts make them, into
 * ents[first .. first + k); each one's first normalised key byte counted in cnt[256] (if not
 * NULL). For entries made as the records arrive (the copying path's read, each chunk while it is
 * in the cache); calls on disjoint ranges may run on several threads at once. */
void dsort_keysort_entries(const struct dsort_format *fmt, const struct dsort_order *ord,
                           const unsigned char *recs, size_t first, size_t k,
                           struct dsort_sortent *ents, size_t *cnt);

/* The split: tmp holds all n entries of recs in index order (dsort_keysort_entries), cnt the
 * counts of their first bytes; they are scattered into ents, and tmp is then its scratch. */
void dsort_keysort_split(struct dsort_keysort_lazy *z, const struct dsort_format *fmt,
                         const struct dsort_order *ord, const unsigned char *recs, size_t n,
                         struct dsort_sortent *ents, struct dsort_sortent *tmp, const size_t *cnt,
                         size_t eager);

/* Sort the buckets not sorted yet that hold entries [lo, hi) (hi <= n); tmp: scratch of
 * z->lazy_max entries. Afterwards ents[lo..hi) are final, and so are the entries up to the
 * returned index: the end of the last bucket that holds [lo, hi) (lo if lo >= hi). */
size_t dsort_keysort_ready(struct dsort_keysort_lazy *z, size_t lo, size_t hi,
                           struct dsort_sortent *tmp);

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
