/* typedgen.h - records with typed fields, for dsort-gen --field (tests and benchmarks of typed
 * keys, typedkey.h).
 *
 * A generator makes records of rec_size bytes: random bytes, with fields written over them,
 * each spelled "OFF:TYPE[:LEN][:DIST]..." (OFF:TYPE[:LEN] as -k spells a key) where DIST is
 *   uniform      (default) integers over the type's whole range; floats uniform in
 *                [-1000, 1000); bytes random
 *   distinct=K   values from a pool of K distinct ones (duplicates; K >= 1)
 *   seq          the record number (converted to the type; wraps for small integers)
 *   nan=P        P percent NaNs of either sign and any payload (floats only)
 *   special=P    P percent corner values: +-0, +-inf, NaNs, min and max, subnormals, +-1
 * nan= and special= combine with the others, which give the remaining values.
 *
 * Record i depends only on the seed, the fields and i, so a file can be made in slices in any
 * order, by any number of ranks, and is the same. Local and pure; no allocation.
 */
#ifndef DSORT_TYPEDGEN_H
#define DSORT_TYPEDGEN_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "typedkey.h"

#define DSORT_TYPEDGEN_MAX 32 /* fields */

enum dsort_typedgen_dist { DSORT_TG_UNIFORM, DSORT_TG_DISTINCT, DSORT_TG_SEQ };

struct dsort_typedgen_field {
    struct dsort_typedkey_field f; /* type, off, len (desc unused) */
    enum dsort_typedgen_dist dist;
    uint64_t distinct; /* K of distinct=K */
    unsigned nan_pct, special_pct;
};

struct dsort_typedgen {
    size_t rec_size;
    uint64_t seed;
    size_t count;
    struct dsort_typedgen_field fields[DSORT_TYPEDGEN_MAX];
};

/* No fields: random records of rec_size bytes. */
void dsort_typedgen_init(struct dsort_typedgen *g, size_t rec_size, uint64_t seed);

/* Add a field "OFF:TYPE[:LEN][:DIST]...". DSORT_EINVAL with a message naming spec on a bad
 * spec, a field past the record, nan= on a non-float, a percentage over 100 in all, or a
 * full generator; g is then unchanged. */
enum dsort_status dsort_typedgen_add(struct dsort_typedgen *g, const char *spec,
                                     struct dsort_error *err);

/* Write records first .. first + n - 1 to buf (n * rec_size bytes). */
void dsort_typedgen_fill(const struct dsort_typedgen *g, uint64_t first, size_t n,
                         unsigned char *buf);

#endif
