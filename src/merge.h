/* merge.h - cursors over sorted runs, output sinks, and the k-way loser-tree merge.
 *
 * A run is a sorted sequence of fixed-size records that may live in memory, in a file, or
 * arrive from a peer. A cursor shows the run a block at a time: [cur, end) holds whole
 * records; when it is used up the merge calls refill, which either provides the next block
 * or leaves cur == end to say the run is over. A memory run is a single block with no refill.
 * The merge therefore never cares where a run lives.
 *
 * A sink receives the merged records: the merge appends to buf and calls flush when buf is
 * full (and once at the end). A sink without flush is a memory sink whose buffer must be big
 * enough.
 *
 * Merge invariant: the loser tree's root is the cursor whose current record is smallest in
 * (dsort_cmp_records, cursor index) order. Cursors must be passed in input order (e.g. by
 * source rank), so that records the comparison calls equal keep input order: the merge is
 * stable. Local, single-threaded.
 */
#ifndef DSORT_MERGE_H
#define DSORT_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "format.h"

struct dsort_cursor {
    const unsigned char *cur, *end;
    enum dsort_status (*refill)(struct dsort_cursor *c, struct dsort_error *err);
    void *ctx;
};

struct dsort_sink {
    unsigned char *buf;
    size_t cap, len; /* bytes */
    enum dsort_status (*flush)(struct dsort_sink *s, struct dsort_error *err);
    void *ctx;
    uint64_t records; /* records written through this sink */
};

/* A cursor over n records in memory. */
void dsort_cursor_memory(struct dsort_cursor *c, const unsigned char *recs, size_t n,
                         size_t rec_size);

/* A sink that appends to a memory buffer of cap bytes. */
void dsort_sink_memory(struct dsort_sink *s, unsigned char *buf, size_t cap);

/* Merge k cursors of records of rec_size bytes into sink, copying the first out_size bytes
 * of each (out_size < rec_size drops a suffix such as a position tag). With unique, a record
 * whose key equals the previous output record's key is dropped (the first survives). The
 * final flush is done. Returns the first error of a refill or flush, or DSORT_ENOMEM if a
 * memory sink overflows; the sink then holds a prefix of the output. */
enum dsort_status dsort_merge_cmp(const struct dsort_cmp *cmp, size_t rec_size, size_t out_size,
                                  int unique, struct dsort_cursor *cursors, size_t k,
                                  struct dsort_sink *sink, struct dsort_error *err);

/* dsort_merge_cmp with the comparison of fmt and ord, whole records out. */
enum dsort_status dsort_merge(const struct dsort_format *fmt, const struct dsort_order *ord,
                              struct dsort_cursor *cursors, size_t k, struct dsort_sink *sink,
                              struct dsort_error *err);

#endif
