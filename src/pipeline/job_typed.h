/* job_typed.h - typed keys in the fixed-record pipelines (docs/design.md, "Typed keys"): the
 * pipelines sort widened records, normkey || record (typedkey.h), as an ordinary fixed format
 * whose key is the normalised key (or, for integer and bytes keys back to back, the records
 * themselves with their key bytes normalised in place: typedkey.h's wide_prefix 0, no bigger
 * than the user's); the user's records are widened as they are read and
 * narrowed as they are written, so that nothing between (the radix sort, the splitters, the
 * exchange, the runs, the merges, -u, checkpoints) knows about typed keys. The checksums
 * (conservation, --verify, the -O manifest) are of the user's records, taken where they are
 * narrow.
 *
 * The mapped in-memory path (job_map.c) is taken as for raw keys: its records stay the user's,
 * in the page cache, and only its 16-byte entries carry the normalised key. The entries are
 * made as the rank's keys are normalised (dsort_job_typed_sort), and wherever the path reads a key
 * from the mapping it normalises it again (dsort_job_typed_merge; the cut widens the records it
 * looks at), so that it orders the records exactly as the copying path orders their widened form:
 * the normalised key, then (without -s) the user's record as unsigned bytes, then the input order;
 * -r reverses the first two.
 *
 * Without typed keys (o->typed NULL) every function here does what the pipelines did before:
 * read, sum, write. All are local.
 */
#ifndef DSORT_JOB_TYPED_H
#define DSORT_JOB_TYPED_H

#include <stddef.h>
#include <stdint.h>

#include "checksum.h"
#include "error.h"
#include "io.h"
#include "typedkey.h"

struct dsort_job_options;
struct dsort_output;
struct dsort_order;
struct dsort_sink;
struct dsort_sortent;

/* When o->fmt carries typed keys (fmt.typed, finished by the program), make the job sort by
 * them: o->typed gets the key set, o->fmt becomes the widened format (rec_size wide_prefix +
 * rec_size, the key the normalised key at wide_key_off; its name is kept). The
 * caller keeps the user's format to restore it after the sort. Nothing otherwise. */
void dsort_job_typed_enter(struct dsort_job_options *o);

/* Bytes of a record in the output (the user's record size). */
size_t dsort_job_out_rec(const struct dsort_job_options *o);

/* Read records [first, first + n) of the inputs (one stream a device: dsort_job_topo_read)
 * into buf, as the job's records (widened with typed keys: buf holds n * o->fmt.rec_size
 * bytes), adding their checksums (valsort's into sum with --verify, CRC32C into con). */
enum dsort_status dsort_job_read(const struct dsort_job_options *o, const struct dsort_inputs *in,
                                 uint64_t first, uint64_t n, unsigned char *buf,
                                 struct dsort_sum128 *sum, struct dsort_sum128 *con,
                                 struct dsort_error *err);

/* Read record i of the inputs into rec (o->fmt.rec_size bytes) as the job's record, with one
 * plain read (the samples). */
enum dsort_status dsort_job_read_one(const struct dsort_job_options *o,
                                     const struct dsort_inputs *in, uint64_t i, unsigned char *rec,
                                     struct dsort_error *err);

/* Write the job's n records at buf (this rank's whole share, sorted) to out as the user's
 * records, narrowing them in buf first with typed keys; adds their checksums (valsort's into
 * sum with -O or --verify, CRC32C into con). */
enum dsort_status dsort_job_write(const struct dsort_job_options *o, struct dsort_output *out,
                                  unsigned char *buf, uint64_t n, struct dsort_sum128 *sum,
                                  struct dsort_sum128 *con, struct dsort_error *err);

/* The mapped path's steps with typed keys tk (records of tk->rec_size bytes). */

/* dsort_keysort_sort for typed keys: ents (n entries, scratch tmp of n) name the n records at
 * recs in the order the copying path gives their widened form under ord (not -u): the
 * normalised key, then without -s the record's bytes, then the index; -r reverses key and
 * record. The entries' prefixes are the normalised keys' (made as the keys are normalised, in
 * one pass over the records). scratch: 2 * tk->norm_len bytes. */
void dsort_job_typed_sort(const struct dsort_typedkey *tk, const struct dsort_order *ord,
                          const unsigned char *recs, size_t n, struct dsort_sortent *ents,
                          struct dsort_sortent *tmp, unsigned char *scratch);

/* dsort_keysort_merge for typed keys: merge k runs of entries from dsort_job_typed_sort (with
 * the records' numbers at recs) in the same order, copying the user's records into sink. The
 * same checks of the entries (each index in [lo[i], hi[i]), each prefix its record's
 * normalised key's, prefixes never going down): DSORT_EINTERNAL naming the run and the record;
 * otherwise the first error of a flush, or DSORT_ENOMEM. Local. */
enum dsort_status dsort_job_typed_merge(const struct dsort_typedkey *tk,
                                        const struct dsort_order *ord, const unsigned char *recs,
                                        const struct dsort_sortent *const *runs, const size_t *lens,
                                        const uint64_t *lo, const uint64_t *hi, size_t k,
                                        struct dsort_sink *sink, struct dsort_error *err);

#endif
