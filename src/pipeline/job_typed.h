/* job_typed.h - typed keys in the fixed-record pipelines (docs/design.md, "Typed keys"): the
 * pipelines sort widened records, normkey || record (typedkey.h), as an ordinary fixed format
 * whose key is the normalised key (or, for integer and bytes keys back to back, the records
 * themselves with their key bytes normalised in place: typedkey.h's wide_prefix 0, no bigger
 * than the user's); the user's records are widened as they are read and
 * narrowed as they are written, so that nothing between (the radix sort, the splitters, the
 * exchange, the runs, the merges, -u, checkpoints) knows about typed keys. The checksums
 * (conservation, --verify, the -O manifest) are of the user's records, taken where they are
 * narrow. The mapped in-memory path is not taken (its records stay in the page cache, where
 * they cannot be widened): dsort_job_typed_enter sets no_map.
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

/* When o->fmt carries typed keys (fmt.typed, finished by the program), make the job sort by
 * them: o->typed gets the key set, o->fmt becomes the widened format (rec_size wide_prefix +
 * rec_size, the key the normalised key at wide_key_off; its name is kept), o->no_map is set. The
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

#endif
